"""The run store: one SQLite file per run (WAL mode), written call by call.

Every completed model call is committed at once, so a run killed at any moment
loses at most the calls in flight; a question's turns and result are committed
together in one transaction, so a question is either wholly stored or not at all.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from moot import __version__
from moot.backends.base import GenerationRequest, Reply, Sample, TokenLogprob
from moot.debate.records import DebateResult
from moot.errors import MootError

SCHEMA_VERSION = 1

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
  PRIMARY KEY (condition, task, question_id, seed, round, agent));
CREATE TABLE IF NOT EXISTS results (
  condition TEXT NOT NULL, task TEXT NOT NULL, question_id TEXT NOT NULL, seed INTEGER NOT NULL,
  final_answer TEXT, status TEXT NOT NULL, correct INTEGER NOT NULL, rounds_used INTEGER NOT NULL,
  stop_reason TEXT NOT NULL, error TEXT, votes TEXT NOT NULL, final_judge TEXT, session INTEGER NOT NULL,
  metric REAL, metric_detail TEXT, PRIMARY KEY (condition, task, question_id, seed));
CREATE TABLE IF NOT EXISTS sessions (
  id INTEGER PRIMARY KEY, started_at REAL NOT NULL, finished_at REAL, status TEXT NOT NULL,
  calls INTEGER NOT NULL DEFAULT 0, cached INTEGER NOT NULL DEFAULT 0, options TEXT NOT NULL);
"""


TABLES = ("results", "turns", "calls", "call_errors", "questions", "sessions", "conditions", "meta")


class StoreError(MootError):
    """The store cannot be read, or was written by an incompatible moot."""


def reply_to_json(reply: Reply) -> str:
    return json.dumps({"model": reply.model, "samples": [asdict(s) for s in reply.samples]})


def reply_from_json(text: str) -> Reply:
    data = json.loads(text)
    samples = []
    for s in data["samples"]:
        logprobs = s.pop("logprobs")
        lp = tuple(TokenLogprob(**t) for t in logprobs) if logprobs is not None else None
        samples.append(Sample(**s, logprobs=lp))
    return Reply(samples=tuple(samples), model=data["model"])


