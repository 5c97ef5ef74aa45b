"""Debate against voting at equal cost (issue 39): vote@k from one pool of independent answers, and the paired
test of a debate against the vote@k whose budget matches it.

A pool is a condition whose round 0 holds K independent answers per question (a ``vote`` condition of K agents;
any condition's round-0 turns are independent answers). ``vote_at_k`` gives, for every k <= K, the accuracy of a
majority vote of k answers drawn from the pool, computed exactly over all k-subsets of each question's K answers
(``vote_probabilities``), with its tokens and calls per question (k/K of the pool's). ``equal_budget`` pairs a
debate condition with the smallest vote@k that costs at least as much, per question: the mean difference, a paired
bootstrap interval, a sign-flip permutation test and Holm's adjustment over the table.

The question is the unit: a question's repeats over seeds are averaged (its vote@k probability and a debate's
correctness alike), and tests and resampling are over questions. No model is called.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np

from moot.analysis import stats
from moot.analysis.readers import MOOT, READERS, breaking, reading, reread, robustness
from moot.analysis.readers import _task as known_task
from moot.debate.components.aggregation import TieRule
from moot.runner.store import RunStore

Measure = Literal["tokens", "calls"]
MEASURES: tuple[Measure, ...] = ("tokens", "calls")
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


# -- reading a store -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VoteAtK:
    """vote@k of a pool on one task: mean over questions of P(the vote of k answers is right), and its cost."""

    k: int
    accuracy: float
    tokens: float  # per question: k x the pool's mean tokens (prompt + completion) per answer
    calls: float  # per question: k (one call per answer)


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
        return row.tokens if measure == "tokens" else row.calls

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
    sign-flip test (exact, or ``flips`` random sign vectors) and ``holm_p`` Holm's adjustment over the table."""

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


@dataclass(frozen=True)
class BudgetReaders:
    """One equal-budget row under each reader (by name; None: the reader reads the pool's or the condition's
    replies on no question), each with Holm's adjustment over its reader's table."""

    debate: str
    rows: tuple[tuple[str, EqualBudget | None], ...]

    @property
    def breaks(self) -> tuple[str, ...]:
        """The readers whose verdict (direction, significance at Holm p < 0.05) differs from moot's."""
        return breaking(
            [
                (reader, None if e is None else ((e.difference > 0) - (e.difference < 0), e.holm_p < 0.05))
                for reader, e in self.rows
            ]
        )

    @property
    def summary(self) -> str:
        """ "robust", "breaks under: paper, strict", or "—" where no other reader reads both sides."""
        if not any(e is not None for reader, e in self.rows if reader != MOOT):
            return "—"
        return robustness(self.breaks)


Answers = dict[str, list[tuple[tuple[str | None, ...], frozenset[str]]]]  # question -> [(answers, right)] by seed


@dataclass
class _Pooled:
    """One task's pool answers (moot's, and as each other reader reads the replies) and debate results, read
    once."""

    answers: Answers = field(default_factory=dict)
    reread: dict[str, Answers] = field(default_factory=dict)  # reader -> its reading, where it applies
    answer_tokens: list[int] = field(default_factory=list)
    seeds: set[int] = field(default_factory=set)
    # condition -> question id -> [(correct, tokens, calls)] over seeds
    debates: dict[str, dict[str, list[tuple[bool, int, int]]]] = field(default_factory=dict)
    # reader -> the same under its reading; (reader, condition) it does not read on some result: not applicable
    reread_debates: dict[str, dict[str, dict[str, list[tuple[bool, int, int]]]]] = field(default_factory=dict)
    unread: set[tuple[str, str]] = field(default_factory=set)


@dataclass(frozen=True)
class _Read:
    pool: str
    agents: int
    tie_rule: TieRule
    conditions: tuple[str, ...]
    tasks: dict[str, _Pooled]


def default_pool(store: RunStore | Path | str) -> str:
    """The condition whose protocol has 1 round with the most stored results, then the most agents (the first
    on a tie); while none has any, the one with the most agents. A run whose large pool is still being made
    thus votes from the pool that answered most questions, not from the few its large pool has reached."""
    from moot.analysis.transcripts import AnalysisError
    from moot.analysis.transcripts import open_run as _open

    opened, owned = _open(store)
    try:
        conditions = opened.conditions()
        single_round = [(c.protocol.agents, name) for name, c in conditions.items() if c.protocol.rounds == 1]
        if not single_round:
            raise AnalysisError(f"no condition of 1 round in {opened.path} to vote from; name one with --pool")
        results = Counter(condition for condition, *_ in opened.done())
        ranked = [((results[name], agents), name) for agents, name in single_round]
        best = max(rank for rank, _ in ranked)
        return next(name for rank, name in ranked if rank == best)
    finally:
        if owned:
            opened.close()


