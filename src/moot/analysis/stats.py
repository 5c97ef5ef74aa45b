"""Paired statistics over per-question results: pure functions, each naming its estimator.

Conditions of an experiment answer the same questions (the same task and question id), so
comparisons between them are paired: they use the questions' discordant pairs (McNemar,
matched odds ratio, Cochran's Q) and paired resampling (bootstrap), never two independent
proportions. Orientation is always "A vs B": differences are A - B for accuracy and task
metrics and B - A for rounds (as in the stopping study: "adaptive fewer/more" than fixed).

The question is the unit. Seeds repeat the same questions, so a run with S seeds has n
questions, not n x S: ``question_accuracy``, ``compare_repeats``, ``compare_rounds_repeats``,
``cochran_q_repeats``, ``metric_summary`` and ``compare_metric`` take each question's results
by seed (``Mapping[int, value]``), combine a question's repeats into its mean over seeds, and
test and resample questions (a cluster bootstrap keeps all seeds of a resampled question
together). With one seed per question each is exactly its one-result counterpart (Wilson,
exact McNemar, Cochran's Q, ...). ``seed_spread`` gives a figure per seed and its mean ± std
over seeds, as DAR reports.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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


# -- the question as the unit: results repeated over seeds -------------------------------------------
Repeats = Mapping[int, bool]  # one question's correctness by seed


def seed_spread(by_seed: Mapping[int, Sequence[float]]) -> SeedSpread:
    """Per seed, the mean of its values (one per question); then the mean and the sample standard
    deviation (``numpy.std(ddof=1)``) of those per-seed means over seeds. NaN std with one seed."""
    per_seed = tuple(
        SeedValue(int(s), len(v), float(np.sum(np.asarray(v, dtype=float))))
        for s, v in sorted(by_seed.items())
        if len(v)
    )
    means = np.asarray([v.mean for v in per_seed], dtype=float)
    mean = float(means.mean()) if means.size else math.nan
    std = float(means.std(ddof=1)) if means.size > 1 else math.nan
    return SeedSpread(per_seed, mean, std)


def by_seed(values: Sequence[Mapping[int, float | None]]) -> dict[int, list[float]]:
    """Questions' values regrouped by seed (None values left out)."""
    out: dict[int, list[float]] = {}
    for question in values:
        for s, v in question.items():
            if v is not None:
                out.setdefault(s, []).append(float(v))
    return out


def question_accuracy(
    correct: Sequence[Repeats], seed: int = 0, resamples: int = DEFAULT_RESAMPLES, confidence: float = 0.95
) -> Proportion:
    """Accuracy with the question as the unit; ``correct[i]``: question i's correctness by seed.

    One result per question: ``wilson`` of k right out of n. Repeated seeds: the estimate is the mean
    over questions of each question's accuracy over its seeds (every question weighs the same; with
    the same seeds for every question it equals the pooled k / (n x S)), and the interval is the
    cluster percentile bootstrap: questions are resampled with all their seeds (``bootstrap_mean`` of
    the per-question accuracies), never Wilson on the n x S results.
    """
    rows = [[bool(v) for v in q.values()] for q in correct if len(q)]
    successes = sum(sum(r) for r in rows)
    n = sum(len(r) for r in rows)
    if all(len(r) == 1 for r in rows):
        return wilson(successes, n, confidence)
    means = [sum(r) / len(r) for r in rows]
    ci = bootstrap_mean(means, seed, resamples, confidence)
    estimate = float(np.mean(means))
    low, high = proportion_interval(estimate, ci.low, ci.high)
    return Proportion(successes, n, estimate, low, high, questions=len(rows), method="cluster bootstrap")


def _paired_seeds(a: Mapping[int, float | None], b: Mapping[int, float | None]) -> list[int]:
    return [s for s in a if s in b and a[s] is not None and b[s] is not None]


