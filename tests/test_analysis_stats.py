"""Paired statistics: hand-checked values, and every figure of the stopping study's Wilson-interval,
paired-test and round-difference tables, reproduced from the counts it prints.

The study: /work/shared/papers/stopping2026-fixed-vs-adaptive-stopping.txt (100 QuALITY questions,
gpt-4o-mini; "Overall Performance", "Threshold Sensitivity", "Paired Accuracy Tests" and the
round-difference table after it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from moot.analysis.formatting import fixed, interval, p_value
from moot.analysis.stats import (
    bootstrap_mean,
    cochran_q,
    compare_paired,
    compare_rounds,
    holm,
    matched_odds_ratio,
    mcnemar_exact,
    sign_test,
    wilson,
)
from moot.analysis.stats_repeats import (
    cochran_q_repeats,
    compare_metric,
    compare_repeats,
    compare_rounds_repeats,
    friedman,
    metric_summary,
    question_accuracy,
    seed_spread,
    wilcoxon_signed_rank,
)

N = 100  # questions in every condition of the study

# Correct answers out of 100 per condition (Overall Performance and Threshold Sensitivity tables).
CORRECT = {
    "single": 77,
    "du1": 80,
    "du2": 79,
    "du_adaptive": 77,
    "liang2": 73,
    "liang2_prompt_matched": 52,
    "liang_adaptive": 53,
    "du_t70": 79,
    "du_t80": 77,
    "du_t90_rerun": 78,
    "du_t95": 80,
    "liang1": 61,
    "liang3": 68,
}


# -- Wilson intervals ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("condition", "accuracy", "ci"),
    [
        # Overall Performance
        ("single", "0.77", "[0.678, 0.842]"),
        ("du1", "0.80", "[0.711, 0.867]"),
        ("du2", "0.79", "[0.700, 0.858]"),
        ("du_adaptive", "0.77", "[0.678, 0.842]"),
        ("liang2", "0.73", "[0.636, 0.807]"),
        ("liang2_prompt_matched", "0.52", "[0.423, 0.615]"),
        ("liang_adaptive", "0.53", "[0.433, 0.625]"),
        # Threshold Sensitivity and Fixed-Round Bracketing
        ("du_t70", "0.79", "[0.700, 0.858]"),
        ("du_t80", "0.77", "[0.678, 0.842]"),
        ("du_t90_rerun", "0.78", "[0.689, 0.850]"),
        ("du_t95", "0.80", "[0.711, 0.867]"),
        ("liang1", "0.61", "[0.512, 0.700]"),
        ("liang3", "0.68", "[0.583, 0.763]"),
    ],
)
def test_wilson_intervals_of_the_stopping_study(condition: str, accuracy: str, ci: str) -> None:
    p = wilson(CORRECT[condition], N)
    assert fixed(p.estimate, 2) == accuracy
    assert interval(p.low, p.high, 3) == ci


# Stopping distributions (rounds used: questions) -> the tables' "Avg. rounds", "Total rounds" and
# Du's "Model calls" (three agents and one judge call per completed round).
@pytest.mark.parametrize(
    ("distribution", "average", "total", "calls"),
    [
        ({1: 100}, "1.00", 100, None),  # Du fixed 1
        ({2: 100}, "2.00", 200, None),  # Du fixed 2, Liang fixed 2, prompt-matched fixed 2
        ({1: 95, 2: 4, 6: 1}, "1.09", 109, 436),  # Du adaptive T90
        ({1: 21, 2: 52, 3: 4, 4: 1, 5: 3, 6: 19}, "2.70", 270, None),  # Liang strict adaptive
        ({1: 100}, "1.00", 100, 400),  # Du T70
        ({1: 98, 2: 2}, "1.02", 102, 408),  # Du T80
        ({1: 97, 2: 2, 3: 1}, "1.04", 104, 416),  # Du T90 rerun
        ({1: 94, 2: 5, 6: 1}, "1.10", 110, 440),  # Du T95
    ],
)
def test_rounds_columns_of_the_stopping_study(
    distribution: dict[int, int], average: str, total: int, calls: int | None
) -> None:
    rounds = [r for r, n in distribution.items() for _ in range(n)]
    assert len(rounds) == N
    assert fixed(float(np.mean(rounds)), 2) == average and sum(rounds) == total
    if calls is not None:
        assert 4 * sum(rounds) == calls


def test_wilson_hand_checked() -> None:
    z = 1.959963984540054
    # k = 0: the interval is [0, z^2 / (n + z^2)]
    p = wilson(0, 10)
    assert p.low == pytest.approx(0.0, abs=1e-12) and p.high == pytest.approx(z * z / (10 + z * z), abs=1e-12)
    assert fixed(p.high, 4) == "0.2775"
    # the interval holds the estimate exactly at both ends (statsmodels misses 0 and 1 by rounding errors)
    for n in range(1, 60):
        assert wilson(0, n).low == 0.0 and wilson(n, n).high == 1.0
    # the closed form, 7 of 20
    k, n = 7, 20
    centre = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
    p = wilson(k, n)
    assert (p.low, p.high) == pytest.approx((centre - half, centre + half), abs=1e-12)
    assert math.isnan(wilson(0, 0).estimate)


# -- paired accuracy tests ---------------------------------------------------------------------
def paired(correct_a: int, correct_b: int, a_only: int, b_only: int, n: int = N) -> tuple[list[bool], list[bool]]:
    """Per-question correctness of A and B with the given totals and discordant counts."""
    both = correct_a - a_only
    assert both + b_only == correct_b, "the printed counts are consistent"
    a = [True] * both + [True] * a_only + [False] * b_only
    b = [True] * both + [False] * a_only + [True] * b_only
    rest = n - len(a)
    return a + [False] * rest, b + [False] * rest


PAIRED_TABLE = [
    # A, B, A only, B only, McNemar p, matched OR (95% CI), as printed
    ("du1", "du_adaptive", 6, 3, "0.508", "2.00 [0.43, 12.36]"),
    ("du1", "du2", 6, 5, "1.000", "1.20 [0.31, 4.97]"),
    ("du2", "du_adaptive", 8, 6, "0.791", "1.33 [0.41, 4.66]"),
    ("liang2", "liang_adaptive", 30, 10, "0.002", "3.00 [1.43, 6.88]"),
    ("single", "du1", 2, 5, "0.453", "0.40 [0.04, 2.44]"),
    ("single", "du2", 5, 7, "0.774", "0.71 [0.18, 2.61]"),
    ("single", "du_adaptive", 4, 4, "1.000", "1.00 [0.19, 5.37]"),
    ("single", "liang2", 11, 7, "0.481", "1.57 [0.56, 4.78]"),
    ("single", "liang_adaptive", 35, 11, "<0.001", "3.18 [1.58, 6.95]"),
    ("liang2", "liang2_prompt_matched", 29, 8, "<0.001", "3.63 [1.62, 9.18]"),
    ("liang2_prompt_matched", "liang_adaptive", 10, 11, "1.000", "0.91 [0.35, 2.36]"),
    ("single", "liang2_prompt_matched", 36, 11, "<0.001", "3.27 [1.63, 7.13]"),
    ("liang1", "liang2", 8, 20, "0.036", "0.40 [0.15, 0.95]"),
    ("liang2", "liang3", 13, 8, "0.383", "1.63 [0.62, 4.52]"),
]


@pytest.mark.parametrize(("a", "b", "a_only", "b_only", "p", "odds"), PAIRED_TABLE)
def test_paired_accuracy_tests_of_the_stopping_study(
    a: str, b: str, a_only: int, b_only: int, p: str, odds: str
) -> None:
    x, y = paired(CORRECT[a], CORRECT[b], a_only, b_only)
    result = compare_paired(x, y, resamples=2000)
    assert (result.n, result.a_only, result.b_only) == (N, a_only, b_only)
    assert (result.accuracy_a, result.accuracy_b) == (CORRECT[a] / N, CORRECT[b] / N)
    assert p_value(result.mcnemar_p) == p
    o = result.odds_ratio
    assert f"{fixed(o.estimate, 2)} {interval(o.low, o.high, 2)}" == odds


def test_the_study_oracles_follow_from_the_paired_counts() -> None:
    # "Du: fixed 1 to fixed 2, all 100 questions: 5 wrong-to-correct; 6 correct-to-wrong; 89 unchanged
    # in correctness | 85/100 (0.85) if an oracle could choose the correct fixed-1 or fixed-2 outcome"
    result = compare_paired(*paired(CORRECT["du1"], CORRECT["du2"], 6, 5), resamples=1000)
    assert (result.b_only, result.a_only, result.n - result.discordant) == (5, 6, 89)
    assert (result.oracle, fixed(result.oracle / N, 2)) == (85, "0.85")
    # "Du: 95 adaptive questions stopping at round 1: 71 correct in both; 15 wrong in both; 5 adaptive wrong /
    # fixed-2 correct; 4 adaptive correct / fixed-2 wrong | 80/95 (0.842) ...; adaptive was 75/95 (0.789)"
    result = compare_paired(*paired(75, 76, 4, 5, n=95), resamples=1000)
    assert (result.both_right, result.both_wrong) == (71, 15)
    assert (result.oracle, fixed(result.oracle / 95)) == (80, "0.842")
    assert fixed(result.accuracy_a) == "0.789"


def test_mcnemar_and_odds_ratio_hand_checked() -> None:
    # 6 vs 3 discordant: p = 2 P(X <= 3), X ~ Bin(9, 1/2) = 2 (1 + 9 + 36 + 84) / 512
    assert mcnemar_exact(6, 3) == pytest.approx(260 / 512, abs=1e-12)
    assert mcnemar_exact(3, 6) == pytest.approx(260 / 512, abs=1e-12)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32, abs=1e-12)
    # 5 vs 0: the Clopper-Pearson lower bound of 5/5 is 0.025^(1/5); odds ratio infinite
    o = matched_odds_ratio(5, 0)
    low = 0.025 ** (1 / 5)
    assert o.estimate == math.inf and o.high == math.inf and o.low == pytest.approx(low / (1 - low), rel=1e-9)
    o = matched_odds_ratio(0, 5)
    assert o.estimate == 0 and o.low == 0
    assert math.isnan(matched_odds_ratio(0, 0).estimate)


def test_compare_paired_counts_hand_checked() -> None:
    a = [True, True, False, False, True, False]
    b = [True, False, True, False, False, False]
    r = compare_paired(a, b, resamples=1000)
    assert (r.both_right, r.a_only, r.b_only, r.both_wrong) == (1, 2, 1, 2)
    assert r.difference == pytest.approx(0.5 - 1 / 3)
    assert r.difference_ci.low <= r.difference <= r.difference_ci.high
    with pytest.raises(ValueError):
        compare_paired([True], [True, False])


# -- several conditions ---------------------------------------------------------------------------
def test_cochran_q_hand_checked() -> None:
    # column totals C = (5, 3, 1), row totals R = (2, 1, 3, 0, 1, 2), N = 9, k = 3:
    # Q = (k-1)(k sum C^2 - N^2) / (k N - sum R^2) = 2 (3*35 - 81) / (27 - 19) = 6; p = exp(-6/2) for 2 df
    table = [[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0], [1, 0, 0], [1, 1, 0]]
    q = cochran_q(table)
    assert (q.statistic, q.df, q.n) == (pytest.approx(6.0), 2, 6)
    assert q.p == pytest.approx(math.exp(-3), rel=1e-9)
    assert (cochran_q([[1, 1, 1], [0, 0, 0]]).statistic, cochran_q([[1, 1, 1], [0, 0, 0]]).p) == (0.0, 1.0)


def test_holm_hand_checked() -> None:
    # sorted 0.01, 0.03, 0.04 -> 3*0.01, max(0.03, 2*0.03), max(0.06, 1*0.04)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


# -- rounds ------------------------------------------------------------------------------------------
def rounds_pairs(pairs: dict[tuple[int, int], int]) -> tuple[list[int], list[int]]:
    """(rounds under A, rounds under B) per question from {(a, b): questions}."""
    a = [ra for (ra, _), k in pairs.items() for _ in range(k)]
    b = [rb for (_, rb), k in pairs.items() for _ in range(k)]
    return a, b


DU_ADAPTIVE = {1: 95, 2: 4, 6: 1}
LIANG_ADAPTIVE = {1: 21, 2: 52, 3: 4, 4: 1, 5: 3, 6: 19}
ROUNDS_TABLE = [
    # fixed rounds, adaptive distribution, fewer, tied, more, "mean diff. (95% CI)", median, sign-test p
    (1, DU_ADAPTIVE, 0, 95, 5, "+0.09 [0.01, 0.21]", 0, "0.063"),
    (2, DU_ADAPTIVE, 95, 4, 1, "-0.91 [-0.99, -0.79]", -1, "<0.001"),
    (2, LIANG_ADAPTIVE, 21, 52, 27, "+0.70 [0.37, 1.05]", 0, "0.471"),
]
# The study's intervals are percentile bootstraps "with a fixed resampling seed" that it does not
# publish (nor the question order), so no implementation can replay its draws. Its endpoints sit
# where Monte Carlo error decides the second decimal (the ideal bootstrap's 2.5% point of the Liang
# difference lies at 0.36/0.37), so moot's estimator (scipy percentile bootstrap, 10,000 resamples)
# is run with a seed that draws the printed figures, and the next test checks that every other seed
# stays within one printed unit.
PAPER_SEED = 8


@pytest.mark.parametrize(("fixed_rounds", "adaptive", "fewer", "tied", "more", "mean_ci", "median", "p"), ROUNDS_TABLE)
def test_round_differences_of_the_stopping_study(
    fixed_rounds: int, adaptive: dict[int, int], fewer: int, tied: int, more: int, mean_ci: str, median: int, p: str
) -> None:
    a, b = rounds_pairs({(fixed_rounds, r): n for r, n in adaptive.items()})
    d = compare_rounds(a, b, seed=PAPER_SEED)
    assert (d.n, d.sign.fewer, d.sign.tied, d.sign.more) == (N, fewer, tied, more)
    assert f"{fixed(d.mean, 2, sign=True)} {interval(d.ci.low, d.ci.high, 2)}" == mean_ci
    assert d.median == median
    assert p_value(d.sign.p) == p


@pytest.mark.parametrize("seed", range(5))
def test_round_difference_intervals_are_within_monte_carlo_error_for_any_seed(seed: int) -> None:
    for fixed_rounds, adaptive, *_, mean_ci, _median, _p in ROUNDS_TABLE:
        a, b = rounds_pairs({(fixed_rounds, r): n for r, n in adaptive.items()})
        ci = compare_rounds(a, b, seed=seed).ci
        low, high = (float(x) for x in mean_ci.split("[")[1].rstrip("]").split(","))
        assert abs(ci.low - low) <= 0.0101 and abs(ci.high - high) <= 0.0101


def test_sign_test_and_bootstrap_hand_checked() -> None:
    s = sign_test([0, 0, 1, 1, 1, 1, 1])
    assert (s.fewer, s.tied, s.more) == (0, 2, 5) and s.p == pytest.approx(0.0625)
    assert p_value(s.p) == "0.063"  # printed half up, as in the study
    assert sign_test([0, 0]).p == 1.0
    values = [0.0] * 20 + [1.0] * 10
    first = bootstrap_mean(values, seed=3, resamples=2000)
    assert bootstrap_mean(values, seed=3, resamples=2000) == first  # seeded: reproducible
    assert first.low < 1 / 3 < first.high
    assert bootstrap_mean([2.0] * 7) == bootstrap_mean([2.0] * 7, seed=1)
    assert (bootstrap_mean([2.0] * 7).low, bootstrap_mean([2.0] * 7).high) == (2.0, 2.0)
    assert math.isnan(bootstrap_mean([]).low)


def test_formatting_rounds_half_up() -> None:
    assert fixed(3.625, 2) == "3.63" and fixed(1.625, 2) == "1.63"  # Python's format gives 3.62 and 1.62
    assert fixed(0.0625, 3) == "0.063"
    assert fixed(-0.0001, 3) == "0.000" and fixed(0.09, 2, sign=True) == "+0.09"
    assert fixed(math.inf, 2) == "∞" and fixed(None) == "—" and fixed(math.nan) == "—"
    assert p_value(0.00099) == "<0.001" and p_value(0.001) == "0.001" and p_value(1.0) == "1.000"


# -- the question as the unit: seeds repeat the same questions ----------------------------------------
# 6 questions x 3 seeds, correctness of A and B: rows are questions, columns seeds 0, 1, 2.
A6x3 = [
    [1, 1, 1],
    [1, 1, 0],
    [1, 0, 1],
    [0, 0, 1],
    [1, 1, 1],
    [0, 0, 0],
]
B6x3 = [
    [1, 1, 1],
    [0, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
    [0, 0, 0],
    [0, 0, 0],
]


def by_seed_maps(rows: list[list[int]]) -> list[dict[int, bool]]:
    return [{s: bool(v) for s, v in enumerate(row)} for row in rows]


def test_seed_spread_is_the_per_seed_mean_and_sample_std_over_seeds() -> None:
    # A per seed: seed 0 4/6, seed 1 3/6, seed 2 4/6 -> mean 11/18, sample std sqrt(((1/18)^2*2 + (2/18)^2)/2)
    x = np.asarray(A6x3, dtype=float)
    spread = seed_spread({s: x[:, s].tolist() for s in range(3)})
    assert [(v.seed, v.n, v.total) for v in spread.per_seed] == [(0, 6, 4.0), (1, 6, 3.0), (2, 6, 4.0)]
    assert spread.mean == pytest.approx(11 / 18)
    hand = math.sqrt(((4 / 6 - 11 / 18) ** 2 * 2 + (3 / 6 - 11 / 18) ** 2) / 2)
    assert spread.std == pytest.approx(hand) and spread.std == pytest.approx(float(np.std(x.mean(axis=0), ddof=1)))
    assert fixed(spread.std) == "0.096"
    one = seed_spread({0: [1.0, 0.0]})
    assert one.mean == 0.5 and math.isnan(one.std)


def test_question_accuracy_with_repeats_is_a_cluster_bootstrap_over_questions() -> None:
    acc = question_accuracy(by_seed_maps(A6x3), seed=0, resamples=10_000)
    per_question = np.asarray(A6x3, dtype=float).mean(axis=1)
    assert (acc.successes, acc.n, acc.questions, acc.units) == (11, 18, 6, 6)
    assert acc.method == "cluster bootstrap" and acc.estimate == pytest.approx(11 / 18)
    # an independent cluster bootstrap in numpy: resample the 6 questions, keep each one's 3 seeds together
    rng = np.random.default_rng(12345)
    draws = rng.integers(0, 6, size=(20_000, 6))
    means = per_question[draws].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    assert acc.low == pytest.approx(low, abs=0.03) and acc.high == pytest.approx(high, abs=0.03)
    # not Wilson on the 18 question x seed results: that interval is far too narrow
    pooled = wilson(11, 18)
    assert acc.high - acc.low > (pooled.high - pooled.low) * 1.2
    # one seed per question: exactly Wilson
    assert question_accuracy([{0: True}, {0: False}, {0: True}]) == wilson(2, 3)


def test_compare_repeats_hand_checked_on_6_questions_x_3_seeds() -> None:
    r = compare_repeats(by_seed_maps(A6x3), by_seed_maps(B6x3), seed=0, resamples=2000)
    # per question p_A = 1, 2/3, 2/3, 1/3, 1, 0 and p_B = 1, 0, 1/3, 1/3, 0, 0
    assert (r.n, r.units, r.repeats) == (6, 18, 3)
    assert (r.a_only, r.b_only, r.both_right, r.both_wrong, r.mixed_ties) == (3, 0, 1, 1, 1)
    assert r.accuracy_a == pytest.approx(11 / 18) and r.accuracy_b == pytest.approx(5 / 18)
    assert r.difference == pytest.approx(6 / 18)
    assert r.mcnemar_p == pytest.approx(2 / 8)  # exact sign test: 3 of 3 questions favour A
    d = np.asarray(A6x3, dtype=float).mean(axis=1) - np.asarray(B6x3, dtype=float).mean(axis=1)
    assert r.difference_ci == bootstrap_mean(d, seed=0, resamples=2000)
    assert r.difference_ci.low <= r.difference <= r.difference_ci.high
    # the oracle counts question x seed results right under A or B: 3 + 2 + 3 + 1 + 3 + 0
    assert (r.oracle, r.oracle_n) == (12, 18)
    # each seed on its own: A only / B only of seed 0: (q1, q4) vs none
    assert [(t.seed, t.n, t.a_only, t.b_only) for t in r.per_seed] == [(0, 6, 3, 0), (1, 6, 2, 1), (2, 6, 2, 0)]
    assert r.per_seed[0].p == pytest.approx(mcnemar_exact(3, 0))


def test_repeats_are_never_counted_as_new_questions() -> None:
    """A right on 5 questions in every seed, B never: pooling 6 x 3 pairs would give 15 discordant pairs
    and p = 2/2^15; the question is the unit, so 5 discordant questions, p = 2/2^5."""
    a = [[1, 1, 1]] * 5 + [[0, 0, 0]]
    b = [[0, 0, 0]] * 6
    r = compare_repeats(by_seed_maps(a), by_seed_maps(b), resamples=1000)
    assert (r.n, r.a_only, r.b_only) == (6, 5, 0)
    assert r.mcnemar_p == pytest.approx(2 / 32) and p_value(r.mcnemar_p) == "0.063"
    pooled = compare_paired([bool(v) for row in a for v in row], [bool(v) for row in b for v in row])
    assert pooled.n == 18 and pooled.mcnemar_p == pytest.approx(2 / 2**15)  # what treating seeds as questions gives


def test_one_seed_per_question_gives_exactly_the_one_result_statistics() -> None:
    x, y = paired(CORRECT["du1"], CORRECT["du_adaptive"], 6, 3)
    seeded = compare_repeats([{7: v} for v in x], [{7: v} for v in y], resamples=2000)
    assert seeded == compare_paired(x, y, resamples=2000)
    a, b = rounds_pairs({(2, r): n for r, n in LIANG_ADAPTIVE.items()})
    assert compare_rounds_repeats([{0: v} for v in a], [{0: v} for v in b], seed=PAPER_SEED) == compare_rounds(
        a, b, seed=PAPER_SEED
    )
    table = [[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0], [1, 0, 0], [1, 1, 0]]
    assert cochran_q_repeats([[{0: bool(v)} for v in row] for row in table]) == cochran_q(table)


def test_compare_rounds_repeats_uses_each_questions_mean_over_seeds() -> None:
    a = [{0: 2, 1: 2}, {0: 2, 1: 2}, {0: 2, 1: 2}]
    b = [{0: 1, 1: 2}, {0: 1, 1: 1}, {0: 3, 1: 2}]
    d = compare_rounds_repeats(a, b, resamples=1000)
    assert (d.n, d.repeats) == (3, 2)  # questions, not 6 question x seed pairs
    assert d.mean == pytest.approx((-0.5 - 1 + 0.5) / 3) and d.median == -0.5
    assert (d.sign.fewer, d.sign.tied, d.sign.more) == (2, 0, 1)


def test_friedman_on_question_accuracy_and_cochran_q_on_binary_data() -> None:
    # on 0/1 values Friedman's tie-corrected statistic is Cochran's Q (the hand-checked table above: Q = 6)
    table = [[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0], [1, 0, 0], [1, 1, 0]]
    assert friedman(table).statistic == pytest.approx(6.0) and friedman(table).p == pytest.approx(math.exp(-3))
    # three conditions, 6 questions x 3 seeds: Friedman on the questions' accuracies over seeds
    c = [[1, 0, 0]] * 6
    q = cochran_q_repeats([[{s: bool(m[i][s]) for s in range(3)} for m in (A6x3, B6x3, c)] for i in range(6)])
    from scipy.stats import friedmanchisquare

    means = [np.asarray(m, dtype=float).mean(axis=1) for m in (A6x3, B6x3, c)]
    expected = friedmanchisquare(*means)
    assert (q.test, q.n, q.df) == ("Friedman", 6, 2)
    assert q.statistic == pytest.approx(expected.statistic) and q.p == pytest.approx(expected.pvalue)
    same = cochran_q_repeats([[{0: True, 1: False}] * 3] * 4)
    assert (same.statistic, same.p, same.test) == (0.0, 1.0, "Friedman")


def test_metric_summary_and_paired_metric_tests_hand_checked() -> None:
    # fact precision of 5 questions x 2 seeds; None: the judge could not score that biography
    a = [{0: 0.9, 1: 0.7}, {0: 0.6, 1: None}, {0: 1.0, 1: 1.0}, {0: None, 1: None}, {0: 0.5, 1: 0.7}]
    b = [{0: 0.7, 1: 0.5}, {0: 0.5, 1: 0.5}, {0: 0.8, 1: 0.9}, {0: 0.2, 1: 0.3}, {0: 0.2, 1: 0.3}]
    m = metric_summary(a, resamples=2000)
    assert (m.questions, m.results, m.missing) == (4, 7, 3)
    assert m.mean == pytest.approx((0.8 + 0.6 + 1.0 + 0.6) / 4)
    assert [(v.seed, v.n) for v in m.seeds.per_seed] == [(0, 4), (1, 3)]
    assert m.seeds.mean == pytest.approx(((0.9 + 0.6 + 1.0 + 0.5) / 4 + (0.7 + 1.0 + 0.7) / 3) / 2)
    assert m.ci.low <= m.mean <= m.ci.high
    c = compare_metric(a, b, resamples=2000)
    # paired seeds per question: q0 both (d = 0.8 - 0.6), q1 seed 0 only (0.6 - 0.5), q2 both (1.0 - 0.85),
    # q3 none (A has no value), q4 both (0.6 - 0.25)
    assert (c.n, c.pairs, c.missing) == (4, 7, 3)
    assert c.difference == pytest.approx((0.2 + 0.1 + 0.15 + 0.35) / 4)
    assert (c.mean_a, c.mean_b) == (pytest.approx(0.75), pytest.approx((0.6 + 0.5 + 0.85 + 0.25) / 4))
    assert (c.a_higher, c.tied, c.b_higher) == (4, 0, 0)
    assert c.sign_p == pytest.approx(2 / 16)
    # Wilcoxon signed-rank, exact: 4 distinct positive differences -> two-sided p = 2 / 2^4
    assert c.wilcoxon_p == pytest.approx(2 / 16)
    assert wilcoxon_signed_rank([0.1, 0.2, 0.3, 0.4, 0.5]) == pytest.approx(2 / 32)
    assert wilcoxon_signed_rank([0.0, 0.0]) == 1.0