def _read(
    store: RunStore | Path | str,
    pool: str | None,
    debates: Sequence[str] | None,
    task: str | None,
    readers: bool = False,
) -> _Read:
    """The pool's round-0 answers and the debates' results per task; ``readers``: the pool's replies also read by
    every other documented reader that applies (``moot.analysis.readers``), scored by the task."""
    from moot.analysis.transcripts import AnalysisError
    from moot.analysis.transcripts import open_run as _open
    from moot.runner.summary import used_calls

    opened, owned = _open(store)
    try:
        conditions = opened.conditions()
        known = list(conditions)
        pool = pool if pool is not None else default_pool(opened)
        for name in [pool, *(debates or ())]:
            if name not in conditions:
                raise AnalysisError(f"no condition {name!r} in {opened.path}; conditions: {', '.join(known)}")
        wanted = [name for name in known if name != pool] if debates is None else list(debates)
        if pool in wanted:
            raise AnalysisError(f"compare a debate with a different pool than {pool!r}")
        protocol = conditions[pool].protocol
        tasks: dict[str, _Pooled] = {}
        for r in opened.iter_results():
            if r.condition != pool and r.condition not in wanted:
                continue
            data = tasks.setdefault(r.task, _Pooled())
            qid = r.result.question.id
            if r.condition == pool:
                turns = r.result.rounds[0].turns if r.result.rounds else ()
                answers = tuple(t.answer for t in turns)
                answers += (None,) * (protocol.agents - len(answers))  # a missing answer does not vote
                right = frozenset(t.answer for t in turns if t.answer is not None and t.correct)
                data.answers.setdefault(qid, []).append((answers, right))
                for name, reader in READERS.items() if readers else ():
                    scorer = known_task(r.task)
                    read = None if name == MOOT else reading(reader, r.task, conditions[pool], r.result.question)
                    if read is None or scorer is None:
                        continue  # moot's is the stored answers; the reader does not read this task
                    again = tuple(read(t.text) for t in turns) + (None,) * (protocol.agents - len(turns))
                    good = frozenset(a for a in again if a is not None and scorer.score(a, r.result.question))
                    data.reread.setdefault(name, {}).setdefault(qid, []).append((again, good))
                data.answer_tokens.extend(t.prompt_tokens + t.completion_tokens for t in turns)
                data.seeds.add(r.seed)
            else:
                used = used_calls(r)
                entry = (bool(r.result.correct), used.prompt_tokens + used.completion_tokens, used.calls)
                data.debates.setdefault(r.condition, {}).setdefault(qid, []).append(entry)
                for name, correct in reread(r, conditions.get(r.condition)).items() if readers else ():
                    if name == MOOT:
                        continue
                    if correct is None:
                        data.unread.add((name, r.condition))
                    by_question = data.reread_debates.setdefault(name, {}).setdefault(r.condition, {})
                    by_question.setdefault(qid, []).append((bool(correct), *entry[1:]))
        if task is not None:
            if task not in tasks:
                raise AnalysisError(f"no results for task {task!r}; tasks: {', '.join(tasks) or 'none'}")
            tasks = {task: tasks[task]}
        tasks = {name: data for name, data in tasks.items() if data.answers}
        if not tasks:
            raise AnalysisError(f"pool {pool!r} has no stored answers in {opened.path}")
        return _Read(pool, protocol.agents, protocol.tie_rule, tuple(wanted), tasks)
    finally:
        if owned:
            opened.close()


def _pool(read: _Read, task: str, reader: str = MOOT) -> VotePool:
    data = read.tasks[task]
    answers = data.answers if reader == MOOT else data.reread[reader]
    by_question = []
    for qid, repeats in answers.items():
        per_seed = np.array([vote_probabilities(a, right, read.tie_rule)[1:] for a, right in repeats])
        by_question.append((qid, tuple(float(x) for x in per_seed.mean(axis=0))))
    matrix = np.array([p for _, p in by_question])
    per_answer = float(np.mean(data.answer_tokens)) if data.answer_tokens else 0.0
    rows = tuple(
        VoteAtK(k, float(matrix[:, k - 1].mean()), k * per_answer, float(k)) for k in range(1, read.agents + 1)
    )
    return VotePool(
        read.pool,
        task,
        read.agents,
        read.tie_rule,
        len(by_question),
        len(data.seeds),
        per_answer,
        rows,
        tuple(by_question),
        reader,
    )


def pools_by_reader(store: RunStore | Path | str, pool: str | None = None) -> dict[str, tuple[VotePool, ...]]:
    """``vote_at_k`` of every task under each documented reader that reads the pool's replies (moot's always):
    the pool's round-0 replies re-read by the reader and scored by the task, the costs unchanged. One read of
    the store."""
    read = _read(store, pool, (), None, readers=True)
    out: dict[str, tuple[VotePool, ...]] = {MOOT: tuple(_pool(read, name) for name in read.tasks)}
    for reader in dict.fromkeys(r for data in read.tasks.values() for r in data.reread):
        out[reader] = tuple(_pool(read, name, reader) for name, data in read.tasks.items() if reader in data.reread)
    return out


