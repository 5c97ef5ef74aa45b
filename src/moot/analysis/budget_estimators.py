"""The pure estimators of the equal-budget comparison (``moot.analysis.budget``): the exact vote@k of one
question's K answers under a tie rule (``vote_probabilities``) and the sign-flip permutation test of paired
differences (``sign_flip_test``). No store is read and no model is called.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from moot.debate.components.aggregation import TieRule

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
