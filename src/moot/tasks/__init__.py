"""Benchmarks: one module per task, plus shared answer extractors.

``get_task(name)`` builds a task reading its offline data (or generating its questions);
``get_task(name, data="hub")`` reads the Hugging Face hub instead, and
``get_task(name, data=PATH)`` (or ``load_local(task, PATH)``) a local JSONL or CSV file
in the task's schema. Each task module registers its own tasks (``moot.tasks.registry``). Parametrised
names: ``mmlu:<subject>[,<subject>...]``, ``hh-rlhf:<subset>`` (e.g. harmless-base), ``chess-move:<depth>``,
``knights:<n>`` (n people, 2 to 8), ``gsm8k:math-verify`` (GSM8K graded by the MATH task's grader: symbolic
equivalence with math-verify).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from moot.errors import ConfigError, unknown_name
from moot.tasks.base import (
    DataSource,
    Extraction,
    MetricContext,
    ParseStatus,
    Question,
    Task,
    TaskBase,
    TaskCard,
    TaskMetric,
)
from moot.tasks.registry import PARAMETRISED, TASKS


def load_local(task: Task, path: str | Path) -> Task:
    """``task`` reading its questions from a local JSONL or CSV file in its schema.

    The file is read and checked now: a missing field or a wrong type is a ConfigError
    naming the file, the row and the field. Its only split is "file".
    """
    return task.with_source(DataSource("file", str(path)))


def load_hub(task: Task, repo: str | None = None) -> Task:
    """``task`` reading the Hugging Face hub (``repo`` replaces its repository, e.g. a local copy)."""
    return task.with_source(DataSource("hub", repo))


def register_task(name: str, factory: Callable[[], Task]) -> None:
    """Make ``factory`` (a Task class, or a function of no argument returning a task) task ``name``, for
    ``get_task``, experiment files, ``moot run --task`` and ``moot tasks``. A plug-in calls it (or declares
    an entry point in the group ``moot.tasks``, see ``moot.plugins``). Registering the same factory again is
    a no-op; a name already taken by another factory, or one that cannot be a task's name, is a ConfigError."""
    TASKS.register(name, factory)


def load_installed() -> tuple[str, ...]:
    """Register every installed ``moot.tasks`` plug-in (entry points) under its name; their names. The
    entry points are loaded once; registering them again changes nothing."""
    from moot.plugins import task_factories

    for name, factory in task_factories():
        register_task(name, factory)
    return tuple(name for name, _ in task_factories())


# the methods moot calls on every task, which a plug-in's factory must return an object with
TASK_MEMBERS = ("card", "questions", "render", "extract", "score", "provenance")


def new_task(name: str) -> Task:
    """A new task from the factory registered as ``name``. A plug-in's factory (an installed package's entry
    point, or one a plug-in file registered) is plug-in code: whatever it raises is one ConfigError naming the
    plug-in (``moot.plugins.plugin_code``), never a traceback."""
    from moot.plugins import plugin_code, task_plugin

    factory = TASKS[name]
    named = task_plugin(name, factory)
    if named is None:
        return factory()
    with plugin_code(f"{named} failed to make its task"):
        task = factory()
    missing = [member for member in TASK_MEMBERS if not callable(getattr(task, member, None))]
    if missing:  # what it made is not a task: one line now, rather than an AttributeError wherever moot uses it
        raise ConfigError(f"{named} made {type(task).__name__}, not a task (it has no {', '.join(missing)})")
    return task


def get_task(name: str, data: str | Path | None = None) -> Task:
    """The task called ``name``; ``data``: None (offline or generated), "hub", or a local file."""
    base, colon, argument = name.partition(":")
    if colon and base in PARAMETRISED:
        task = PARAMETRISED[base](argument)
    elif name in TASKS:
        task = new_task(name)
    else:
        raise ConfigError(unknown_name("task", name, [*sorted(TASKS), *(f"{p}:..." for p in sorted(PARAMETRISED))]))
    if data is None:
        return task
    if str(data) == "hub":
        return load_hub(task)
    return load_local(task, data)


__all__ = [
    "load_installed",
    "PARAMETRISED",
    "TASKS",
    "DataSource",
    "Extraction",
    "MetricContext",
    "ParseStatus",
    "Question",
    "Task",
    "TaskBase",
    "TaskCard",
    "TaskMetric",
    "get_task",
    "new_task",
    "register_task",
    "load_hub",
    "load_local",
]
