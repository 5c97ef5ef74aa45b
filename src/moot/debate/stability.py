"""Adaptive stability detection: when to stop a debate, from how the agents' agreement is distributed.

The rule of Hu et al., "Multi-Agent Debate for LLM Judges with Adaptive Stability Detection" (arXiv 2510.12697,
NeurIPS 2025): after each round t, the count of agents (out of n) holding the consensus answer on each question
of a dataset is modelled by a mixture of two Beta-Binomial distributions, one for questions where the agents
mostly agree and one where they mostly do not, fitted anew each round (so the mixture varies with t). Consecutive
rounds' fitted distributions are compared by the Kolmogorov-Smirnov statistic (the largest absolute difference
of their CDFs over 0..n), and the debate stops once it is below 0.05 for two consecutive rounds; otherwise it
runs to its round cap.

The paper's PDF was not available to us (only its abstract, which speaks of modelling "the judges' collective
correct rate"); these details are moot's, not the paper's:

- the count (``agreement_count``): moot's agents give open answers, not the paper's binary verdicts, so a
  question's count is the number of agents giving the round's plurality answer (no ground truth needed);
- the fit: EM whose M-step is one bounded Newton step on each component's (log alpha, log beta), started from
  the exact 1-D two-means split of the counts plus ``restarts`` random starts drawn from ``seed``, keeping the
  highest likelihood;
- the bounds: every alpha and beta lies in [``PARAM_MIN``, ``PARAM_MAX``] = [1e-3, 1e3], so data with no spread
  (every count equal) fit a finite limit instead of diverging (see ``fit_mixture``);
- the order: component 1 is the one with the higher mean alpha/(alpha+beta).

With few agents the parameters are not identifiable (n=3 leaves 3 free cell frequencies for 5 parameters): the
fitted distribution, all the stopping rule uses, is far better determined than the parameters that give it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

PARAM_MIN = 1e-3
PARAM_MAX = 1e3
KS_THRESHOLD = 0.05  # the paper's threshold on the KS statistic
PATIENCE = 2  # the paper's number of consecutive rounds under the threshold
_MAX_STEP = 2.0  # the longest step of (log alpha, log beta) in one EM iteration

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Mixture:
    """weight * BetaBinom(n, alpha1, beta1) + (1 - weight) * BetaBinom(n, alpha2, beta2); component 1 has the
    higher mean. ``log_likelihood`` is of the fitted counts (binomial coefficients included)."""

    weight: float
    alpha1: float
    beta1: float
    alpha2: float
    beta2: float
    n: int
    log_likelihood: float
    iterations: int

    def pmf(self) -> Array:
        """Probabilities of the counts 0..n."""
        from scipy.stats import betabinom

        k = np.arange(self.n + 1)
        return np.asarray(
            self.weight * betabinom.pmf(k, self.n, self.alpha1, self.beta1)
            + (1 - self.weight) * betabinom.pmf(k, self.n, self.alpha2, self.beta2),
            dtype=np.float64,
        )

    def cdf(self) -> Array:
        """P(count <= k) for k in 0..n."""
        from scipy.stats import betabinom

        k = np.arange(self.n + 1)
        return np.asarray(
            self.weight * betabinom.cdf(k, self.n, self.alpha1, self.beta1)
            + (1 - self.weight) * betabinom.cdf(k, self.n, self.alpha2, self.beta2),
            dtype=np.float64,
        )


@dataclass(frozen=True)
class StabilityTrace:
    """Each round's fit, the KS distance to the previous round's fit (None for round 0), and ``stop_after``:
    the first round after which the rule stops, or None when it never does (the caller runs to its cap)."""

    fits: tuple[Mixture, ...]
    ks: tuple[float | None, ...]
    stop_after: int | None
    threshold: float
    patience: int


def _log_pmf(n: int, a: float, b: float) -> Array:
    """log BetaBinom(k; n, a, b) for k in 0..n, without log C(n, k) (constant in a and b)."""
    from scipy.special import betaln

    k = np.arange(n + 1)
    return np.asarray(betaln(k + a, n - k + b) - betaln(a, b), dtype=np.float64)


def _q_step(n: int, weights: Array, start: tuple[float, float]) -> tuple[float, float]:
    """One projected Newton step on u = (log alpha, log beta) that increases
    Q(u) = sum_k weights[k] * log BetaBinom(k; n, alpha, beta), kept within the bounds (step halved until Q
    increases; a gradient step where the Hessian is not negative definite). Exact gradient and Hessian from
    scipy.special's digamma and polygamma."""
    from scipy.special import betaln, digamma, polygamma

    total = weights.sum()
    if total <= 0:
        return start
    k = np.arange(n + 1)
    w = weights / total
    low, high = np.log(PARAM_MIN), np.log(PARAM_MAX)

    def q(u: Array) -> float:
        a, b = np.exp(u)
        return float(w @ (betaln(k + a, n - k + b) - betaln(a, b)))

    u = np.clip(np.log(start), low, high)
    a, b = np.exp(u)
    # digamma and trigamma at k+a, n-k+b (k = 0..n), then a, b, a+b, n+a+b: one call each
    points = np.concatenate([k + a, n - k + b, [a, b, a + b, n + a + b]])
    psi, tri = digamma(points), polygamma(1, points)
    m = n + 1
    d1, t1 = psi[-2] - psi[-1], tri[-2] - tri[-1]
    g = np.array([w @ psi[:m] - psi[-4] + d1, w @ psi[m : 2 * m] - psi[-3] + d1])
    h_ab = t1
    h_aa = w @ tri[:m] - tri[-4] + t1
    h_bb = w @ tri[m : 2 * m] - tri[-3] + t1
    grad = g * np.array([a, b])
    hess = np.array([[a * a * h_aa + grad[0], a * b * h_ab], [a * b * h_ab, b * b * h_bb + grad[1]]])
    # at a bound with the gradient pointing out, that coordinate stays put
    free = ~(((u <= low) & (grad < 0)) | ((u >= high) & (grad > 0)))
    if not free.any():
        return float(a), float(b)
    step = np.zeros(2)
    sub = hess[np.ix_(free, free)]
    if np.all(np.linalg.eigvalsh(sub) < 0):
        step[free] = -np.linalg.solve(sub, grad[free])
    elif np.any(grad[free]):  # a unit uphill step: flat tails towards a bound are crossed in a few iterations
        step[free] = grad[free] / float(np.abs(grad[free]).max())
    longest = float(np.abs(step).max())
    if longest == 0:
        return float(a), float(b)
    step *= min(1.0, _MAX_STEP / longest)
    current = q(u)
    for _ in range(30):
        candidate = np.clip(u + step, low, high)
        if q(candidate) >= current:
            a, b = np.exp(candidate)
            break
        step /= 2
    return float(a), float(b)