def compare_repeats(
    a: Sequence[Repeats],
    b: Sequence[Repeats],
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
) -> PairedComparison:
    """Paired comparison of two conditions with the question as the unit; ``a[i]``, ``b[i]``: question i's
    correctness by seed. Only seeds that both answered pair up; a question with none is left out.

    One seed per question: exactly ``compare_paired``. Repeated seeds: for each question, p_A and p_B
    are its accuracies over the paired seeds and d = p_A - p_B.

    - accuracy A and B: the means over questions of p_A and p_B; the difference, the mean of d, has the
      cluster (paired) percentile bootstrap interval: questions are resampled with all their seeds;
    - the test: questions with d > 0 (``a_only``) against d < 0 (``b_only``), the exact two-sided sign
      test, ties excluded (``mcnemar_exact`` of the two counts: with one seed this is McNemar's test);
      the odds ratio of those counts with the exact Clopper-Pearson interval (``matched_odds_ratio``);
    - per seed, that seed's exact McNemar test on its own (shown beside, not combined);
    - the oracle counts question x seed pairs right under A or B.

    Question x seed results are never pooled as independent pairs.
    """
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    seeds = [_paired_seeds(x, y) for x, y in zip(a, b)]
    rows = [(x, y, s) for x, y, s in zip(a, b, seeds) if s]
    if all(len(s) == 1 for _, _, s in rows):
        return compare_paired(
            [bool(x[s[0]]) for x, _, s in rows], [bool(y[s[0]]) for _, y, s in rows], seed, resamples, confidence
        )
    pa = np.asarray([np.mean([bool(x[k]) for k in s]) for x, _, s in rows], dtype=float)
    pb = np.asarray([np.mean([bool(y[k]) for k in s]) for _, y, s in rows], dtype=float)
    d = pa - pb
    a_only, b_only = int(np.sum(d > 0)), int(np.sum(d < 0))
    both_right = int(np.sum((pa == 1) & (pb == 1)))
    both_wrong = int(np.sum((pa == 0) & (pb == 0)))
    per_seed: dict[int, list[tuple[bool, bool]]] = {}
    for x, y, s in rows:
        for k in s:
            per_seed.setdefault(k, []).append((bool(x[k]), bool(y[k])))
    seed_tests = []
    for k, pairs in sorted(per_seed.items()):
        ka = sum(u and not v for u, v in pairs)
        kb = sum(v and not u for u, v in pairs)
        seed_tests.append(SeedMcNemar(k, len(pairs), ka, kb, mcnemar_exact(ka, kb)))
    return PairedComparison(
        n=len(rows),
        both_right=both_right,
        a_only=a_only,
        b_only=b_only,
        both_wrong=both_wrong,
        accuracy_a=float(pa.mean()),
        accuracy_b=float(pb.mean()),
        difference=float(d.mean()),
        difference_ci=bootstrap_mean(d, seed, resamples, confidence),
        mcnemar_p=mcnemar_exact(a_only, b_only),
        odds_ratio=matched_odds_ratio(a_only, b_only, confidence),
        repeats=max(len(s) for _, _, s in rows),
        units=sum(len(s) for _, _, s in rows),
        mixed_ties=len(rows) - a_only - b_only - both_right - both_wrong,
        oracle_units=sum(bool(x[k]) or bool(y[k]) for x, y, s in rows for k in s),
        per_seed=tuple(seed_tests),
    )


def compare_rounds_repeats(
    a: Sequence[Mapping[int, int]],
    b: Sequence[Mapping[int, int]],
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
) -> RoundDifference:
    """Rounds used, B - A, with the question as the unit: each question's rounds are its mean over the
    seeds both conditions ran, then ``compare_rounds`` (bootstrap of the mean, median, exact sign test)
    on those per-question values. One seed per question: exactly ``compare_rounds``."""
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    rows = [(x, y, s) for x, y in zip(a, b) if (s := _paired_seeds(x, y))]
    repeats = max((len(s) for _, _, s in rows), default=1)
    if repeats == 1:
        return compare_rounds([x[s[0]] for x, _, s in rows], [y[s[0]] for _, y, s in rows], seed, resamples, confidence)
    ra = [float(np.mean([x[k] for k in s])) for x, _, s in rows]
    rb = [float(np.mean([y[k] for k in s])) for _, y, s in rows]
    d = compare_rounds(ra, rb, seed, resamples, confidence)
    return RoundDifference(d.n, d.mean, d.median, d.ci, d.sign, repeats=repeats)


def friedman(values: Sequence[Sequence[float]]) -> CochranQ:
    """Friedman's test that k conditions score alike on the same questions; ``values[i][j]``: question i,
    condition j (scipy ``friedmanchisquare``: ranks within each question, tie-corrected chi-square with
    k-1 df). On 0/1 values it equals Cochran's Q. Questions on which every condition scores the same
    carry no information; with no other question, statistic 0 and p = 1."""
    x = np.asarray(values, dtype=float)
    n, k = x.shape if x.ndim == 2 else (0, 0)
    if n == 0 or k < 3:
        return CochranQ(math.nan, max(k - 1, 0), math.nan, n, "Friedman")
    if np.all(x == x[:, :1]):
        return CochranQ(0.0, k - 1, 1.0, n, "Friedman")
    from scipy.stats import friedmanchisquare

    result = friedmanchisquare(*x.T)
    return CochranQ(float(result.statistic), k - 1, float(result.pvalue), n, "Friedman")


