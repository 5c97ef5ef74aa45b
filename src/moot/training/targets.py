"""Stage 1 of the recipe: self-consistency confidence targets (Zhu et al., appendix B.1).

Each training question is answered ``targets.samples`` times, independently, exactly as the
``confidence`` preset's round 0 asks it (the question, then the request for "Confidence: N"), by a
moot experiment: one condition, the ``confidence`` preset with one round and as many agents as
samples, so each agent's call seed differs and the samples are independent. It runs through
moot.runner into ``OUTPUT/targets.sqlite``: every call is stored as it completes, a killed stage
resumes, and a rerun of a finished stage replays from the store without building a backend.

A question's target is the fraction of its samples whose extracted answer is right (its
self-consistency accuracy); its majority answer is the plurality of the parsed answers. A question
whose calls failed (status ``error``) has no target and is left out, counted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from moot.debate.components.aggregation import majority_vote
from moot.debate.records import FinalStatus, Turn
from moot.errors import ConfigError
from moot.outputs import write_output
from moot.tasks.base import Question

if TYPE_CHECKING:
    from moot.runner.config import ExperimentConfig
    from moot.training.config import TrainConfig

STORE = "targets.sqlite"
TABLE = "targets.jsonl"
CONDITION = "self-consistency"
PROTOCOL = "confidence"  # its round 0 is what the expression stage trains on


@dataclass(frozen=True)
class QuestionTarget:
    """One training question's stage-1 samples and what they say: the majority answer and the fraction
    right (the confidence target, in [0, 1])."""

    question: Question
    samples: tuple[Turn, ...]
    majority: str | None
    accuracy: float

    @property
    def answers(self) -> tuple[str | None, ...]:
        return tuple(t.answer for t in self.samples)


@dataclass(frozen=True)
class TargetsOutcome:
    """What stage 1 left: the store, the table, the targets, and what this session did."""

    store: Path
    table: Path
    targets: tuple[QuestionTarget, ...]
    failed: int  # questions whose calls failed for good (no target)
    calls: int
    replayed: int


def _split(config: TrainConfig) -> str | None:
    split = config.training_split()
    return None if split in ("generated", "file") else split


def targets_experiment(config: TrainConfig) -> ExperimentConfig:
    """The moot experiment of stage 1: the confidence preset's round 0, ``samples`` agents, one round."""
    from moot.backends.config import BackendConfig
    from moot.debate.agents import Sampling
    from moot.runner.config import AgentTemplate, ConditionConfig, ExperimentConfig, TaskSelection

    t = config.targets
    backend: BackendConfig = config.sampling_backend()
    return ExperimentConfig(
        name="targets",
        seeds=(t.seed,),
        concurrency=t.concurrency,
        tasks=(
            TaskSelection(name=config.task, data=config.data, split=_split(config), count=t.questions, seed=t.seed),
        ),
        agent=AgentTemplate(
            backend=backend, sampling=Sampling(temperature=t.temperature, top_p=t.top_p, max_tokens=t.max_tokens)
        ),
        conditions=(ConditionConfig(name=CONDITION, protocol=PROTOCOL, agents=t.samples, rounds=1),),
    )


def question_target(question: Question, turns: Sequence[Turn]) -> QuestionTarget:
    """A question's target from its samples: the fraction right, and the plurality of parsed answers
    (ties: the earliest sample's answer, as moot's majority vote)."""
    right = sum(bool(t.correct) for t in turns)
    return QuestionTarget(question, tuple(turns), majority_vote([t.answer for t in turns]).winner, right / len(turns))


def read_targets(store: Path) -> tuple[list[QuestionTarget], int]:
    """The targets of a stage-1 store (read only), in its question order, and how many questions failed."""
    from moot.runner.store import RunStore

    targets, failed = [], 0
    db = RunStore.read(store)
    try:
        for stored in db.iter_results():
            result = stored.result
            if result.status is FinalStatus.ERROR or not result.rounds:
                failed += 1
                continue
            targets.append(question_target(result.question, result.rounds[0].turns))
    finally:
        db.close()
    return targets, failed


def write_table(targets: Sequence[QuestionTarget], path: Path) -> None:
    """One JSON line per question: id, gold, the samples' answers and confidences, majority, accuracy
    (written whole or not at all, never through a link: ``moot.outputs.write_output``)."""
    rows = []
    for target in targets:
        row = {
            "question_id": target.question.id,
            "gold": target.question.gold,
            "answers": list(target.answers),
            "confidences": [t.confidence for t in target.samples],
            "correct": [bool(t.correct) for t in target.samples],
            "majority": target.majority,
            "accuracy": target.accuracy,
        }
        rows.append(json.dumps(row) + "\n")
    write_output(path, lambda file: file.write_text("".join(rows), encoding="utf-8"))


def run_targets(config: TrainConfig, on_progress: Callable[[int, int], None] | None = None) -> TargetsOutcome:
    """Run (or resume, or replay) stage 1 into ``OUTPUT/targets.sqlite`` and read its targets.

    ``on_progress(done, pending)`` is told after each question this session runs."""
    from moot.runner.experiment import Experiment

    store = config.output / STORE
    try:
        experiment = Experiment(targets_experiment(config), store)
    except ConfigError as exc:
        if "holds a run of a different experiment" not in str(exc):
            raise
        raise ConfigError(
            f"{store} holds stage 1 with other settings (the task, data, model, backend or a targets.* key "
            "changed); choose another output folder, or move that store away to sample afresh"
        ) from None
    done = pending = 0

    def on_result(unit: object, result: object) -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(done, pending)

    def on_start(count: int) -> None:
        nonlocal pending
        pending = count
        if on_progress is not None:
            on_progress(0, pending)

    try:
        outcome = asyncio.run(experiment.run(on_result=on_result, on_start=on_start))
    finally:
        experiment.close()
    targets, failed = read_targets(store)
    table = config.output / TABLE
    write_table(targets, table)
    return TargetsOutcome(store, table, tuple(targets), failed, outcome.calls, outcome.replayed)
