"""Which pool a debate is set against at equal budget (``moot.analysis.budget``): the pool conditions
(``is_pool``, ``default_pool``) and the pool sampled with a condition's own round-0 request, found from the stored
requests (``request_signature``, ``round0_signatures``, ``matched_pools``, ``matched_pool_names``), never from
names.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from moot.runner.config import ResolvedCondition
from moot.runner.store import RunStore


def is_pool(condition: ResolvedCondition) -> bool:
    """A condition whose results are K >= 2 independent answers: 1 round, its agents' vote the answer."""
    protocol = condition.protocol
    return protocol.rounds == 1 and protocol.agents >= 2 and not protocol.judged


def default_pool(store: RunStore | Path | str) -> str:
    """The pool (``is_pool``: 1 round, 2 or more agents voting) with the most stored results, then the most agents
    (the first on a tie); while none has any, the one with the most agents; a run without such a pool, its
    condition of 1 round so ranked. A run whose large pool is still being made thus votes from the pool that
    answered most questions, not from the few its large pool has reached, nor from a single agent that did."""
    from moot.analysis.transcripts import AnalysisError
    from moot.analysis.transcripts import open_run as _open

    opened, owned = _open(store)
    try:
        conditions = opened.conditions()
        pools = [name for name, c in conditions.items() if is_pool(c)]
        chosen = pools or [name for name, c in conditions.items() if c.protocol.rounds == 1]
        single_round = [(conditions[name].protocol.agents, name) for name in chosen]
        if not single_round:
            raise AnalysisError(f"no condition of 1 round in {opened.path} to vote from; name one with --pool")
        results = Counter(condition for condition, *_ in opened.done())
        ranked = [((results[name], agents), name) for agents, name in single_round]
        best = max(rank for rank, _ in ranked)
        return next(name for rank, name in ranked if rank == best)
    finally:
        if owned:
            opened.close()


_SAMPLING = ("temperature", "top_p", "max_tokens", "stop")  # what a request samples with, besides its seed


def request_signature(model: str, request: Mapping[str, Any]) -> str:
    """What a round-0 request asks, less what differs between independent samples of it (the seed, the sample
    count, whether log-probabilities come back): the model, the messages (system message, instruction, template
    and question) and the sampling settings. Two arms whose round-0 requests have one signature start from the
    same prompt."""
    asked = {"model": model, "messages": request.get("messages"), **{k: request.get(k) for k in _SAMPLING}}
    return hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()[:16]


Signatures = dict[tuple[str, str], dict[str, frozenset[str]]]  # (condition, task) -> question -> round-0 signatures


def round0_signatures(store: RunStore) -> Signatures:
    """Each condition's round-0 request signatures per task and question (over its agents and seeds)."""
    return _round0(store)[0]


def _round0(store: RunStore) -> tuple[Signatures, dict[str, set[str]]]:
    """One read of the round-0 requests: their signatures (``round0_signatures``) and each condition's models."""
    out: dict[tuple[str, str], dict[str, set[str]]] = {}
    models: dict[str, set[str]] = {}
    for condition, task, question, _seed, _agent, model, request in store.round0_requests():
        out.setdefault((condition, task), {}).setdefault(question, set()).add(request_signature(model, request))
        models.setdefault(condition, set()).add(model)
    return {key: {q: frozenset(s) for q, s in by_q.items()} for key, by_q in out.items()}, models


def matched_pools(
    signatures: Signatures, conditions: Mapping[str, ResolvedCondition]
) -> dict[tuple[str, str], str | None]:
    """(task, condition) -> the pool whose round-0 requests are the condition's own on every question both have
    (``request_signature``): the pool with the most agents, then the first in the run's order; None where no
    pool was sampled with the condition's request. A pool is matched only to a larger pool of its kind; the
    largest pool of each kind is the pool itself and is left out."""
    pools = [name for name, c in conditions.items() if is_pool(c)]
    out: dict[tuple[str, str], str | None] = {}
    for (condition, task), mine in signatures.items():
        if condition not in conditions:
            continue
        size = conditions[condition].protocol.agents if condition in pools else 0
        best: str | None = None
        for pool in pools:
            theirs = signatures.get((pool, task), {})
            shared = [q for q in mine if q in theirs]
            agents = conditions[pool].protocol.agents
            if pool == condition or agents <= size or not shared or any(mine[q] != theirs[q] for q in shared):
                continue
            if best is None or agents > conditions[best].protocol.agents:
                best = pool
        if best is not None or condition not in pools:
            out[(task, condition)] = best
    return out


def matched_pool_names(store: RunStore | Path | str) -> dict[tuple[str, str], str | None]:
    """(task, condition) -> the pool sampled with the condition's own round-0 request (``matched_pools``)."""
    from moot.analysis.transcripts import open_run as _open

    opened, owned = _open(store)
    try:
        return matched_pools(round0_signatures(opened), opened.conditions())
    finally:
        if owned:
            opened.close()
