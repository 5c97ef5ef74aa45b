"""``RunStore``: a run's SQLite file, opened to create, to write (resuming, migrating an older schema) or
to read (read-only, see ``moot.runner.store``); it writes the engine's records (calls, questions, turns and
results, sessions, metadata) and reads the same types back (``moot.runner.records``).

This module holds how a store is opened (created, checked, migrated), its metadata and sessions, and its tables
as stored (for export and merge); ``RunStore`` inherits its connection (``connection``), its calls
(``call_tables``) and its questions, turns and results (``result_tables``)."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moot import __version__
from moot.errors import MootError
from moot.outputs import SQLITE_HEADER
from moot.runner.records import RunListing, RunMeta, Session, StoredModel
from moot.runner.store.call_tables import CallTables
from moot.runner.store.codec import to_json
from moot.runner.store.errors import _FAULTS, StoreError, _guarded, _store_error
from moot.runner.store.lock import StoreLock, in_use, lock_holder
from moot.runner.store.result_tables import ResultTables
from moot.runner.store.schema import (
    MIGRATIONS,
    SCHEMA,
    SCHEMA_VERSION,
    TABLES,
    _incompatible,
    _meta,
    _schema_version,
    _set_meta,
)

if TYPE_CHECKING:
    # imported where they are used, so that opening a store and listing it (`moot runs`) loads no pydantic
    # model, protocol, backend or task code
    from moot.runner.config import ResolvedCondition


class RunStore(CallTables, ResultTables):
    """A run's SQLite file. Open with ``RunStore.create`` (new) or ``RunStore.open`` (existing)."""

    @staticmethod
    def _head(path: Path) -> bytes:
        """The first bytes of ``path``, as many as SQLite's header has (b"": an empty file). Read, not taken
        from its size: a file whose size reads as 0 may hold text (/proc/self/status)."""
        with path.open("rb") as f:
            return f.read(len(SQLITE_HEADER))

    @classmethod
    def _check(cls, db: sqlite3.Connection, path: Path) -> Any:
        """The schema version of the moot store behind ``db``; a StoreError for any other file. A file without
        SQLite's header is refused as not SQLite, whatever SQLite makes of it: to SQLite an empty file, or one
        whose size reads as 0 (/proc/self/status), is an empty database."""
        try:
            head = cls._head(path)
        except OSError as exc:
            raise StoreError(f"cannot read {path} ({exc.strerror})") from None
        if head != SQLITE_HEADER:
            what = "an empty file" if not head else "a file of another kind"
            raise StoreError(f"{path} is not a moot run store: it is not an SQLite database ({what})")
        try:
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path} is not a readable moot run store ({exc})") from None
        if "meta" not in tables:
            raise StoreError(f"{path} is not a moot run store (an SQLite database without moot's tables)")
        try:
            version = _schema_version(db)
        except _FAULTS as exc:
            raise _store_error(path, exc) from None
        missing = [t for t in TABLES if t not in tables]
        if missing:
            raise StoreError(f"{path} is not a complete moot run store: no table {', '.join(missing)}")
        if version != SCHEMA_VERSION and (not isinstance(version, int) or version not in MIGRATIONS):
            raise _incompatible(db, path, version)
        return version

    @staticmethod
    def _check_writable(path: Path) -> None:
        for target, what in ((path, "the store"), (path.parent, "its folder")):
            if not os.access(target, os.W_OK):
                raise StoreError(
                    f"cannot write {path}: {what} is read-only (a run writes the store, and keeps its .lock, "
                    "-wal and -shm files beside it)"
                )

    @classmethod
    def is_blank(cls, path: Path) -> bool:
        """True for a file a run may make its new store: an empty one (nothing in it to lose: what a run killed
        while creating its store leaves, or ``sqlite3.connect`` on a path where none was yet), or an SQLite
        database with no table (a run killed while creating it). Any other file is not: a run never takes
        over a file that holds anything."""
        try:
            head = cls._head(path)
            if head != SQLITE_HEADER:
                return head == b""
            db = cls._connect_readonly(path)
            try:
                return bool(db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0)
            finally:
                db.close()
        except (OSError, StoreError, sqlite3.DatabaseError):
            return False

    @classmethod
    def create(
        cls, path: Path, meta: dict[str, Any], conditions: dict[str, Any], lock: StoreLock | None = None
    ) -> RunStore:
        """A new store; creating it is one transaction, so a kill leaves a blank file or a whole store.

        ``lock``, when given, is acquired before the file is looked at. The folder must exist: moot
        never creates folders above a store (the experiment creates the default runs/ folder only)."""
        if not path.parent.is_dir():
            raise StoreError(f"cannot create {path}: the folder {path.parent} does not exist")
        if lock is not None:
            lock.acquire()
        if path.exists() and not cls.is_blank(path):
            raise StoreError(f"{path} already exists")
        try:
            db = cls._connect(path)
        except _FAULTS as exc:
            raise _store_error(path, exc) from None
        if lock is not None:
            try:
                lock.hold_store()  # the file exists now: hold it under any other name (a hard link) too
            except BaseException:
                db.close()
                raise
        store = cls(path, db)
        try:
            store._create(meta, conditions)
        except BaseException:
            db.close()
            raise
        return store

    @_guarded
    def _create(self, meta: dict[str, Any], conditions: dict[str, Any]) -> None:
        with self._transaction() as db:
            for statement in SCHEMA.strip().split(";"):
                if statement.strip():
                    db.execute(statement)
            base = {"schema_version": SCHEMA_VERSION, "moot_version": __version__, "created_at": time.time()}
            for key, value in (base | meta).items():
                db.execute("INSERT INTO meta VALUES (?, ?)", (key, to_json(value)))
            for name, config in conditions.items():
                db.execute("INSERT INTO conditions VALUES (?, ?)", (name, to_json(config)))

    @classmethod
    def open(cls, path: Path, accept: Callable[[RunStore], None] | None = None) -> RunStore:
        """An existing store, to write (a run resuming it); one written with an older schema is migrated.

        Nothing on disk changes before the store is accepted: the file is checked read-only first (a file
        that is not a moot store is refused unmodified), a store that another process holds is refused, and
        ``accept``, when given, is called with the store as it reads once migrated (``read``: read-only, an
        older schema migrated in memory) and refuses it by raising (a run of another experiment)."""
        if not path.is_file():
            raise StoreError(f"no run store at {path}")
        probe = cls._connect_readonly(path)
        try:
            version = cls._check(probe, path)
        finally:
            probe.close()
        holder = lock_holder(path)
        if holder is not None and holder != os.getpid():
            raise in_use(path, holder)
        if accept is not None:
            view = cls.read(path)
            try:
                accept(view)
            finally:
                view.close()
        cls._check_writable(path)
        try:
            db = cls._connect(path)
        except _FAULTS as exc:
            raise _store_error(path, exc) from None
        store = cls(path, db)
        if version != SCHEMA_VERSION:
            try:
                store._migrate()
            except BaseException:
                db.close()
                raise
        return store

    @classmethod
    def read(cls, path: Path) -> RunStore:
        """An existing store, read-only: nothing on disk changes (see ``moot.runner.store``'s docstring).

        A store of an older schema is migrated in a copy in memory; writing raises a StoreError."""
        if not path.is_file():
            raise StoreError(f"no run store at {path}")
        db = cls._connect_readonly(path)
        try:
            version = cls._check(db, path)
            if version != SCHEMA_VERSION:
                memory = cls._connect(":memory:")
                try:
                    db.backup(memory)
                except _FAULTS as exc:
                    memory.close()
                    raise _store_error(path, exc) from None
                db.close()
                db = memory
                store = cls(path, db)
                store._migrate()
                db.execute("PRAGMA query_only = 1")  # a reader's copy: writing it is an error, not lost
                return store
        except BaseException:
            db.close()
            raise
        return cls(path, db)

    @_guarded
    def _migrate(self) -> None:
        """Bring an older store to SCHEMA_VERSION, one step at a time, in one transaction."""
        from pydantic import ValidationError

        with self._transaction() as db:
            version = _schema_version(db)  # again, inside the transaction: another process may have migrated
            if version == SCHEMA_VERSION:
                return
            if not isinstance(version, int) or version not in MIGRATIONS:
                raise _incompatible(db, self.path, version)
            start = version
            while version != SCHEMA_VERSION:
                try:
                    MIGRATIONS[version](db)
                except (ValidationError, MootError, KeyError, ValueError) as exc:
                    raise StoreError(
                        f"{self.path}: cannot migrate its store schema {version} to {version + 1} ({exc})"
                    ) from None
                version += 1
            _set_meta(db, "schema_version", SCHEMA_VERSION)
            _set_meta(db, "migrated_from", start)

    # -- metadata ---------------------------------------------------------------------
    @_guarded
    def meta(self) -> dict[str, Any]:
        """The metadata as stored (key -> JSON value); ``run_meta`` reads it typed."""
        return _meta(self._db)

    @_guarded
    def set_meta(self, key: str, value: Any) -> None:
        self.set_metas({key: value})

    @_guarded
    def set_metas(self, values: Mapping[str, Any]) -> None:
        """Write every key of ``values`` in one transaction: a kill leaves all of them or none."""
        with self._transaction() as db:
            for key, value in values.items():
                _set_meta(db, key, value)

    @_guarded
    def run_meta(self) -> RunMeta:
        """The run's metadata, typed. A status "running" of a store that no process holds reads as
        "interrupted": the run was killed (``lock_holder``)."""
        from pydantic import ValidationError

        from moot.debate.registry import STORED
        from moot.runner.config import ExperimentConfig

        m = self.meta()
        try:
            return RunMeta(
                schema_version=m["schema_version"],
                moot_version=m["moot_version"],
                created_at=m["created_at"],
                name=m["name"],
                status=self._status(m),
                fingerprint_hash=m["fingerprint_hash"],
                # read as stored: a plug-in's rule or backend kind that is not loaded is kept as a record
                config=ExperimentConfig.model_validate(m["config"], context=STORED),
                round_convention=m.get("round_convention", ""),
                history_mode=m.get("history_mode", ""),
                prompt_templates=m.get("prompt_templates", {}),
                round0_sharing={k: tuple(v) for k, v in m.get("round0_sharing", {}).items()},
                topology_density=m.get("topology_density", {}),
                task_provenance=tuple(m.get("task_provenance", [])),
                models={k: StoredModel(**v) for k, v in m.get("models", {}).items()},
                summary=m.get("summary"),
                migrated_from=m.get("migrated_from"),
            )
        except (KeyError, TypeError, ValidationError) as exc:
            raise StoreError(f"{self.path}: its run metadata is incomplete or invalid ({exc})") from None

    def _status(self, meta: dict[str, Any]) -> str:
        """The stored status, as ``_read_status`` reads it."""
        return self._read_status(meta["status"])

    def _read_status(self, status: str, latest: bool = True) -> str:
        """A stored status (the run's, or a session's) as it reads: "running" is "interrupted" when no process
        holds the store (the run was killed: SIGKILL leaves it "running"), and for a session that is not the
        latest (a later run started after it was killed)."""
        if status != "running":
            return status
        return "running" if latest and lock_holder(self.path) is not None else "interrupted"

    def _selected(self, selection: dict[str, Any]) -> int:
        """The questions a stored task selection takes: its ids, its count, or (a data file task given
        neither) every row, as many as the store holds of that task once a run has read the file."""
        if selection.get("ids") is not None:
            return len(selection["ids"])
        if selection.get("count") is not None:
            return int(selection["count"])
        (stored,) = self._db.execute("SELECT COUNT(*) FROM questions WHERE task = ?", (selection["name"],)).fetchone()
        return int(stored)

    def listing(self) -> RunListing:
        """What ``moot runs`` shows of the run: its name, status (as ``run_meta`` reads it), creation time,
        moot version and planned results, from the stored metadata as written, without validating the
        experiment (so that listing loads no config, protocol or task code)."""
        m = self.meta()
        try:
            config = m["config"]
            per_seed = sum(self._selected(t) for t in config["tasks"])
            if m.get("shard") is not None:  # a shard's store plans its own questions only
                from moot.runner.store.shard import Shard

                shard = Shard.from_meta(m["shard"])
                per_seed = shard.size(per_seed) if shard is not None else per_seed
            return RunListing(
                name=str(m["name"]),
                status=str(self._status(m)),
                created_at=float(m["created_at"]),
                moot_version=str(m["moot_version"]),
                # as ExperimentConfig.planned_units: questions x seeds x conditions
                planned_units=per_seed * len(config["seeds"]) * len(config["conditions"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise StoreError(f"{self.path}: its run metadata is incomplete or invalid ({exc!r})") from None

    @_guarded
    def conditions(self) -> dict[str, ResolvedCondition]:
        """The run's conditions, resolved, in the run's order."""
        from pydantic import ValidationError

        from moot.debate.registry import STORED
        from moot.runner.config import ResolvedCondition

        out = {}
        for name, config in self._db.execute("SELECT name, config FROM conditions ORDER BY rowid"):
            try:
                out[name] = ResolvedCondition.model_validate(json.loads(config), context=STORED)
            except ValidationError as exc:
                raise StoreError(f"{self.path}: stored condition {name!r} is invalid ({exc})") from None
        return out

    @_guarded
    def start_session(self, options: dict[str, Any]) -> int:
        """A new session of the run holding the store; any session still marked running was killed, and is
        recorded as interrupted."""
        with self._transaction() as db:
            db.execute("UPDATE sessions SET status = 'interrupted' WHERE status = 'running'")
            cursor = db.execute(
                "INSERT INTO sessions (started_at, status, options) VALUES (?, 'running', ?)",
                (time.time(), to_json(options)),
            )
        self.session = int(cursor.lastrowid or 0)
        return self.session

    @_guarded
    def finish_session(self, status: str, calls: int, cached: int, copied: int = 0) -> None:
        """End this session: its status, the calls it made and replayed; ``copied``: of those replayed, the
        calls copied from other runs' stores (``calls_from``), added to the run's ``copied_calls`` (their
        time was spent by those runs, not this one's sessions)."""
        with self._transaction() as db:
            db.execute(
                "UPDATE sessions SET finished_at = ?, status = ?, calls = ?, cached = ? WHERE id = ?",
                (time.time(), status, calls, cached, self.session),
            )
            if copied:
                row = db.execute("SELECT value FROM meta WHERE key = 'copied_calls'").fetchone()
                _set_meta(db, "copied_calls", (json.loads(row[0]) if row else 0) + copied)

    @_guarded
    def sessions(self) -> list[Session]:
        """The run's sessions, in order, each status as ``_read_status`` reads it."""
        last = dict(self._db.execute("SELECT session, MAX(created_at) FROM calls GROUP BY session").fetchall())
        latest = self._db.execute("SELECT MAX(id) FROM sessions").fetchone()[0]
        return [
            Session(
                r["id"],
                r["started_at"],
                r["finished_at"],
                self._read_status(r["status"], r["id"] == latest),
                r["calls"],
                r["cached"],
                json.loads(r["options"]),
                last.get(r["id"]),
            )
            for r in self._select("SELECT * FROM sessions ORDER BY id")
        ]

    @_guarded
    def select(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """The rows of one SQL query, for a reader that aggregates (``moot view``'s counts); only SELECTs.
        A store opened with ``RunStore.read`` is read-only, so a query can change nothing there either."""
        if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
            raise StoreError(f"{self.path}: only SELECT queries are read, not {sql.split()[0]!r}")
        return self._db.execute(sql, args).fetchall()

    # -- tables as stored (for export) --------------------------------------------------
    @staticmethod
    def _check_table(table: str) -> None:
        if table not in TABLES:
            raise StoreError(f"no table {table!r}; tables: {', '.join(TABLES)}")

    @_guarded
    def rows(self, table: str) -> Iterator[dict[str, Any]]:
        """A table's rows as stored, column by column: what ``moot export`` writes."""
        self._check_table(table)
        cursor = self._db.execute(f"SELECT * FROM {table}")
        names = [c[0] for c in cursor.description]
        for row in cursor:
            yield dict(zip(names, row))

    @_guarded
    def count(self, table: str) -> int:
        self._check_table(table)
        return int(self._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    @_guarded
    def add_rows(self, table: str, rows: Iterable[Mapping[str, Any]]) -> int:
        """Insert rows into ``table`` as given, column by column, in one transaction; how many were inserted.
        For ``moot merge`` (``moot.runner.shards``), which copies other stores' rows (``rows``) into a new one."""
        self._check_table(table)
        count = 0
        with self._transaction() as db:
            for row in rows:
                columns = ", ".join(f'"{c}"' for c in row)
                db.execute(f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
                count += 1
        return count
