"""Benchmarks: one module per task, plus shared answer extractors.

``get_task(name)`` builds a task reading its offline data (or generating its questions);
``get_task(name, data="hub")`` reads the Hugging Face hub instead, and
``get_task(name, data=PATH)`` (or ``load_local(task, PATH)``) a local JSONL or CSV file
in the task's schema. Parametrised names: ``mmlu:<subject>[,<subject>...]``,
``hh-rlhf:<subset>`` (e.g. harmless-base), ``chess-move:<depth>``, ``knights:<n>`` (n people, 2 to 8),
``gsm8k:math-verify`` (GSM8K graded
by the MATH task's grader: symbolic equivalence with math-verify).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from moot.errors import ConfigError, unknown_name
from moot.limits import MAX_STOCKFISH_DEPTH
from moot.tasks.arc import ARCChallengeTask
from moot.tasks.arithmetic import ArithmeticTask
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
from moot.tasks.biographies import BiographiesTask
from moot.tasks.chess_tasks import ChessMoveTask, ChessValidityTask
from moot.tasks.csqa import CommonsenseQATask
from moot.tasks.gpqa import GPQATask
from moot.tasks.gsm8k import GSM8KMathVerifyTask, GSM8KTask
from moot.tasks.hellaswag import HellaSwagTask
from moot.tasks.hh_rlhf import HHRLHFTask
from moot.tasks.knights import MAX_PEOPLE, MIN_PEOPLE, KnightsTask
from moot.tasks.math_task import MathTask
from moot.tasks.mathgrade import require_math_verify
from moot.tasks.mmlu import PRESETS, MMLUTask
from moot.tasks.quality import QualityTask

TASKS: dict[str, Callable[[], Task]] = {
    "arithmetic": ArithmeticTask,
    "gsm8k": GSM8KTask,
    "math": MathTask,
    "mmlu": MMLUTask,
    **{name: (lambda name=name: MMLUTask(PRESETS[name], name=name)) for name in PRESETS},  # type: ignore[misc]
    "csqa": CommonsenseQATask,
    "hellaswag": HellaSwagTask,
    "arc-challenge": ARCChallengeTask,
    "gpqa": GPQATask,
    "gpqa-diamond": lambda: GPQATask("diamond"),
    "gpqa-extended": lambda: GPQATask("extended"),
    "quality": QualityTask,
    "quality-hard": lambda: QualityTask(hard=True),
    "hh-rlhf": HHRLHFTask,
    "biographies": BiographiesTask,
    "chess-validity": ChessValidityTask,
    "chess-move": ChessMoveTask,
    "knights": KnightsTask,
}


def _depth(argument: str) -> ChessMoveTask:
    if not (argument.isascii() and argument.isdigit()) or not argument.strip("0"):
        raise ConfigError(f"chess-move:<depth> needs a positive integer depth, got {argument[:40]!r}")
    if len(argument.lstrip("0")) > 6 or int(argument) > MAX_STOCKFISH_DEPTH:
        raise ConfigError(
            f"chess-move:<depth>: the Stockfish depth is at most {MAX_STOCKFISH_DEPTH}, got {argument[:40]}"
        )
    return ChessMoveTask(depth=int(argument))


def _people(argument: str) -> KnightsTask:
    if not (argument.isascii() and argument.isdigit()) or len(argument) > 6:
        raise ConfigError(
            f"knights:<n> needs a number of people from {MIN_PEOPLE} to {MAX_PEOPLE}, got {argument[:40]!r}"
        )
    return KnightsTask(int(argument))


def _gsm8k_grader(argument: str) -> GSM8KMathVerifyTask:
    if argument != "math-verify":
        raise ConfigError(f"gsm8k:<grader>: the grader is math-verify, got {argument[:40]!r}")
    require_math_verify("gsm8k:math-verify")
    return GSM8KMathVerifyTask()


# name:argument -> a task built from the argument
PARAMETRISED: dict[str, Callable[[str], Task]] = {
    "mmlu": lambda argument: MMLUTask([s.strip() for s in argument.split(",")]),
    "hh-rlhf": lambda argument: HHRLHFTask(subset=argument),
    "chess-move": _depth,
    "knights": _people,
    "gsm8k": _gsm8k_grader,
}


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
    if not name or name != name.strip() or any(c in name for c in ":,= \t\n") or len(name) > 80:
        raise ConfigError(f"task name {name[:80]!r}: a task's name has no spaces, ':', ',' or '='")
    known = TASKS.get(name)
    if known is not None and known is not factory:
        raise ConfigError(f"task {name!r} is already registered (by {getattr(known, '__module__', '?')})")
    TASKS[name] = factory


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
    load_installed()  # installed plug-ins (entry points "moot.tasks")
    base, colon, argument = name.partition(":")
    if colon and base in PARAMETRISED:
        task = PARAMETRISED[base](argument)
    elif name in TASKS:
        task = new_task(name)
    else:
        raise ConfigError(unknown_name("task", name, [*sorted(TASKS), *(f"{p}:..." for p in PARAMETRISED)]))
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
