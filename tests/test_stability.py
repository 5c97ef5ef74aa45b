"""moot.debate.stability: the Beta-Binomial mixture fit, the KS distance and the stopping rule of Hu et al.
(arXiv 2510.12697), checked against values computed by hand or from independent formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from moot.debate import stability
from moot.debate.stability import (
    PARAM_MAX,
    PARAM_MIN,
    Mixture,
    agreement_count,
    fit_mixture,
    ks_distance,
    stopping_round,
)


def single(a: float, b: float, n: int) -> Mixture:
    """One Beta-Binomial as a mixture: all the weight on component 1 (component 2's parameters then count for
    nothing)."""
    return Mixture(weight=1.0, alpha1=a, beta1=b, alpha2=1.0, beta2=1.0, n=n, log_likelihood=0.0, iterations=0)


def betabinom_pmf(k: int, n: int, a: float, b: float) -> float:
    """C(n, k) B(k + a, n - k + b) / B(a, b), written out with math.comb and math.lgamma (not scipy)."""

    def log_beta(x: float, y: float) -> float:
        return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)

    return math.comb(n, k) * math.exp(log_beta(k + a, n - k + b) - log_beta(a, b))


def hand_ks(first: tuple[float, float], second: tuple[float, float], n: int) -> float:
    """max_k |F1(k) - F2(k)| from the hand-written pmf."""
    f1 = f2 = 0.0
    largest = 0.0
    for k in range(n + 1):
        f1 += betabinom_pmf(k, n, *first)
        f2 += betabinom_pmf(k, n, *second)
        largest = max(largest, abs(f1 - f2))
    return largest


def questions(histogram: list[int]) -> list[int]:
    """One count per question: histogram[k] questions with count k."""
    return [k for k, many in enumerate(histogram) for _ in range(many)]


# (a) the KS distance, by hand


def test_ks_of_two_beta_binomials_by_hand() -> None:
    # n=3: Beta(1,1) gives the uniform pmf 1/4 each, CDF (.25, .5, .75, 1); Beta(2,1) gives pmf k+1 over 10,
    # e.g. k=0: C(3,0) B(2,4)/B(2,1) = (1!3!/5!)/(1/2) = 1/10, so CDF (.1, .3, .6, 1): the largest gap is .2 at k=1
    uniform, rising = single(1, 1, 3), single(2, 1, 3)
    assert uniform.pmf() == pytest.approx([0.25, 0.25, 0.25, 0.25])
    assert rising.pmf() == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert rising.cdf() == pytest.approx([0.1, 0.3, 0.6, 1.0])
    assert ks_distance(uniform, rising) == pytest.approx(0.2)
    assert ks_distance(rising, uniform) == pytest.approx(0.2)
    # half of each: CDF (.175, .4, .675, 1) against the uniform's, a gap of .1 at k=1
    half = Mixture(0.5, 2, 1, 1, 1, 3, 0.0, 0)
    assert half.cdf() == pytest.approx([0.175, 0.4, 0.675, 1.0])
    assert ks_distance(half, uniform) == pytest.approx(0.1)


@pytest.mark.parametrize(("first", "second", "n"), [((0.5, 2.5), (3.2, 0.7), 3), ((7.0, 1.5), (2.0, 2.0), 5)])
def test_ks_matches_the_written_out_pmf(first: tuple[float, float], second: tuple[float, float], n: int) -> None:
    a, b = single(*first, n), single(*second, n)
    assert a.pmf() == pytest.approx([betabinom_pmf(k, n, *first) for k in range(n + 1)], abs=1e-12)
    assert ks_distance(a, b) == pytest.approx(hand_ks(first, second, n), abs=1e-12)
    assert ks_distance(a, a) == 0


def test_ks_needs_the_same_number_of_agents() -> None:
    with pytest.raises(ValueError, match="different numbers of agents"):
        ks_distance(single(1, 1, 3), single(1, 1, 4))


# (b) EM recovers known parameters


def test_em_recovers_a_known_mixture() -> None:
    # 5,000 questions, 20 agents: 60% from Beta(8, 2) (mostly agreeing), 40% from Beta(2, 8)
    rng = np.random.default_rng(12345)
    size, n = 5000, 20
    agree = rng.random(size) < 0.6
    counts = rng.binomial(n, np.where(agree, rng.beta(8, 2, size), rng.beta(2, 8, size)))
    fit = fit_mixture(counts.tolist(), n)
    # Tolerances: over 12 such samples (seeds 100..111) the fits spread with standard deviations of 0.009 for
    # the weight, 0.005 and 0.007 for the two means, and 6-9% of the value for each alpha and beta (the spread
    # along the concentration alpha+beta is the widest); the bounds below are about four of those deviations.
    assert fit.weight == pytest.approx(0.6, abs=0.04)
    assert fit.alpha1 / (fit.alpha1 + fit.beta1) == pytest.approx(0.8, abs=0.03)
    assert fit.alpha2 / (fit.alpha2 + fit.beta2) == pytest.approx(0.2, abs=0.03)
    assert (fit.alpha1, fit.beta1, fit.alpha2, fit.beta2) == pytest.approx((8, 2, 2, 8), rel=0.35)
    # maximum likelihood: no worse than the true parameters, whose likelihood scipy computes independently
    from scipy.stats import betabinom

    truth = np.log(0.6 * betabinom.pmf(counts, n, 8, 2) + 0.4 * betabinom.pmf(counts, n, 2, 8)).sum()
    assert fit.log_likelihood >= truth
    assert fit.log_likelihood == pytest.approx(np.log(fit.pmf()[counts]).sum())


# (c) determinism, order, errors


def test_fit_is_deterministic_for_a_seed_and_ordered() -> None:
    counts = questions([3, 9, 14, 24])
    first = fit_mixture(counts, 3, seed=7)
    stability._fit_histogram.cache_clear()  # fitted afresh, not read back from the cache
    assert fit_mixture(counts, 3, seed=7) == first
    # another seed draws other random starts; at n=3 they all reach the same fitted distribution
    assert fit_mixture(counts, 3, seed=8).pmf() == pytest.approx(first.pmf(), abs=1e-4)
    assert fit_mixture(counts, 3) == fit_mixture(list(reversed(counts)), 3)  # the order of questions is no input
    fit = fit_mixture(counts, 3, seed=7)
    assert fit.alpha1 / (fit.alpha1 + fit.beta1) >= fit.alpha2 / (fit.alpha2 + fit.beta2)
    assert 0 <= fit.weight <= 1 and fit.iterations >= 1


@pytest.mark.parametrize(
    ("counts", "n", "message"),
    [([], 3, "no counts"), ([0, 4], 3, "in 0..3"), ([-1], 3, "in 0..3"), ([1.5], 3, "whole numbers"), ([0], 0, "n")],
)
def test_bad_counts_are_refused(counts: list[int], n: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit_mixture(counts, n)


# (d) degenerate data


@pytest.mark.parametrize(
    ("counts", "mass_at"),
    [([3] * 40, 3), ([0] * 40, 0), ([3], 3), ([2], None), ([1] * 10, None)],
)
def test_degenerate_counts_fit_a_finite_limit(counts: list[int], mass_at: int | None) -> None:
    fit = fit_mixture(counts, 3)
    params = np.array([fit.alpha1, fit.beta1, fit.alpha2, fit.beta2])
    assert np.all(np.isfinite(params)) and np.all((params >= PARAM_MIN) & (params <= PARAM_MAX))
    assert np.isfinite(fit.weight) and np.isfinite(fit.log_likelihood)
    assert np.all(np.isfinite(fit.pmf())) and fit.pmf().sum() == pytest.approx(1)
    if mass_at is not None:  # every question unanimous (or every one at 0): all the mass there
        assert fit.pmf()[mass_at] == pytest.approx(1, abs=1e-4)
    else:  # one interior count: both components at the bound of concentration, mean about k/3
        mean = fit.alpha1 / (fit.alpha1 + fit.beta1)
        assert mean == pytest.approx(counts[0] / 3, abs=1e-3) and max(fit.alpha1, fit.beta1) == pytest.approx(PARAM_MAX)
    trace = stopping_round([counts] * 3, 3)
    assert trace.ks == (None, 0.0, 0.0) and trace.stop_after == 2


# (e) the stopping rule

SPREAD, UNANIMOUS, MIXED = [5, 5, 5, 5], [0, 2, 3, 15], [0, 5, 5, 10]  # 20 questions, n = 3


def test_a_debate_that_changes_then_settles_stops_after_two_stable_rounds() -> None:
    rounds = [questions(h) for h in (SPREAD, UNANIMOUS, MIXED, MIXED, MIXED)]
    trace = stopping_round(rounds, 3)
    assert trace.ks[0] is None and trace.ks[3:] == (0.0, 0.0)
    assert all(d is not None and d > 0.2 for d in trace.ks[1:3])  # the fits move far: 0.5, then 0.25
    assert trace.stop_after == 4 and len(trace.fits) == 5
    assert (trace.threshold, trace.patience) == (0.05, 2)
    # the rule only looks back: fed the rounds one by one, it stops at the same round, and not before
    assert [stopping_round(rounds[: t + 1], 3).stop_after for t in range(5)] == [None, None, None, None, 4]


def test_one_stable_round_then_a_move_does_not_stop() -> None:
    rounds = [questions(h) for h in (SPREAD, UNANIMOUS, UNANIMOUS, MIXED, MIXED, MIXED)]
    trace = stopping_round(rounds, 3)
    assert trace.ks[2] == 0.0 and trace.ks[3] is not None and trace.ks[3] > 0.05
    assert trace.stop_after == 5  # not 2: patience 2 needs rounds 4 and 5 both stable
    assert stopping_round(rounds, 3, patience=1).stop_after == 2
    assert stopping_round(rounds[:4], 3).stop_after is None


def test_a_debate_that_never_settles_gives_none() -> None:
    rounds = [questions(h) for h in (SPREAD, UNANIMOUS, SPREAD, UNANIMOUS, SPREAD)]
    trace = stopping_round(rounds, 3)
    assert trace.stop_after is None and all(d is not None and d > 0.05 for d in trace.ks[1:])
    assert stopping_round([], 3).stop_after is None and stopping_round([rounds[0]], 3).ks == (None,)


def test_one_question_of_a_hundred_changing_counts_as_stable() -> None:
    # the empirical CDFs move by 1/100; the fits by about as much, well under the threshold
    rng = np.random.default_rng(0)
    before = rng.choice(4, 100, p=[0.05, 0.2, 0.25, 0.5])
    after = before.copy()
    after[np.argmin(after)] = 3
    trace = stopping_round([before.tolist(), after.tolist(), after.tolist()], 3)
    assert trace.ks[1] is not None and 0 < trace.ks[1] < 0.02
    assert trace.stop_after == 2


def test_stopping_round_refuses_bad_settings() -> None:
    with pytest.raises(ValueError, match="same questions"):
        stopping_round([[3, 3], [3]], 3)
    with pytest.raises(ValueError, match="threshold"):
        stopping_round([[3]], 3, threshold=0)
    with pytest.raises(ValueError, match="patience"):
        stopping_round([[3]], 3, patience=0)


def test_the_trace_is_frozen() -> None:
    trace = stopping_round([[3]], 3)
    with pytest.raises(AttributeError):
        trace.stop_after = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        trace.fits[0].weight = 0.5  # type: ignore[misc]


# (f) the agreement count for open answers


@pytest.mark.parametrize(
    ("answers", "count"),
    [
        (["4", "4", "4"], 3),
        (["4", "4", "5"], 2),
        (["4", "5", "6"], 1),  # a three-way tie: each answer has one agent
        (["4", "4", "5", "5"], 2),  # a two-way tie counts the tied size
        (["4", None, "4"], 2),
        (["4", None, None], 1),
        ([None, None, None], 0),
        ([], 0),
    ],
)
def test_agreement_count(answers: list[str | None], count: int) -> None:
    assert agreement_count(answers) == count
