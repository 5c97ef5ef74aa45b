"""``moot train confidence``: Zhu et al.'s recipe end to end, each stage resumable.

targets (stage 1, moot.training.targets) -> the harder subset and the examples (moot.training.data) ->
GRPO stage ``expression`` -> GRPO stage ``perception``, initialised from the expression adapter
(moot.training.grpo.train_grpo: trl's GRPOTrainer with a peft LoRA) -> evaluation on held-out questions,
the base model and the trained one debating the same questions with the hf backend (Zhu et al.'s
Table 6 through ``moot report``).

Everything lands in the config's ``output`` folder:

    targets.sqlite, targets.jsonl        stage 1 (a moot run store, and one line per question)
    expression.jsonl, perception.jsonl   the examples each stage trains on
    expression/, perception/             train_grpo's output: checkpoints, adapter/, reward_curve.csv/.png;
                                         inputs.json (what it trains on), complete.json once finished
    evaluation-<adapter digest>.sqlite   the evaluation run (`moot report` reads it)

Resuming: stage 1 is a moot run (a finished one replays without a model); a stage whose complete.json
matches what it would train now (model, settings, examples, rewards, starting adapter) is skipped,
otherwise train_grpo runs and resumes from its last checkpoint, except that a folder holding a training
on other examples, rewards or starting adapter is refused rather than mixed; the evaluation is a moot
run too.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from moot.errors import ConfigError
from moot.outputs import write_output
from moot.runner.config_files import _format_error
from moot.safe_files import check_folder
from moot.tasks.base import Question, Task
from moot.training.config import GENERATED, StageConfig, TrainConfig
from moot.training.data import expression_examples, harder_subset, perception_examples, write_examples
from moot.training.rewards import stage_rewards
from moot.training.targets import QuestionTarget, TargetsOutcome, run_targets
from moot.training.types import GRPOResult, GRPOSettings, RewardPart, Stage, StepRecord, TrainingExample

if TYPE_CHECKING:
    from rich.console import Console

    from moot.backends.config import BackendConfig
    from moot.runner.config import ExperimentConfig

COMPLETE = "complete.json"
INPUTS = "inputs.json"
SCALE = 10  # the confidence preset's 0-10 scale
Trainer = Callable[..., GRPOResult]


@dataclass(frozen=True)
class StageOutcome:
    """A GRPO stage's result, and whether it was finished before (skipped) this time."""

    stage: Stage
    result: GRPOResult
    skipped: bool
    fingerprint: str = ""  # of its inputs (a later stage that starts from its adapter records it)


@dataclass(frozen=True)
class EvaluationOutcome:
    """The evaluation store, and per condition (base, trained) the Table 6 figures of stated confidence."""

    store: Path
    table: dict[str, dict[str, float | int | None]] = field(default_factory=dict)


@dataclass(frozen=True)
class TrainOutcome:
    targets: TargetsOutcome
    subset: int
    examples: dict[str, Path]
    stages: tuple[StageOutcome, ...]
    evaluation: EvaluationOutcome | None

    @property
    def adapter(self) -> Path | None:
        """The final adapter: the last stage's that ran."""
        return self.stages[-1].result.adapter_dir if self.stages else None


def prepare_output(config: TrainConfig) -> Path:
    """The output folder, created when missing (its parent must exist, as moot creates no parents)."""
    out = config.output
    if out.exists() and not out.is_dir():
        raise ConfigError(f"output {out}: is a file, not a folder")
    if not out.exists():
        if not out.parent.is_dir():
            raise ConfigError(f"output {out}: the folder {out.parent} does not exist (create it first)")
        out.mkdir()
    return out


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def stage_inputs(
    config: TrainConfig,
    settings: GRPOSettings,
    examples_file: Path,
    rewards: Sequence[RewardPart],
    init: Path | None,
    upstream: str | None,
) -> dict[str, Any]:
    """What a stage's result depends on: the model, its settings, its examples, its reward parts, the
    adapter it starts from and (``upstream``) the fingerprint of the stage that made that adapter."""
    return {
        "model": config.model,
        "settings": settings.model_dump(mode="json"),
        "examples": hashlib.sha256(examples_file.read_bytes()).hexdigest(),
        "rewards": {"parts": [[p.name, p.weight] for p in rewards], "calibration": config.rewards.calibration_target},
        "init_adapter": str(init) if init is not None else None,
        "upstream": upstream,
    }


