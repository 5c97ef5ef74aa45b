"""Monte Carlo experiments on the Dirichlet-categorical model: estimates with standard errors.

Every estimate is a sample mean over independent simulated debates, reported with its Monte
Carlo standard error s / sqrt(n) (s: the sample standard deviation, ddof=1); a 95% interval is
mean ± 1.96 SE (normal approximation; n is in the thousands). Conditions compared here are
simulated with the same seed, so they share random numbers (see moot.theory.model.simulate) and
paired differences have a smaller standard error than the difference of two independent means.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from moot.errors import ConfigError
from moot.theory.model import ConfidenceModel, DebateModel, Simulation, prior_counts, simulate

Z95 = 1.959963984540054  # two-sided 95% normal quantile


@dataclass(frozen=True)
class Estimate:
    """A Monte Carlo estimate: the sample mean and its standard error."""

    mean: float
    se: float

    def interval(self, z: float = Z95) -> tuple[float, float]:
        return self.mean - z * self.se, self.mean + z * self.se

    @property
    def z(self) -> float:
        """mean / SE: how many standard errors the estimate is from 0 (inf when SE is 0 and mean is not)."""
        if self.se == 0.0:
            return 0.0 if self.mean == 0.0 else math.copysign(math.inf, self.mean)
        return self.mean / self.se


def estimate(values: NDArray[np.floating] | NDArray[np.bool_] | NDArray[np.integer]) -> Estimate:
    """Sample mean of i.i.d. per-debate values and its standard error s / sqrt(n)."""
    x = np.asarray(values, dtype=np.float64)
    n = x.shape[0]
    if n == 0:
        raise ConfigError("no debates to estimate from")
    se = float(x.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0
    return Estimate(float(x.mean()), se)


def difference(a: Estimate, b: Estimate) -> Estimate:
    """a - b for independent estimates: SE = sqrt(SE_a² + SE_b²)."""
    return Estimate(a.mean - b.mean, math.hypot(a.se, b.se))


@dataclass(frozen=True)
class Summary:
    """What one condition's debates show. Per-round tuples are indexed by round (0 = initial answers).

    ``belief``: expected mean belief in the correct answer before each round and after the last
    update (rounds + 1 entries); ``spread``: its 10th and 90th percentiles across debates;
    ``answers``: share of correct answers; ``majority``: majority-vote accuracy; ``unanimous``:
    share of debates where all agents agree; ``present``: probability that the correct answer is
    among the round-0 answers; ``drift``: E[b_final - b_0].
    """

    name: str
    model: DebateModel
    debates: int
    belief: tuple[Estimate, ...]
    spread: tuple[tuple[float, float], ...]
    answers: tuple[Estimate, ...]
    majority: tuple[Estimate, ...]
    unanimous: tuple[Estimate, ...]
    present: Estimate
    drift: Estimate

    @property
    def final_majority(self) -> Estimate:
        return self.majority[-1]


def summarize(name: str, sim: Simulation) -> Summary:
    agents = sim.model.agents
    return Summary(
        name=name,
        model=sim.model,
        debates=sim.debates,
        belief=tuple(estimate(row) for row in sim.belief),
        spread=tuple((float(np.quantile(row, 0.1)), float(np.quantile(row, 0.9))) for row in sim.belief),
        answers=tuple(estimate(row / agents) for row in sim.correct),
        majority=tuple(estimate(row) for row in sim.majority),
        unanimous=tuple(estimate(row == agents) for row in sim.top),
        present=estimate(sim.present),
        drift=estimate(sim.belief[-1] - sim.belief[0]),
    )


def run_conditions(conditions: Sequence[tuple[str, DebateModel]], debates: int, seed: int = 0) -> list[Summary]:
    """Simulate each named condition with the same seed (common random numbers) and summarise it."""
    return [summarize(name, simulate(model, debates, seed)) for name, model in conditions]


def uninformative(confidence: ConfidenceModel, p_correct: float) -> ConfidenceModel:
    """Confidence with the same mean (at accuracy ``p_correct``) and concentration, but independent of correctness."""
    mean = p_correct * confidence.mean_correct + (1.0 - p_correct) * confidence.mean_wrong
    return ConfidenceModel.uncorrelated(mean, confidence.concentration)


def belief_conditions(base: DebateModel) -> list[tuple[str, DebateModel]]:
    """The three update rules of §5: unweighted (D.1), confidence-weighted with ``base``'s confidence
    model (D.3-D.4), and confidence-weighted with uninformative confidence (a control: same mean weight)."""
    p0 = base.prior_belief()
    return [
        ("unweighted", replace(base, weighting="none")),
        ("confidence-weighted", replace(base, weighting="confidence")),
        (
            "weighted, uninformative confidence",
            replace(base, weighting="confidence", confidence=uninformative(base.confidence, p0)),
        ),
    ]


@dataclass(frozen=True)
class InitComparison:
    """Random vs diversity-aware initialisation of one setting, paired on common random numbers.

    ``present_gain`` and ``success_gain`` are paired differences (diverse - random), per debate, of
    "the correct answer is among the round-0 answers" and "the final majority is correct".
    """

    random: Summary
    diverse: Summary
    present_gain: Estimate
    success_gain: Estimate


def compare_init(base: DebateModel, debates: int, seed: int = 0) -> InitComparison:
    """Simulate ``base`` with random and with diversity-aware initialisation on the same random numbers."""
    rand = simulate(replace(base, init="random"), debates, seed)
    div = simulate(replace(base, init="diverse"), debates, seed)
    return InitComparison(
        random=summarize("random", rand),
        diverse=summarize("diverse", div),
        present_gain=estimate(div.present.astype(np.int8) - rand.present.astype(np.int8)),
        success_gain=estimate(div.majority[-1].astype(np.int8) - rand.majority[-1].astype(np.int8)),
    )


def with_p_correct(base: DebateModel, p_correct: float) -> DebateModel:
    """``base`` with a homogeneous prior of the same mass and number of answers, and prior belief ``p_correct``."""
    priors = base.priors()
    mass = float(priors.sum(1).mean())
    return replace(base, prior=prior_counts(base.answers, p_correct, mass))


def exact_present(p_correct: float, draws: int) -> float:
    """P(the correct answer is among ``draws`` independent prior-predictive answers) = 1 - (1 - p)^draws.

    Homogeneous agents only. For random initialisation draws = agents; for diversity-aware
    initialisation draws = pool when answers <= agents, since the greedy selection then keeps
    every distinct answer of the pool (Zhu et al. D.2: the diverse pool dominates random sampling
    in coverage).
    """
    return 1.0 - (1.0 - p_correct) ** draws


__all__ = [
    "Z95",
    "Estimate",
    "InitComparison",
    "Summary",
    "belief_conditions",
    "compare_init",
    "difference",
    "estimate",
    "exact_present",
    "run_conditions",
    "summarize",
    "uninformative",
    "with_p_correct",
]
