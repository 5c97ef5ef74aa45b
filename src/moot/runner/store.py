"""The run store: one SQLite file per run (WAL mode), written call by call.

Every completed model call is committed at once, so a run killed at any moment
loses at most the calls in flight; a question's turns and result are committed
together in one transaction, so a question is either wholly stored or not at all.

The store writes the engine's records and reads the same types back (``results``,
``conditions``, ``run_meta`` ...; see ``moot.runner.records``): its column names and
JSON layouts stay in this module. A store written with an older schema is migrated
in place when opened for writing (``MIGRATIONS``), in one transaction.

Readers (``RunStore.read``: ``moot report``, ``export``, ``runs``) open the file read-only and change
nothing: a store closed cleanly (no ``-wal`` file beside it) is read as an immutable file, so no
``-wal``/``-shm`` file is created; a store with a ``-wal`` file (a run in progress, or one killed) is
read through it, which may create or update its ``-shm`` index but never the store itself. An older
schema is migrated in a copy in memory. A file that is not a moot store is refused, unmodified.

A run holds its store exclusively (``StoreLock``: an OS lock on ``STORE.lock`` beside it, which dies
with the process): a second run on the same store is refused, naming the first one's PID; a store
whose status says "running" while no process holds it was left by a killed run ("interrupted").

Every SQLite fault (a damaged file, a missing table, bad JSON, a read-only file or folder, a full
disk) is raised as a ``StoreError`` naming the store, never as a raw sqlite3 error.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import inspect
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moot import __version__
from moot.errors import MootError
from moot.redact import redact
from moot.runner.records import CallError, RunListing, RunMeta, Session, StoredCall, StoredModel, StoredResult

if TYPE_CHECKING:
    # imported where they are used, so that opening a store and listing it (`moot runs`) loads no pydantic
    # model, protocol, backend or task code
    from moot.backends.base import GenerationRequest, Reply
    from moot.debate.records import DebateResult, RoundRecord, Turn, Vote
    from moot.runner.config import ResolvedCondition
    from moot.tasks.base import Question

SCHEMA_VERSION = 3

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS conditions (name TEXT PRIMARY KEY, config TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS questions (
  task TEXT NOT NULL, question_id TEXT NOT NULL, prompt TEXT NOT NULL, gold TEXT NOT NULL,
  metadata TEXT NOT NULL, PRIMARY KEY (task, question_id));
CREATE TABLE IF NOT EXISTS calls (
  key TEXT PRIMARY KEY, condition TEXT NOT NULL, task TEXT NOT NULL, question_id TEXT NOT NULL,
  seed INTEGER NOT NULL, round INTEGER NOT NULL, agent TEXT NOT NULL, sample_count INTEGER NOT NULL,
  backend TEXT NOT NULL, model TEXT NOT NULL, model_name TEXT NOT NULL, request TEXT NOT NULL,
  reply TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
  latency_s REAL NOT NULL, session INTEGER NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS call_errors (
  id INTEGER PRIMARY KEY, key TEXT NOT NULL, condition TEXT NOT NULL, task TEXT NOT NULL,
  question_id TEXT NOT NULL, seed INTEGER NOT NULL, round INTEGER NOT NULL, agent TEXT NOT NULL,
  error TEXT NOT NULL, session INTEGER NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS turns (
  condition TEXT NOT NULL, task TEXT NOT NULL, question_id TEXT NOT NULL, seed INTEGER NOT NULL,
  round INTEGER NOT NULL, agent TEXT NOT NULL, call_key TEXT NOT NULL, text TEXT NOT NULL,
  answer TEXT, parse_status TEXT NOT NULL, correct INTEGER NOT NULL, confidence REAL,
  finish_reason TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
  latency_s REAL NOT NULL, shown TEXT NOT NULL, nll REAL, anll REAL, perplexity REAL,
  call_seed INTEGER, logprobs TEXT,
  PRIMARY KEY (condition, task, question_id, seed, round, agent));
CREATE TABLE IF NOT EXISTS results (
  condition TEXT NOT NULL, task TEXT NOT NULL, question_id TEXT NOT NULL, seed INTEGER NOT NULL,
  final_answer TEXT, status TEXT NOT NULL, correct INTEGER NOT NULL, rounds_used INTEGER NOT NULL,
  stop_reason TEXT NOT NULL, error TEXT, votes TEXT NOT NULL, final_judge TEXT, session INTEGER NOT NULL,
  metric REAL, metric_detail TEXT, protocol TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (condition, task, question_id, seed));
CREATE TABLE IF NOT EXISTS sessions (
  id INTEGER PRIMARY KEY, started_at REAL NOT NULL, finished_at REAL, status TEXT NOT NULL,
  calls INTEGER NOT NULL DEFAULT 0, cached INTEGER NOT NULL DEFAULT 0, options TEXT NOT NULL);
"""
# Columns added since schema 1 come last in their tables, so that migrated and new stores agree.