def _two_means_start(hist: Array) -> Array:
    """Initial responsibility of component 1 for each count value 0..n: the split of the counts into low/high
    that minimises the within-group sum of squares (exact 1-D two-means, ties to the lowest split); 0.9 at or
    above it, 0.1 below. Counts all equal have no split: every value starts at 0.5."""
    values = np.arange(hist.size, dtype=np.float64)
    best: tuple[float, int] | None = None
    for split in range(1, hist.size):
        sse = 0.0
        for part in (slice(0, split), slice(split, None)):
            weights, points = hist[part], values[part]
            if weights.sum() == 0:
                break
            sse += float(weights @ (points - weights @ points / weights.sum()) ** 2)
        else:
            if best is None or sse < best[0]:
                best = (sse, split)
    if best is None:
        return np.full(hist.size, 0.5)
    return np.where(values >= best[1], 0.9, 0.1)


def _em(hist: Array, n: int, resp: Array, max_iter: int, tol: float) -> Mixture:
    """EM on the histogram ``hist`` of counts 0..n from ``resp``, component 1's responsibility per count value
    (questions with the same count share it). The fit is unordered and its log-likelihood lacks the binomial
    coefficients."""
    params = [(1.0, 1.0), (1.0, 1.0)]
    weight, log_lik, previous, iterations = 0.5, -np.inf, -np.inf, 0
    while iterations < max_iter:
        iterations += 1
        params = [_q_step(n, hist * resp, params[0]), _q_step(n, hist * (1 - resp), params[1])]
        weight = float(hist @ resp / hist.sum())
        with np.errstate(divide="ignore"):  # a weight of exactly 0 or 1 leaves its component at log(0)
            first = np.log(weight) + _log_pmf(n, *params[0])
            second = np.log1p(-weight) + _log_pmf(n, *params[1])
        joint = np.logaddexp(first, second)
        log_lik = float(hist @ joint)
        resp = np.exp(first - joint)
        if log_lik - previous <= tol * hist.sum():
            break
        previous = log_lik
    (a1, b1), (a2, b2) = params
    return Mixture(weight, a1, b1, a2, b2, n, log_lik, iterations)


def _ordered(fit: Mixture) -> Mixture:
    """The fit with component 1 the higher-mean one (ties: the larger alpha)."""
    if (fit.alpha2 / (fit.alpha2 + fit.beta2), fit.alpha2) > (fit.alpha1 / (fit.alpha1 + fit.beta1), fit.alpha1):
        return replace(
            fit, weight=1 - fit.weight, alpha1=fit.alpha2, beta1=fit.beta2, alpha2=fit.alpha1, beta2=fit.beta1
        )
    return fit


def _check_counts(counts: Sequence[int], n: int) -> Array:
    """The counts as an array, or ValueError when there are none, n < 1, or one lies outside 0..n."""
    if n < 1:
        raise ValueError(f"n (the number of agents) must be at least 1, got {n}")
    if len(counts) == 0:
        raise ValueError("no counts to fit: give one agreement count per question")
    bad = [c for c in counts if isinstance(c, bool) or int(c) != c or not 0 <= c <= n]
    if bad:
        raise ValueError(f"counts must be whole numbers in 0..{n} (n agents); got {bad[:5]}")
    return np.asarray(counts, dtype=np.float64)