# what a stage's folder may not change under a checkpoint (train_grpo itself checks the settings)
_FIXED = {
    "examples": "examples (the subset, perception.agents or perception.draws changed)",
    "upstream": "starting adapter (the expression stage was trained again)",
    "rewards": "rewards",
}


def _result_json(result: GRPOResult, fingerprint: str) -> dict[str, Any]:
    return {
        "fingerprint": fingerprint,
        "adapter_dir": str(result.adapter_dir),
        "steps": result.steps,
        "curve_png": str(result.curve_png) if result.curve_png else None,
        "curve_csv": str(result.curve_csv) if result.curve_csv else None,
        "history": [
            {"step": s.step, "reward": s.reward, "parts": dict(s.parts), "elapsed_s": s.elapsed_s}
            for s in result.history
        ],
    }


def _result_of(data: dict[str, Any]) -> GRPOResult:
    return GRPOResult(
        adapter_dir=Path(data["adapter_dir"]),
        steps=int(data["steps"]),
        history=tuple(StepRecord(h["step"], h["reward"], h["parts"], h["elapsed_s"]) for h in data["history"]),
        curve_png=Path(data["curve_png"]) if data["curve_png"] else None,
        curve_csv=Path(data["curve_csv"]) if data["curve_csv"] else None,
    )


def finished_stage(folder: Path, fingerprint: str) -> GRPOResult | None:
    """The stage's result when it finished with this fingerprint and its adapter is still there."""
    marker = folder / COMPLETE
    if not marker.is_file():
        return None
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("fingerprint") != fingerprint:
        return None
    result = _result_of(data)
    return result if result.adapter_dir.is_dir() else None


def default_trainer() -> Trainer:
    """train_grpo, imported only when a stage trains (trl, peft and torch load then)."""
    try:
        from moot.training.grpo import train_grpo
    except ImportError as exc:
        raise ConfigError(
            f"GRPO training needs the train extra: pip install 'moot[train]' ({type(exc).__name__}: {exc})"
        ) from None
    return train_grpo


