"""The Dirichlet-categorical debate model (DCM) and a simulator of it, vectorised over debates.

The model is Choi et al.'s (2025), as analysed by Zhu et al. (2026, §5 and Appendix D): agent i
holds Dirichlet counts alpha_i over K answers (answer 0 is the correct one). In round t it draws
theta ~ Dir(alpha_i) and answers y ~ Cat(theta); then it adds, for every agent j it hears
(itself included unless ``include_self`` is off), one count for y_j (unweighted, D.1) or c_j
counts, c_j being j's confidence in [0, 1] (confidence-weighted, D.3). Its belief in the correct
answer is b_i = alpha_i[0] / sum(alpha_i).

Results proved for homogeneous agents on a fully connected graph, and checked by tests/test_theory.py:
unweighted, the mean belief is a martingale (D.1); weighted with confidence positively correlated
with correctness, a strict submartingale (D.4); weighted with confidence independent of
correctness it is again a martingale (condition on the weights: the added mass is then
independent of which answers were correct). Diversity-aware initialisation (§4.1, D.2) changes
only the round-0 answers, not the update rule.

The simulator draws y directly from Cat(alpha_i / sum(alpha_i)): a single draw of the
Dirichlet-categorical compound has exactly that law, so theta is integrated out. The engine
bridge (moot.theory.engine_bridge) draws theta explicitly, so comparing the two also checks this.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from moot.debate.components.aggregation import TIE_RULES, TieRule
from moot.debate.components.topology import Full, Topology
from moot.errors import ConfigError

CORRECT = 0  # the index of the correct answer, by convention

Weighting = Literal["none", "confidence"]
InitKind = Literal["random", "diverse"]
Selection = Literal["distinct", "balanced"]

WEIGHTINGS: tuple[str, ...] = ("none", "confidence")
INITS: tuple[str, ...] = ("random", "diverse")
SELECTIONS: tuple[str, ...] = ("distinct", "balanced")


def _choice(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise ConfigError(f"unknown {what} {value!r}; choose {', '.join(allowed)}")


@dataclass(frozen=True)
class ConfidenceModel:
    """How an agent's stated confidence depends on whether its answer is correct.

    Confidence given a correct answer is Beta with mean ``mean_correct``, given a wrong answer
    Beta with mean ``mean_wrong``, both with concentration ``concentration`` (a + b); an infinite
    concentration makes confidence deterministic. Equal means: confidence carries no information
    about correctness (uncorrelated); ``mean_correct > mean_wrong``: positively correlated.
    """

    mean_correct: float = 0.7
    mean_wrong: float = 0.4
    concentration: float = 10.0

    def __post_init__(self) -> None:
        deterministic = math.isinf(self.concentration)
        for name in ("mean_correct", "mean_wrong"):
            value = getattr(self, name)
            ok = 0.0 <= value <= 1.0 if deterministic else 0.0 < value < 1.0
            if not ok:
                bounds = "[0, 1]" if deterministic else "(0, 1) (or use an infinite concentration)"
                raise ConfigError(f"confidence {name} must be in {bounds}, got {value}")
        if not self.concentration > 0:
            raise ConfigError(f"confidence concentration must be positive, got {self.concentration}")

    @classmethod
    def uncorrelated(cls, mean: float, concentration: float = 10.0) -> ConfidenceModel:
        """Confidence independent of correctness, with the given mean."""
        return cls(mean, mean, concentration)

    def sample(self, rng: np.random.Generator, correct: NDArray[np.bool_]) -> NDArray[np.float64]:
        """One confidence per answer, given whether each answer is correct."""
        mean = np.where(correct, self.mean_correct, self.mean_wrong)
        if math.isinf(self.concentration):
            return mean.astype(np.float64)
        return rng.beta(mean * self.concentration, (1.0 - mean) * self.concentration)

    def variance(self, correct: bool) -> float:
        mean = self.mean_correct if correct else self.mean_wrong
        return 0.0 if math.isinf(self.concentration) else mean * (1.0 - mean) / (self.concentration + 1.0)

    def correlation(self, p_correct: float) -> float:
        """Pearson correlation of confidence with correctness when answers are correct with
        probability ``p_correct`` (the point-biserial correlation; 0 when confidence is uninformative)."""
        gap = self.mean_correct - self.mean_wrong
        q = p_correct * (1.0 - p_correct)
        var = p_correct * self.variance(True) + (1.0 - p_correct) * self.variance(False) + q * gap**2
        return 0.0 if var == 0.0 or q == 0.0 else gap * math.sqrt(q) / math.sqrt(var)


def prior_counts(answers: int, p_correct: float, mass: float) -> tuple[float, ...]:
    """Dirichlet counts with total ``mass``: ``p_correct`` of it on answer 0, the rest spread evenly."""
    if answers < 2:
        raise ConfigError(f"answers must be at least 2, got {answers}")
    if not 0.0 < p_correct < 1.0:
        raise ConfigError(f"p_correct must be in (0, 1), got {p_correct}")
    if not mass > 0:
        raise ConfigError(f"prior mass must be positive, got {mass}")
    wrong = mass * (1.0 - p_correct) / (answers - 1)
    return (mass * p_correct,) + (wrong,) * (answers - 1)


@dataclass(frozen=True)
class DebateModel:
    """One setting of the Dirichlet-categorical debate model.

    ``rounds`` counts round 0 (the initial answers), as moot's engine does. ``prior`` is one
    vector of Dirichlet counts shared by all agents (homogeneous) or one vector per agent.
    ``topology``: who hears whom, as in the engine (moot.debate.components.topology: full, ring,
    star, an explicit graph or none); ``include_self``: an agent also counts its own previous
    answer (in the engine it sees it in its chat history). ``weighting``: ``none`` adds one count
    per answer heard (D.1), ``confidence`` adds the speaker's confidence, drawn from ``confidence``
    (D.3). ``init``: ``random`` (round-0 answers drawn
    independently) or ``diverse`` (draw ``pool`` candidates, keep ``agents`` of them greedily by
    their marginal gain in diversity; see :func:`select_diverse`). ``tie_rule`` is the majority
    vote's, as in moot.debate.aggregation.
    """

    agents: int = 5
    rounds: int = 5
    prior: tuple[float, ...] | tuple[tuple[float, ...], ...] = (2.0, 1.0, 1.0, 1.0)
    topology: Topology = field(default_factory=Full)
    include_self: bool = True
    weighting: Weighting = "none"
    confidence: ConfidenceModel = field(default_factory=ConfidenceModel)
    init: InitKind = "random"
    pool: int = 10
    selection: Selection = "distinct"
    tie_rule: TieRule = "first"

    def __post_init__(self) -> None:
        if self.agents < 1:
            raise ConfigError(f"agents must be a positive integer, got {self.agents}")
        if self.rounds < 1:
            raise ConfigError(f"rounds must be a positive integer, got {self.rounds}")
        _choice(self.weighting, WEIGHTINGS, "weighting")
        _choice(self.init, INITS, "initialisation")
        _choice(self.selection, SELECTIONS, "diversity selection")
        _choice(self.tie_rule, TIE_RULES, "tie rule")
        self.topology.peers(self.agents)  # validates a star's hub or a graph against the agents
        if self.init == "diverse" and self.pool < self.agents:
            raise ConfigError(
                f"the candidate pool ({self.pool}) must hold at least as many answers as agents ({self.agents})"
            )
        priors = self._prior_rows()
        if len({len(row) for row in priors}) != 1 or len(priors[0]) < 2:
            raise ConfigError("every prior needs the same number (>= 2) of answer counts")
        if len(priors) not in (1, self.agents):
            raise ConfigError(f"give one prior for all agents or one per agent ({self.agents}), got {len(priors)}")
        if any(not (c > 0 and math.isfinite(c)) for row in priors for c in row):
            raise ConfigError("prior counts must be positive and finite")

    def _prior_rows(self) -> list[tuple[float, ...]]:
        if self.prior and isinstance(self.prior[0], tuple | list):
            return [tuple(float(c) for c in row) for row in self.prior]
        return [tuple(float(c) for c in self.prior)]  # type: ignore[arg-type]

    @property
    def answers(self) -> int:
        """K, the number of possible answers."""
        return len(self._prior_rows()[0])

    def priors(self) -> NDArray[np.float64]:
        """The agents' prior counts, shape (agents, answers)."""
        rows = np.array(self._prior_rows(), dtype=np.float64)
        return np.broadcast_to(rows, (self.agents, self.answers)).copy()

    def prior_belief(self) -> float:
        """Mean over agents of the prior belief in the correct answer, b_0."""
        priors = self.priors()
        return float((priors[:, CORRECT] / priors.sum(1)).mean())

    def adjacency(self) -> NDArray[np.float64]:
        """H[i, j] = 1 when agent i adds agent j's answer to its counts (self-loops per ``include_self``)."""
        hears = np.zeros((self.agents, self.agents))
        for i, peers in enumerate(self.topology.peers(self.agents)):
            hears[i, peers] = 1.0
        np.fill_diagonal(hears, 1.0 if self.include_self else 0.0)
        return hears