TABLES = ("results", "turns", "calls", "call_errors", "questions", "sessions", "conditions", "meta")


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


# -- the run's hold on its store --------------------------------------------------------------------
def lock_path(store: Path) -> Path:
    """The lock file of a store: STORE.lock beside it, present while a run holds the store."""
    return store.with_name(store.name + ".lock")


def _read_pid(fd: int) -> int:
    try:
        return int(os.pread(fd, 32, 0).decode("ascii", "replace").strip() or 0)
    except (OSError, ValueError):
        return 0


def lock_holder(store: Path) -> int | None:
    """The PID of the process holding ``store`` (0: one holds it but has not written its PID yet), or
    None when none does. Creates nothing: a store without a lock file is not held."""
    try:
        fd = os.open(lock_path(store), os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(fd)
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class StoreLock:
    """A run's exclusive hold on its store: ``flock`` on STORE.lock, which holds the PID.

    The OS releases the lock when the process ends, however it ends, so a store left by a killed
    run is free; ``release`` removes the file. ``acquire`` waits ``wait_s`` at most (a reader's
    check, ``lock_holder``, holds it for a moment) and then raises a StoreError naming the holder."""

    def __init__(self, store: Path, wait_s: float = 1.0):
        self.store = store
        self.path = lock_path(store)
        self.wait_s = wait_s
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                    raise StoreError(
                        f"cannot write {self.store}: its folder is read-only (a run keeps its .lock, -wal and "
                        "-shm files beside the store)"
                    ) from None
                raise StoreError(
                    f"cannot lock {self.store}: cannot create {self.path.name} beside it ({exc.strerror})"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _read_pid(fd)
                os.close(fd)
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                holder = f"PID {pid}" if pid else "another process"
                raise StoreError(
                    f"{self.store} is in use by another moot run ({holder}); wait for it to end, or stop it"
                ) from None
            except OSError as exc:
                os.close(fd)
                raise StoreError(f"cannot lock {self.store} ({exc.strerror})") from None
            # its last holder may have removed the file between our open and our lock: lock the file there now
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            except OSError as exc:
                os.close(fd)
                if exc.errno == errno.ENOSPC:
                    raise StoreError(f"cannot lock {self.store}: the disk is full") from None
                raise StoreError(f"cannot lock {self.store} ({exc.strerror})") from None
            self._fd = fd
            return

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self._fd)
        self._fd = None


def reply_to_json(reply: Reply) -> str:
    return json.dumps({"model": reply.model, "samples": [asdict(s) for s in reply.samples]})


def reply_from_json(text: str) -> Reply:
    from moot.backends.base import Reply, Sample, TokenLogprob

    data = json.loads(text)
    samples = []
    for s in data["samples"]:
        logprobs = s.pop("logprobs")
        lp = tuple(TokenLogprob(**t) for t in logprobs) if logprobs is not None else None
        samples.append(Sample(**s, logprobs=lp))
    return Reply(samples=tuple(samples), model=data["model"])


def request_to_json(request: GenerationRequest) -> str:
    return json.dumps(asdict(request), sort_keys=True)


# -- the JSON layouts of a result's rounds ------------------------------------------------------
def _vote_json(record: RoundRecord) -> dict[str, Any]:
    """One round's entry in ``results.votes``: its vote and the round's judge, pool and retention."""
    v = record.vote
    return {
        "round": record.index,
        "counts": v.counts,
        "winner": v.winner,
        "weights": v.weights,
        "tied": v.tied,
        "unparsed": v.unparsed,
        "tie_seed": v.tie_seed,
        "judge": asdict(record.judge) if record.judge else None,
        "pool": asdict(record.pool) if record.pool else None,
        "retention": asdict(record.retention) if record.retention else None,
    }


def _record(cls: Any, data: dict[str, Any]) -> Any:
    """A flat record (JudgeVerdict, PoolRecord, RetentionRecord) from its JSON: lists back to tuples."""
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def _vote(data: dict[str, Any]) -> Vote:
    from moot.debate.records import Vote

    weights = data["weights"]
    return Vote(
        counts=tuple((a, n) for a, n in data["counts"]),
        winner=data["winner"],
        tied=tuple(data["tied"]),
        unparsed=data["unparsed"],
        weights=None if weights is None else tuple((a, w) for a, w in weights),
        tie_seed=data.get("tie_seed"),  # absent in votes stored before moot recorded it
    )


def _turn(row: sqlite3.Row) -> Turn:
    from moot.backends.base import Message, TokenLogprob
    from moot.debate.records import Turn
    from moot.tasks.base import ParseStatus

    logprobs = json.loads(row["logprobs"]) if row["logprobs"] is not None else None
    return Turn(
        agent=row["agent"],
        round=row["round"],
        text=row["text"],
        answer=row["answer"],
        parse_status=ParseStatus(row["parse_status"]),
        correct=bool(row["correct"]),
        finish_reason=row["finish_reason"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        latency_s=row["latency_s"],
        seed=row["call_seed"],
        shown=tuple(Message(m["role"], m["content"]) for m in json.loads(row["shown"])),
        logprobs=None if logprobs is None else tuple(TokenLogprob(**t) for t in logprobs),
        confidence=row["confidence"],
        nll=row["nll"],
        anll=row["anll"],
        perplexity=row["perplexity"],
    )


class RunStore:
    """A run's SQLite file. Open with ``RunStore.create`` (new) or ``RunStore.open`` (existing)."""

    def __init__(self, path: Path, connection: sqlite3.Connection):
        self.path = path
        self._db = connection
        self.session: int = 0

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=10000")
        return db

    @staticmethod
    def _connect_readonly(path: Path) -> sqlite3.Connection:
        """A read-only connection that changes nothing on disk (see the module's docstring).

        With no -wal or -journal file beside it and no other process holding it, the file is read as
        immutable: SQLite then creates no -wal/-shm file, even for a store in WAL mode."""
        beside = [path.with_name(path.name + suffix) for suffix in ("-wal", "-journal")]
        immutable = not any(p.exists() for p in beside) and lock_holder(path) in (None, os.getpid())
        uri = path.resolve().as_uri() + "?mode=ro" + ("&immutable=1" if immutable else "")
        try:
            db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA busy_timeout=10000")
        except _FAULTS as exc:
            raise _store_error(path, exc) from None
        return db

    @staticmethod
    def _check(db: sqlite3.Connection, path: Path) -> Any:
        """The schema version of the moot store behind ``db``; a StoreError for any other file."""
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
        """True for a file left by a run killed while creating its store (no table was committed)."""
        try:
            if path.stat().st_size == 0:
                return True
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
                db.execute("INSERT INTO meta VALUES (?, ?)", (key, json.dumps(value)))
            for name, config in conditions.items():
                db.execute("INSERT INTO conditions VALUES (?, ?)", (name, json.dumps(config)))

    @classmethod
    def open(cls, path: Path) -> RunStore:
        """An existing store, to write (a run resuming it); one written with an older schema is migrated.

        The file is checked read-only first: a file that is not a moot store is refused unmodified."""
        if not path.is_file():
            raise StoreError(f"no run store at {path}")
        probe = cls._connect_readonly(path)
        try:
            version = cls._check(probe, path)
        finally:
            probe.close()
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
        """An existing store, read-only: nothing on disk changes (see the module's docstring).

        A store of an older schema is migrated in a copy in memory; writing raises a StoreError."""
        if not path.is_file():
            raise StoreError(f"no run store at {path}")
        db = cls._connect_readonly(path)
        try:
            version = cls._check(db, path)
            if version != SCHEMA_VERSION:
                memory = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
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

    def _transaction(self) -> RunStore._Tx:
        return RunStore._Tx(self._db)

    def _select(self, sql: str, *args: Any) -> Iterator[sqlite3.Row]:
        """Rows by column name (sqlite3.Row), for the typed readers below."""
        cursor = self._db.cursor()
        cursor.row_factory = sqlite3.Row
        return cursor.execute(sql, args)

    # -- metadata ---------------------------------------------------------------------
    @_guarded
    def meta(self) -> dict[str, Any]:
        """The metadata as stored (key -> JSON value); ``run_meta`` reads it typed."""
        return _meta(self._db)

    @_guarded
    def set_meta(self, key: str, value: Any) -> None:
        with self._transaction() as db:
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
        """The stored status, "interrupted" for "running" when no process holds the store."""
        status = meta["status"]
        return "interrupted" if status == "running" and lock_holder(self.path) is None else status

    def listing(self) -> RunListing:
        """What ``moot runs`` shows of the run: its name, status (as ``run_meta`` reads it), creation time,
        moot version and planned results, from the stored metadata as written, without validating the
        experiment (so that listing loads no config, protocol or task code)."""
        m = self.meta()
        try:
            config = m["config"]
            per_seed = sum(len(t["ids"]) if t.get("ids") is not None else t.get("count") or 0 for t in config["tasks"])
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
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO sessions (started_at, status, options) VALUES (?, 'running', ?)",
                (time.time(), json.dumps(options)),
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
        last = dict(self._db.execute("SELECT session, MAX(created_at) FROM calls GROUP BY session").fetchall())
        return [
            Session(
                r["id"],
                r["started_at"],
                r["finished_at"],
                r["status"],
                r["calls"],
                r["cached"],
                json.loads(r["options"]),
                last.get(r["id"]),
            )
            for r in self._select("SELECT * FROM sessions ORDER BY id")
        ]

    # -- questions --------------------------------------------------------------------
    @_guarded
    def add_questions(self, task: str, questions: Sequence[Any]) -> None:
        with self._transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO questions VALUES (?, ?, ?, ?, ?)",
                [(task, q.id, q.prompt, q.gold, json.dumps(q.metadata)) for q in questions],
            )

    @_guarded
    def questions(self) -> dict[tuple[str, str], Question]:
        """(task, question id) -> question, in the run's question order."""
        from moot.tasks.base import Question

        return {
            (r["task"], r["question_id"]): Question(r["question_id"], r["prompt"], r["gold"], json.loads(r["metadata"]))
            for r in self._select("SELECT * FROM questions ORDER BY rowid")
        }

    # -- calls ------------------------------------------------------------------------
    @_guarded
    def cached_call(self, key: str, session: int | None = None) -> tuple[str, Reply] | None:
        """The latest stored call made for call key ``key`` (of ``session`` only, when given): the key
        it is stored under and its reply; None when there is none.

        A call made again for a key already stored (``--no-cache``) is stored beside the earlier ones
        under ``KEY~SESSION`` (``add_call``), so that turns keep pointing to the calls they used."""
        where = "(key = ? OR (key > ? AND key < ?))" + (" AND session = ?" if session is not None else "")
        args: tuple[Any, ...] = (key, key + "~", key + "~\x7f") + ((session,) if session is not None else ())
        row = self._db.execute(f"SELECT key, reply FROM calls WHERE {where} ORDER BY rowid DESC LIMIT 1", args)
        found = row.fetchone()
        return (found[0], reply_from_json(found[1])) if found else None

    def cached_reply(self, key: str) -> Reply | None:
        """The reply of the latest stored call for ``key``, or None."""
        found = self.cached_call(key)
        return found[1] if found else None

    @_guarded
    def add_call(self, key: str, place: dict[str, Any], request: GenerationRequest, reply: Reply) -> str:
        """Record a completed call and return the key it is stored under: ``key``, or, when a call is
        already stored under it (a call made again, ``--no-cache``), ``KEY~SESSION`` beside it.
        Nothing stored is ever replaced."""
        with self._transaction() as db:
            stored, n = key, 1
            while db.execute("SELECT 1 FROM calls WHERE key = ?", (stored,)).fetchone() is not None:
                stored = f"{key}~{self.session}" + (f".{n}" if n > 1 else "")
                n += 1
            db.execute(
                "INSERT INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    stored,
                    place["condition"],
                    place["task"],
                    place["question_id"],
                    place["seed"],
                    place["round"],
                    place["agent"],
                    request.n,
                    place["backend"],
                    reply.model,
                    place["model_name"],
                    request_to_json(request),
                    reply_to_json(reply),
                    reply.prompt_tokens,
                    reply.completion_tokens,
                    sum(s.latency_s for s in reply.samples),
                    self.session,
                    time.time(),
                ),
            )
        return stored

    @_guarded
    def add_call_error(self, key: str, place: dict[str, Any], error: str) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT INTO call_errors (key, condition, task, question_id, seed, round, agent, error, session, "
                "created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    key,
                    place["condition"],
                    place["task"],
                    place["question_id"],
                    place["seed"],
                    place["round"],
                    place["agent"],
                    redact(error),
                    self.session,
                    time.time(),
                ),
            )

    @_guarded
    def calls(self) -> list[StoredCall]:
        """Every completed call, in the order they were stored (request and reply left out)."""
        return list(self.iter_calls())

    @_guarded
    def iter_calls(self) -> Iterator[StoredCall]:
        """``calls()`` one at a time (a large run's report keeps none of them)."""
        columns = ", ".join(f.name for f in fields(StoredCall))
        for row in self._db.execute(f"SELECT {columns} FROM calls ORDER BY rowid"):
            yield StoredCall(*row)

    @_guarded
    def call_errors(self) -> list[CallError]:
        columns = ", ".join(f.name for f in fields(CallError))
        rows = self._db.execute(f"SELECT {columns} FROM call_errors ORDER BY id")
        return [CallError(*row) for row in rows]

    # -- results ----------------------------------------------------------------------
    @_guarded
    def done(self) -> dict[tuple[str, str, str, int], str]:
        """(condition, task, question id, seed) -> status of every stored result."""
        rows = self._db.execute("SELECT condition, task, question_id, seed, status FROM results")
        return {(c, t, q, s): status for c, t, q, s, status in rows}

    @_guarded
    def add_result(
        self,
        condition: str,
        task: str,
        seed: int,
        result: DebateResult,
        call_keys: dict[tuple[int, str], str],
        metric: float | None = None,
        metric_detail: Any = None,
    ) -> None:
        """Store a question's turns and result in one transaction (replacing an earlier error result).

        ``metric`` is a task's own score where accuracy does not apply (biographies: fact precision),
        with ``metric_detail`` (JSON-serialisable) behind it."""
        q = result.question
        where = (condition, task, q.id, seed)
        with self._transaction() as db:
            db.execute("DELETE FROM turns WHERE condition=? AND task=? AND question_id=? AND seed=?", where)
            db.execute("DELETE FROM results WHERE condition=? AND task=? AND question_id=? AND seed=?", where)
            for record in result.rounds:
                for t in record.turns:
                    logprobs = json.dumps([asdict(x) for x in t.logprobs]) if t.logprobs is not None else None
                    db.execute(
                        "INSERT INTO turns VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        (
                            *where,
                            t.round,
                            t.agent,
                            call_keys.get((t.round, t.agent), ""),
                            t.text,
                            t.answer,
                            t.parse_status.value,
                            int(bool(t.correct)),
                            t.confidence,
                            t.finish_reason,
                            t.prompt_tokens,
                            t.completion_tokens,
                            t.latency_s,
                            json.dumps([m.as_dict() for m in t.shown]),
                            t.nll,
                            t.anll,
                            t.perplexity,
                            t.seed,
                            logprobs,
                        ),
                    )
            final_judge = json.dumps(asdict(result.final_judge)) if result.final_judge else None
            db.execute(
                "INSERT INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    *where,
                    result.final_answer,
                    result.status.value,
                    int(result.correct),
                    result.rounds_used,
                    str(result.stop_reason),  # its plain name, as every store holds it
                    result.error,
                    json.dumps([_vote_json(r) for r in result.rounds]),
                    final_judge,
                    self.session,
                    metric,
                    json.dumps(metric_detail) if metric_detail is not None else None,
                    result.protocol,
                ),
            )

    @_guarded
    def results(self) -> list[StoredResult]:
        """Every stored result with its rounds, in the run's order: question, seed, then condition.

        A result whose question or condition the store does not list (a hand-edited store) comes
        after those it lists, with an empty prompt and gold."""
        return list(self.iter_results())

    @_guarded
    def iter_results(self) -> Iterator[StoredResult]:
        """``results()`` one at a time, in the same order, each read with its own turns: memory stays that
        of one result however large the run (a report of a 20,000-question run)."""
        from moot.debate.records import (
            DebateResult,
            FinalStatus,
            JudgeVerdict,
            PoolRecord,
            RetentionRecord,
            RoundRecord,
            StopReason,
        )
        from moot.tasks.base import Question

        questions = self.questions()
        ordered = (
            "SELECT r.* FROM results r"
            " LEFT JOIN questions q ON q.task = r.task AND q.question_id = r.question_id"
            " LEFT JOIN conditions c ON c.name = r.condition"
            " ORDER BY q.rowid IS NULL, q.rowid, r.seed, c.rowid IS NULL, c.rowid, r.rowid"
        )
        for row in self._select(ordered):
            unit = (row["condition"], row["task"], row["question_id"], row["seed"])
            turns: dict[int, list[Turn]] = {}
            keys: dict[tuple[int, str], str] = {}
            where = "condition = ? AND task = ? AND question_id = ? AND seed = ?"
            for t in self._select(f"SELECT * FROM turns WHERE {where} ORDER BY rowid", *unit):
                turns.setdefault(t["round"], []).append(_turn(t))
                keys[(t["round"], t["agent"])] = t["call_key"]
            votes = {v["round"]: v for v in json.loads(row["votes"])}
            rounds = tuple(
                RoundRecord(
                    index=i,
                    turns=tuple(ts),
                    vote=_vote(votes[i]),
                    judge=_record(JudgeVerdict, votes[i]["judge"]) if votes[i]["judge"] else None,
                    pool=_record(PoolRecord, votes[i]["pool"]) if votes[i]["pool"] else None,
                    retention=_record(RetentionRecord, votes[i]["retention"]) if votes[i]["retention"] else None,
                )
                for i, ts in sorted(turns.items())
            )
            question = questions.get((row["task"], row["question_id"])) or Question(row["question_id"], "", "")
            result = DebateResult(
                question=question,
                protocol=row["protocol"],
                rounds=rounds,
                final_answer=row["final_answer"],
                status=FinalStatus(row["status"]),
                correct=bool(row["correct"]),
                stop_reason=StopReason(row["stop_reason"]),  # stored as its plain name
                error=row["error"],
                final_judge=_record(JudgeVerdict, json.loads(row["final_judge"])) if row["final_judge"] else None,
            )
            detail = json.loads(row["metric_detail"]) if row["metric_detail"] is not None else None
            yield StoredResult(
                row["condition"], row["task"], row["seed"], result, row["session"], row["metric"], detail, keys
            )

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


