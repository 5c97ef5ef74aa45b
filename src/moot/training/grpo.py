"""One GRPO + LoRA stage on trl's GRPOTrainer and peft's LoraConfig (Zhu et al., appendix B).

The prompts are the examples' messages (conversational, so the model's chat template renders them as
the hf backend does) with an ``index`` column; each reward part is one trl reward function, named after
the part and weighted by GRPOConfig's ``reward_weights``, that scores a completion against the example
its index names. A stage starts a fresh LoRA adapter, or continues ``init_adapter``.

Durable and quiet: checkpoints every ``save_steps`` under ``output_dir/checkpoints`` (the last two
kept), and a rerun in the same folder resumes from the last one (transformers' resume_from_checkpoint,
so a killed stage loses at most ``save_steps`` steps, and asking for more steps continues a finished
one). A rich progress bar shows step/total, the mean reward and each part's, and the time left; the
reward history is saved as ``reward_curve.csv`` and ``reward_curve.png``, the final adapter in
``output_dir/adapter``. transformers' and trl's own bars and logs are off.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moot.errors import ConfigError
from moot.hf import load_model, require_libraries
from moot.outputs import write_output
from moot.training.types import GRPOResult, GRPOSettings, RewardPart, StepRecord, TrainingExample

if TYPE_CHECKING:
    from rich.console import Console

CHECKPOINTS = "checkpoints"
ADAPTER = "adapter"
CURVE_CSV = "reward_curve.csv"
CURVE_PNG = "reward_curve.png"
SETTINGS_FILE = "grpo_settings.json"
CHECKPOINT = re.compile(r"checkpoint-(\d+)")
ELAPSED = "elapsed_s"  # added to each logged step of the trainer's history (and so to its checkpoints)


def train_grpo(
    *,
    model: str,
    examples: Sequence[TrainingExample],
    rewards: Sequence[RewardPart],
    settings: GRPOSettings,
    output_dir: Path,
    init_adapter: Path | None = None,
    console: Console | None = None,
) -> GRPOResult:
    """Train (or resume training) one LoRA adapter of ``model`` by GRPO for ``settings.steps`` steps in all."""
    require_libraries("torch", "transformers", "peft", "trl", "datasets")
    names = _check_inputs(examples, rewards)
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    _check_same_stage(output_dir, model, settings, init_adapter, names, examples)
    checkpoints = output_dir / CHECKPOINTS
    last = _last_checkpoint(checkpoints)
    if last is not None and (done := int(last.name.rpartition("-")[2])) > settings.steps:
        raise ConfigError(
            f"{output_dir} holds a GRPO stage trained for {done} steps, more than the {settings.steps} asked; "
            "ask for at least as many, or use another output folder"
        )

    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    with _quiet():
        loaded = load_model(model, adapter=init_adapter, trainable=True)
        on_gpu = loaded.device.startswith("cuda")
        args = GRPOConfig(
            output_dir=str(checkpoints),
            max_steps=settings.steps,
            learning_rate=settings.learning_rate,
            per_device_train_batch_size=settings.prompts_per_step * settings.generations,
            gradient_accumulation_steps=1,
            num_generations=settings.generations,
            max_completion_length=settings.max_completion_tokens,
            temperature=settings.temperature,
            top_p=settings.top_p,
            beta=settings.beta,
            reward_weights=[part.weight for part in rewards],
            save_strategy="steps",
            save_steps=settings.save_steps,
            save_total_limit=2,
            seed=settings.seed,
            data_seed=settings.seed,
            logging_steps=1,
            report_to="none",
            disable_tqdm=True,
            log_level="error",
            remove_unused_columns=False,
            use_cpu=not on_gpu,
            bf16=on_gpu and _bf16(loaded.model),
            gradient_checkpointing=on_gpu,  # saves GPU memory; on a CPU it only costs time
        )
        lora = None
        if init_adapter is None:
            lora = LoraConfig(
                r=settings.lora_rank,
                lora_alpha=settings.lora_alpha,
                lora_dropout=settings.lora_dropout,
                target_modules=list(settings.target_modules),
                task_type="CAUSAL_LM",
            )
        progress = RewardProgress(names, console)
        scorers: list[Any] = [reward_function(part, examples) for part in rewards]
        trainer = GRPOTrainer(
            model=loaded.model,
            reward_funcs=scorers,
            args=args,
            train_dataset=prompt_dataset(Dataset, examples),
            processing_class=loaded.tokenizer,
            peft_config=lora,
            callbacks=[progress.callback()],
        )
        _drop_printing_callbacks(trainer)
        progress.curve = lambda history: write_curve(output_dir, history, names)
        try:
            trainer.train(resume_from_checkpoint=str(last) if last is not None else None)
        except (ValueError, RuntimeError) as exc:
            raise ConfigError(f"GRPO training failed: {' '.join(str(exc).split())[:300]}") from None
        finally:
            progress.stop()
        adapter_dir = output_dir / ADAPTER
        trainer.save_model(str(adapter_dir))
    history = history_of(trainer.state.log_history, names)
    csv_path, png_path = write_curve(output_dir, history, names)
    return GRPOResult(
        adapter_dir=adapter_dir,
        steps=trainer.state.global_step,
        history=history,
        curve_png=png_path,
        curve_csv=csv_path,
    )


def _check_inputs(examples: Sequence[TrainingExample], rewards: Sequence[RewardPart]) -> tuple[str, ...]:
    """The reward parts' names; a ConfigError for no examples, no parts, or two parts of one name."""
    if not examples:
        raise ConfigError("GRPO needs at least one training example")
    if not rewards:
        raise ConfigError("GRPO needs at least one reward part")
    names = tuple(part.name for part in rewards)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"reward parts need distinct names; repeated: {', '.join(repeated)}")
    if any(not n or "/" in n for n in names):
        raise ConfigError("a reward part's name must be non-empty and without '/'")
    return names


