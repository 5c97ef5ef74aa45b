"""Calibration of stated confidences against correctness: reliability bins, Brier, ECE, AUROC.

Confidences are probabilities in [0, 1]; ``to_probabilities`` maps a 0-100 scale onto it.
``confidence_spread`` summarises confidences on their own 0-100 scale as the stopping study's
Table 7 does: median, interquartile range, range and accuracy in its bins.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Bin:
    """Answers whose confidence lies in [low, high) (the last bin includes ``high``)."""

    low: float
    high: float
    n: int
    correct: int
    mean_confidence: float

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else math.nan


@dataclass(frozen=True)
class Calibration:
    n: int
    correct: int
    mean_confidence: float
    bins: tuple[Bin, ...]
    brier: float
    ece: float
    auroc: float | None  # None when every answer is right or every answer is wrong


def to_probabilities(confidences: Sequence[float], scale: float | None = None) -> list[float]:
    """Confidences as probabilities: divided by ``scale`` (the 0..scale range they were stated on);
    without a known scale, values above 1 are read as 0-100."""
    values = [float(c) for c in confidences]
    if scale is None:
        scale = 100.0 if any(c > 1 for c in values) else 1.0
    return [c / scale for c in values]


def equal_width_edges(bins: int = 10) -> list[float]:
    return [i / bins for i in range(bins + 1)]


def reliability(
    confidences: Sequence[float], correct: Sequence[bool], edges: Sequence[float] | None = None
) -> list[Bin]:
    """Accuracy by confidence bin; ``edges`` default to 10 equal-width bins over [0, 1]."""
    edges = list(edges) if edges is not None else equal_width_edges()
    conf = np.asarray(confidences, dtype=float)
    right = np.asarray(correct, dtype=bool)
    bins = []
    for i, (low, high) in enumerate(zip(edges[:-1], edges[1:])):
        last = i == len(edges) - 2
        mask = (conf >= low) & ((conf <= high) if last else (conf < high))
        n = int(mask.sum())
        bins.append(Bin(low, high, n, int(right[mask].sum()), float(conf[mask].mean()) if n else math.nan))
    return bins


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool], bins: int = 10) -> float:
    """ECE with equal-width bins: sum over bins of (n_b / N) |accuracy_b - mean confidence_b|."""
    total = len(confidences)
    if total == 0:
        return math.nan
    bins_ = reliability(confidences, correct, equal_width_edges(bins))
    return sum(b.n / total * abs(b.accuracy - b.mean_confidence) for b in bins_ if b.n)


def brier(confidences: Sequence[float], correct: Sequence[bool]) -> float:
    """Brier score: mean squared difference between confidence and correctness (sklearn ``brier_score_loss``)."""
    if not confidences:
        return math.nan
    from sklearn.metrics import brier_score_loss

    return float(brier_score_loss(np.asarray(correct, dtype=int), np.asarray(confidences, dtype=float), pos_label=1))


def auroc(confidences: Sequence[float], correct: Sequence[bool]) -> float | None:
    """Area under the ROC curve of confidence as a score for being right (sklearn ``roc_auc_score``); ties count 1/2."""
    labels = np.asarray(correct, dtype=int)
    if labels.size == 0 or labels.min() == labels.max():
        return None
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, np.asarray(confidences, dtype=float)))


def calibrate(confidences: Sequence[float], correct: Sequence[bool], bins: int = 10) -> Calibration:
    """Every calibration figure of a set of (confidence, correct) answers; confidences in [0, 1]."""
    conf = [float(c) for c in confidences]
    return Calibration(
        n=len(conf),
        correct=int(sum(bool(c) for c in correct)),
        mean_confidence=float(np.mean(conf)) if conf else math.nan,
        bins=tuple(reliability(conf, correct, equal_width_edges(bins))),
        brier=brier(conf, correct),
        ece=expected_calibration_error(conf, correct, bins),
        auroc=auroc(conf, correct),
    )


# The stopping study's Table 7 bins of a judge's or moderator's 0-100 confidence (50-79, 80-89, 90-100),
# with 0-49 below them so that no answer is dropped: [0, 50), [50, 80), [80, 90), [90, 100].
STUDY_EDGES = (0.0, 50.0, 80.0, 90.0, 100.0)


@dataclass(frozen=True)
class ConfidenceSpread:
    """Confidences on a 0-100 scale: their distribution and the accuracy of the answers in each bin."""

    n: int
    median: float
    q1: float  # 25th percentile
    q3: float  # 75th percentile
    low: float
    high: float
    bins: tuple[Bin, ...]


def bin_label(b: Bin) -> str:
    """A bin's label on integer confidences: "50–79" for [50, 80); the last bin, which includes its top, "90–100"."""
    top = b.high if b.high == STUDY_EDGES[-1] else b.high - 1
    return f"{b.low:g}–{top:g}"


def confidence_spread(
    confidences: Sequence[float], correct: Sequence[bool], edges: Sequence[float] = STUDY_EDGES
) -> ConfidenceSpread:
    """Median, quartiles (``numpy.percentile``, linear interpolation) and range of 0-100 confidences, and
    accuracy per bin (``reliability`` with ``edges``; default the stopping study's bins plus 0-49)."""
    conf = np.asarray(confidences, dtype=float)
    if conf.size == 0:
        nan = math.nan
        return ConfidenceSpread(0, nan, nan, nan, nan, nan, tuple(reliability([], [], edges)))
    q1, median, q3 = (float(x) for x in np.percentile(conf, [25, 50, 75]))
    return ConfidenceSpread(
        n=int(conf.size),
        median=median,
        q1=q1,
        q3=q3,
        low=float(conf.min()),
        high=float(conf.max()),
        bins=tuple(reliability(conf.tolist(), correct, edges)),
    )
