"""The task registries: tasks by name (``arithmetic``), and parametrised families by prefix (``knights:<n>``).

Each of moot's task modules registers its own tasks where it defines them (``TASKS.register``,
``PARAMETRISED.register``); a plug-in calls ``moot.tasks.register_task`` or declares an entry point in the group
``moot.tasks``. The first read of either registry imports moot's task modules (``BUILT_IN``, by name: this module
imports none of them) and then installed plug-ins, and lists moot's tasks in ``BUILT_IN``'s order whatever was
imported before, so ``moot tasks`` prints the same table however it was reached.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from moot.registry import Registry

if TYPE_CHECKING:
    from moot.tasks.base import Task

# moot's task modules, in the order ``moot tasks`` lists their tasks
BUILT_IN = tuple(
    f"moot.tasks.{name}"
    for name in (
        "arithmetic", "gsm8k", "math_task", "mmlu", "csqa", "hellaswag", "arc", "gpqa", "quality", "hh_rlhf",
        "biographies", "chess_tasks", "knights",
    )
)  # fmt: skip


def task_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a task (spaces, ':', ',' or '=', or over 80 characters), or None."""
    if not name or name != name.strip() or any(c in name for c in ":,= \t\n") or len(name) > 80:
        return f"task name {name[:80]!r}: a task's name has no spaces, ':', ',' or '='"
    return None


_loaded = False


def _load() -> None:
    """Import moot's task modules in ``BUILT_IN``'s order, list their entries in that order, then register
    installed plug-ins' tasks (once)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILT_IN:
        importlib.import_module(module)
    rank = {module: index for index, module in enumerate(BUILT_IN)}
    for registry in (TASKS, PARAMETRISED):
        registry.reorder(lambda entry: rank.get(getattr(entry, "__module__", ""), len(rank)))
    from moot.tasks import load_installed

    load_installed()


# name -> a Task class, or a function of no argument that makes the task
TASKS: Registry[Callable[[], Task]] = Registry("task", check_name=task_name_problem, load=_load)
# NAME:ARGUMENT -> a function of the argument that makes the task (its errors name the argument's form)
PARAMETRISED: Registry[Callable[[str], Task]] = Registry("parametrised task", check_name=task_name_problem, load=_load)
