"""Debate against voting at equal cost (issues 39 and 55): vote@k from a pool of independent answers sampled with
the debate's own first request, and the paired test of a debate against the vote@k whose budget matches it.

A pool is a condition whose round 0 holds K independent answers per question (a ``vote`` condition of K agents).
``vote_at_k`` gives, for every k <= K, the accuracy of a majority vote of k answers drawn from the pool, computed
exactly over all k-subsets of each question's K answers (``vote_probabilities``), with its cost per question (k/K
of the pool's). ``equal_budget`` pairs a debate condition with the smallest vote@k that costs at least as much, per
question: the mean difference, a paired bootstrap interval, a sign-flip permutation test and Holm's adjustment
over the table.

Each debate is matched to the pool sampled with its own round-0 request (``matched_pools``: the same model,
messages and sampling, read from the stored requests, never from names), so that the debate and the vote it is
set against start from the same prompt; where no pool was sampled so, the row says so instead of borrowing
another template's pool. The budget unit is declared (``MEASURES``): tokens (prompt + completion, counted
alike), completion tokens, calls, or US dollars at the run's ``[prices]`` (the prompt tokens a server reported
cached, on the calls a result's turns used, at their ``cached_prompt`` price).

The question is the unit: a question's repeats over seeds are averaged (its vote@k probability and a debate's
correctness alike), and tests and resampling are over questions. No model is called.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from moot.analysis import stats
from moot.analysis.differs import Differences, arm_profiles, pair_differences
from moot.analysis.readers import MOOT, READERS, Accuracies, breaking, reading, reread, robustness
from moot.analysis.readers import _task as known_task
from moot.debate.components.aggregation import TieRule
from moot.errors import ConfigError
from moot.runner.config import Price, ResolvedCondition
from moot.runner.records import StoredResult
from moot.runner.store import RunStore

Measure = Literal["tokens", "completion", "calls", "cost"]
MEASURES: tuple[Measure, ...] = ("tokens", "completion", "calls", "cost")
# what each budget unit counts, as tables name it
UNITS: dict[str, str] = {
    "tokens": "tokens (prompt + completion)",
    "completion": "completion tokens",
    "calls": "calls",
    "cost": "US dollars",
}
EXACT_FLIPS = 20  # up to this many questions the sign-flip test enumerates all 2^n sign vectors
DEFAULT_FLIPS = 10_000  # random sign vectors beyond that
_FLIP_BATCH = 1 << 15  # sign vectors evaluated at once: bounds memory
_TOLERANCE = 1e-12  # |statistic| ties within floating-point rounding count as "as extreme"


# -- the exact vote@k of one question ----------------------------------------------------------------------
def vote_probabilities(
    answers: Sequence[str | None], right: Collection[str], tie_rule: TieRule = "first"
) -> tuple[float, ...]:
    """P(the majority vote of a uniformly random k-subset of ``answers`` is right), for k = 0..K (exact).

    ``answers`` are one question's K round-0 answers in agent order (None: unparsed, which does not vote);
    ``right``: the answers scored correct. Estimator: the exact expectation over all C(K, k) subsets,
    computed by answer counts, not subsets. A uniform k-subset takes x_b of answer b's c_b members and y of the
    u unparsed with the multivariate hypergeometric probability prod_b C(c_b, x_b) C(u, y) / C(K, k). A right
    answer a with x_a = t >= 1 wins when no other answer has more than t and the tie among those with exactly t
    goes to a:

    - ``random`` (uniform among the tied): with j others also at t, a wins with probability 1/(j + 1), so
      P_k = sum_a sum_t C(c_a, t) [z^(k-t)] sum_j G_t,j(z) / (j + 1) / C(K, k), where G_t,j is the generating
      function of the others' counts (each < t, exactly j of them = t) times that of the unparsed, sum_y C(u, y) z^y.
    - ``abstain`` (a tie gives no answer): the same with j = 0 only.
    - ``first`` (the earliest agent among the tied): given the counts, each answer's sampled members are a
      uniform x_b-subset of its positions, independently, and a wins iff its earliest sampled member comes before
      the earliest sampled member of every other answer at t. Summing over r, the rank among a's positions
      p_a,0 < p_a,1 < ... of a's earliest sampled member s = p_a,r (the others of a's t chosen from the
      c_a - r - 1 after it: C(c_a - r - 1, t - 1) ways), another answer b contributes C(c_b, x) for x < t and
      C(#{b's positions > s}, t) for x = t: P_k = sum_a sum_t sum_r C(c_a - r - 1, t - 1) [z^(k-t)] H_t,s(z) / C(K, k).

    No parsed answer in the subset, or a tie under ``abstain``, is wrong. The sums are of polynomials of degree
    <= K (numpy convolutions in float64: exact up to rounding, for any K; 64 answers take milliseconds).
    """
    size = len(answers)
    positions: dict[str, list[int]] = {}
    for index, answer in enumerate(answers):
        if answer is not None:
            positions.setdefault(answer, []).append(index)
    unparsed = size - sum(len(p) for p in positions.values())
    base = np.zeros(size + 1)
    base[: unparsed + 1] = [math.comb(unparsed, y) for y in range(unparsed + 1)]
    numerator = np.zeros(size + 1)
    for answer, mine in positions.items():
        if answer not in right:
            continue
        others = [len(p) for b, p in positions.items() if b != answer]
        other_positions = [p for b, p in positions.items() if b != answer]
        for t in range(1, len(mine) + 1):
            if tie_rule == "first":
                for r in range(len(mine) - t + 1):
                    earliest = mine[r]
                    poly = base
                    for members in other_positions:
                        coefficients = _below(len(members), t)
                        coefficients[t] = math.comb(sum(1 for x in members if x > earliest), t)
                        poly = _times(poly, coefficients)
                    numerator += math.comb(len(mine) - r - 1, t - 1) * _shift(poly, t)
            elif tie_rule in ("random", "abstain"):
                by_ties = [base]  # by_ties[j]: the others' generating function with exactly j of them at t
                for c in others:
                    below, at = _below(c, t)[:t], math.comb(c, t)
                    grown = [_times(poly, below) for poly in by_ties] + [np.zeros(size + 1)]
                    for j, poly in enumerate(by_ties):
                        grown[j + 1] = grown[j + 1] + at * _shift(poly, t)
                    by_ties = grown
                if tie_rule == "random":
                    weighted = sum((poly / (j + 1) for j, poly in enumerate(by_ties)), np.zeros(size + 1))
                else:
                    weighted = by_ties[0]
                numerator += math.comb(len(mine), t) * _shift(weighted, t)
            else:
                raise ValueError(f"unknown tie rule {tie_rule!r}")
    subsets = np.array([math.comb(size, k) for k in range(size + 1)], dtype=float)
    return tuple(float(min(max(p, 0.0), 1.0)) for p in numerator / subsets)


def _below(c: int, t: int) -> np.ndarray:
    """Coefficients C(c, x) for x < t (0 where x > c), with a zero slot at x = t."""
    out = np.zeros(t + 1)
    for x in range(min(t - 1, c) + 1):
        out[x] = math.comb(c, x)
    return out


def _times(poly: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    return np.convolve(poly, coefficients)[: poly.size]


def _shift(poly: np.ndarray, t: int) -> np.ndarray:
    out = np.zeros(poly.size)
    out[t:] = poly[: poly.size - t]
    return out


# -- the sign-flip test ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SignFlip:
    """Two-sided sign-flip permutation test of paired differences: p and whether it is exact."""

    p: float
    exact: bool
    flips: int  # sign vectors evaluated (2^n when exact)


def sign_flip_test(differences: Sequence[float], seed: int = 0, flips: int = DEFAULT_FLIPS) -> SignFlip:
    """Sign-flip (paired permutation) test that paired differences are symmetric about 0; statistic |sum d|.

    Exact when n <= 20: p = #{s in {-1, 1}^n : |sum s_i d_i| >= |sum d_i|} / 2^n (the observed signs included).
    Beyond that, ``flips`` sign vectors drawn uniformly with a seeded numpy Generator and
    p = (1 + #{as extreme}) / (1 + flips), a valid Monte Carlo p. No difference at all: p = 1.
    """
    d = np.asarray(differences, dtype=float)
    n = int(d.size)
    if n == 0:
        return SignFlip(math.nan, True, 0)
    observed = abs(float(d.sum())) - _TOLERANCE
    if n <= EXACT_FLIPS:
        bits = np.arange(n)
        extreme = 0
        for start in range(0, 1 << n, _FLIP_BATCH):
            vectors = np.arange(start, min(start + _FLIP_BATCH, 1 << n))
            signs = 1.0 - 2.0 * ((vectors[:, None] >> bits) & 1)
            extreme += int(np.sum(np.abs(signs @ d) >= observed))
        return SignFlip(extreme / (1 << n), True, 1 << n)
    rng = np.random.default_rng(seed)
    extreme = 0
    for start in range(0, flips, _FLIP_BATCH):
        count = min(_FLIP_BATCH, flips - start)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(count, n))
        extreme += int(np.sum(np.abs(signs @ d) >= observed))
    return SignFlip((1 + extreme) / (1 + flips), False, flips)


# -- costs -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Spend:
    """What one answer, or one question's debate, used: calls, prompt and completion tokens, and US dollars at
    the run's ``[prices]`` (None: some model it used has no price)."""

    calls: float
    prompt: float
    completion: float
    cost: float | None = None

    def of(self, measure: Measure) -> float:
        """The spend in ``measure``: calls, tokens (prompt + completion), completion tokens, or US dollars."""
        if measure == "calls":
            return self.calls
        if measure == "tokens":
            return self.prompt + self.completion
        if measure == "completion":
            return self.completion
        if self.cost is None:
            raise ValueError("no cost: some model has no price")
        return self.cost


def mean_spend(spends: Sequence[Spend]) -> Spend:
    """The mean of ``spends`` (cost None if any is None)."""
    n = max(len(spends), 1)
    costs = [s.cost for s in spends]
    return Spend(
        sum(s.calls for s in spends) / n,
        sum(s.prompt for s in spends) / n,
        sum(s.completion for s in spends) / n,
        None if any(c is None for c in costs) else sum(c for c in costs if c is not None) / n,
    )


def priced(calls: int, prompt: int, completion: int, price: Price | None, cached: float = 0) -> Spend:
    """A spend priced at ``price`` (US dollars per million tokens; None: unpriced), ``cached`` of its prompt
    tokens (as the servers reported them) at the price's ``cached_prompt`` (``Price.microdollars``)."""
    cost = None if price is None else price.microdollars(prompt, completion, cached) / 1e6
    return Spend(calls, prompt, completion, cost)


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


@dataclass(frozen=True)
class EqualBudget:
    """A debate condition against the vote@k of the same budget on one task (``equal_budget``).

    d = the debate's correctness (mean over seeds) - P(vote@k right), per question; ``difference`` is its mean
    over the ``n`` questions both answered, ``ci`` a paired percentile bootstrap interval, ``p`` the two-sided
    sign-flip test (exact, or ``flips`` random sign vectors) and ``holm_p`` Holm's adjustment over the table.
    ``pool`` is the pool sampled with the debate's own round-0 request (``matched_pools``); a debate that no pool
    matches has ``pool`` "" and no figures (``unmatched``), rather than another template's pool."""

    debate: str
    pool: str
    task: str
    measure: Measure
    k: int
    debate_cost: float  # per question, in ``measure``
    vote_cost: float
    pool_too_small: bool  # no vote@k costs as much as the debate: k = K
    n: int
    debate_accuracy: float
    vote_accuracy: float
    difference: float
    ci: stats.Interval
    p: float
    exact: bool
    holm_p: float
    readers: str = ""  # the verdict under every reader (``BudgetReaders.summary``), where it was re-derived
    differs: Differences | None = None  # what else the debate and its pool differ in (``with_differs``)

    @property
    def unmatched(self) -> bool:
        """No pool was sampled with the debate's round-0 request: the row has no figures."""
        return not self.pool


def unmatched_row(debate: str, task: str, measure: Measure, cost: float) -> EqualBudget:
    """The row of a debate that no pool matches (``EqualBudget.unmatched``): its cost, no comparison."""
    nan = math.nan
    return EqualBudget(
        debate, "", task, measure, 0, cost, nan, False, 0, nan, nan, nan, stats.Interval(nan, nan), nan, True, nan
    )


@dataclass(frozen=True)
class BudgetReaders:
    """One equal-budget row under each reader (by name; None: the reader reads the pool's or the condition's
    replies on no question), each with Holm's adjustment over its reader's table."""

    debate: str
    rows: tuple[tuple[str, EqualBudget | None], ...]
    accuracies: Accuracies | None = None  # validated on the store (``readers.breaking``); None: unvalidated

    @property
    def breaks(self) -> tuple[str, ...]:
        """The readers whose verdict (direction, significance at Holm p < 0.05) differs from moot's (``breaking``)."""
        return breaking(
            [
                (reader, None if e is None else ((e.difference > 0) - (e.difference < 0), e.holm_p < 0.05))
                for reader, e in self.rows
            ],
            self.accuracies,
        )

    @property
    def summary(self) -> str:
        """ "robust", "breaks under: paper, strict", or "—" where no other reader reads both sides."""
        if not any(e is not None for reader, e in self.rows if reader != MOOT):
            return "—"
        return robustness(self.breaks, self.accuracies)


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


def _spends(store: RunStore, models: dict[str, set[str]]) -> Callable[[str, int, int, int, float], Spend]:
    """A pricer of one condition's spend (calls, prompt, completion and cached prompt tokens): priced at the run's
    ``[prices]`` where every model its results used (its round-0 agents' and its own calls') is one priced model;
    unpriced (cost None) otherwise. ``models``: each condition's round-0 models (``_round0``), extended here."""
    prices = store.run_meta().config.prices
    for call in store.iter_calls():
        models.setdefault(call.condition, set()).add(call.model_name)
    price_of = {c: prices.get(next(iter(m))) if len(m) == 1 else None for c, m in models.items()}

    def spend(condition: str, calls: int, prompt: int, completion: int, cached: float) -> Spend:
        return priced(calls, prompt, completion, price_of.get(condition), cached)

    return spend


def condition_pricer(store: RunStore) -> Callable[[str, int, int, int, float], Spend]:
    """``_spends`` for every condition of ``store``: how its results are priced (also ``moot.frames``' cost)."""
    return _spends(store, _round0(store)[1])


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


def matched_pool_names(store: RunStore | Path | str) -> dict[tuple[str, str], str | None]:
    """(task, condition) -> the pool sampled with the condition's own round-0 request (``matched_pools``)."""
    from moot.analysis.transcripts import open_run as _open

    opened, owned = _open(store)
    try:
        return matched_pools(round0_signatures(opened), opened.conditions())
    finally:
        if owned:
            opened.close()


# One debate condition's results on one task: question id -> [(correct, what it used)] over its seeds.
DebateResults = Mapping[str, Sequence[tuple[bool, Spend]]]


def debate_cost(results: DebateResults, measure: Measure) -> float:
    """A debate's mean cost per question in ``measure`` (each question's mean over its seeds)."""
    return float(np.mean([np.mean([spend.of(measure) for _, spend in rs]) for rs in results.values()]))


def match_budget(
    pool: VotePool,
    debate: str,
    results: DebateResults,
    measure: Measure,
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
    flips: int = DEFAULT_FLIPS,
) -> EqualBudget:
    """``debate`` against the vote@k of ``pool`` that costs as much (``pool.matched``) on the questions both
    answered, without Holm's adjustment (``holm_p`` NaN): what ``equal_budget`` and ``moot results`` share."""
    if measure not in MEASURES:
        raise ValueError(f"unknown budget measure {measure!r}; one of {', '.join(MEASURES)}")
    cost = debate_cost(results, measure)
    k, too_small = pool.matched(cost, measure)
    probabilities = dict(pool.by_question)
    shared = [q for q in results if q in probabilities]
    debate_correct = np.array([np.mean([right for right, _ in results[q]]) for q in shared], dtype=float)
    vote_correct = np.array([probabilities[q][k - 1] for q in shared], dtype=float)
    d = debate_correct - vote_correct
    test = sign_flip_test(d, seed, flips)
    return EqualBudget(
        debate=debate,
        pool=pool.condition,
        task=pool.task,
        measure=measure,
        k=k,
        debate_cost=cost,
        vote_cost=pool.cost(k, measure),
        pool_too_small=too_small,
        n=len(shared),
        debate_accuracy=float(debate_correct.mean()) if shared else math.nan,
        vote_accuracy=float(vote_correct.mean()) if shared else math.nan,
        difference=float(d.mean()) if shared else math.nan,
        ci=stats.bootstrap_mean(d, seed, resamples),
        p=test.p,
        exact=test.exact,
        holm_p=math.nan,
    )


def with_holm(rows: Sequence[EqualBudget]) -> list[EqualBudget]:
    """Holm's adjustment over the rows that have a p value (``holm_p`` filled in)."""
    adjusted = iter(stats.holm([r.p for r in rows if not math.isnan(r.p)]))
    return [r if math.isnan(r.p) else replace(r, holm_p=next(adjusted)) for r in rows]


def check_measure(measure: Measure, spends: Iterable[Spend]) -> None:
    """A ConfigError naming what the store lacks for ``measure``: token counts (every call counted none) or
    prices (a model without one, or only zero prices: nothing to match)."""
    if measure not in MEASURES:
        raise ConfigError(f"unknown budget unit {measure!r}; one of {', '.join(MEASURES)}")
    spends = list(spends)
    if measure in ("tokens", "completion") and spends and not any(s.of(measure) for s in spends):
        raise ConfigError(f"--budget {measure}: the store has no {measure} counts (every call recorded 0)")
    if measure == "cost":
        if any(s.cost is None for s in spends):
            raise ConfigError(
                '--budget cost: some model of the store has no price; add [prices."MODEL"] to the experiment'
            )
        if spends and not any(s.cost for s in spends):
            raise ConfigError(
                "--budget cost: every price in the store is zero (a local model); use tokens or completion"
            )


def _rows(
    read: _Read, measure: Measure, seed: int, resamples: int, flips: int, accuracies: Accuracies | None = None
) -> tuple[list[VotePool], list[EqualBudget]]:
    """Every debate against the vote@k of its matched pool per task (a row without figures where no pool
    matches), Holm over the table; where the read holds the other readers' readings (``_read(readers=True)``),
    each row's verdict under them (``EqualBudget.readers``, judged by the readers' validated ``accuracies``),
    each reader's table with its own Holm adjustment."""
    check_measure(
        measure,
        [s for data in read.tasks.values() for p in data.pools.values() for s in p.spends]
        + [s for data in read.tasks.values() for o in data.debates.values() for rs in o.values() for _, s in rs],
    )
    pools: dict[tuple[str, str], VotePool] = {}
    rows = []
    for task, data in read.tasks.items():
        for name in data.pools:
            pools[(task, name)] = _pool(read, task, name)
        for debate in read.conditions:
            results = data.debates.get(debate, {})
            if not results:
                continue
            pool = read.match.get((task, debate))
            if pool is None or pool not in data.pools:
                rows.append(unmatched_row(debate, task, measure, debate_cost(results, measure)))
            else:
                rows.append(match_budget(pools[(task, pool)], debate, results, measure, seed, resamples, flips))
    rows = with_holm(rows)
    readers = sorted({r for data in read.tasks.values() for p in data.pools.values() for r in p.reread})
    if not readers:
        return list(pools.values()), rows
    under: dict[str, dict[tuple[str, str], EqualBudget]] = {}
    for reader in readers:
        mine = []
        for task, data in read.tasks.items():
            for debate, results in data.reread_debates.get(reader, {}).items():
                pool = read.match.get((task, debate))
                if pool is None or pool not in data.pools or reader not in data.pools[pool].reread:
                    continue
                if debate in read.conditions and (reader, debate) not in data.unread:
                    mine.append(
                        match_budget(_pool(read, task, pool, reader), debate, results, measure, seed, resamples, flips)
                    )
        under[reader] = {(e.task, e.debate): e for e in with_holm(mine)}
    return list(pools.values()), [
        e
        if e.unmatched
        else replace(
            e,
            readers=BudgetReaders(
                e.debate, ((MOOT, e), *((r, under[r].get((e.task, e.debate))) for r in readers)), accuracies
            ).summary,
        )
        for e in rows
    ]


def equal_budget(
    store: RunStore | Path | str,
    debate: str,
    pool: str | None = None,
    measure: Measure = "tokens",
    task: str | None = None,
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
    flips: int = DEFAULT_FLIPS,
    accuracies: Accuracies | None = None,
) -> tuple[EqualBudget, ...]:
    """``debate`` against the vote@k whose budget matches it, per task (or on one ``task``), from the pool
    sampled with the debate's own round-0 request (``matched_pools``; ``pool``: that condition instead).

    The matched k is the smallest whose cost per question (``measure``: tokens, prompt + completion; completion
    tokens; calls; or US dollars at the run's prices) is >= the debate's mean cost per question (every call its
    debates used, helpers included); K when none is. Per question d = debate correctness (mean over seeds) -
    P(vote@k right); reported: mean d, paired percentile bootstrap interval (``stats.bootstrap_mean``, seeded),
    two-sided sign-flip test (``sign_flip_test``), and Holm's adjustment over the tasks' rows; and the verdict
    under every other reader that reads the pool (``EqualBudget.readers``; ``accuracies``: the readers' validated
    accuracies on the store, ``readers.breaking``). A task where no pool matches the debate gives a row without
    figures (``EqualBudget.unmatched``)."""
    from moot.analysis.transcripts import AnalysisError

    read = _read(store, pool, (debate,), task, readers=True)
    rows = _rows(read, measure, seed, resamples, flips, accuracies)[1]
    if not rows:
        raise AnalysisError(f"condition {debate!r} has no results")
    return with_differs(store, rows)


def equal_budget_table(
    store: RunStore | Path | str,
    pool: str | None = None,
    measure: Measure = "tokens",
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
    flips: int = DEFAULT_FLIPS,
    accuracies: Accuracies | None = None,
) -> tuple[tuple[VotePool, ...], tuple[EqualBudget, ...]]:
    """Every pool's vote@k per task and every other condition against the vote@k of its matched pool (as
    ``equal_budget``; ``pool``: that one for all), with Holm's adjustment over the whole table (each reader's over
    its own); ``accuracies``: the readers' validated accuracies on the store (``readers.breaking``)."""
    read = _read(store, pool, None, None, readers=True)
    pools, rows = _rows(read, measure, seed, resamples, flips, accuracies)
    return tuple(pools), with_differs(store, rows)


def with_differs(store: RunStore | Path | str, rows: Sequence[EqualBudget]) -> tuple[EqualBudget, ...]:
    """``rows``, each with what else its debate and its pool differ in (``moot.analysis.differs``); the pool's
    size is not a difference (k is matched by cost)."""
    profiles = arm_profiles(store)
    return tuple(
        replace(r, differs=pair_differences(profiles, r.debate, r.pool, r.task, ignore=("agents",))) for r in rows
    )
