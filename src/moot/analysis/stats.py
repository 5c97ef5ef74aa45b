"""Paired statistics over per-question results: pure functions, each naming its estimator.

Conditions of an experiment answer the same questions (the same task and question id), so
comparisons between them are paired: they use the questions' discordant pairs (McNemar,
matched odds ratio, Cochran's Q) and paired resampling (bootstrap), never two independent
proportions. Orientation is always "A vs B": differences are A - B for accuracy and task
metrics and B - A for rounds (as in the stopping study: "adaptive fewer/more" than fixed).

This module holds the result records (also those of ``moot.analysis.stats_repeats``) and the
estimators on one result per question (Wilson, exact McNemar, Cochran's Q, bootstrap, Holm, ...);
``moot.analysis.stats_repeats`` holds their counterparts with results repeated over seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_RESAMPLES = 10_000
BOOTSTRAP_BATCH = 1_000  # resamples drawn at once: bounds memory; fixed, so a seed always gives the same draws


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


@dataclass(frozen=True)
class Proportion:
    """``successes`` of ``n`` results with an interval: the Wilson score interval (one result per
    question), or with repeated seeds (``questions`` set, ``n`` counting question x seed results) the
    question-level accuracy with a cluster percentile bootstrap interval (``question_accuracy``)."""

    successes: int
    n: int
    estimate: float
    low: float
    high: float
    questions: int | None = None  # set with repeated seeds: the questions (the unit); None: n questions
    method: str = "Wilson"

    @property
    def units(self) -> int:
        """The statistical unit's count: questions."""
        return self.n if self.questions is None else self.questions


@dataclass(frozen=True)
class SeedValue:
    """One seed's results: ``n`` questions whose values sum to ``total`` (right answers, or a metric's sum)."""

    seed: int
    n: int
    total: float

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else math.nan


@dataclass(frozen=True)
class SeedSpread:
    """A figure per seed (its mean over that seed's questions) and the mean ± sample standard deviation
    (ddof = 1) of the per-seed figures over seeds, as DAR reports; ``std`` is NaN with one seed."""

    per_seed: tuple[SeedValue, ...]
    mean: float
    std: float

    @property
    def seeds(self) -> int:
        return len(self.per_seed)


@dataclass(frozen=True)
class OddsRatio:
    """Matched-pairs odds ratio b/c with its exact (conditional, Clopper-Pearson based) interval."""

    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class SeedMcNemar:
    """One seed's paired comparison on its own: discordant questions and the exact McNemar p."""

    seed: int
    n: int
    a_only: int
    b_only: int
    p: float


@dataclass(frozen=True)
class PairedComparison:
    """Two conditions on the same n questions: the 2x2 table of right/wrong and the tests on it.

    With repeated seeds (``repeats`` > 1; see ``compare_repeats``) the counts are of questions:
    ``a_only``/``b_only`` are the questions on which A's/B's accuracy over the seeds is higher,
    ``mixed_ties`` those with equal accuracy strictly between 0 and 1, ``mcnemar_p`` is the exact
    sign test on questions (McNemar's test when every question has one seed), ``oracle`` counts
    question x seed results right under A or B out of ``units``, and ``per_seed`` holds each
    seed's own exact McNemar test.
    """

    n: int
    both_right: int
    a_only: int  # A right, B wrong
    b_only: int  # B right, A wrong
    both_wrong: int
    accuracy_a: float
    accuracy_b: float
    difference: float  # accuracy A - B
    difference_ci: Interval  # paired percentile bootstrap
    mcnemar_p: float  # exact two-sided
    odds_ratio: OddsRatio  # a_only / b_only
    repeats: int = 1  # the most seeds paired on one question
    units: int | None = None  # with repeats: question x seed pairs
    mixed_ties: int = 0  # with repeats: questions with equal accuracy strictly between 0 and 1
    oracle_units: int | None = None  # with repeats: question x seed pairs right under A or B
    per_seed: tuple[SeedMcNemar, ...] = ()  # with repeats: each seed's own McNemar test

    @property
    def discordant(self) -> int:
        return self.a_only + self.b_only

    @property
    def oracle(self) -> int:
        """Questions right under A or B: what choosing the better of the two per question would score
        (with repeats: question x seed pairs, out of ``oracle_n``)."""
        if self.oracle_units is not None:
            return self.oracle_units
        return self.both_right + self.a_only + self.b_only

    @property
    def oracle_n(self) -> int:
        return self.n if self.units is None else self.units