def fit_mixture(
    counts: Sequence[int], n: int, *, seed: int = 0, restarts: int = 2, max_iter: int = 1000, tol: float = 1e-9
) -> Mixture:
    """Maximum-likelihood two-component Beta-Binomial mixture of ``counts`` (one per question, each in 0..n).

    EM from the two-means start and from ``restarts`` random starts (responsibilities uniform in [0.05, 0.95]
    from ``numpy.random.default_rng(seed)``); the highest log-likelihood wins, the two-means start on ties, so
    the result is a function of (counts, n, seed). Each EM run stops when the log-likelihood gains at most
    ``tol`` per question in an iteration, or after ``max_iter`` iterations. Its M-step is one Newton step on
    each component's log-parameters (the EM gradient algorithm, Lange 1995), not a full maximisation: it has
    EM's convergence rate, and a scipy.optimize.minimize call per M-step made a fit several times slower.

    Degenerate data are fitted as a bounded limit, never NaN: when every count is n (all questions unanimous)
    both components come out as alpha=1e3, beta=1e-3 (all mass at n), when every count is 0 as alpha=1e-3,
    beta=1e3; when every count is the same k in between, both have a mean of about k/n with the larger
    parameter at 1e3. The weight is then not identified (it stays at its start, 0.5 from the two-means start)."""
    data = _check_counts(counts, n)
    if restarts < 0 or max_iter < 1:
        raise ValueError(f"restarts must be >= 0 and max_iter >= 1, got {restarts} and {max_iter}")
    histogram = tuple(int(h) for h in np.bincount(data.astype(np.int64), minlength=n + 1))
    return _fit_histogram(histogram, seed, restarts, max_iter, tol)


@lru_cache(maxsize=256)
def _fit_histogram(histogram: tuple[int, ...], seed: int, restarts: int, max_iter: int, tol: float) -> Mixture:
    """``fit_mixture`` on the histogram of the counts (all the fit depends on), cached: a caller that reruns
    ``stopping_round`` after each round refits only the new round."""
    from scipy.special import gammaln

    hist = np.asarray(histogram, dtype=np.float64)
    n = hist.size - 1
    k = np.arange(n + 1)
    log_binom = float(hist @ (gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)))
    starts = [_two_means_start(hist)]
    rng = np.random.default_rng(seed)
    starts += [rng.uniform(0.05, 0.95, n + 1) for _ in range(restarts)]
    best = _em(hist, n, starts[0], max_iter, tol)
    for resp in starts[1:]:
        fit = _em(hist, n, resp, max_iter, tol)
        if fit.log_likelihood > best.log_likelihood + 1e-9:
            best = fit
    return _ordered(replace(best, log_likelihood=best.log_likelihood + log_binom))


def ks_distance(a: Mixture, b: Mixture) -> float:
    """Kolmogorov-Smirnov distance of two fits: max over k in 0..n of |F_a(k) - F_b(k)|."""
    if a.n != b.n:
        raise ValueError(f"cannot compare fits over different numbers of agents ({a.n} and {b.n})")
    return float(np.max(np.abs(a.cdf() - b.cdf())))


def stopping_round(
    counts_by_round: Sequence[Sequence[int]],
    n: int,
    *,
    threshold: float = KS_THRESHOLD,
    patience: int = PATIENCE,
    seed: int = 0,
) -> StabilityTrace:
    """Fit each round's counts (round 0, 1, ...; the same questions in the same order each round) and find the
    first round t whose last ``patience`` KS distances (rounds t-patience+1..t, each to its previous round) are
    all below ``threshold``. The paper's values are threshold 0.05 and patience 2: a distribution that settles
    for one round and moves again does not stop the debate. A prefix of the rounds gives the same answer as
    long as it reaches the stop, so a caller can run this after every round."""
    if not 0 < threshold <= 1 or patience < 1:
        raise ValueError(f"threshold must lie in (0, 1] and patience be >= 1, got {threshold} and {patience}")
    if counts_by_round and len({len(r) for r in counts_by_round}) > 1:
        sizes = [len(r) for r in counts_by_round]
        raise ValueError(f"every round must have one count per question, the same questions; got sizes {sizes}")
    fits = tuple(fit_mixture(r, n, seed=seed) for r in counts_by_round)
    ks: list[float | None] = [None] + [ks_distance(fits[t - 1], fits[t]) for t in range(1, len(fits))]
    stop_after = None
    for t in range(patience, len(fits)):
        window = ks[t - patience + 1 : t + 1]
        if all(d is not None and d < threshold for d in window):
            stop_after = t
            break
    return StabilityTrace(fits, tuple(ks), stop_after, threshold, patience)


def agreement_count(answers: Sequence[str | None]) -> int:
    """How many agents give the round's plurality answer on one question; unparsed answers (None) count for no
    answer, and 0 when none parsed. moot's adaptation: the paper's judges give binary verdicts, where the count
    is the agents voting one way; moot's open answers count agreement with the most common answer instead (a
    tie counts the size of the tied groups)."""
    tally = Counter(a for a in answers if a is not None)
    return max(tally.values(), default=0)