def _check_same_stage(
    output_dir: Path,
    model: str,
    settings: GRPOSettings,
    init_adapter: Path | None,
    names: tuple[str, ...],
    examples: Sequence[TrainingExample],
) -> None:
    """Record what a stage in ``output_dir`` trains; a rerun may change only ``steps`` (to continue it).

    Resuming a checkpoint under other settings, another model, other examples or other rewards would mix
    two trainings in one adapter, so it is refused with the differences named."""
    identity = {
        "model": model,
        "init_adapter": None if init_adapter is None else str(Path(init_adapter).resolve()),
        "rewards": list(names),
        "examples": examples_digest(examples),
        "settings": settings.model_dump(mode="json", exclude={"steps"}),
    }
    path = output_dir / SETTINGS_FILE
    if path.is_file() and _last_checkpoint(output_dir / CHECKPOINTS) is not None:
        stored = json.loads(path.read_text())
        changed = _differences(stored, identity)
        if changed:
            raise ConfigError(
                f"{output_dir} holds a GRPO stage trained with other {', '.join(changed)}; "
                "use another output folder, or delete this one to start over"
            )
    text = json.dumps(identity, indent=2, sort_keys=True) + "\n"
    write_output(path, lambda file: file.write_text(text))


def _differences(stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    changed = [k for k in ("model", "init_adapter", "rewards", "examples") if stored.get(k) != current[k]]
    settings = stored.get("settings", {})
    changed += [f"{k} ({settings.get(k)!r} -> {v!r})" for k, v in current["settings"].items() if settings.get(k) != v]
    return changed


def examples_digest(examples: Sequence[TrainingExample]) -> str:
    """sha256 of the examples' prompts and what they are scored against, in order."""
    rows = [
        [e.question_id, e.task, e.stage, [m.as_dict() for m in e.messages], e.gold, e.target_confidence]
        + [list(e.peer_answers), list(e.peer_confidences)]
        for e in examples
    ]
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()


def _last_checkpoint(folder: Path) -> Path | None:
    """The newest complete checkpoint in ``folder``: ``checkpoint-N`` with its trainer_state.json, which
    transformers writes last (a checkpoint cut short by a kill lacks it, and is redone)."""
    if not folder.is_dir():
        return None
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := CHECKPOINT.fullmatch(p.name)) and p.is_dir()]
    return next((p for _, p in sorted(found, reverse=True) if (p / "trainer_state.json").is_file()), None)


def prompt_dataset(dataset_type: Any, examples: Sequence[TrainingExample]) -> Any:
    """The trl dataset: each example's messages as a conversational prompt, and its index."""
    rows = [{"prompt": [m.as_dict() for m in e.messages], "index": i} for i, e in enumerate(examples)]
    return dataset_type.from_list(rows)


def completion_text(completion: Any) -> str:
    """A trl completion as text: a conversational one is a list of messages (the assistant's turn)."""
    if isinstance(completion, str):
        return completion
    return "".join(str(m.get("content") or "") for m in completion)


def reward_function(part: RewardPart, examples: Sequence[TrainingExample]) -> Callable[..., list[float]]:
    """One reward part as a trl reward function, named after the part (the name trl logs it under)."""

    def score(completions: Sequence[Any], index: Sequence[int], **_: Any) -> list[float]:
        return [float(part(examples[i], completion_text(c))) for c, i in zip(completions, index)]

    score.__name__ = part.name
    score.__qualname__ = part.name
    return score


def history_of(log_history: Sequence[Mapping[str, Any]], names: Sequence[str]) -> tuple[StepRecord, ...]:
    """The logged steps of a trainer's history (the ones with a reward), one record per step."""
    records: dict[int, StepRecord] = {}
    for entry in log_history:
        if "reward" not in entry or "step" not in entry:
            continue
        parts = {n: float(entry.get(f"rewards/{n}/mean", float("nan"))) for n in names}
        step = int(entry["step"])
        records[step] = StepRecord(step, float(entry["reward"]), parts, float(entry.get(ELAPSED, float("nan"))))
    return tuple(records[s] for s in sorted(records))


