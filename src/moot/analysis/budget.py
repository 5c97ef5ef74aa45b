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

This module holds the comparison itself (``EqualBudget``, ``match_budget``, ``equal_budget``,
``equal_budget_table``); its parts live beside it: ``budget_estimators`` (the exact vote@k and the sign-flip
test), ``budget_costs`` (budget units, spends and prices), ``budget_matching`` (which pool a debate is matched
to) and ``budget_pools`` (reading a store: the pools' vote@k and the debates' outcomes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from moot.analysis import stats
from moot.analysis.budget_costs import MEASURES, Measure, Spend, check_measure
from moot.analysis.budget_estimators import DEFAULT_FLIPS, sign_flip_test
from moot.analysis.budget_pools import VotePool, _pool, _Read, _read
from moot.analysis.differs import Differences, arm_profiles, pair_differences
from moot.analysis.readers import MOOT, Accuracies, breaking, robustness
from moot.runner.store import RunStore


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
