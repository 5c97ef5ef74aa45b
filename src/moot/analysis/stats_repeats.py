"""Paired statistics with the question as the unit, for results repeated over seeds (split from
``moot.analysis.stats``, whose result records and one-result estimators these build on).

Seeds repeat the same questions, so a run with S seeds has n questions, not n x S:
``question_accuracy``, ``compare_repeats``, ``compare_rounds_repeats``,
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

import numpy as np

from moot.analysis.stats import (
    DEFAULT_RESAMPLES,
    CochranQ,
    MetricComparison,
    MetricSummary,
    PairedComparison,
    Proportion,
    RoundDifference,
    SeedMcNemar,
    SeedSpread,
    SeedValue,
    bootstrap_mean,
    cochran_q,
    compare_paired,
    compare_rounds,
    matched_odds_ratio,
    mcnemar_exact,
    proportion_interval,
    sign_test,
    wilson,
)

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