def _incompatible(db: sqlite3.Connection, path: Path, version: Any) -> StoreError:
    row = db.execute("SELECT value FROM meta WHERE key = 'moot_version'").fetchone()
    written_by = json.loads(row[0]) if row else "an unknown version"
    return StoreError(
        f"{path} was written by moot {written_by} with store schema {version}; "
        f"this moot ({__version__}) reads schema {SCHEMA_VERSION}"
    )


def _schema_version(db: sqlite3.Connection) -> Any:
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return json.loads(row[0]) if row else None


def _meta(db: sqlite3.Connection) -> dict[str, Any]:
    return {k: json.loads(v) for k, v in db.execute("SELECT key, value FROM meta")}


def _set_meta(db: sqlite3.Connection, key: str, value: Any) -> None:
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))


# -- migrations: MIGRATIONS[v] brings a schema-v store to v + 1, inside the caller's transaction ----------
def _migrate_1_to_2(db: sqlite3.Connection) -> None:
    """Schema 2: conditions in their canonical form, and what a result needs to read back whole.

    Each stored condition is re-validated and written back as its current dump, and the run's
    fingerprint hash recomputed from it, so that a store made before a config class changed its
    dump stays resumable. The hash is replaced only when the stored form still gives the stored
    hash (same task data files): otherwise a resume refuses the store, as it did before.
    Turns gain the call's seed and log-probabilities (unknown for schema 1: NULL), results their
    protocol's name, and each round's vote its tied answers and unparsed count (recounted)."""
    conditions = _redump_conditions(db)
    db.execute("ALTER TABLE turns ADD COLUMN call_seed INTEGER")
    db.execute("ALTER TABLE turns ADD COLUMN logprobs TEXT")
    db.execute("ALTER TABLE results ADD COLUMN protocol TEXT NOT NULL DEFAULT ''")
    for condition in conditions:
        db.execute("UPDATE results SET protocol = ? WHERE condition = ?", (condition.protocol.name, condition.name))
    unparsed: dict[tuple[Any, ...], int] = {}
    for *unit, n in db.execute(
        "SELECT condition, task, question_id, seed, round, SUM(parse_status = 'unparsed') FROM turns "
        "GROUP BY condition, task, question_id, seed, round"
    ):
        unparsed[tuple(unit)] = n
    rows = db.execute("SELECT condition, task, question_id, seed, votes FROM results").fetchall()
    for *unit, votes in rows:
        rounds = json.loads(votes)
        for v in rounds:
            v["tied"] = _tied(v["weights"] if v["weights"] is not None else v["counts"])
            v["unparsed"] = unparsed.get((*unit, v["round"]), 0)
        db.execute(
            "UPDATE results SET votes = ? WHERE condition = ? AND task = ? AND question_id = ? AND seed = ?",
            (json.dumps(rounds), *unit),
        )


