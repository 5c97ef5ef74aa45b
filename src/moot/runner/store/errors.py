"""The store's one error, ``StoreError``, and how SQLite faults become it.

Every SQLite fault (a damaged file, a missing table, bad JSON, a read-only file or folder, a full
disk) is raised as a ``StoreError`` naming the store, never as a raw sqlite3 error: ``_store_error``
words one, and ``_guarded`` wraps a ``RunStore`` method so that its faults are raised so.
"""

from __future__ import annotations

import functools
import inspect
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moot.errors import MootError

if TYPE_CHECKING:
    from moot.runner.store.run_store import RunStore


class StoreError(MootError):
    """The store cannot be read or written, is held by another run, or was written by an incompatible moot."""


def _store_error(path: Path, exc: Exception) -> StoreError:
    """One line for a SQLite fault (or bad stored JSON), naming the store and what to do."""
    if isinstance(exc, json.JSONDecodeError):
        return StoreError(f"{path} is damaged: a stored value is not valid JSON ({exc})")
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text:
        return StoreError(f"{path} is damaged and cannot be read ({text}); restore it from a copy")
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return StoreError(f"cannot write {path}: the disk is full; free some space and rerun to resume")
    if name.startswith("SQLITE_READONLY") or "readonly" in text:
        return StoreError(f"cannot write {path}: it or its folder is read-only ({text})")
    if name.startswith("SQLITE_CANTOPEN") or "unable to open" in text:
        return StoreError(f"cannot open {path} ({text}); check that it and its folder exist and are accessible")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreError(f"{path} is busy ({text}); another process is writing it")
    if "no such table" in text or "no such column" in text:
        return StoreError(f"{path} is not a complete moot run store ({text})")
    if name.startswith("SQLITE_IOERR"):
        return StoreError(f"cannot read or write {path}: input/output error ({text})")
    return StoreError(f"{path}: {text}")


_FAULTS = (sqlite3.Error, json.JSONDecodeError)


def _guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of RunStore with its SQLite faults raised as a StoreError naming the store."""
    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def generator(self: RunStore, *args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from method(self, *args, **kwargs)
            except _FAULTS as exc:
                raise _store_error(self.path, exc) from None

        return generator

    @functools.wraps(method)
    def wrapper(self: RunStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except _FAULTS as exc:
            raise _store_error(self.path, exc) from None

    return wrapper
