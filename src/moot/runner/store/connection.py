"""``StoreConnection``: a run store's SQLite connection, the base of ``RunStore`` (``run_store``) and of the
classes that hold its tables' writers and readers (``call_tables``, ``result_tables``): connecting to write or
read-only, closing, transactions and rows by column name. Apart so that each of those classes builds on it
without importing ``RunStore``."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from moot.runner.store.codec import TextSafeConnection
from moot.runner.store.errors import _FAULTS, _guarded, _store_error
from moot.runner.store.lock import lock_holder


class StoreConnection:
    """A run store's SQLite connection; ``RunStore`` opens one (``RunStore.create``, ``open``, ``read``)."""

    def __init__(self, path: Path, connection: sqlite3.Connection):
        self.path = path
        self._db = connection
        self.session: int = 0

    @staticmethod
    def _connect(path: Path | str) -> sqlite3.Connection:
        """A connection to write the store at ``path`` (":memory:": a copy in memory); every text it binds
        passes ``codec.store_text``."""
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, factory=TextSafeConnection)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=10000")
        return db

    @staticmethod
    def _connect_readonly(path: Path) -> sqlite3.Connection:
        """A read-only connection that changes nothing on disk (see ``moot.runner.store``'s docstring).

        With no -wal or -journal file beside it and no other process holding it, the file is read as
        immutable: SQLite then creates no -wal/-shm file, even for a store in WAL mode."""
        beside = [path.with_name(path.name + suffix) for suffix in ("-wal", "-journal")]
        immutable = not any(p.exists() for p in beside) and lock_holder(path) in (None, os.getpid())
        uri = path.resolve().as_uri() + "?mode=ro" + ("&immutable=1" if immutable else "")
        try:
            db = sqlite3.connect(
                uri, uri=True, isolation_level=None, check_same_thread=False, factory=TextSafeConnection
            )
            db.execute("PRAGMA busy_timeout=10000")
        except _FAULTS as exc:
            raise _store_error(path, exc) from None
        return db

    @_guarded
    def close(self) -> None:
        self._db.close()

    # -- transactions -----------------------------------------------------------------
    class _Tx:
        def __init__(self, db: sqlite3.Connection):
            self.db = db

        def __enter__(self) -> sqlite3.Connection:
            self.db.execute("BEGIN IMMEDIATE")
            return self.db

        def __exit__(self, kind: Any, *_: Any) -> None:
            # SQLite may have rolled back already (a full disk): a second ROLLBACK would hide the cause
            if kind is not None:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                return
            try:
                self.db.execute("COMMIT")
            except sqlite3.Error:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise

    def _transaction(self) -> StoreConnection._Tx:
        return StoreConnection._Tx(self._db)

    def _select(self, sql: str, *args: Any) -> Iterator[sqlite3.Row]:
        """Rows by column name (sqlite3.Row), for the typed readers of ``RunStore``'s tables."""
        cursor = self._db.cursor()
        cursor.row_factory = sqlite3.Row
        return cursor.execute(sql, args)
