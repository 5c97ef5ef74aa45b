"""The Dirichlet-categorical model of debate (Zhu et al. 2026, §5 and App. D): the simulator's theorems.

Tolerances. Every Monte Carlo check compares a sample mean over n independent simulated debates
with a value, allowing Z = 4 standard errors, SE = s / sqrt(n) (s: the sample standard deviation
of the per-debate values). By the central limit theorem (n >= 10,000 here) the error divided by
SE is close to N(0, 1), so one check of a correct simulator fails with probability
2 * Phi(-4) = 6.3e-5, and the ~50 checks of this file together with probability < 0.4% for an
arbitrary seed; the seeds are fixed, so the outcome is reproducible. A claimed effect (a drift, a
gain) must exceed Z * SE: significant at the same level. Where a check asserts "no drift", it
also asserts that Z * SE is far smaller than the effect the alternative would produce, so that
the check has power (a simulator with the wrong dynamics fails it).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from moot.debate.components.aggregation import majority_vote
from moot.debate.components.topology import Full, NoTopology, Ring, Star, Topology
from moot.errors import ConfigError
from moot.theory.cli import theory_app
from moot.theory.experiments import compare_init, estimate, exact_present, uninformative
from moot.theory.model import ConfidenceModel, DebateModel, majority_correct, prior_counts, select_diverse, simulate

Z = 4.0
N = 20_000  # debates per simulation
BASE = DebateModel(agents=5, rounds=5, prior=(2.0, 1.0, 1.0, 1.0))  # prior belief 0.4
INFORMATIVE = ConfidenceModel(mean_correct=0.7, mean_wrong=0.4, concentration=10.0)


def assert_zero(values: np.ndarray, what: str) -> float:
    """The mean of ``values`` is 0 within Z standard errors; returns Z * SE."""
    e = estimate(values)
    assert abs(e.mean) <= Z * e.se, f"{what}: {e.mean:+.5f} is {abs(e.z):.1f} SE from 0"
    return Z * e.se


def assert_positive(values: np.ndarray, what: str) -> None:
    e = estimate(values)
    assert e.mean > Z * e.se, f"{what}: {e.mean:+.5f} is only {e.z:+.1f} SE from 0"


def assert_near(values: np.ndarray, expected: float, what: str) -> None:
    e = estimate(values)
    assert abs(e.mean - expected) <= Z * e.se, f"{what}: {e.mean:.5f} vs exact {expected:.5f} ({e.se:.5f} SE)"


# --- D.1: unweighted debate is a martingale ------------------------------------------------------


@pytest.mark.parametrize("topology", [Full(), Ring(k=1), NoTopology()], ids=lambda t: t.kind)
def test_unweighted_expected_belief_is_constant_across_rounds(topology: Topology) -> None:
    """D.1 for the full graph. The ring and no-debate cases extend it: on any regular graph with
    self-loops each agent adds d counts a round, so E[mean belief'] = (A b + d b) / (A + d) = b."""
    sim = simulate(replace(BASE, topology=topology), N, seed=1)
    assert np.all(sim.belief[0] == pytest.approx(0.4))
    for t in range(1, BASE.rounds + 1):
        tolerance = assert_zero(sim.belief[t] - sim.belief[0], f"E[b_{t} - b_0]")
        # Power: confidence weighting moves the mean belief by >= 0.04 a round (next test).
        assert tolerance < 0.01


def test_unweighted_belief_is_a_martingale_given_the_current_belief() -> None:
    """Stronger than a constant mean: E[b_{t+1} - b_t | b_t] = 0 within each quartile of b_t."""
    sim = simulate(BASE, 4 * N, seed=2)
    for t in (1, 3):
        edges = np.quantile(sim.belief[t], [0.25, 0.5, 0.75])
        bins = np.digitize(sim.belief[t], edges)
        for b in np.unique(bins):
            chosen = bins == b
            assert_zero(sim.belief[t + 1][chosen] - sim.belief[t][chosen], f"increment after round {t}, bin {b}")


# --- D.3-D.4: confidence weighting -------------------------------------------------------------------


def test_informative_confidence_makes_the_expected_belief_rise_every_round() -> None:
    """D.4: confidence positively correlated with correctness: a strict submartingale."""
    model = replace(BASE, weighting="confidence", confidence=INFORMATIVE)
    assert INFORMATIVE.correlation(0.4) > 0.5
    sim = simulate(model, N, seed=3)
    for t in range(BASE.rounds):
        assert_positive(sim.belief[t + 1] - sim.belief[t], f"E[b_{t + 1} - b_{t}]")


def test_uninformative_confidence_keeps_the_expected_belief_constant() -> None:
    """Weights independent of correctness: given the weights, E[b'] = (alpha_0 + p W) / (A + W) = p."""
    confidence = uninformative(INFORMATIVE, 0.4)
    assert confidence.correlation(0.4) == 0.0
    sim = simulate(replace(BASE, weighting="confidence", confidence=confidence), N, seed=4)
    for t in range(1, BASE.rounds + 1):
        tolerance = assert_zero(sim.belief[t] - sim.belief[0], f"E[b_{t} - b_0]")
        assert tolerance < 0.01  # power: informative confidence moves it by >= 0.04 a round


@pytest.mark.parametrize("weighted", [False, True])
def test_one_step_expected_belief_matches_the_closed_form(weighted: bool) -> None:
    """Deterministic confidences h (correct) and l (wrong), full graph, homogeneous prior: with k of
    N agents correct, b_1 = (alpha_0 + k h) / (A + k h + (N - k) l), k ~ Binomial(N, p).
    Unweighted (h = l = 1) this sums to p exactly; weighted with h > l it exceeds p (D.4)."""
    h, low = (0.9, 0.3) if weighted else (1.0, 1.0)
    model = replace(BASE, weighting="confidence" if weighted else "none", confidence=ConfidenceModel(h, low, math.inf))
    n, a0, total, p = 5, 2.0, 5.0, 0.4
    exact = sum(
        math.comb(n, k) * p**k * (1 - p) ** (n - k) * (a0 + k * h) / (total + k * h + (n - k) * low)
        for k in range(n + 1)
    )
    if weighted:
        assert exact > p + 0.04
    else:
        assert exact == pytest.approx(p, abs=1e-12)
    assert_near(simulate(model, N, seed=5).belief[1], exact, "E[b_1]")


# --- the majority vote: the engine's rule --------------------------------------------------------


@pytest.mark.parametrize("tie_rule", ["first", "abstain"])
def test_vectorised_vote_equals_the_engines_vote_debate_by_debate(tie_rule: str) -> None:
    """Deterministic tie rules: the same winner's correctness and plurality count as majority_vote,
    on 2,000 random answer vectors of 4 agents over 3 answers (ties are frequent)."""
    answers = np.random.default_rng(13).integers(0, 3, size=(4, 2000))
    win, top = majority_correct(answers, answers[..., None] == np.arange(3), tie_rule, np.random.default_rng(0))  # type: ignore[arg-type]
    for d in range(answers.shape[1]):
        vote = majority_vote([str(a) for a in answers[:, d]], tie_rule)  # type: ignore[arg-type]
        assert win[d] == (vote.winner == "0")
        assert top[d] == max(count for _, count in vote.counts)
    assert not win.all() and win.any()


@pytest.mark.parametrize("tie_rule", ["first", "random", "abstain"])
def test_round0_majority_accuracy_matches_exact_enumeration_with_the_engines_vote(tie_rule: str) -> None:
    """4 agents, 3 answers (many ties): enumerate all 81 round-0 answer vectors, weight each by its
    probability, and vote each with moot.debate.components.aggregation.majority_vote."""
    prior = (1.5, 1.0, 1.0)
    p = np.array(prior) / sum(prior)
    exact = 0.0
    for answers in itertools.product(range(3), repeat=4):
        vote = majority_vote([str(a) for a in answers], tie_rule)  # type: ignore[arg-type]
        win = (1.0 / len(vote.tied) if "0" in vote.tied else 0.0) if tie_rule == "random" else float(vote.winner == "0")
        exact += float(np.prod(p[list(answers)])) * win
    model = DebateModel(agents=4, rounds=1, prior=prior, tie_rule=tie_rule)  # type: ignore[arg-type]
    assert_near(simulate(model, N, seed=6).majority[0], exact, f"round-0 majority ({tie_rule})")


# --- D.2: diversity-aware initialisation ---------------------------------------------------------


def brute_force_greedy(pool: list[int], keep: int, selection: str) -> list[int]:
    """Zhu et al. §4.1 by the letter: keep, one at a time, the candidate whose answer most increases
    diversity (distinct answers, or the entropy of the kept answers); ties to the earliest."""

    def diversity(kept: list[int]) -> float:
        answers = [pool[i] for i in kept]
        if selection == "distinct":
            return len(set(answers))
        counts = np.bincount(answers) / len(answers)
        return float(-sum(c * math.log(c) for c in counts if c > 0))

    kept: list[int] = []
    for _ in range(keep):
        rest = [i for i in range(len(pool)) if i not in kept]
        best = max(rest, key=lambda i: (round(diversity(kept + [i]), 12), -i))
        kept.append(best)
    return [pool[i] for i in sorted(kept)]


def test_diverse_selection_by_hand() -> None:
    pool = np.array([[1], [1], [2], [1], [0], [2], [3]])
    assert select_diverse(pool, 4, "distinct", 4)[:, 0].tolist() == [1, 2, 0, 3]
    assert select_diverse(pool, 6, "distinct", 4)[:, 0].tolist() == [1, 1, 2, 1, 0, 3]
    assert select_diverse(pool, 6, "balanced", 4)[:, 0].tolist() == [1, 1, 2, 0, 2, 3]


@pytest.mark.parametrize("selection", ["distinct", "balanced"])
def test_vectorised_selection_equals_the_greedy_algorithm(selection: str) -> None:
    rng = np.random.default_rng(7)
    pools = rng.choice(4, size=(10, 300), p=[0.1, 0.5, 0.3, 0.1])
    kept = select_diverse(pools, 5, selection, 4)  # type: ignore[arg-type]
    for d in range(pools.shape[1]):
        assert kept[:, d].tolist() == brute_force_greedy(pools[:, d].tolist(), 5, selection)


@pytest.mark.parametrize("selection", ["distinct", "balanced"])
def test_diverse_init_raises_the_probability_that_the_correct_answer_is_present(selection: str) -> None:
    """D.2: the kept answers cover every distinct answer of the pool (K = 4 <= 5 agents), so
    P(present) = 1 - (1 - p)^pool, against 1 - (1 - p)^agents for random initialisation."""
    p = 0.2
    base = replace(BASE, prior=prior_counts(4, p, 5.0), pool=10, selection=selection)  # type: ignore[arg-type]
    rand = simulate(replace(base, init="random"), N, seed=8)
    div = simulate(replace(base, init="diverse"), N, seed=8)
    assert np.all(div.present >= rand.present)  # coupled: random is the pool's first 5 candidates
    assert_near(rand.present, exact_present(p, 5), "P(present), random")
    assert_near(div.present, exact_present(p, 10), "P(present), diverse")
    assert_positive(div.present.astype(float) - rand.present, "paired gain in P(present)")


@pytest.mark.parametrize("weighting", ["none", "confidence"])
def test_diverse_init_raises_the_final_success_rate_on_hard_questions(weighting: str) -> None:
    """A hard question: the correct answer's prior belief (0.1) is below 1/K, so a more diverse
    round 0 holds it more often and the debate ends on it more often. Paired on common random numbers."""
    base = replace(BASE, prior=prior_counts(4, 0.1, 5.0), weighting=weighting, confidence=INFORMATIVE)  # type: ignore[arg-type]
    gain = compare_init(base, N, seed=9)
    assert gain.present_gain.mean > Z * gain.present_gain.se
    assert gain.success_gain.mean > Z * gain.success_gain.se, gain.success_gain


def test_diverse_init_is_no_free_lunch_when_the_prior_favours_the_correct_answer() -> None:
    """The boundary of D.2: its premise (success nondecreasing in the number of distinct initial
    hypotheses) fails in the unweighted model when the correct answer is the prior's favourite:
    diverse selection then replaces correct round-0 answers by wrong ones, and final success falls."""
    gain = compare_init(replace(BASE, prior=prior_counts(4, 0.5, 5.0)), N, seed=10)
    assert gain.present_gain.mean > Z * gain.present_gain.se
    assert gain.success_gain.mean < -Z * gain.success_gain.se, gain.success_gain


def test_diverse_init_leaves_the_dynamics_a_martingale() -> None:
    """Diversity changes the round-0 answers only: from round 1 on the unweighted belief is again constant."""
    sim = simulate(replace(BASE, init="diverse", pool=10), N, seed=11)
    assert estimate(sim.belief[1] - 0.4).mean < -0.02  # round 0 itself moved the belief (towards 1/K)
    for t in range(2, BASE.rounds + 1):
        tolerance = assert_zero(sim.belief[t] - sim.belief[1], f"E[b_{t} - b_1]")
        assert tolerance < 0.01


# --- plumbing --------------------------------------------------------------------------------------


def test_simulation_is_reproducible_from_its_seed() -> None:
    model = replace(BASE, weighting="confidence", init="diverse", tie_rule="random")
    a, b, c = simulate(model, 500, seed=1), simulate(model, 500, seed=1), simulate(model, 500, seed=2)
    for name in ("belief", "correct", "majority", "top", "present"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.belief, c.belief)


def test_answers_follow_the_prior_predictive_in_round_0() -> None:
    """y ~ Cat(alpha / sum(alpha)): the share of correct round-0 answers is the prior belief, with
    heterogeneous priors too (agent i with its own prior)."""
    priors = ((4.0, 1.0, 1.0), (1.0, 1.0, 2.0), (1.0, 3.0, 1.0))
    sim = simulate(DebateModel(agents=3, rounds=1, prior=priors), N, seed=12)
    assert_near(sim.correct[0] / 3, (4 / 6 + 1 / 4 + 1 / 5) / 3, "share of correct round-0 answers")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: DebateModel(prior=(1.0,)), "same number (>= 2)"),
        (lambda: DebateModel(prior=(1.0, -1.0)), "positive"),
        (lambda: DebateModel(agents=3, prior=((1.0, 1.0), (1.0, 1.0))), "one per agent"),
        (lambda: DebateModel(init="diverse", pool=3), "at least as many"),
        (lambda: DebateModel(weighting="loud"), "unknown weighting"),  # type: ignore[arg-type]
        (lambda: DebateModel(topology=Star(hub=7)), "hub"),
        (lambda: ConfidenceModel(1.0, 0.5), "(0, 1)"),
        (lambda: simulate(BASE, 0), "debates"),
    ],
)
def test_bad_settings_are_config_errors(make, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


# --- the `moot theory` commands ----------------------------------------------------------------------

runner = CliRunner()


def test_cli_simulate_prints_belief_per_round_and_final_accuracy() -> None:
    result = runner.invoke(theory_app, ["simulate", "--debates", "3000", "--weighting", "confidence"])
    assert result.exit_code == 0, result.output
    assert "E[belief]" in result.output and "final majority accuracy" in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("│")]
    assert len(lines) == BASE.rounds + 1  # rounds 0-4 and "after"
    assert "confidence-weighted" in result.output


def test_cli_init_compares_random_and_diverse() -> None:
    result = runner.invoke(theory_app, ["init", "--debates", "3000", "--p-correct", "0.1", "--p-correct", "0.5"])
    assert result.exit_code == 0, result.output
    assert "present: random" in result.output
    assert sum(line.startswith("│") for line in result.output.splitlines()) == 2


def test_cli_plot_writes_a_png(tmp_path: Path) -> None:
    out = tmp_path / "figure.png"
    result = runner.invoke(theory_app, ["plot", "--debates", "1000", "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "uninformative" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["simulate", "--weighting", "loud"], "unknown weighting 'loud'"),
        (["simulate", "--prior", "1,x"], "--prior must be comma-separated numbers"),
        (["simulate", "--topology", "mesh"], "unknown topology 'mesh'"),
        (["init", "--pool", "3"], "at least as many answers as agents"),
        (["simulate", "--conf-correct", "1.5", "--weighting", "confidence"], "mean_correct"),
    ],
)
def test_cli_bad_options_are_one_line_errors(args: list[str], message: str) -> None:
    result = runner.invoke(theory_app, [*args, "--debates", "100"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("moot: error:") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
