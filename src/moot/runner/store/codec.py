"""The JSON layouts of the records a store holds: a call's request and reply (``calls.request``,
``calls.reply``), a round's vote, judge, pool and retention (``results.votes``) and a turn's row
(``turns``), to and from what the engine uses. The engine's types are imported where they are used, so
that opening a store and listing it (``moot runs``) loads no backend, protocol or task code.

Every text the store writes passes ``store_text``, which replaces a lone surrogate (a reply's "\\ud800"
escape, decoded) with U+FFFD: SQLite cannot encode one, so a single such reply would fail every write of
its question, on every rerun. A store's connections (``TextSafeConnection``) pass every bound value
through it, and its JSON (``to_json``) every string, but for a call's reply (``reply_to_json``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Self, TypeVar, overload

from moot.limits import without_lone_surrogates

if TYPE_CHECKING:
    from moot.backends.base import GenerationRequest, Reply
    from moot.debate.records import RoundRecord, Turn, Vote


def store_text(value: Any) -> Any:
    """A value as the store writes it: a string without lone surrogates (each becomes U+FFFD), anything
    else as it is."""
    return without_lone_surrogates(value) if isinstance(value, str) else value


def _json_text(value: Any) -> Any:
    """A JSON value with ``store_text`` applied to every string in it, keys included."""
    if isinstance(value, Mapping):
        return {store_text(k): _json_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_text(v) for v in value]
    return store_text(value)


def to_json(value: Any, *, sort_keys: bool = False) -> str:
    """``value`` as the store's JSON: ``json.dumps``, every string through ``store_text``."""
    text = json.dumps(value, sort_keys=sort_keys)
    # a surrogate can only be written as a "\\udXXX" escape: look again only at JSON holding one (an emoji's too)
    return text if "\\ud" not in text else json.dumps(_json_text(value), sort_keys=sort_keys)


def _bound(parameters: Any) -> Any:
    """Parameters of an SQL statement, each through ``store_text``."""
    if isinstance(parameters, Mapping):
        return {k: store_text(v) for k, v in parameters.items()}
    return tuple(store_text(v) for v in parameters)


_CursorT = TypeVar("_CursorT", bound=sqlite3.Cursor)


class TextSafeCursor(sqlite3.Cursor):
    """A cursor that binds every value through ``store_text``."""

    def execute(self, sql: str, parameters: Any = (), /) -> Self:
        return super().execute(sql, _bound(parameters))

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> Self:
        return super().executemany(sql, (_bound(p) for p in seq_of_parameters))


class TextSafeConnection(sqlite3.Connection):
    """A store's connection (``sqlite3.connect(..., factory=TextSafeConnection)``): its cursors, and so its
    ``execute`` and ``executemany``, bind every value through ``store_text``."""

    @overload
    def cursor(self, factory: None = None) -> TextSafeCursor: ...
    @overload
    def cursor(self, factory: Callable[[sqlite3.Connection], _CursorT]) -> _CursorT: ...
    def cursor(self, factory: Callable[[sqlite3.Connection], sqlite3.Cursor] | None = None) -> sqlite3.Cursor:
        return super().cursor(factory or TextSafeCursor)

    def execute(self, sql: str, parameters: Any = (), /) -> TextSafeCursor:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> TextSafeCursor:
        return self.cursor().executemany(sql, seq_of_parameters)


def reply_to_json(reply: Reply) -> str:
    """A call's reply as the model gave it: a lone surrogate is kept, escaped ("\\ud800": JSON is ASCII, and
    SQLite writes it), so that a replay is the very reply, and a resumed question makes the very requests
    (their call keys) that the run made before it was stopped. Read as text elsewhere (turns, results), it
    holds U+FFFD. A live call's samples have no ``batch`` key (stored as before batches were), nor a sample
    whose server reported no cached tokens a ``cached_tokens`` key (read back as None)."""
    samples = [
        {k: v for k, v in asdict(s).items() if k not in _UNSET_WHEN_NONE or v is not None} for s in reply.samples
    ]
    return json.dumps({"model": reply.model, "samples": samples})


_UNSET_WHEN_NONE = ("batch", "cached_tokens")  # sample fields a reply's JSON holds only when set


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
    return to_json(request.payload(), sort_keys=True)


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
        reasoning=row["reasoning"],
        reasoning_tokens=row["reasoning_tokens"],
        seen=row["seen"],
    )


def _turn_row(where: tuple[str, str, str, int], t: Turn, call_key: str) -> tuple[Any, ...]:
    """A turn's row in ``turns`` (``_turn`` reads it back): its result's place ``where`` (condition, task,
    question id, seed), then the turn, the key of the call it used, and its JSON columns."""
    logprobs = to_json([asdict(x) for x in t.logprobs]) if t.logprobs is not None else None
    return (
        *where,
        t.round,
        t.agent,
        call_key,
        t.text,
        t.answer,
        t.parse_status.value,
        int(bool(t.correct)),
        t.confidence,
        t.finish_reason,
        t.prompt_tokens,
        t.completion_tokens,
        t.latency_s,
        to_json([m.as_dict() for m in t.shown]),
        t.nll,
        t.anll,
        t.perplexity,
        t.seed,
        logprobs,
        t.reasoning,
        t.reasoning_tokens,
        t.seen,
    )