@dataclass(frozen=True)
class CochranQ:
    """A test that k conditions have equal accuracy on the same n questions: Cochran's Q, or with
    repeated seeds Friedman's test on the questions' accuracies over seeds (``test`` names it)."""

    statistic: float
    df: int
    p: float
    n: int
    test: str = "Cochran's Q"


@dataclass(frozen=True)
class SignTest:
    """Paired differences d = B - A: how many are negative, zero, positive; exact sign-test p (ties excluded)."""

    fewer: int
    tied: int
    more: int
    p: float


@dataclass(frozen=True)
class RoundDifference:
    """Rounds used by B minus rounds used by A on the same questions."""

    n: int
    mean: float
    median: float
    ci: Interval  # percentile bootstrap of the mean difference
    sign: SignTest
    repeats: int = 1  # with repeats: each question's rounds are its mean over the seeds both ran


@dataclass(frozen=True)
class MetricSummary:
    """A task metric's mean with the question as the unit (see ``metric_summary``)."""

    questions: int  # questions with at least one value
    results: int  # question x seed results with a value
    missing: int  # results whose value is None: left out
    mean: float
    ci: Interval  # question-level percentile bootstrap
    seeds: SeedSpread


@dataclass(frozen=True)
class MetricComparison:
    """A task metric of A and B on the same questions: d = A - B per question (see ``compare_metric``)."""

    n: int  # questions with a paired value
    pairs: int  # question x seed pairs with both values
    missing: int  # question x seed pairs left out because A's or B's value is None
    mean_a: float
    mean_b: float
    difference: float  # mean over questions of d
    ci: Interval  # paired (cluster) percentile bootstrap of the mean difference
    a_higher: int
    tied: int
    b_higher: int
    sign_p: float  # exact two-sided sign test on questions, ties excluded
    wilcoxon_p: float  # Wilcoxon signed-rank test on questions, zero differences dropped
    repeats: int = 1


def proportion_interval(estimate: float, low: float, high: float) -> tuple[float, float]:
    """An interval of a proportion made safe to show: clipped to [0, 1] and widened to hold ``estimate``.

    Floating-point rounding can put a bound just outside [0, 1] or just past the estimate (at 0/n and
    n/n statsmodels' Wilson bound is 5.6e-17 or 0.9999999999999999 for many n); as error bars that
    would be a negative length. NaN bounds (no data) stay NaN."""
    if math.isnan(low) or math.isnan(high) or math.isnan(estimate):
        return low, high
    estimate = min(max(estimate, 0.0), 1.0)
    return min(max(low, 0.0), estimate), max(min(high, 1.0), estimate)


def wilson(successes: int, n: int, confidence: float = 0.95) -> Proportion:
    """Proportion with the Wilson score interval (statsmodels ``proportion_confint(method="wilson")``),
    clipped to [0, 1] and holding the estimate (``proportion_interval``)."""
    if n == 0:
        return Proportion(0, 0, math.nan, math.nan, math.nan)
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(successes, n, alpha=1 - confidence, method="wilson")
    estimate = successes / n
    low, high = proportion_interval(estimate, float(low), float(high))
    return Proportion(successes, n, estimate, low, high)


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Exact two-sided McNemar p: the binomial test of a_only among the discordant pairs at 1/2."""
    if a_only + b_only == 0:
        return 1.0
    from statsmodels.stats.contingency_tables import mcnemar

    return float(mcnemar([[0, a_only], [b_only, 0]], exact=True).pvalue)


def matched_odds_ratio(a_only: int, b_only: int, confidence: float = 0.95) -> OddsRatio:
    """Matched-pairs odds ratio a_only/b_only; exact interval: the Clopper-Pearson interval of
    a_only/(a_only + b_only) mapped through p/(1-p) (conditional on the discordant count)."""
    n = a_only + b_only
    if n == 0:
        return OddsRatio(math.nan, math.nan, math.nan)
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(a_only, n, alpha=1 - confidence, method="beta")

    def odds(p: float) -> float:
        return math.inf if p >= 1 else p / (1 - p)

    estimate = math.inf if b_only == 0 else a_only / b_only
    return OddsRatio(estimate, odds(float(low)), odds(float(high)))


def bootstrap_mean(
    values: Sequence[float], seed: int = 0, resamples: int = DEFAULT_RESAMPLES, confidence: float = 0.95
) -> Interval:
    """Percentile bootstrap interval of a mean (``scipy.stats.bootstrap``, seeded ``numpy`` Generator).

    Applied to per-question differences it is the paired bootstrap: questions are resampled
    whole, keeping each question's A and B together. Constant values give a zero-width interval.
    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return Interval(math.nan, math.nan)
    if np.all(data == data[0]):
        return Interval(float(data[0]), float(data[0]))
    from scipy.stats import bootstrap

    result = bootstrap(
        (data,),
        np.mean,
        n_resamples=resamples,
        batch=BOOTSTRAP_BATCH,
        vectorized=True,
        method="percentile",
        confidence_level=confidence,
        rng=np.random.default_rng(seed),
    )
    return Interval(float(result.confidence_interval.low), float(result.confidence_interval.high))


