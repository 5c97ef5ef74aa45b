"""``CallTables``: the part of ``RunStore`` that writes and reads the ``calls`` and ``call_errors`` tables (every
model call a run made or failed to make, replayed from the store as a cache), with the SQL that reads a stored
reply's batch flag and cached tokens (``BATCHED_SQL``, ``CACHED_TOKENS_SQL``, which ``moot.analysis.live`` reads
too)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any

from moot.redact import redact
from moot.runner.records import CallError, StoredCall
from moot.runner.store.codec import reply_from_json, reply_to_json, request_to_json
from moot.runner.store.connection import StoreConnection
from moot.runner.store.errors import _guarded

if TYPE_CHECKING:
    # imported where they are used, so that opening a store and listing it (`moot runs`) loads no pydantic
    # model, protocol, backend or task code
    from moot.backends.base import GenerationRequest, Reply

# whether a provider batch answered a stored call (its reply's JSON is parsed only when it holds the key)
BATCHED_SQL = (
    "CASE WHEN instr(reply, '\"batch\"') THEN json_extract(reply, '$.samples[0].batch') IS NOT NULL ELSE 0 END"
)
# a stored call's cached prompt tokens: the sum of its samples' ``cached_tokens``, 0 where none reported (a reply's
# JSON is parsed only when it holds the key)
CACHED_TOKENS_SQL = (
    "CASE WHEN instr(reply, '\"cached_tokens\"') "
    "THEN (SELECT TOTAL(json_extract(value, '$.cached_tokens')) FROM json_each(reply, '$.samples')) ELSE 0 END"
)


class CallTables(StoreConnection):
    """A run store's calls: stored as they complete, read back to replay them (``RunStore`` inherits it)."""

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
        columns = ", ".join(f.name for f in fields(StoredCall) if f.name not in ("batched", "cached_tokens"))
        for row in self._db.execute(f"SELECT {columns}, {BATCHED_SQL}, {CACHED_TOKENS_SQL} FROM calls ORDER BY rowid"):
            *stored, batched_call, cached = row
            yield replace(StoredCall(*stored), batched=bool(batched_call), cached_tokens=int(cached))

    @_guarded
    def cached_prompt_tokens(self) -> dict[tuple[str, str, str, int], int]:
        """(condition, task, question id, seed) -> the cached prompt tokens of the calls its result's turns used
        (``Sample.cached_tokens``, as the server reported them; a sample that reported none counts 0). A result
        none of whose calls reported a cached token is left out."""
        rows = self._db.execute(
            f"SELECT t.condition, t.task, t.question_id, t.seed, SUM({CACHED_TOKENS_SQL}) FROM turns t "
            "JOIN calls c ON c.key = t.call_key GROUP BY t.condition, t.task, t.question_id, t.seed"
        )
        return {(c, t, q, s): int(n) for c, t, q, s, n in rows if n}

    @_guarded
    def round0_requests(self) -> Iterator[tuple[str, str, str, int, str, str, dict[str, Any]]]:
        """(condition, task, question id, seed, agent, model name, request) of every round-0 agent turn: what each
        arm first asked, for matching arms to the vote pools sampled with the same request. A diversity-aware
        round 0's kept candidates are its turns (one request, several seeds)."""
        rows = self._db.execute(
            "SELECT t.condition, t.task, t.question_id, t.seed, t.agent, c.model_name, c.request FROM turns t "
            "JOIN calls c ON c.key = t.call_key WHERE t.round = 0 ORDER BY t.rowid"
        )
        for condition, task, question, seed, agent, model, request in rows:
            yield condition, task, question, seed, agent, model, json.loads(request)

    @_guarded
    def call_errors(self) -> list[CallError]:
        columns = ", ".join(f.name for f in fields(CallError))
        rows = self._db.execute(f"SELECT {columns} FROM call_errors ORDER BY id")
        return [CallError(*row) for row in rows]
