"""``moot view RUN``: a live view of a run's store in the browser, while the run writes it and after.

A small HTTP server on 127.0.0.1 (``ThreadingHTTPServer``) serves one page (``moot.analysis.live_page``) and
three JSON endpoints: ``/api/progress`` (per condition: results done of planned, accuracy so far with its
interval, calls, tokens, cost, errors and an ETA), ``/api/results`` (the finished questions, searched and
filtered, a page at a time, newest first) and ``/api/transcript`` (one question's debate, round by round,
with what each agent was shown). The page polls them every 2 seconds and builds its DOM with
``textContent`` only, under a Content-Security-Policy that allows its own script alone: a model's markup
shows as text and never runs.

The store is opened read-only (``RunStore.read``) and never written. It is opened again when a run starts
or ends beside it (its -wal file or lock holder appears or goes) or, read as an immutable file, when the
file changes: an immutable read would not see a writer's commits. Every query is bounded for a
20,000-question store: results by their primary key or a LIMIT/OFFSET page, each call read once (a poll
reads only the calls added since the last one), the turns of one opened transcript only.
"""

from __future__ import annotations

import errno
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from moot.analysis.live_page import CSP, PAGE
from moot.analysis.stats import Proportion, wilson
from moot.analysis.stats_repeats import question_accuracy
from moot.analysis.transcripts import Transcript, transcript
from moot.errors import MootError
from moot.runner.config import ExperimentConfig, ResolvedCondition
from moot.runner.records import StoredResult
from moot.runner.store import RunStore, StoreError, lock_holder
from moot.runner.store.call_tables import BATCHED_SQL, CACHED_TOKENS_SQL

PAGE_LIMIT = 200  # results per page at most
RESAMPLES = 1_000  # the cluster bootstrap of a run with repeated seeds (recomputed only when results change)
OUTCOMES = {
    "right": "r.correct = 1",
    "wrong": "r.correct = 0",
    "unparsed": "r.status = 'unparsed'",
    "abstained": "r.status = 'abstained'",
    "error": "r.status = 'error'",
}
# a call answered in a provider batch (as RunStore.iter_calls reads it; the reply is parsed only when it names one)


class ViewError(MootError):
    """The live view cannot start (its port is taken) or a request to it is malformed."""


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


@dataclass
class _CallTotals:
    """Calls, prompt, completion and cached prompt tokens by (condition, model name, batched), summed from the
    calls table's rows up to ``last`` (its rowid: calls are only ever added, so a poll reads only the new ones)."""

    last: int = 0
    groups: dict[tuple[str, str, bool], list[int]] = field(default_factory=dict)


