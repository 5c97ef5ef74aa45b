"""Plug-ins: debate rules, tasks and backends of one's own, from installed packages or from Python files.

An installed package declares entry points (in its ``pyproject.toml``, ``[project.entry-points."GROUP"]``):

- ``moot.components``: ``NAME = "package.module"``, a module whose import ``@register``s its rules
  (``moot.debate.registry.register``);
- ``moot.tasks``: ``NAME = "package.module:Factory"``, a Task class or a function of no argument that returns
  a task; it is registered as task ``NAME`` (``moot.tasks.register_task``);
- ``moot.backends``: ``NAME = "package.module"``, a module whose import registers backend kinds
  (``moot.backends.config.register_backend``) or scripted models (``moot.backends.scripted.register_scripted_model``).

They are loaded once, lazily, the first time moot looks a rule, a task or a backend kind up (so ``moot --help`` imports
none of them); a plug-in that fails to load is one ``ConfigError`` naming its entry point. A Python file that
is not installed is loaded by path: ``plugins = [...]`` in an experiment file (a file in its folder or below),
or ``moot --plugin FILE``.

A plug-in is code, and loading it runs it: an experiment file that names plug-ins must be trusted like a
script. Whatever a plug-in raises while loading, ``SystemExit`` included (but not ``KeyboardInterrupt``), is a
``ConfigError`` naming it (``plugin_code``), and so is whatever a plug-in's task factory raises when moot makes
its task (``moot.tasks.new_task``): no plug-in ends moot silently, or with a traceback.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Any

from moot.errors import ConfigError
from moot.registry import FILE_PLUGIN as FILE_PLUGIN

COMPONENTS = "moot.components"
TASKS = "moot.tasks"
BACKENDS = "moot.backends"
GROUPS = (COMPONENTS, TASKS, BACKENDS)


def _entry_points(group: str) -> list[metadata.EntryPoint]:
    """The installed entry points of ``group``, in a stable order (by name, then value)."""
    return sorted(metadata.entry_points(group=group), key=lambda ep: (ep.name, ep.value))


def _named(entry: metadata.EntryPoint) -> str:
    """How an error names a plug-in: its name and the entry point that declares it."""
    return f"plug-in {entry.name!r} (entry point {entry.group}: {entry.name} = {entry.value!r})"


@contextlib.contextmanager
def plugin_code(named: str) -> Iterator[None]:
    """Run a plug-in's code: whatever it raises but KeyboardInterrupt (an error, ``SystemExit(0)``, which would
    end moot with status 0 and no word) is a ConfigError '<named>: <exception>'."""
    try:
        yield
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise ConfigError(f"{named}: {type(exc).__name__}: {exc}") from None


def _load(entry: metadata.EntryPoint) -> Any:
    with plugin_code(f"{_named(entry)} failed to load"):
        return entry.load()


@functools.cache
def _import_group(group: str) -> tuple[str, ...]:
    """Import every installed plug-in of ``group`` whose import registers what it holds (once); their names."""
    names = []
    for entry in _entry_points(group):
        _load(entry)
        names.append(entry.name)
    return tuple(names)


def load_components() -> tuple[str, ...]:
    """Import every installed ``moot.components`` plug-in (once); the names of those loaded."""
    return _import_group(COMPONENTS)


@functools.cache
def _task_entries() -> tuple[tuple[metadata.EntryPoint, Callable[[], Any]], ...]:
    """Every installed ``moot.tasks`` plug-in's entry point and factory (loaded once)."""
    out = []
    for entry in _entry_points(TASKS):
        factory = _load(entry)
        if not callable(factory):
            raise ConfigError(f"{_named(entry)} is not a task factory (a Task class or a function that returns a task)")
        out.append((entry, factory))
    return tuple(out)


def task_factories() -> tuple[tuple[str, Callable[[], Any]], ...]:
    """Every installed ``moot.tasks`` plug-in's factory, by its entry-point name (loaded once);
    ``moot.tasks.load_installed`` registers them (so this module never imports the tasks)."""
    return tuple((entry.name, factory) for entry, factory in _task_entries())


def origin(thing: Any) -> str:
    """``moot`` for moot's own code, a plug-in file's path (``moot --plugin``, ``plugins = [...]``), else the
    registering module's name (an installed package's)."""
    module = getattr(thing, "__module__", None) or "?"
    if module == "moot" or module.startswith("moot."):
        return "moot"
    if module.startswith(FILE_PLUGIN):
        return str(getattr(sys.modules.get(module), "__file__", None) or module)
    return module


def task_plugin(name: str, factory: Callable[[], Any]) -> str | None:
    """How an error names the plug-in whose task factory ``factory`` is registered as ``name``: an installed
    plug-in by its entry point, any other by the module (a plug-in file: its path) that registered it; None
    for moot's own tasks. Calling a plug-in's factory runs its code (``moot.tasks.new_task``)."""
    for entry, installed in _task_entries():
        if installed is factory:
            return _named(entry)
    where = origin(factory)
    return None if where == "moot" else f"plug-in task {name!r} (from {where})"


def load_backends() -> tuple[str, ...]:
    """Import every installed ``moot.backends`` plug-in (once); the names of those loaded."""
    return _import_group(BACKENDS)