def vote_at_k(store: RunStore | Path | str, pool: str | None = None, task: str | None = None) -> tuple[VotePool, ...]:
    """vote@k for k = 1..K of the ``pool`` condition's round-0 answers, per task (or on one ``task``).

    Per question, the exact P(a majority vote of k answers drawn without replacement from its K round-0
    answers is right) under the pool's tie rule (``vote_probabilities``), averaged over seeds; the accuracy is
    its mean over questions. Cost per question: k x the pool's mean tokens per answer, and k calls.
    ``pool`` None: ``default_pool``."""
    read = _read(store, pool, (), task)
    return tuple(_pool(read, name) for name in read.tasks)


# One debate condition's results on one task: question id -> [(correct, tokens, calls)] over its seeds.
DebateResults = Mapping[str, Sequence[tuple[bool, int, int]]]


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
    position = 1 if measure == "tokens" else 2
    cost = float(np.mean([np.mean([r[position] for r in rs]) for rs in results.values()]))
    k, too_small = pool.matched(cost, measure)
    probabilities = dict(pool.by_question)
    shared = [q for q in results if q in probabilities]
    debate_correct = np.array([np.mean([r[0] for r in results[q]]) for q in shared], dtype=float)
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


def _rows(
    read: _Read, measure: Measure, seed: int, resamples: int, flips: int
) -> tuple[list[VotePool], list[EqualBudget]]:
    """Every debate against its matched vote@k per task, Holm over the table; where the read holds the other
    readers' readings (``_read(readers=True)``), each row's verdict under them (``EqualBudget.readers``), each
    reader's table with its own Holm adjustment."""
    pools, rows = [], []
    for task in read.tasks:
        pool = _pool(read, task)
        pools.append(pool)
        for debate in read.conditions:
            results = read.tasks[task].debates.get(debate, {})
            if results:
                rows.append(match_budget(pool, debate, results, measure, seed, resamples, flips))
    rows = with_holm(rows)
    readers = sorted({r for data in read.tasks.values() for r in data.reread})
    if not readers:
        return pools, rows
    under: dict[str, dict[tuple[str, str], EqualBudget]] = {}
    for reader in readers:
        mine = []
        for task, data in read.tasks.items():
            if reader not in data.reread:
                continue
            pool = _pool(read, task, reader)
            for debate, results in data.reread_debates.get(reader, {}).items():
                if debate in read.conditions and (reader, debate) not in data.unread:
                    mine.append(match_budget(pool, debate, results, measure, seed, resamples, flips))
        under[reader] = {(e.task, e.debate): e for e in with_holm(mine)}
    return pools, [
        replace(
            e,
            readers=BudgetReaders(
                e.debate, ((MOOT, e), *((r, under[r].get((e.task, e.debate))) for r in readers))
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
) -> tuple[EqualBudget, ...]:
    """``debate`` against the vote@k of ``pool`` whose budget matches it, per task (or on one ``task``).

    The matched k is the smallest whose cost per question (``measure``: tokens, prompt + completion, or calls)
    is >= the debate's mean cost per question (every call its debates used, helpers included); K when none is.
    Per question d = debate correctness (mean over seeds) - P(vote@k right); reported: mean d, paired percentile
    bootstrap interval (``stats.bootstrap_mean``, seeded), two-sided sign-flip test (``sign_flip_test``), and
    Holm's adjustment over the tasks' rows; and the verdict under every other reader that reads the pool
    (``EqualBudget.readers``: the pool's replies and the debate's final answers read by it)."""
    from moot.analysis.transcripts import AnalysisError

    read = _read(store, pool, (debate,), task, readers=True)
    rows = _rows(read, measure, seed, resamples, flips)[1]
    if not rows:
        raise AnalysisError(f"condition {debate!r} has no results on the tasks of the pool {read.pool!r}")
    return tuple(rows)


def equal_budget_table(
    store: RunStore | Path | str,
    pool: str | None = None,
    measure: Measure = "tokens",
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
    flips: int = DEFAULT_FLIPS,
) -> tuple[tuple[VotePool, ...], tuple[EqualBudget, ...]]:
    """The pool's vote@k per task and every other condition against its matched vote@k (as ``equal_budget``),
    with Holm's adjustment over the whole table (each reader's over its own)."""
    read = _read(store, pool, None, None, readers=True)
    pools, rows = _rows(read, measure, seed, resamples, flips)
    return tuple(pools), tuple(rows)