class LiveRun:
    """A run's store as the live view reads it: opened read-only, reopened when a run starts or ends beside it.

    Thread-safe: the server's request threads share it, one query at a time."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._store: RunStore | None = None
        self._state: tuple[Any, ...] | None = None
        self._config: ExperimentConfig | None = None
        self._conditions: dict[str, ResolvedCondition] = {}
        self._calls = _CallTotals()
        self._accuracy: dict[str, tuple[tuple[int, int, int], Proportion]] = {}
        with self._lock:
            self._current()  # a path that is not a store is refused here, before any server starts

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    # -- the store -------------------------------------------------------------------------
    def _file_state(self) -> tuple[Any, ...]:
        """What decides how the store is read: a -wal or -journal file beside it, a process holding it, and for
        a store read as an immutable file, its identity, size and time of change."""
        if self.path.is_dir():
            raise StoreError(f"{self.path} is a folder, not a run store (a .sqlite file moot run wrote)")
        beside = any(self.path.with_name(self.path.name + s).exists() for s in ("-wal", "-journal"))
        held = lock_holder(self.path) is not None
        try:
            st = self.path.stat()
        except OSError:
            raise StoreError(f"no run store at {self.path}") from None
        live = beside or held
        return (beside, held, st.st_ino) + (() if live else (st.st_size, st.st_mtime_ns))

    def _current(self) -> RunStore:
        """The store, opened again where its state changed (see the module's docstring)."""
        state = self._file_state()
        if self._store is not None and state == self._state:
            return self._store
        if self._store is not None:
            self._store.close()
            self._store = None
        store = RunStore.read(self.path)
        try:
            config = store.run_meta().config
            conditions = store.conditions()
        except BaseException:
            store.close()
            raise
        if self._state is None or state[2] != self._state[2]:  # another file: its calls are summed afresh
            self._calls = _CallTotals()
            self._accuracy = {}
        self._store, self._state, self._config, self._conditions = store, state, config, conditions
        return store

    def _query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        return self._current().select(sql, *args)  # read-only (RunStore.read): a SELECT, bounded by its SQL

    # -- progress --------------------------------------------------------------------------
    def progress(self) -> dict[str, Any]:
        """Per condition and in total: results done of planned, accuracy with its interval (per condition),
        unparsed and error results, failed calls, calls and tokens paid, cost (at the run's [prices]; None
        without them or for an unpriced model) and the ETA at the current session's rate (None when no run
        is going, or it has stored no result of the condition yet)."""
        with self._lock:
            store = self._current()
            listing = store.listing()
            config = self._config
            assert config is not None
            now = time.time()
            running = listing.status == "running"
            session = self._query("SELECT id, started_at FROM sessions ORDER BY id DESC LIMIT 1")
            session_id, started = session[0] if session else (0, now)
            rows = self._query(
                "SELECT condition, COUNT(*), SUM(correct), SUM(status = 'unparsed'), SUM(status = 'error'), "
                "SUM(session = ?), MAX(rowid) FROM results GROUP BY condition",
                session_id,
            )
            results = {r[0]: r[1:] for r in rows}
            failed = dict(self._query("SELECT condition, COUNT(*) FROM call_errors GROUP BY condition"))
            paid = self._paid(config)
            names = list(dict.fromkeys([*self._conditions, *results, *paid]))
            planned = listing.planned_units // max(1, len(config.conditions))
            elapsed = max(now - started, 1e-9)
            out = []
            for name in names:
                done, correct, unparsed, errors, this_session, latest = results.get(name, (0, 0, 0, 0, 0, 0))
                accuracy = self._accuracy_of(name, (done, correct, latest), len(config.seeds))
                calls, prompt, completion, cost = paid.get(name, (0, 0, 0, 0.0 if config.prices else None))
                out.append(
                    {
                        "name": name,
                        "planned": planned if name in self._conditions else 0,
                        "done": done,
                        "correct": correct,
                        "unparsed": unparsed,
                        "errors": errors,
                        "failed_calls": failed.get(name, 0),
                        "accuracy": _finite(accuracy.estimate),
                        "low": _finite(accuracy.low),
                        "high": _finite(accuracy.high),
                        "interval": accuracy.method,
                        "calls": calls,
                        "prompt_tokens": prompt,
                        "completion_tokens": completion,
                        "cost": cost,
                        "session_done": this_session,
                        "eta_s": _eta(planned - done, this_session, elapsed) if running else None,
                    }
                )
            total_planned, total_done = listing.planned_units, sum(c["done"] for c in out)
            session_done = sum(c["session_done"] for c in out)
            costs = [c["cost"] for c in out]
            total = {
                "planned": total_planned,
                "done": total_done,
                "correct": sum(c["correct"] for c in out),
                "unparsed": sum(c["unparsed"] for c in out),
                "errors": sum(c["errors"] for c in out),
                "failed_calls": sum(c["failed_calls"] for c in out),
                "calls": sum(c["calls"] for c in out),
                "prompt_tokens": sum(c["prompt_tokens"] for c in out),
                "completion_tokens": sum(c["completion_tokens"] for c in out),
                "cost": sum(costs) if costs and all(c is not None for c in costs) else None,
                "session_done": session_done,
                "eta_s": _eta(total_planned - total_done, session_done, elapsed) if running else None,
            }
            latest = max((r[-1] or 0 for r in results.values()), default=0)
            return {
                "name": listing.name,
                "path": str(self.path),
                "status": listing.status,
                "priced": bool(config.prices),
                "seeds": len(config.seeds),
                "session": {"id": session_id, "started_at": started if session else None, "running": running},
                "version": [total_done, latest],  # changes whenever a result is stored or replaced
                "now": now,
                "conditions": out,
                "total": total,
            }

    def _accuracy_of(self, name: str, key: tuple[int, int, int], seeds: int) -> Proportion:
        """The condition's accuracy so far: Wilson's interval with one seed; with repeated seeds the question
        as the unit (``question_accuracy``: a cluster bootstrap), recomputed only when its results change."""
        done, correct, _ = key
        if seeds <= 1:
            return wilson(correct, done)
        cached = self._accuracy.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        by_question: dict[tuple[str, str], dict[int, bool]] = {}
        for task, question, seed, right in self._query(
            "SELECT task, question_id, seed, correct FROM results WHERE condition = ?", name
        ):
            by_question.setdefault((task, question), {})[seed] = bool(right)
        accuracy = question_accuracy(list(by_question.values()), resamples=RESAMPLES)
        self._accuracy[name] = (key, accuracy)
        return accuracy

    def _paid(self, config: ExperimentConfig) -> dict[str, tuple[int, int, int, float | None]]:
        """Calls, prompt and completion tokens and cost paid per condition (the calls stored under it), adding
        the calls stored since the last poll. Cost: at the run's [prices] (a batch's share for a call answered
        in a provider batch, cached prompt tokens at their price), None without prices or for a model without one."""
        priced = bool(config.prices)
        extra = f"{BATCHED_SQL}, {CACHED_TOKENS_SQL}" if priced else "0, 0"
        totals = self._calls
        if self._query("SELECT COALESCE(MAX(rowid), 0) FROM calls")[0][0] < totals.last:
            totals = self._calls = _CallTotals()  # the calls table shrank: another store under the same name
        for rowid, condition, model, prompt, completion, batched, cached in self._query(
            f"SELECT rowid, condition, model_name, prompt_tokens, completion_tokens, {extra} FROM calls "
            "WHERE rowid > ? ORDER BY rowid",
            totals.last,
        ):
            group = totals.groups.setdefault((condition, model, bool(batched)), [0, 0, 0, 0])
            group[0] += 1
            group[1] += prompt
            group[2] += completion
            group[3] += int(cached)
            totals.last = rowid
        out: dict[str, tuple[int, int, int, float | None]] = {}
        for (condition, model, batched), (n, prompt, completion, cached) in totals.groups.items():
            calls, p, c, cost = out.get(condition, (0, 0, 0, 0.0 if priced else None))
            price = config.prices.get(model)
            if cost is not None and price is not None:
                cost += price.dollars(prompt, completion, cached, bool(batched))
            else:
                cost = None
            out[condition] = (calls + n, p + prompt, c + completion, cost)
        return out

    # -- transcripts -----------------------------------------------------------------------
    def results(self, condition: str, outcome: str, text: str, offset: int, limit: int) -> dict[str, Any]:
        """A page of the stored results, newest first: those of ``condition`` (every one: ""), of ``outcome``
        (``OUTCOMES``; every one: "") whose question's text or id holds ``text`` (case-insensitive in ASCII)."""
        if outcome and outcome not in OUTCOMES:
            raise ViewError(f"outcome {outcome!r}: one of {', '.join(OUTCOMES)}")
        where, args = ["1"], []
        if condition:
            where.append("r.condition = ?")
            args.append(condition)
        if outcome:
            where.append(OUTCOMES[outcome])
        if text:
            pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            where.append("(q.prompt LIKE ? ESCAPE '\\' OR r.question_id LIKE ? ESCAPE '\\')")
            args += [pattern, pattern]
        joined = "results r LEFT JOIN questions q ON q.task = r.task AND q.question_id = r.question_id"
        clause = " AND ".join(where)
        with self._lock:
            (total,) = self._query(f"SELECT COUNT(*) FROM {joined if text else 'results r'} WHERE {clause}", *args)[0]
            rows = self._query(
                "SELECT r.condition, r.task, r.question_id, r.seed, r.final_answer, r.status, r.correct, "
                f"r.rounds_used, r.stop_reason, r.error, q.gold, substr(q.prompt, 1, 300) FROM {joined} "
                f"WHERE {clause} ORDER BY r.rowid DESC LIMIT ? OFFSET ?",
                *args,
                limit,
                offset,
            )
        names = ("condition", "task", "question_id", "seed", "final_answer", "status", "correct", "rounds_used")
        items = [
            dict(zip(names, r[:8]))
            | {"correct": bool(r[6]), "stop_reason": r[8], "error": r[9]}
            | {"gold": r[10] or "", "prompt": r[11] or ""}
            for r in rows
        ]
        return {"total": total, "offset": offset, "limit": limit, "items": items}

    def transcript(self, condition: str, task: str, question_id: str, seed: int) -> dict[str, Any] | None:
        """One stored result's debate, round by round, as the report's viewer reads it (``transcripts``), with
        what each agent was shown and what its peers were shown of its reply (``seen``); None: not stored."""
        with self._lock:
            stored, seen = self._stored(condition, task, question_id, seed)
            if stored is None:
                return None
            return _transcript_json(transcript(stored, self._conditions.get(condition)), seen)

    def _stored(
        self, condition: str, task: str, question_id: str, seed: int
    ) -> tuple[StoredResult | None, dict[tuple[int, str], str]]:
        """The stored result of one question (``RunStore.result``), and the ``seen`` text of each turn whose
        peers were shown other than its reply, by (round, agent)."""
        stored = self._current().result(condition, task, question_id, seed)
        if stored is None:
            return None, {}
        seen = {
            (t.round, t.agent): t.seen
            for r in stored.result.rounds
            for t in r.turns
            if t.seen is not None and t.seen != t.text
        }
        return stored, seen


def _eta(remaining: int, done_this_session: int, elapsed: float) -> float | None:
    """Seconds left at this session's rate: None before it stored a result; 0 when nothing is left."""
    if remaining <= 0:
        return 0.0
    if done_this_session <= 0:
        return None
    return remaining / (done_this_session / elapsed)


def _verdict(v: Any) -> dict[str, Any] | None:
    if v is None:
        return None
    return {"answer": v.answer, "confidence": _finite(v.confidence), "text": v.text}


def _transcript_json(t: Transcript, seen: dict[tuple[int, str], str]) -> dict[str, Any]:
    """The transcript as the page shows it: every text as data (the page sets it as textContent)."""
    rounds = []
    for r in t.rounds:
        turns = [
            {
                "agent": x.agent,
                "text": x.text,
                "answer": x.answer,
                "parsed": x.parsed,
                "correct": x.correct,
                "confidence": _finite(x.confidence),
                "finish_reason": x.finish_reason,
                "prompt_tokens": x.prompt_tokens,
                "completion_tokens": x.completion_tokens,
                "reasoning": x.reasoning,
                "reasoning_only": x.reasoning_only,
                "retained": x.retained,
                "shown_new": [list(m) for m in x.shown_new],
                "shown_count": len(x.shown),
                "seen": seen.get((r.index, x.agent)),
            }
            for x in r.turns
        ]
        rounds.append(
            {
                "index": r.index,
                "turns": turns,
                "votes": [list(v) for v in r.votes],
                "winner": r.winner,
                "winner_correct": r.winner_correct,
                "judge": _verdict(r.judge),
                "system_answer": r.system_answer,
                "system_correct": r.system_correct,
                "pool": None if r.pool is None else {"sampled": len(r.pool.texts), "kept": len(r.pool.selected)},
                "retention": None
                if r.retention is None
                else {"rule": r.retention.rule, "kept": list(r.retention.kept), "fallback": r.retention.fallback},
            }
        )
    return {
        "condition": t.condition,
        "task": t.task,
        "question_id": t.question_id,
        "seed": t.seed,
        "prompt": t.prompt,
        "gold": t.gold,
        "final_answer": t.final_answer,
        "status": t.status,
        "correct": t.correct,
        "rounds_used": t.rounds_used,
        "stop_reason": t.stop_reason,
        "error": t.error,
        "final_judge": _verdict(t.final_judge),
        "rounds": rounds,
    }


# -- the server ----------------------------------------------------------------------------
class LiveServer(ThreadingHTTPServer):
    """The view's HTTP server, on 127.0.0.1 only; ``live`` answers its requests."""

    daemon_threads = True

    def __init__(self, live: LiveRun, port: int):
        self.live = live
        try:
            super().__init__(("127.0.0.1", port), _Handler)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ViewError(f"port {port} is in use; choose another with --port or leave it out") from None
            raise ViewError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror or exc})") from None

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"


