"""The store's schema and its migrations: the tables (``SCHEMA``, ``TABLES``), their version
(``SCHEMA_VERSION``), the metadata table's accessors, and ``MIGRATIONS``, which bring a store written
with an older schema to the current one (``RunStore`` runs them in one transaction)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from moot import __version__
from moot.errors import MootError
from moot.runner.store.codec import to_json
from moot.runner.store.errors import StoreError

SCHEMA_VERSION = 4

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
  call_seed INTEGER, logprobs TEXT, reasoning TEXT, reasoning_tokens INTEGER, seen TEXT,
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


def _incompatible(db: sqlite3.Connection, path: Path, version: Any) -> StoreError:
    row = db.execute("SELECT value FROM meta WHERE key = 'moot_version'").fetchone()
    written_by = json.loads(row[0]) if row else "an unknown version"
    return StoreError(
        f"{path} was written by moot {written_by} with store schema {_shown_version(version)}; "
        f"this moot ({__version__}) reads schema {SCHEMA_VERSION}"
    )


def _shown_version(version: Any) -> str:
    """A stored schema version as an error shows it: as stored, but a number written as text ("4") quoted and
    said to be text, so that "schema 4; this moot reads schema 4" never reads as a contradiction."""
    if isinstance(version, str) and version.strip().lstrip("-").isdigit():
        return f"{version!r} (text, where moot records a number)"
    return str(version)


def _schema_version(db: sqlite3.Connection) -> Any:
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return json.loads(row[0]) if row else None


def _meta(db: sqlite3.Connection) -> dict[str, Any]:
    return {k: json.loads(v) for k, v in db.execute("SELECT key, value FROM meta")}


def _set_meta(db: sqlite3.Connection, key: str, value: Any) -> None:
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, to_json(value)))


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
            (to_json(rounds), *unit),
        )


def _redump_conditions(db: sqlite3.Connection) -> tuple[Any, ...]:
    """Re-validate each stored condition and write it back as its current dump, recomputing the run's
    fingerprint hash from it, so that a store made before a config class changed its dump stays
    resumable. The hash is replaced only when the stored form still gives the stored hash (same task
    data files): otherwise a resume refuses the store, as it did before."""
    from moot.debate.registry import STORED
    from moot.runner.config import ExperimentConfig, ResolvedCondition
    from moot.runner.config_resolve import fingerprint_hash, results_fingerprint

    meta = _meta(db)
    rows = db.execute("SELECT name, config FROM conditions ORDER BY rowid").fetchall()
    stored = [(name, json.loads(config)) for name, config in rows]
    conditions = tuple(ResolvedCondition.model_validate(config, context=STORED) for _, config in stored)
    for condition in conditions:
        db.execute(
            "UPDATE conditions SET config = ? WHERE name = ?",
            (to_json(condition.model_dump(mode="json")), condition.name),
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


def _migrate_3_to_4(db: sqlite3.Connection) -> None:
    """Schema 4: a turn keeps its reply's reasoning apart from its content, the reasoning's token count and
    what its protocol's peer view showed again of it (none of which a schema-3 run had: NULL). A column
    already there is kept."""
    present = {row[1] for row in db.execute("PRAGMA table_info(turns)")}
    for column in ("reasoning TEXT", "reasoning_tokens INTEGER", "seen TEXT"):
        if column.split()[0] not in present:
            db.execute(f"ALTER TABLE turns ADD COLUMN {column}")


def _tied(tally: list[list[Any]]) -> list[str]:
    """The answers sharing the top count (or weight), as moot.debate.aggregation decides them."""
    top = max((n for _, n in tally), default=None)
    return [a for a, n in tally if n == top]


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _migrate_1_to_2,
    2: _migrate_2_to_3,
    3: _migrate_3_to_4,
}