def cochran_q_repeats(correct: Sequence[Sequence[Repeats]]) -> CochranQ:
    """k conditions on the same questions; ``correct[i][j]``: question i under condition j, by seed. Only
    seeds that every condition answered count; a question without one is left out.

    One seed per question: ``cochran_q``. Repeated seeds: ``friedman`` on the questions' accuracies over
    their seeds (on 0/1 values Friedman's tie-corrected statistic is Cochran's Q), so questions, not
    question x seed results, are the unit."""
    rows = []
    for question in correct:
        common = [s for s in question[0] if all(s in c for c in question)] if question else []
        if common:
            rows.append([[bool(c[s]) for s in common] for c in question])
    if not rows:
        k = len(correct[0]) if correct else 0
        return CochranQ(math.nan, max(k - 1, 0), math.nan, 0)
    if all(len(r[0]) == 1 for r in rows):
        return cochran_q([[c[0] for c in r] for r in rows])
    return friedman([[float(np.mean(c)) for c in r] for r in rows])


def metric_summary(
    values: Sequence[Mapping[int, float | None]],
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
) -> MetricSummary:
    """A task metric's mean, question as the unit; ``values[i]``: question i's value by seed (None: the task
    could not score it, left out and counted in ``missing``). Each question's value is its mean over its
    seeds; the mean over questions has a percentile bootstrap interval resampling questions (with all their
    seeds); per seed, the mean over that seed's questions, with mean ± std over seeds (``seed_spread``)."""
    means = []
    results = missing = 0
    for question in values:
        present = [float(v) for v in question.values() if v is not None]
        missing += len(question) - len(present)
        results += len(present)
        if present:
            means.append(float(np.mean(present)))
    return MetricSummary(
        questions=len(means),
        results=results,
        missing=missing,
        mean=float(np.mean(means)) if means else math.nan,
        ci=bootstrap_mean(means, seed, resamples, confidence),
        seeds=seed_spread(by_seed(values)),
    )


def wilcoxon_signed_rank(differences: Sequence[float]) -> float:
    """Two-sided Wilcoxon signed-rank p of paired differences, zero differences dropped (scipy ``wilcoxon``,
    ``method="auto"``: the exact null distribution for small samples without ties, else the normal
    approximation); 1.0 when every difference is zero."""
    d = np.asarray(differences, dtype=float)
    d = d[d != 0]
    if d.size == 0:
        return 1.0
    from scipy.stats import wilcoxon

    return float(wilcoxon(d, zero_method="wilcox", alternative="two-sided", method="auto").pvalue)


def compare_metric(
    a: Sequence[Mapping[int, float | None]],
    b: Sequence[Mapping[int, float | None]],
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
) -> MetricComparison:
    """A task metric of A against B, question as the unit; ``a[i]``, ``b[i]``: question i's values by seed.

    Seeds where both have a value pair up (pairs with a None value are left out and counted); each
    question's difference d = A - B is its mean over those seeds. Reported: the mean of d over questions
    with the paired (cluster) percentile bootstrap interval, the exact sign test (``sign_test``, ties
    excluded) and the Wilcoxon signed-rank test (``wilcoxon_signed_rank``) on the questions' d."""
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    va, vb, d = [], [], []
    pairs = missing = 0
    repeats = 1
    for x, y in zip(a, b):
        common = [s for s in x if s in y]
        paired = [s for s in common if x[s] is not None and y[s] is not None]
        missing += len(common) - len(paired)
        if not paired:
            continue
        pairs += len(paired)
        repeats = max(repeats, len(paired))
        xa = float(np.mean([x[s] for s in paired]))
        xb = float(np.mean([y[s] for s in paired]))
        va.append(xa)
        vb.append(xb)
        d.append(xa - xb)
    sign = sign_test(d)  # fewer: d < 0 (B higher); more: d > 0 (A higher)
    return MetricComparison(
        n=len(d),
        pairs=pairs,
        missing=missing,
        mean_a=float(np.mean(va)) if va else math.nan,
        mean_b=float(np.mean(vb)) if vb else math.nan,
        difference=float(np.mean(d)) if d else math.nan,
        ci=bootstrap_mean(d, seed, resamples, confidence),
        a_higher=sign.more,
        tied=sign.tied,
        b_higher=sign.fewer,
        sign_p=sign.p if d else math.nan,
        wilcoxon_p=wilcoxon_signed_rank(d) if d else math.nan,
        repeats=repeats,
    )