def compare_paired(
    a: Sequence[bool], b: Sequence[bool], seed: int = 0, resamples: int = DEFAULT_RESAMPLES, confidence: float = 0.95
) -> PairedComparison:
    """Paired comparison of two conditions' correctness on the same questions (``a[i]``, ``b[i]``: question i).

    Discordant counts, exact McNemar p, matched odds ratio with exact interval, and a paired
    percentile bootstrap interval for the accuracy difference A - B.
    """
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    x = np.asarray(a, dtype=bool)
    y = np.asarray(b, dtype=bool)
    n = int(x.size)
    both_right = int(np.sum(x & y))
    a_only = int(np.sum(x & ~y))
    b_only = int(np.sum(~x & y))
    accuracy_a = float(x.mean()) if n else math.nan
    accuracy_b = float(y.mean()) if n else math.nan
    return PairedComparison(
        n=n,
        both_right=both_right,
        a_only=a_only,
        b_only=b_only,
        both_wrong=n - both_right - a_only - b_only,
        accuracy_a=accuracy_a,
        accuracy_b=accuracy_b,
        difference=accuracy_a - accuracy_b,
        difference_ci=bootstrap_mean(x.astype(float) - y.astype(float), seed, resamples, confidence),
        mcnemar_p=mcnemar_exact(a_only, b_only),
        odds_ratio=matched_odds_ratio(a_only, b_only, confidence),
    )


def cochran_q(correct: Sequence[Sequence[bool]]) -> CochranQ:
    """Cochran's Q test that k conditions have equal accuracy; ``correct[i][j]``: question i, condition j.

    Q = (k-1) (k sum C_j^2 - N^2) / (k N - sum R_i^2), chi-square with k-1 df (statsmodels ``cochrans_q``).
    With no question on which the conditions disagree, Q = 0 and p = 1.
    """
    x = np.asarray(correct, dtype=float)
    n, k = x.shape
    if n == 0 or k < 2:
        return CochranQ(math.nan, max(k - 1, 0), math.nan, n)
    rows = x.sum(axis=1)
    if np.all((rows == 0) | (rows == k)):
        return CochranQ(0.0, k - 1, 1.0, n)
    from statsmodels.stats.contingency_tables import cochrans_q

    result = cochrans_q(x)
    return CochranQ(float(result.statistic), int(result.df), float(result.pvalue), n)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (statsmodels ``multipletests(method="holm")``)."""
    if not pvalues:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(list(pvalues), method="holm")[1]]


def sign_test(differences: Sequence[float]) -> SignTest:
    """Exact two-sided sign test of paired differences, ties excluded (``scipy.stats.binomtest(k, n, 0.5)``)."""
    d = np.asarray(differences, dtype=float)
    fewer, more = int(np.sum(d < 0)), int(np.sum(d > 0))
    tied = int(d.size) - fewer - more
    if fewer + more == 0:
        return SignTest(fewer, tied, more, 1.0)
    from scipy.stats import binomtest

    return SignTest(fewer, tied, more, float(binomtest(more, fewer + more, 0.5).pvalue))


def compare_rounds(
    a: Sequence[float], b: Sequence[float], seed: int = 0, resamples: int = DEFAULT_RESAMPLES, confidence: float = 0.95
) -> RoundDifference:
    """Paired difference in rounds used, B - A: mean with percentile bootstrap interval, median, exact sign test."""
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if d.size == 0:
        return RoundDifference(0, math.nan, math.nan, Interval(math.nan, math.nan), SignTest(0, 0, 0, math.nan))
    return RoundDifference(
        n=int(d.size),
        mean=float(d.mean()),
        median=float(np.median(d)),
        ci=bootstrap_mean(d, seed, resamples, confidence),
        sign=sign_test(d),
    )
