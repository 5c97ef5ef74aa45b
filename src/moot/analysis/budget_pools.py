"""vote@k of the pools of a store (``vote_at_k``, ``pools_by_reader``) and the one read of a store that the
equal-budget comparison (``moot.analysis.budget``) works from: each pool's round-0 answers and what they used, and
each debate's outcomes per question and seed, as moot and every other reader read them (``_read``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from moot.analysis.budget_costs import Measure, Spend, _spends, mean_spend
from moot.analysis.budget_estimators import vote_probabilities
from moot.analysis.budget_matching import _round0, default_pool, matched_pools
from moot.analysis.readers import MOOT, READERS, reading, reread
from moot.analysis.readers import _task as known_task
from moot.debate.components.aggregation import TieRule
from moot.runner.config import ResolvedCondition
from moot.runner.records import StoredResult
from moot.runner.store import RunStore


# -- reading a store -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VoteAtK:
    """vote@k of a pool on one task: mean over questions of P(the vote of k answers is right), and its cost."""

    k: int
    accuracy: float
    tokens: float  # per question: k x the pool's mean tokens (prompt + completion) per answer
    calls: float  # per question: k (one call per answer)
    completion: float = 0.0  # per question: k x the pool's mean completion tokens per answer
    cost: float | None = None  # per question, US dollars at the run's prices (None: unpriced)


@dataclass(frozen=True)
class VotePool:
    """A pool's vote@k for k = 1..K on one task (``vote_at_k``); ``by_question`` holds each question's
    P(vote@k right) for k = 1..K, averaged over its seeds."""

    condition: str
    task: str
    agents: int  # K
    tie_rule: TieRule
    questions: int
    seeds: int
    tokens_per_answer: float
    rows: tuple[VoteAtK, ...]
    by_question: tuple[tuple[str, tuple[float, ...]], ...] = field(repr=False)
    reader: str = MOOT  # whose reading of the answers (``moot.analysis.readers``): moot's stored answers by default

    def cost(self, k: int, measure: Measure) -> float:
        row = self.rows[k - 1]
        if measure == "cost":
            if row.cost is None:
                raise ValueError(f"the pool {self.condition!r} has no cost: its model has no price")
            return row.cost
        return {"tokens": row.tokens, "calls": row.calls, "completion": row.completion}[measure]

    def matched(self, cost: float, measure: Measure) -> tuple[int, bool]:
        """The smallest k whose cost per question is >= ``cost``; (K, True) when none is that large."""
        for row in self.rows:
            if self.cost(row.k, measure) >= cost:
                return row.k, False
        return self.agents, True


Answers = dict[str, list[tuple[tuple[str | None, ...], frozenset[str]]]]  # question -> [(answers, right)] by seed
Outcomes = dict[str, list[tuple[bool, Spend]]]  # question -> [(right, what its debate used)] over seeds


@dataclass
class _Pooled:
    """One pool's round-0 answers on one task: moot's reading, each other reader's, and what each answer used."""

    answers: Answers = field(default_factory=dict)
    reread: dict[str, Answers] = field(default_factory=dict)  # reader -> its reading, where it applies
    spends: list[Spend] = field(default_factory=list)
    seeds: set[int] = field(default_factory=set)


@dataclass
class _Task:
    """One task's pools and debate results, read once."""

    pools: dict[str, _Pooled] = field(default_factory=dict)
    debates: dict[str, Outcomes] = field(default_factory=dict)
    # reader -> the same under its reading; (reader, condition) it does not read on some result: not applicable
    reread_debates: dict[str, dict[str, Outcomes]] = field(default_factory=dict)
    unread: set[tuple[str, str]] = field(default_factory=set)


@dataclass(frozen=True)
class _Read:
    pools: dict[str, tuple[int, TieRule]]  # pool -> (K, tie rule)
    conditions: tuple[str, ...]  # the debates compared
    tasks: dict[str, _Task]
    match: dict[tuple[str, str], str | None]  # (task, debate) -> the pool sampled with its round-0 request


