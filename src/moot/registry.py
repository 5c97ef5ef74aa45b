"""One registry type for every kind of extension: tasks, parametrised task families, data-file formats, answer
formats, backend kinds, scripted models and each family of debate components.

A ``Registry`` maps names to what they name, in registration order, and has one set of rules for all of them:

- ``register(name, entry)`` checks the name (``check_name``, where the kind restricts its names) and refuses a
  name already taken by another definition. The same definition again (its module run twice, or a copy of one
  plug-in file loaded from another path, whose source is the same text) replaces itself; anything else, even a
  class of the same name from another module, is an error naming both, never a silent replacement.
- Reading it (``reg[name]``, ``name in reg``, iterating, ``lookup``) first runs its ``load`` function once:
  what fills it lazily (moot's own modules, found by name; installed plug-ins' entry points), so that
  ``moot --help`` imports none of them. While it loads, reads see what is registered so far.
- ``lookup(name)`` is a look-up whose miss is one error naming the kind and the closest known name.

Setting and deleting items directly (``reg[name] = x``, ``pop``) bypasses the checks: it is there for tests
that put a registry back as they found it (``monkeypatch.setitem``). Code registers with ``register``.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Generic, TypeVar

from moot.errors import ConfigError, unknown_name

FILE_PLUGIN = "moot_plugin_"  # the prefix of a plug-in file's module name (``moot.debate.registry.load_plugin``)

T = TypeVar("T")


def same_definition(known: Any, new: Any) -> bool:
    """Whether ``new`` may take the name ``known`` is registered under: the same object; the same definition
    (its module run again: same module and qualified name); or a definition of the same name whose source is the
    same text (a copy of one plug-in file loaded from another path: a notebook running two experiments that each
    carry it), or an equal value (a record such as an answer format, made again). Anything else would silently
    replace what every run of that name means."""
    if known is new or (not isinstance(known, type) and known == new):
        return True
    (k_module, k_name), (n_module, n_name) = [
        (getattr(x, "__module__", None), getattr(x, "__qualname__", None)) for x in (known, new)
    ]
    if k_name is None or k_name != n_name:
        return False
    if k_module == n_module and "<" not in k_name:  # a lambda or a local definition is not known by its name
        return True
    try:
        return inspect.getsource(known) == inspect.getsource(new)
    except (OSError, TypeError):  # no source to compare (made at run time): not the same
        return False


def where(entry: Any) -> str:
    """How an error names a definition: a plug-in file's by its qualified name and path, any other by module and
    qualified name (a value with neither, by its repr)."""
    module = getattr(entry, "__module__", None)
    qualname = getattr(entry, "__qualname__", None)
    if module is None or qualname is None:
        return repr(entry)
    path = getattr(sys.modules.get(module), "__file__", None)
    if module.startswith(FILE_PLUGIN) and path:
        return f"{qualname} in {path}"
    return f"{module}.{qualname}"


class Registry(MutableMapping[str, T], Generic[T]):
    """Named extensions of one kind (``kind`` is how errors name one: "task", "backend kind", "stopping
    rule"); see the module's docstring for the rules."""

    def __init__(
        self,
        kind: str,
        *,
        check_name: Callable[[str], str | None] | None = None,
        load: Callable[[], object] | None = None,
        error: type[Exception] = ConfigError,
    ) -> None:
        self.kind = kind
        self._check_name = check_name
        self._load = load
        self._loaded = load is None
        self._error = error
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T) -> T:
        """Make ``entry`` known as ``name``; returns it (so that a decorator can return what it registers)."""
        problem = self._check_name(name) if self._check_name is not None else None
        if problem is not None:
            raise self._error(problem)
        known = self._entries.get(name)
        if known is not None and not same_definition(known, entry):
            raise self._error(
                f"{self.kind} {name!r} is already registered by {where(known)}; {where(entry)} cannot register it too"
            )
        self._entries[name] = entry
        return entry

    def loaded(self) -> dict[str, T]:
        """Every entry, by name in registration order, once whatever fills the registry has run."""
        if not self._loaded:
            self._loaded = True  # first: what the loader registers, and reads while it runs, do not load again
            assert self._load is not None
            self._load()
        return self._entries

    def reorder(self, key: Callable[[T], int]) -> None:
        """Sort the entries by ``key`` of each, stably (a registry whose loader imports modules in a fixed
        order lists their entries in that order, whatever was imported before)."""
        ordered = sorted(self._entries.items(), key=lambda item: key(item[1]))
        self._entries = dict(ordered)

    def lookup(self, name: str) -> T:
        """The entry ``name``; an unknown name is one error naming the closest known one (or listing them)."""
        entries = self.loaded()
        if name not in entries:
            raise self._error(unknown_name(self.kind, name, entries))
        return entries[name]

    def __getitem__(self, name: str) -> T:
        return self.loaded()[name]

    def __setitem__(self, name: str, entry: T) -> None:
        self._entries[name] = entry

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.loaded()))

    def __len__(self) -> int:
        return len(self.loaded())

    def __contains__(self, name: object) -> bool:
        return name in self.loaded()

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self._entries)})"