def _redump_conditions(db: sqlite3.Connection) -> tuple[Any, ...]:
    """Re-validate each stored condition and write it back as its current dump, recomputing the run's
    fingerprint hash from it, so that a store made before a config class changed its dump stays
    resumable. The hash is replaced only when the stored form still gives the stored hash (same task
    data files): otherwise a resume refuses the store, as it did before."""
    from moot.debate.registry import STORED
    from moot.runner.config import ExperimentConfig, ResolvedCondition, fingerprint_hash, results_fingerprint

    meta = _meta(db)
    rows = db.execute("SELECT name, config FROM conditions ORDER BY rowid").fetchall()
    stored = [(name, json.loads(config)) for name, config in rows]
    conditions = tuple(ResolvedCondition.model_validate(config, context=STORED) for _, config in stored)
    for condition in conditions:
        db.execute(
            "UPDATE conditions SET config = ? WHERE name = ?",
            (json.dumps(condition.model_dump(mode="json")), condition.name),
        )
    config = ExperimentConfig.model_validate(meta["config"])
    before = results_fingerprint(config, conditions) | {"conditions": [c for _, c in stored]}
    if fingerprint_hash(before) == meta.get("fingerprint_hash"):
        _set_meta(db, "fingerprint_hash", fingerprint_hash(results_fingerprint(config, conditions)))
    return conditions


def _migrate_2_to_3(db: sqlite3.Connection) -> None:
    """Schema 3: every stored protocol names its agents' ``instruction`` (Liang's debaters of a schema-2
    store had their meta prompt alone: none; every other protocol's agents the task's instruction: task),
    and the run records the task instructions it sent (``instructions``)."""
    _redump_conditions(db)
    meta = _meta(db)
    if "instructions" not in meta:
        from moot.runner.config import ExperimentConfig
        from moot.tasks import get_task

        config = ExperimentConfig.model_validate(meta["config"])
        instructions = {}
        for selection in config.tasks:
            try:
                instructions[selection.name] = get_task(selection.name).system_prompt
            except MootError:  # a task this moot does not know (a plug-in's): unknown, not guessed
                instructions[selection.name] = None
        _set_meta(db, "instructions", instructions)


def _tied(tally: list[list[Any]]) -> list[str]:
    """The answers sharing the top count (or weight), as moot.debate.aggregation decides them."""
    top = max((n for _, n in tally), default=None)
    return [a for a, n in tally if n == top]


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _migrate_1_to_2, 2: _migrate_2_to_3}
