"""The JSON layouts of the records a store holds: a call's request and reply (``calls.request``,
``calls.reply``), a round's vote, judge, pool and retention (``results.votes``) and a turn's row
(``turns``), to and from what the engine uses. The engine's types are imported where they are used, so
that opening a store and listing it (``moot runs``) loads no backend, protocol or task code."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from moot.backends.base import GenerationRequest, Reply
    from moot.debate.records import RoundRecord, Turn, Vote


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
    return json.dumps(request.payload(), sort_keys=True)


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
    logprobs = json.dumps([asdict(x) for x in t.logprobs]) if t.logprobs is not None else None
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
        json.dumps([m.as_dict() for m in t.shown]),
        t.nll,
        t.anll,
        t.perplexity,
        t.seed,
        logprobs,
        t.reasoning,
        t.reasoning_tokens,
        t.seen,
    )
