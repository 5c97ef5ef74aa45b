"""``moot train``: training models for debate. ``moot train confidence CONFIG.toml`` runs Zhu et al.'s
confidence recipe (moot.training.pipeline); heavy libraries (trl, peft, torch) load only when a GRPO
stage trains."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from moot.cli_output import make_console, plural
from moot.cli_support import reports_errors

if TYPE_CHECKING:
    from moot.training.pipeline import TrainOutcome

train_app = typer.Typer(
    help="Train models for debate: Zhu et al.'s confidence calibration (self-consistency targets, GRPO + LoRA).",
    no_args_is_help=True,
)
console = make_console(piped=140)


@train_app.command("confidence")
@reports_errors
def confidence(
    config: Annotated[
        Path,
        typer.Argument(
            help="A training TOML file (see examples/training/train-confidence.toml and docs/training.md).",
            show_default=False,
        ),
    ],
) -> None:
    """Zhu et al.'s confidence training: self-consistency targets, then GRPO + LoRA stages, then an evaluation.

    Stage 1 samples answers to the training questions (a moot run store); its harder subset trains stage expression (stating a calibrated confidence), then stage perception (using peers' answers and confidences in a debate round); then the base and trained models debate held-out questions.

    Every stage resumes: a rerun skips what is complete and continues the rest from its store or last checkpoint. Prints where the adapter, the reward curves and the evaluation are.
    """
    from moot.training.config import load_train_config
    from moot.training.pipeline import run_pipeline

    settings = load_train_config(config)
    console.print(
        f"moot train confidence: model {settings.model} · task {settings.task} · output {settings.output}",
        markup=False,
        soft_wrap=True,
    )
    progress = QuestionProgress()
    try:
        outcome = run_pipeline(settings, console, on_progress=progress.update)
    finally:
        progress.stop()
    _print_outcome(outcome)


class QuestionProgress:
    """Stage 1's and the evaluation's questions: a rich bar on a terminal, else a line every 5%."""

    def __init__(self) -> None:
        self.bars: dict[str, Any] = {}
        self.printed: dict[str, int] = {}
        self.live: Any = None

    def update(self, what: str, done: int, total: int) -> None:
        if not total:
            return
        if console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            if self.live is None:
                self.live = Progress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeRemainingColumn(),
                    console=console,
                )
                self.live.start()
            if what not in self.bars:
                self.bars[what] = self.live.add_task(f"{what}: questions", total=total)
            self.live.update(self.bars[what], completed=done, total=total)
            if done >= total:  # the bar ends with its stage: a GRPO stage's own bar may follow
                self.stop()
            return
        step = max(1, total // 20)
        if done == total or done - self.printed.get(what, -step) >= step:
            self.printed[what] = done
            console.print(f"{what}: questions {done:,}/{total:,}", markup=False)
            console.file.flush()

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
        self.live, self.bars = None, {}


def _print_outcome(outcome: TrainOutcome) -> None:
    t = outcome.targets
    console.print(
        f"targets: {plural(len(t.targets), 'question')} in {t.store} ({t.table}); this session "
        f"{t.calls} model calls, {t.replayed} replayed"
        + (f"; {plural(t.failed, 'question')} failed (no target)" if t.failed else ""),
        markup=False,
        soft_wrap=True,
    )
    console.print(f"harder subset: {plural(outcome.subset, 'question')}", markup=False)
    for stage in outcome.stages:
        r = stage.result
        state = "complete earlier, skipped" if stage.skipped else f"trained {plural(r.steps, 'step')}"
        last = r.history[-1] if r.history else None
        reward = f" · last reward {last.reward:.3f} ({_parts(last.parts)})" if last is not None else ""
        console.print(f"{stage.stage}: {state}{reward}", markup=False)
        console.print(f"  adapter {r.adapter_dir}", markup=False, soft_wrap=True)
        if r.curve_png or r.curve_csv:
            console.print(f"  reward curve {r.curve_png} · {r.curve_csv}", markup=False, soft_wrap=True)
    if outcome.evaluation is not None:
        e = outcome.evaluation
        for condition, row in e.table.items():
            figures = " · ".join(f"{k} {_figure(v)}" for k, v in row.items())
            console.print(f"evaluation {condition}: {figures}", markup=False)
        console.print(
            f"evaluation stored in {e.store}; read it with: moot report {e.store}", markup=False, soft_wrap=True
        )
    if outcome.adapter is not None:
        console.print(f"trained adapter: {outcome.adapter}", markup=False, soft_wrap=True)


def _parts(parts: Any) -> str:
    return ", ".join(f"{name} {value:.3f}" for name, value in parts.items())


def _figure(value: float | int | None) -> str:
    if value is None:
        return "—"
    return f"{value:,}" if isinstance(value, int) else f"{value:.3f}"
