"""Calibration: hand-checked Brier, ECE and AUROC, and the stopping study's accuracy-by-confidence bins."""

from __future__ import annotations

import math

import pytest

from moot.analysis.calibration import (
    auroc,
    bin_label,
    brier,
    calibrate,
    confidence_spread,
    expected_calibration_error,
    reliability,
    to_probabilities,
)
from moot.analysis.formatting import fixed


def test_brier_ece_auroc_hand_checked() -> None:
    conf = [0.9, 0.9, 0.2, 0.2]
    right = [True, False, False, False]
    # Brier: (0.1^2 + 0.9^2 + 0.2^2 + 0.2^2) / 4
    assert brier(conf, right) == pytest.approx((0.01 + 0.81 + 0.04 + 0.04) / 4)
    # ECE: bin [0.9, 1.0]: |0.5 - 0.9| * 2/4; bin [0.2, 0.3): |0 - 0.2| * 2/4
    assert expected_calibration_error(conf, right) == pytest.approx(0.2 + 0.1)
    # AUROC: the right answer (0.9) against the wrong ones (0.9 tie = 1/2, 0.2, 0.2)
    assert auroc(conf, right) == pytest.approx(2.5 / 3)
    assert auroc([0.5, 0.7], [True, True]) is None
    c = calibrate(conf, right)
    assert (c.n, c.correct, c.mean_confidence) == (4, 1, pytest.approx(0.55))
    assert [(b.low, b.n, b.correct) for b in c.bins if b.n] == [(0.2, 2, 0), (0.9, 2, 1)]
    assert c.brier == pytest.approx(0.225) and c.ece == pytest.approx(0.3) and c.auroc == pytest.approx(2.5 / 3)


def test_bins_include_their_lower_edge_and_the_last_its_upper() -> None:
    bins = reliability([0.0, 0.1, 0.999, 1.0], [False, True, True, True])
    assert [b.n for b in bins] == [1, 1, 0, 0, 0, 0, 0, 0, 0, 2]
    assert math.isnan(bins[2].accuracy)


def test_a_0_to_100_scale_is_read_as_percent() -> None:
    assert to_probabilities([50, 95, 100]) == [0.5, 0.95, 1.0]
    assert to_probabilities([0.5, 1.0]) == [0.5, 1.0]
    assert to_probabilities([5, 10], scale=10) == [0.5, 1.0]  # a protocol's 0..10 scale, when known


@pytest.mark.parametrize(
    ("bins", "printed"),
    [
        # "Du adaptive | ... | 2/3 = 0.667 | 1/7 = 0.143 | 79/99 = 0.798"
        ([(3, 2), (7, 1), (99, 79)], ["0.667", "0.143", "0.798"]),
        # "Liang strict adaptive | ... | 22/78 = 0.282 | 52/110 = 0.473 | 39/82 = 0.476"
        ([(78, 22), (110, 52), (82, 39)], ["0.282", "0.473", "0.476"]),
    ],
)
def test_the_study_accuracy_by_confidence_bin(bins: list[tuple[int, int]], printed: list[str]) -> None:
    # confidences on the study's 0-100 scale, one value inside each of its bins 50-79, 80-89, 90-100
    conf: list[float] = []
    right: list[bool] = []
    for value, (n, k) in zip((70, 85, 95), bins):
        conf += [value] * n
        right += [True] * k + [False] * (n - k)
    found = reliability(to_probabilities(conf), right, edges=[0.5, 0.8, 0.9, 1.0])
    assert [(b.n, b.correct) for b in found] == bins
    assert [fixed(b.accuracy) for b in found] == printed


def _ratio(k: int, n: int) -> str:
    return f"{k}/{n} = {fixed(k / n)}" if n else "—"


@pytest.mark.parametrize(
    ("values", "distribution", "printed"),
    [
        # "Du adaptive | median 95; IQR 95–95; range 70–100 | 2/3 = 0.667 | 1/7 = 0.143 | 79/99 = 0.798"
        (
            [(70, 3, 2), (85, 7, 1), (95, 98, 78), (100, 1, 1)],
            "median 95; IQR 95–95; range 70–100",
            ["—", "2/3 = 0.667", "1/7 = 0.143", "79/99 = 0.798"],
        ),
        # "Liang strict adaptive | median 85; IQR 75–90; range 50–90 | 22/78 = 0.282 | 52/110 = 0.473 | 39/82 = 0.476"
        (
            [(50, 10, 2), (75, 68, 20), (80, 30, 12), (85, 80, 40), (90, 82, 39)],
            "median 85; IQR 75–90; range 50–90",
            ["—", "22/78 = 0.282", "52/110 = 0.473", "39/82 = 0.476"],
        ),
    ],
)
def test_the_study_table_7_confidence_distribution_and_bins(
    values: list[tuple[int, int, int]], distribution: str, printed: list[str]
) -> None:
    """(confidence, verdicts, right) -> the study's Table 7 row: median, IQR, range, accuracy per bin."""
    conf: list[float] = []
    right: list[bool] = []
    for value, n, k in values:
        conf += [float(value)] * n
        right += [True] * k + [False] * (n - k)
    s = confidence_spread(conf, right)
    text = f"median {s.median:g}; IQR {s.q1:g}–{s.q3:g}; range {s.low:g}–{s.high:g}"
    assert text == distribution
    assert [bin_label(b) for b in s.bins] == ["0–49", "50–79", "80–89", "90–100"]
    assert [_ratio(b.correct, b.n) for b in s.bins] == printed
    assert s.n == sum(b.n for b in s.bins) == len(conf)


def test_confidences_below_50_have_their_own_bin() -> None:
    s = confidence_spread(
        [10, 49, 49.5, 50, 79.9, 80, 89, 90, 100], [True, False, True, True, False, True, True, False, True]
    )
    assert [(bin_label(b), b.n, b.correct) for b in s.bins] == [
        ("0–49", 3, 2),  # 49.5 is below 50: [0, 50)
        ("50–79", 2, 1),
        ("80–89", 2, 2),
        ("90–100", 2, 1),
    ]
    assert math.isnan(confidence_spread([], []).median)