def run_stage(
    config: TrainConfig,
    stage: Stage,
    stage_config: StageConfig,
    examples: Sequence[TrainingExample],
    examples_file: Path,
    rewards: Sequence[RewardPart],
    init_adapter: Path | None,
    console: Console | None,
    trainer: Trainer | None = None,
    upstream: str | None = None,
) -> StageOutcome:
    """One GRPO stage into OUTPUT/<stage>/: skipped when complete.json says it finished with the same inputs.

    A stage folder holding a training on other examples, rewards or starting adapter is refused (resuming
    it would mix two trainings in one adapter); other changes go to train_grpo, which continues a stage
    asked for more steps and refuses the rest."""
    folder = config.output / stage
    settings = stage_config.settings()
    inputs = stage_inputs(config, settings, examples_file, rewards, init_adapter, upstream)
    fingerprint = _digest(inputs)
    done = finished_stage(folder, fingerprint)
    if done is not None:
        return StageOutcome(stage, done, skipped=True, fingerprint=fingerprint)
    recorded = folder / INPUTS
    if recorded.is_file() and _trained(folder):
        try:
            before = json.loads(recorded.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"{recorded}: unreadable ({exc}); move {folder} away to train this stage afresh"
            ) from None
        changed = [what for key, what in _FIXED.items() if before.get(key) != inputs[key]]
        if changed:
            raise ConfigError(
                f"{folder} holds a training on other {', '.join(changed)}; move that folder away (or choose "
                "another output folder) to train this stage afresh"
            )
    check_folder(folder)  # a stage folder that is a link is not written into
    folder.mkdir(exist_ok=True)
    write_output(recorded, lambda file: file.write_text(json.dumps(inputs, indent=1), encoding="utf-8"))
    if console is not None:
        console.print(
            f"stage {stage}: {settings.steps} GRPO steps on {len(examples)} examples, {config.model} through "
            "transformers (loading it takes a minute on a CPU)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    train = trainer or default_trainer()
    result = train(
        model=config.model,
        examples=examples,
        rewards=rewards,
        settings=settings,
        output_dir=folder,
        init_adapter=init_adapter,
        console=console,
    )
    summary = json.dumps(_result_json(result, fingerprint), indent=1)
    write_output(folder / COMPLETE, lambda file: file.write_text(summary, encoding="utf-8"))
    return StageOutcome(stage, result, skipped=False, fingerprint=fingerprint)


def _trained(folder: Path) -> bool:
    """Whether a stage folder holds any training: a finished stage or a checkpoint."""
    return (folder / COMPLETE).is_file() or any((folder / "checkpoints").glob("checkpoint-*"))


def _split_arg(split: str) -> str | None:
    return None if split in (GENERATED, "file") else split


def heldout_questions(config: TrainConfig, task: Task) -> list[Question]:
    """The evaluation's questions, none of them a training question: from the evaluation split, or, when
    it is the training split, the ones after the training questions in the same seeded order."""
    n, m, seed = config.targets.questions, config.evaluation.questions, config.targets.seed
    split = config.evaluation_split()
    try:
        if split == config.training_split():
            return list(task.questions(n + m, seed, _split_arg(split))[n:])
        return list(task.questions(m, seed, _split_arg(split)))
    except ConfigError as exc:
        raise ConfigError(f"evaluation.questions: {exc}") from None


def evaluation_backend(config: TrainConfig, adapter: Path | None) -> BackendConfig:
    """The hf backend with the model (and ``adapter``), plus ``evaluation.backend``'s options."""
    from moot.backends.config import BACKEND_KINDS, parse_backend

    if "hf" not in BACKEND_KINDS:
        raise ConfigError(
            "the evaluation needs moot's hf backend (pip install 'moot[train]'); or set evaluation.enabled = false"
        )
    extra = {"adapter": str(adapter)} if adapter is not None else {}
    try:
        return parse_backend(**{**config.evaluation.backend, "kind": "hf", "model": config.model, **extra})
    except ValidationError as exc:
        raise _format_error(exc, "evaluation.backend") from None


def evaluation_experiment(config: TrainConfig, questions: Sequence[Question], adapter: Path | None) -> ExperimentConfig:
    """The base model (and the trained one, when there is an adapter) debating the held-out questions
    under the evaluation's preset, on the hf backend: conditions ``base`` and ``trained``, paired on the
    same questions and seeds."""
    from moot.debate.agents import Sampling
    from moot.runner.config import AgentTemplate, ConditionConfig, ExperimentConfig, TaskSelection

    e = config.evaluation
    count = e.agents or _preset_agents(e.protocol)
    variants = [("base", None), *([("trained", adapter)] if adapter is not None else [])]
    conditions = tuple(
        ConditionConfig(
            name=name,
            protocol=e.protocol,
            agents=[AgentTemplate(backend=evaluation_backend(config, weights))] * count,
            rounds=e.rounds,
        )
        for name, weights in variants
    )
    split = config.evaluation_split()
    return ExperimentConfig(
        name="evaluation",
        seeds=(config.targets.seed,),
        tasks=(
            TaskSelection(
                name=config.task, data=config.data, split=_split_arg(split), ids=tuple(q.id for q in questions)
            ),
        ),
        agent=AgentTemplate(sampling=Sampling(temperature=e.temperature, top_p=e.top_p, max_tokens=e.max_tokens)),
        conditions=conditions,
    )


def _preset_agents(protocol: str) -> int:
    from moot.debate.protocol_presets import resolve_protocol

    return resolve_protocol(protocol).agents


def calibration_table(store: Path) -> dict[str, dict[str, float | int | None]]:
    """Per condition, Zhu et al.'s Table 6 over every agent turn with a stated confidence, as ``moot
    report`` counts them: Brier, ECE, AUROC, accuracy, and turns without a confidence."""
    from moot.analysis.calibration import calibrate
    from moot.runner.store import RunStore

    turns: dict[str, list[tuple[float | None, bool]]] = {}
    db = RunStore.read(store)
    try:
        for stored in db.iter_results():
            for record in stored.result.rounds:
                for turn in record.turns:
                    turns.setdefault(stored.condition, []).append((turn.confidence, bool(turn.correct)))
    finally:
        db.close()
    table: dict[str, dict[str, float | int | None]] = {}
    for condition, pairs in turns.items():
        stated = [(c / SCALE, right) for c, right in pairs if c is not None]
        row: dict[str, float | int | None] = {
            "turns": len(pairs),
            "missing": len(pairs) - len(stated),
            "accuracy": sum(right for _, right in pairs) / len(pairs) if pairs else None,
        }
        if stated:
            cal = calibrate([c for c, _ in stated], [r for _, r in stated])
            row |= {"brier": cal.brier, "ece": cal.ece, "auroc": cal.auroc}
        else:
            row |= {"brier": None, "ece": None, "auroc": None}
        table[condition] = row
    return table


def run_evaluation(
    config: TrainConfig, task: Task, adapter: Path | None, tag: str, on_progress: Callable[[int, int], None] | None
) -> EvaluationOutcome:
    """The evaluation run (resumable) into OUTPUT/evaluation-<tag>.sqlite, and its Table 6."""
    from moot.runner.experiment import Experiment

    store = config.output / f"evaluation-{tag}.sqlite"
    experiment = Experiment(evaluation_experiment(config, heldout_questions(config, task), adapter), store)
    counted = {"done": 0, "pending": 0}

    def on_start(pending: int) -> None:
        counted["pending"] = pending
        if on_progress is not None:
            on_progress(0, pending)

    def on_result(unit: object, result: object) -> None:
        counted["done"] += 1
        if on_progress is not None:
            on_progress(counted["done"], counted["pending"])

    try:
        asyncio.run(experiment.run(on_result=on_result, on_start=on_start))
    finally:
        experiment.close()
    return EvaluationOutcome(store, calibration_table(store))


def run_pipeline(
    config: TrainConfig,
    console: Console | None = None,
    *,
    trainer: Trainer | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> TrainOutcome:
    """The whole recipe; ``trainer`` replaces train_grpo (tests), ``on_progress(what, done, total)`` is told
    of stage 1's and the evaluation's questions."""
    prepare_output(config)
    task = config.load_task()

    def progress(what: str) -> Callable[[int, int], None] | None:
        return None if on_progress is None else (lambda done, total: on_progress(what, done, total))

    targets = run_targets(config, progress("targets"))
    subset = harder_subset(targets.targets, config.subset.low, config.subset.high, config.subset.size)
    if not subset:
        raise ConfigError(_empty_subset(config, targets.targets))
    questions = {t.question.id: t.question for t in subset}
    stage_inputs: list[tuple[Stage, StageConfig, list[TrainingExample]]] = []
    if config.expression.enabled:
        stage_inputs.append(("expression", config.expression, expression_examples(task, subset)))
    if config.perception.enabled:
        p = config.perception
        stage_inputs.append(
            ("perception", p, perception_examples(task, subset, p.agents, p.draws, config.targets.seed))
        )
    files: dict[str, Path] = {}
    stages: list[StageOutcome] = []
    adapter: Path | None = None
    for stage, stage_config, examples in stage_inputs:
        files[stage] = config.output / f"{stage}.jsonl"
        write_examples(examples, files[stage])
        rewards = stage_rewards(
            stage,
            task,
            questions,
            correctness=config.rewards.correctness,
            calibration=config.rewards.calibration,
            engagement=config.rewards.engagement,
            calibration_target=config.rewards.calibration_target,
            scale=SCALE,
        )
        upstream = stages[-1].fingerprint if stages else None
        outcome = run_stage(
            config, stage, stage_config, examples, files[stage], rewards, adapter, console, trainer, upstream
        )
        stages.append(outcome)
        adapter = outcome.result.adapter_dir
    evaluation = None
    if config.evaluation.enabled:
        tag = _adapter_tag(stages)
        evaluation = run_evaluation(config, task, adapter, tag, progress("evaluation"))
    return TrainOutcome(targets, len(subset), files, tuple(stages), evaluation)


def _adapter_tag(stages: Sequence[StageOutcome]) -> str:
    """A short name for what the evaluation compares (the last stage's inputs), so that a retrained adapter
    never reuses an old evaluation run."""
    return stages[-1].fingerprint[:10] if stages else "base"


def _empty_subset(config: TrainConfig, targets: Sequence[QuestionTarget]) -> str:
    s = config.subset
    if not targets:
        return "stage 1 gave no question a target (every question's calls failed); see targets.sqlite"
    accuracies = sorted(t.accuracy for t in targets)
    mean = sum(accuracies) / len(accuracies)
    return (
        f"subset: no question of {len(targets)} has a self-consistency accuracy in [{s.low:g}, {s.high:g}] "
        f"(mean accuracy {mean:.2f}, from {accuracies[0]:.2f} to {accuracies[-1]:.2f}); widen subset.low and "
        "subset.high, sample more questions (targets.questions) or choose a task nearer the model's level"
    )


__all__ = [
    "EvaluationOutcome",
    "StageOutcome",
    "TrainOutcome",
    "calibration_table",
    "evaluation_backend",
    "evaluation_experiment",
    "heldout_questions",
    "run_pipeline",
]