def _read(
    store: RunStore | Path | str,
    pool: str | None,
    debates: Sequence[str] | None,
    task: str | None,
    readers: bool = False,
) -> _Read:
    """The pools' round-0 answers and the debates' results per task, and which pool each debate is matched to
    (``pool`` given: that one for every debate; else ``matched_pools``); ``readers``: the pools' replies also
    read by every other documented reader that applies (``moot.analysis.readers``), scored by the task."""
    from moot.analysis.transcripts import AnalysisError
    from moot.analysis.transcripts import open_run as _open
    from moot.runner.summary import used_calls

    opened, owned = _open(store)
    try:
        conditions = opened.conditions()
        known = list(conditions)
        for name in [*(() if pool is None else (pool,)), *(debates or ())]:
            if name not in conditions:
                raise AnalysisError(f"no condition {name!r} in {opened.path}; conditions: {', '.join(known)}")
        signatures, models = _round0(opened)
        if pool is not None:
            if debates is not None and pool in debates:
                raise AnalysisError(f"compare a debate with a different pool than {pool!r}")
            wanted = [name for name in known if name != pool] if debates is None else list(debates)
            match: dict[tuple[str, str], str | None] = {(t, n): pool for (n, t) in signatures if n in wanted}
        else:
            match = matched_pools(signatures, conditions)
            matched = {name for (_, name) in match}
            wanted = [name for name in known if name in matched] if debates is None else list(debates)
        pools = {p for p in match.values() if p is not None} | ({pool} if pool is not None else set())
        spend = _spends(opened, models)
        cached = opened.cached_prompt_tokens()
        tasks: dict[str, _Task] = {}
        for r in opened.iter_results():
            if r.condition not in pools and r.condition not in wanted:
                continue
            data = tasks.setdefault(r.task, _Task())
            qid = r.result.question.id
            if r.condition in pools:
                _add_pool_answers(data.pools.setdefault(r.condition, _Pooled()), r, conditions[r.condition], readers)
                turns = r.result.rounds[0].turns if r.result.rounds else ()
                each = cached.get(r.key, 0) / max(len(turns), 1)  # spread evenly: the pool's mean is exact
                data.pools[r.condition].spends.extend(
                    spend(r.condition, 1, t.prompt_tokens, t.completion_tokens, each) for t in turns
                )
            if r.condition in wanted:
                used = used_calls(r)
                cost = spend(r.condition, used.calls, used.prompt_tokens, used.completion_tokens, cached.get(r.key, 0))
                data.debates.setdefault(r.condition, {}).setdefault(qid, []).append((bool(r.result.correct), cost))
                for name, correct in reread(r, conditions.get(r.condition)).items() if readers else ():
                    if name == MOOT:
                        continue
                    if correct is None:
                        data.unread.add((name, r.condition))
                    by_question = data.reread_debates.setdefault(name, {}).setdefault(r.condition, {})
                    by_question.setdefault(qid, []).append((bool(correct), cost))
        if task is not None:
            if task not in tasks:
                raise AnalysisError(f"no results for task {task!r}; tasks: {', '.join(tasks) or 'none'}")
            tasks = {task: tasks[task]}
        for data in tasks.values():
            data.pools = {name: pooled for name, pooled in data.pools.items() if pooled.answers}
        if pool is not None and not any(pool in data.pools for data in tasks.values()):
            raise AnalysisError(f"pool {pool!r} has no stored answers in {opened.path}")
        return _Read(
            {name: (conditions[name].protocol.agents, conditions[name].protocol.tie_rule) for name in pools},
            tuple(wanted),
            tasks,
            match,
        )
    finally:
        if owned:
            opened.close()


def _add_pool_answers(data: _Pooled, r: StoredResult, condition: ResolvedCondition, readers: bool) -> None:
    """One stored result of a pool: its round-0 answers (a missing answer does not vote), as moot read them and,
    with ``readers``, as every other reader that reads the task reads them."""
    size = condition.protocol.agents
    qid = r.result.question.id
    turns = r.result.rounds[0].turns if r.result.rounds else ()
    answers = tuple(t.answer for t in turns) + (None,) * (size - len(turns))
    right = frozenset(t.answer for t in turns if t.answer is not None and t.correct)
    data.answers.setdefault(qid, []).append((answers, right))
    data.seeds.add(r.seed)
    scorer = known_task(r.task)
    for name, reader in READERS.items() if readers else ():
        read = None if name == MOOT else reading(reader, r.task, condition, r.result.question)
        if read is None or scorer is None:
            continue  # moot's is the stored answers; the reader does not read this task
        again = tuple(read(t.text) for t in turns) + (None,) * (size - len(turns))
        good = frozenset(a for a in again if a is not None and scorer.score(a, r.result.question))
        data.reread.setdefault(name, {}).setdefault(qid, []).append((again, good))


def _pool(read: _Read, task: str, pool: str, reader: str = MOOT) -> VotePool:
    data = read.tasks[task].pools[pool]
    agents, tie_rule = read.pools[pool]
    answers = data.answers if reader == MOOT else data.reread[reader]
    by_question = []
    for qid, repeats in answers.items():
        per_seed = np.array([vote_probabilities(a, right, tie_rule)[1:] for a, right in repeats])
        by_question.append((qid, tuple(float(x) for x in per_seed.mean(axis=0))))
    matrix = np.array([p for _, p in by_question])
    each = mean_spend(data.spends)
    rows = tuple(
        VoteAtK(
            k,
            float(matrix[:, k - 1].mean()),
            k * (each.prompt + each.completion),
            float(k),
            k * each.completion,
            None if each.cost is None else k * each.cost,
        )
        for k in range(1, agents + 1)
    )
    return VotePool(
        pool,
        task,
        agents,
        tie_rule,
        len(by_question),
        len(data.seeds),
        each.prompt + each.completion,
        rows,
        tuple(by_question),
        reader,
    )


def pools_by_reader(store: RunStore | Path | str, pool: str | None = None) -> dict[str, tuple[VotePool, ...]]:
    """``vote_at_k`` of every pool (or of ``pool``) on every task under each documented reader that reads the
    pool's replies (moot's always): the pool's round-0 replies re-read by the reader and scored by the task, the
    costs unchanged. One read of the store."""
    read = _read(store, pool, (), None, readers=True)
    out: dict[str, list[VotePool]] = {MOOT: []}
    for task, data in read.tasks.items():
        for name, pooled in data.pools.items():
            out[MOOT].append(_pool(read, task, name))
            for reader in pooled.reread:
                out.setdefault(reader, []).append(_pool(read, task, name, reader))
    return {reader: tuple(pools) for reader, pools in out.items()}


def vote_at_k(store: RunStore | Path | str, pool: str | None = None, task: str | None = None) -> tuple[VotePool, ...]:
    """vote@k for k = 1..K of the ``pool`` condition's round-0 answers, per task (or on one ``task``).

    Per question, the exact P(a majority vote of k answers drawn without replacement from its K round-0
    answers is right) under the pool's tie rule (``vote_probabilities``), averaged over seeds; the accuracy is
    its mean over questions. Cost per question: k x the pool's mean spend per answer (tokens, completion
    tokens, cost) and k calls. ``pool`` None: ``default_pool``."""
    name = pool if pool is not None else default_pool(store)
    read = _read(store, name, (), task)
    return tuple(_pool(read, t, name) for t, data in read.tasks.items() if name in data.pools)