def _int(query: dict[str, list[str]], key: str, default: int, low: int, high: int) -> int:
    raw = query.get(key, [str(default)])[-1]
    try:
        value = int(raw)
    except ValueError:
        raise ViewError(f"{key} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise ViewError(f"{key} must be between {low} and {high}, got {value}")
    return value


class _Handler(BaseHTTPRequestHandler):
    """GET only: the page and its JSON endpoints. A request naming another host (a DNS-rebinding page) is
    refused."""

    server: LiveServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the URL, not every poll."""

    def do_GET(self) -> None:
        port = self.server.port
        if self.headers.get("Host", "") not in (f"127.0.0.1:{port}", f"localhost:{port}"):
            self._send(HTTPStatus.FORBIDDEN, b"forbidden host\n", "text/plain; charset=utf-8")
            return
        parts = urlsplit(self.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        live = self.server.live

        def one(key: str) -> str:
            return query.get(key, [""])[-1]

        try:
            if parts.path == "/":
                self._send(HTTPStatus.OK, PAGE.encode("utf-8"), "text/html; charset=utf-8", page=True)
                return
            if parts.path == "/api/progress":
                self._json(HTTPStatus.OK, live.progress())
            elif parts.path == "/api/results":
                page = live.results(
                    one("condition"),
                    one("outcome"),
                    one("q"),
                    _int(query, "offset", 0, 0, 10**9),
                    _int(query, "limit", 50, 1, PAGE_LIMIT),
                )
                self._json(HTTPStatus.OK, page)
            elif parts.path == "/api/transcript":
                found = live.transcript(
                    one("condition"), one("task"), one("question_id"), _int(query, "seed", 0, -(2**63), 2**63 - 1)
                )
                if found is None:
                    self._json(HTTPStatus.NOT_FOUND, {"error": "no such result in the store"})
                else:
                    self._json(HTTPStatus.OK, found)
            else:
                self._json(HTTPStatus.NOT_FOUND, {"error": f"no page {parts.path}"})
        except ViewError as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
        except MootError as exc:  # the store went away or cannot be read now: the page says so and keeps polling
            self._json(HTTPStatus.SERVICE_UNAVAILABLE, {"error": str(exc)})

    def _json(self, status: HTTPStatus, data: Any) -> None:
        body = json.dumps(data, ensure_ascii=False, allow_nan=False).encode("utf-8")
        self._send(status, body, "application/json; charset=utf-8")

    def _send(self, status: HTTPStatus, body: bytes, kind: str, page: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        if page:
            self.send_header("Content-Security-Policy", CSP)
        self.end_headers()
        self.wfile.write(body)


def serve(path: Path, port: int = 0, say: Callable[[str], None] = print) -> None:
    """Serve the live view of the store at ``path`` on 127.0.0.1 (``port`` 0: a free one), saying its URL,
    until Ctrl-C. A path that is not a store, or a port in use, is refused before anything is served."""
    live = LiveRun(path)
    try:
        server = LiveServer(live, port)
    except BaseException:
        live.close()
        raise
    say(f"moot view: {server.url} shows {path} (read-only); Ctrl-C stops it")
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        say("moot view: stopped")
    finally:
        server.server_close()
        live.close()