def write_curve(output_dir: Path, history: Sequence[StepRecord], names: Sequence[str]) -> tuple[Path, Path]:
    """``reward_curve.csv`` (a row per step: step, reward, each part, elapsed seconds) and its plot."""
    csv_path, png_path = output_dir / CURVE_CSV, output_dir / CURVE_PNG
    table = io.StringIO(newline="")
    writer = csv.writer(table)
    writer.writerow(["step", "reward", *names, ELAPSED])
    for r in history:
        writer.writerow([r.step, f"{r.reward:.6g}", *(f"{r.parts[n]:.6g}" for n in names), f"{r.elapsed_s:.1f}"])
    write_output(csv_path, lambda file: file.write_text(table.getvalue(), newline=""))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    steps = [r.step for r in history]
    ax.plot(steps, [r.reward for r in history], label="reward (weighted sum)", linewidth=2, marker="o", markersize=3)
    for n in names:
        ax.plot(steps, [r.parts[n] for r in history], label=n, linewidth=1, alpha=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel("mean reward")
    ax.set_title("GRPO reward")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    write_output(png_path, lambda file: fig.savefig(file, dpi=120, format="png"))
    plt.close(fig)
    return csv_path, png_path


def _bf16(model: Any) -> bool:
    import torch

    return any(p.dtype == torch.bfloat16 for p in model.parameters())


def _drop_printing_callbacks(trainer: Any) -> None:
    """The trainer's own progress bar and log printer: the rich bar replaces them."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    for callback in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(callback)


@contextmanager
def _quiet() -> Iterator[None]:
    """transformers', trl's and datasets' logs, bars and warnings off for the stage (the rich bar stays)."""
    import datasets
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    datasets.disable_progress_bars()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        hf_logging.enable_progress_bar()
        datasets.enable_progress_bars()


class RewardProgress:
    """A rich progress bar over the optimizer steps: step/total, mean reward and each part, time left; on a
    console that is not a terminal (a pipe, a log file), one line per logged step instead, as it happens.

    Also stamps each logged step with the seconds trained so far (over resumed sessions too), and has
    the reward curve written at every checkpoint, so a killed stage leaves its curve up to there.
    ``callback()`` is the TrainerCallback that feeds it (transformers is imported only then)."""

    def __init__(self, names: Sequence[str], console: Console | None = None):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.names = tuple(names)
        self.console = console or Console(stderr=True)
        self.progress = Progress(
            TextColumn("GRPO"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rewards]}"),
            TimeRemainingColumn(),
            console=self.console,
            disable=not self.console.is_terminal,
        )
        self.task: Any = None
        self.start = time.perf_counter()
        self.offset = 0.0  # seconds trained by earlier sessions of a resumed stage
        self.curve: Callable[[tuple[StepRecord, ...]], Any] | None = None

    def begin(self, state: Any) -> None:
        earlier = [e[ELAPSED] for e in state.log_history if ELAPSED in e]
        self.offset = float(earlier[-1]) if earlier else 0.0
        self.start = time.perf_counter()
        self.task = self.progress.add_task("grpo", total=state.max_steps, completed=state.global_step, rewards="")
        self.progress.start()

    def step(self, state: Any) -> None:
        if self.task is not None:
            self.progress.update(self.task, completed=state.global_step)

    def log(self, state: Any, logs: Mapping[str, Any] | None) -> None:
        if not logs or "reward" not in logs:
            return
        if state.log_history and state.log_history[-1].get("step") == state.global_step:
            state.log_history[-1][ELAPSED] = round(self.offset + time.perf_counter() - self.start, 2)
        parts = "  ".join(f"{n} {logs.get(f'rewards/{n}/mean', float('nan')):.3f}" for n in self.names)
        if self.task is not None:
            self.progress.update(self.task, rewards=f"reward {logs['reward']:.3f}  {parts}")
        if not self.console.is_terminal:
            seconds = self.offset + time.perf_counter() - self.start
            self.console.print(
                f"GRPO step {state.global_step}/{state.max_steps}  reward {logs['reward']:.3f}  {parts}  "
                f"{seconds:.0f} s",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
            self.console.file.flush()

    def saved(self, state: Any) -> None:
        if self.curve is not None:
            self.curve(history_of(state.log_history, self.names))

    def stop(self) -> None:
        self.progress.stop()

    def callback(self) -> Any:
        """The TrainerCallback that drives this bar."""
        from transformers import TrainerCallback

        bar = self

        class Callback(TrainerCallback):
            def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                bar.begin(state)

            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                bar.step(state)

            def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
                bar.log(state, logs)

            def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                bar.saved(state)

        return Callback()