@dataclass(frozen=True)
class Simulation:
    """Per-debate outcomes of ``debates`` simulated debates (one column per debate).

    ``belief[t]``: the agents' mean belief in the correct answer before round t's answers, for
    t = 0..rounds (row ``rounds`` is after the last update). ``correct[t]``: how many agents
    answered correctly in round t. ``majority[t]``: whether round t's majority vote is correct.
    ``top[t]``: votes of round t's most frequent answer (== agents: unanimous). ``present``:
    whether the correct answer is among the round-0 answers.
    """

    model: DebateModel
    belief: NDArray[np.float64]
    correct: NDArray[np.int16]
    majority: NDArray[np.bool_]
    top: NDArray[np.int16]
    present: NDArray[np.bool_]

    @property
    def debates(self) -> int:
        return int(self.present.shape[0])


def _draw(alpha: NDArray[np.float64], u: NDArray[np.float64]) -> NDArray[np.int64]:
    """Categorical draws by inversion: y = #{k : cumsum(alpha)_k <= u * sum(alpha)}. alpha (..., K), u (...)."""
    cdf = np.cumsum(alpha, axis=-1)
    draws: NDArray[np.int64] = (cdf[..., :-1] <= (u * cdf[..., -1])[..., None]).sum(axis=-1)
    return draws


