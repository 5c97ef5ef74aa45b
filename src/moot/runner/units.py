"""The runner's unit of work (one question under one condition with one seed), the questions a task
selection picks, and which conditions share their round-0 calls: what decides the units of a run and
which of their calls are made once."""

from __future__ import annotations

from dataclasses import dataclass

from moot.errors import ConfigError
from moot.runner.config import ResolvedCondition, TaskSelection
from moot.tasks import Question, Task


@dataclass(frozen=True)
class Unit:
    """One question under one condition with one seed: the unit of work, storage and resume."""

    condition: ResolvedCondition
    task: Task
    question: Question
    seed: int

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.condition.name, self.task.name, self.question.id, self.seed)


def select_questions(task: Task, selection: TaskSelection, where: str) -> list[Question]:
    if selection.split is not None and selection.split not in task.splits:
        raise ConfigError(f"{where}.split: task {task.name} has splits {', '.join(task.splits)}")
    try:
        if selection.ids is not None:
            return task.by_ids(selection.ids, selection.split)
        if selection.count is None:  # a data file task given neither count nor ids: every row, in file order
            from moot.tasks.data import DatasetTask

            assert isinstance(task, DatasetTask), "only a data file task may omit count and ids"
            return list(task.items(selection.split))
        return task.questions(selection.count, selection.seed, selection.split)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def round0_sharing(conditions: tuple[ResolvedCondition, ...], share: bool) -> dict[str, list[str]]:
    """For each condition, the conditions whose round-0 calls it shares (same agent spec and name, and both
    starting from independent answers: Liang's debaters do not)."""
    if not share:
        return {c.name: [] for c in conditions}
    specs = {c.name: {a.name: a for a in c.agents} if c.protocol.style.shares_round0() else {} for c in conditions}
    return {
        c.name: [
            other.name
            for other in conditions
            if other.name != c.name and any(specs[other.name].get(a.name) == a for a in c.agents)
        ]
        for c in conditions
    }
