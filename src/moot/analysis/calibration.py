"""Calibration of stated confidences against correctness: reliability bins, Brier, ECE, AUROC.

Confidences are probabilities in [0, 1]; ``to_probabilities`` maps a 0-100 scale onto it.
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
