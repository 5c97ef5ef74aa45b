"""Benchmarks: one module per task, plus shared answer extractors."""

from __future__ import annotations

from collections.abc import Callable

from moot.errors import ConfigError
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import Extraction, ParseStatus, Question, Task

TASKS: dict[str, Callable[[], Task]] = {
    "arithmetic": ArithmeticTask,
}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]()
    except KeyError:
        raise ConfigError(f"unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))}") from None


__all__ = ["TASKS", "Extraction", "ParseStatus", "Question", "Task", "get_task"]