def select_diverse(pool: NDArray[np.int64], keep: int, selection: Selection, answers: int) -> NDArray[np.int64]:
    """Greedy diversity-aware selection of ``keep`` of the candidate answers ``pool`` (candidates, debates).

    Zhu et al. §4.1: repeatedly keep the candidate with the largest marginal gain in diversity.
    ``distinct`` measures diversity by the number of distinct answers: every answer's first
    candidate is kept, then (no gain left) the earliest remaining candidates. ``balanced``
    measures it by the entropy of the kept answers: the gain is largest for the answer kept least
    often so far, i.e. candidates are kept in order of (occurrence rank of their answer, position).
    Ties go to the earliest candidate. Kept answers are returned in pool order, shape (keep, debates).
    """
    size = pool.shape[0]
    onehot = pool[..., None] == np.arange(answers)
    rank = np.take_along_axis(np.cumsum(onehot, axis=0, dtype=np.int32), pool[..., None], axis=-1)[..., 0] - 1
    position = np.arange(size)[:, None]
    key = np.where(rank == 0, 0, size) + position if selection == "distinct" else rank * size + position
    kept = np.sort(np.argsort(key, axis=0)[:keep], axis=0)
    return np.take_along_axis(pool, kept, axis=0)


def initial_answers(model: DebateModel, debates: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Round-0 answers, shape (agents, debates).

    Candidate m is drawn from the prior of agent m mod N, so ``random`` answers are exactly the
    first N candidates of the ``diverse`` pool for the same generator: the two initialisations
    are coupled, and comparisons between them are paired (common random numbers).
    """
    priors = model.priors()
    size = model.pool if model.init == "diverse" else model.agents
    u = rng.random((size, debates))
    owners = np.arange(size) % model.agents
    candidates = _draw(priors[owners][:, None, :], u)
    if model.init == "random":
        return candidates
    return select_diverse(candidates, model.agents, model.selection, model.answers)


def majority_correct(
    answers: NDArray[np.int64], onehot: NDArray[np.bool_], tie_rule: TieRule, rng: np.random.Generator
) -> tuple[NDArray[np.bool_], NDArray[np.int16]]:
    """Whether each debate's plurality answer is the correct one, and the plurality's vote count.

    The same rule as moot.debate.components.aggregation.majority_vote: ``first`` breaks ties for the earliest
    agent's answer, ``random`` uniformly, ``abstain`` not at all (no answer, scored wrong).
    """
    votes = onehot.sum(axis=0)  # (debates, K)
    top = votes.max(axis=-1)
    tied = votes == top[:, None]
    if tie_rule == "first":
        columns = np.arange(answers.shape[1])
        first = np.argmax(tied[columns[None, :], answers], axis=0)  # earliest agent holding a top answer
        win = answers[first, columns] == CORRECT
    elif tie_rule == "random":
        win = tied[:, CORRECT] & (rng.random(top.shape[0]) * tied.sum(axis=-1) < 1.0)
    else:
        win = tied[:, CORRECT] & (tied.sum(axis=-1) == 1)
    return win, top.astype(np.int16)


def simulate(model: DebateModel, debates: int, seed: int = 0) -> Simulation:
    """Simulate ``debates`` independent debates of ``model``, all at once (arrays of shape (agents, debates, K)).

    Seeded: the same (model, debates, seed) gives the same result. The random streams of the
    initial answers, later answers, confidences and ties are separate, so two models differing
    only in ``init`` or ``weighting`` share their random numbers as far as possible.
    """
    if debates < 1:
        raise ConfigError(f"debates must be a positive integer, got {debates}")
    rng_init, rng_answers, rng_confidence, rng_ties = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)
    )
    n, rounds, k = model.agents, model.rounds, model.answers
    hears = model.adjacency()
    alpha = np.repeat(model.priors()[:, None, :], debates, axis=1)  # (agents, debates, K)
    belief = np.empty((rounds + 1, debates))
    correct = np.empty((rounds, debates), dtype=np.int16)
    majority = np.empty((rounds, debates), dtype=np.bool_)
    top = np.empty((rounds, debates), dtype=np.int16)
    present = np.zeros(debates, dtype=np.bool_)
    for t in range(rounds):
        belief[t] = (alpha[..., CORRECT] / alpha.sum(axis=-1)).mean(axis=0)
        if t == 0:
            answers = initial_answers(model, debates, rng_init)
        else:
            answers = _draw(alpha, rng_answers.random((n, debates)))
        right = answers == CORRECT
        onehot = answers[..., None] == np.arange(k)
        if model.weighting == "confidence":
            counts = onehot * model.confidence.sample(rng_confidence, right)[..., None]
        else:
            counts = onehot.astype(np.float64)
        alpha += (hears @ counts.reshape(n, debates * k)).reshape(n, debates, k)
        correct[t] = right.sum(axis=0)
        majority[t], top[t] = majority_correct(answers, onehot, model.tie_rule, rng_ties)
        if t == 0:
            present = right.any(axis=0)
    belief[rounds] = (alpha[..., CORRECT] / alpha.sum(axis=-1)).mean(axis=0)
    return Simulation(model, belief, correct, majority, top, present)