def request_to_json(request: GenerationRequest) -> str:
    return json.dumps(asdict(request), sort_keys=True)


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

    @classmethod
    def is_blank(cls, path: Path) -> bool:
        """True for a file left by a run killed while creating its store (no table was committed)."""
        try:
            db = sqlite3.connect(path)
            try:
                return db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0
            finally:
                db.close()
        except sqlite3.DatabaseError:
            return False

    @classmethod
    def create(cls, path: Path, meta: dict[str, Any], conditions: dict[str, Any]) -> RunStore:
        """A new store; creating it is one transaction, so a kill leaves a blank file or a whole store."""
        if path.exists() and not cls.is_blank(path):
            raise StoreError(f"{path} already exists")
        path.parent.mkdir(parents=True, exist_ok=True)
        db = cls._connect(path)
        store = cls(path, db)
        with store._transaction():
            for statement in SCHEMA.strip().split(";"):
                if statement.strip():
                    db.execute(statement)
            base = {"schema_version": SCHEMA_VERSION, "moot_version": __version__, "created_at": time.time()}
            for key, value in (base | meta).items():
                db.execute("INSERT INTO meta VALUES (?, ?)", (key, json.dumps(value)))
            for name, config in conditions.items():
                db.execute("INSERT INTO conditions VALUES (?, ?)", (name, json.dumps(config)))
        return store

    @classmethod
    def open(cls, path: Path) -> RunStore:
        if not path.is_file():
            raise StoreError(f"no run store at {path}")
        try:
            db = cls._connect(path)
            rows = dict(db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path} is not a readable moot run store ({exc})") from None
        version = json.loads(rows.get("schema_version", "null"))
        if version != SCHEMA_VERSION:
            written_by = json.loads(rows.get("moot_version", '"an unknown version"'))
            raise StoreError(
                f"{path} was written by moot {written_by} with store schema {version}; "
                f"this moot ({__version__}) reads schema {SCHEMA_VERSION}"
            )
        return cls(path, db)

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
            self.db.execute("ROLLBACK" if kind else "COMMIT")

    def _transaction(self) -> RunStore._Tx:
        return RunStore._Tx(self._db)

    # -- metadata ---------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self._db.execute("SELECT key, value FROM meta")}

    def set_meta(self, key: str, value: Any) -> None:
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def conditions(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self._db.execute("SELECT name, config FROM conditions")}

    def start_session(self, options: dict[str, Any]) -> int:
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO sessions (started_at, status, options) VALUES (?, 'running', ?)",
                (time.time(), json.dumps(options)),
            )
        self.session = int(cursor.lastrowid or 0)
        return self.session

    def finish_session(self, status: str, calls: int, cached: int) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE sessions SET finished_at = ?, status = ?, calls = ?, cached = ? WHERE id = ?",
                (time.time(), status, calls, cached, self.session),
            )

    def sessions(self) -> list[dict[str, Any]]:
        cursor = self._db.execute("SELECT * FROM sessions ORDER BY id")
        return [dict(zip([c[0] for c in cursor.description], row)) for row in cursor]

    # -- questions --------------------------------------------------------------------
    def add_questions(self, task: str, questions: Sequence[Any]) -> None:
        with self._transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO questions VALUES (?, ?, ?, ?, ?)",
                [(task, q.id, q.prompt, q.gold, json.dumps(q.metadata)) for q in questions],
            )

    # -- calls ------------------------------------------------------------------------
    def cached_reply(self, key: str) -> Reply | None:
        row = self._db.execute("SELECT reply FROM calls WHERE key = ?", (key,)).fetchone()
        return reply_from_json(row[0]) if row else None

    def add_call(
        self, key: str, place: dict[str, Any], request: GenerationRequest, reply: Reply, replace: bool = False
    ) -> None:
        """Record a completed call; ``replace`` overwrites an earlier reply to the same key (--no-cache)."""
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        with self._transaction() as db:
            db.execute(
                f"{verb} INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    key, place["condition"], place["task"], place["question_id"], place["seed"], place["round"],
                    place["agent"], request.n, place["backend"], reply.model, place["model_name"],
                    request_to_json(request), reply_to_json(reply), reply.prompt_tokens, reply.completion_tokens,
                    sum(s.latency_s for s in reply.samples), self.session, time.time(),
                ),
            )  # fmt: skip

    def add_call_error(self, key: str, place: dict[str, Any], error: str) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT INTO call_errors (key, condition, task, question_id, seed, round, agent, error, session, "
                "created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (key, place["condition"], place["task"], place["question_id"], place["seed"], place["round"],
                 place["agent"], error, self.session, time.time()),
            )  # fmt: skip

    # -- results ----------------------------------------------------------------------
    def done(self) -> dict[tuple[str, str, str, int], str]:
        """(condition, task, question id, seed) -> status of every stored result."""
        rows = self._db.execute("SELECT condition, task, question_id, seed, status FROM results")
        return {(c, t, q, s): status for c, t, q, s, status in rows}

    def add_result(
        self, condition: str, task: str, seed: int, result: DebateResult, call_keys: dict[tuple[int, str], str],
        metric: float | None = None, metric_detail: Any = None,
    ) -> None:  # fmt: skip
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
                    db.execute(
                        "INSERT INTO turns VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        (*where, t.round, t.agent, call_keys.get((t.round, t.agent), ""), t.text, t.answer,
                         t.parse_status.value, int(t.correct), t.confidence, t.finish_reason, t.prompt_tokens,
                         t.completion_tokens, t.latency_s, json.dumps([m.as_dict() for m in t.shown]),
                         t.nll, t.anll, t.perplexity),
                    )  # fmt: skip
            votes = [
                {"round": r.index, "counts": r.vote.counts, "winner": r.vote.winner, "weights": r.vote.weights,
                 "judge": asdict(r.judge) if r.judge else None, "pool": asdict(r.pool) if r.pool else None,
                 "retention": asdict(r.retention) if r.retention else None}
                for r in result.rounds
            ]  # fmt: skip
            final_judge = json.dumps(asdict(result.final_judge)) if result.final_judge else None
            db.execute(
                "INSERT INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (*where, result.final_answer, result.status.value, int(result.correct), result.rounds_used,
                 result.stop_reason, result.error, json.dumps(votes), final_judge, self.session, metric,
                 json.dumps(metric_detail) if metric_detail is not None else None),
            )  # fmt: skip

    @staticmethod
    def _check_table(table: str) -> None:
        if table not in TABLES:
            raise StoreError(f"no table {table!r}; tables: {', '.join(TABLES)}")

    def rows(self, table: str) -> Iterator[dict[str, Any]]:
        self._check_table(table)
        cursor = self._db.execute(f"SELECT * FROM {table}")  # noqa: S608 - table name checked above
        names = [c[0] for c in cursor.description]
        for row in cursor:
            yield dict(zip(names, row))

    def count(self, table: str) -> int:
        self._check_table(table)
        return int(self._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])  # noqa: S608
