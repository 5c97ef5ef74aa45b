"""The real debate engine driven by Dirichlet-categorical agents agrees with the simulator.

The engine (moot.debate.engine.run_debate: prompts, chat histories, topology, vote, scoring) runs
debates whose agents follow the model (moot.theory.engine_bridge); the simulator
(moot.theory.model) runs the same model vectorised. Every per-round statistic (mean belief, share
of correct answers, majority accuracy, plurality share, unanimity) is compared with the two-sample
z = (mean_engine - mean_simulator) / (s * sqrt(1/n_engine + 1/n_simulator)), s² the pooled variance of
the per-debate values (n independent debates each side). Under agreement each z is close to
N(0, 1): |z| > 4 has probability 6.3e-5, so the 25 statistics of a comparison exceed it together
with probability < 0.2%. Each comparison comes with a control: the
same engine debates against a simulator of a different model must give some |z| > 4, which shows
that the number of debates is large enough for a real disagreement to be caught.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import numpy as np
import pytest

from moot.backends.base import GenerationRequest, Message
from moot.debate.components.topology import NoTopology, Ring
from moot.errors import BackendError
from moot.theory.engine_bridge import (
    TASK,
    DirichletBackend,
    compare,
    engine_simulation,
    read_reply,
    reply_text,
    run_engine_async,
)
from moot.theory.model import ConfidenceModel, DebateModel, simulate

Z = 4.0
ENGINE_DEBATES = 500
SIM_DEBATES = 40_000
# A light prior (mass 2.5) so that what agents hear dominates quickly and topologies differ clearly.
LIGHT = DebateModel(agents=5, rounds=5, prior=(1.0, 0.5, 0.5, 0.5))
INFORMATIVE = ConfidenceModel(0.7, 0.4, 10.0)


def test_reply_round_trips_and_the_engine_reads_the_answer() -> None:
    text = reply_text(0.25, 0.625, 3)
    assert read_reply(text) == (3, 0.625)
    assert TASK.extract(text).answer == "3"
    with pytest.raises(BackendError):
        read_reply("The answer is 3.")


def test_backend_rebuilds_its_counts_from_what_the_engine_showed_it() -> None:
    """Round 1 of a 3-agent debate: every agent's belief is (alpha_0 + own + peers' counts) / (A + weights)."""
    for weighting in ("none", "confidence"):
        model = DebateModel(agents=3, rounds=2, prior=(2.0, 1.0, 1.0), weighting=weighting, confidence=INFORMATIVE)
        (result,) = asyncio.run(run_engine_async(model, 1, seed=3))
        heard = [read_reply(turn.text) for turn in result.rounds[0].turns]
        weights = [c if weighting == "confidence" else 1.0 for _, c in heard]
        correct = sum(w for (answer, _), w in zip(heard, weights) if answer == 0)
        expected = (2.0 + correct) / (4.0 + sum(weights))
        for turn in result.rounds[1].turns:
            assert f"Belief in answer 0: {expected:.12f}." in turn.text
        # Each agent saw its own reply in its history and exactly its two peers' replies in the prompt.
        prompt = result.rounds[1].turns[0].shown[-1].content
        assert prompt.count("```") == 4


def test_backend_is_seeded_by_the_request() -> None:
    backend = DirichletBackend(LIGHT, 0)
    request = GenerationRequest(messages=(Message("user", "Which answer?"),), n=3, seed=11)
    first = asyncio.run(backend.generate(request))
    again = asyncio.run(backend.generate(request))
    assert [s.text for s in first.samples] == [s.text for s in again.samples]
    assert len({s.text for s in first.samples}) > 1  # samples 1, 2 use derived seeds


@pytest.mark.parametrize(
    ("model", "control"),
    [
        # The theorem's setting: unweighted, fully connected. Control: nobody hears anybody.
        (LIGHT, replace(LIGHT, topology=NoTopology())),
        # Confidence-weighted on a ring (k = 1). Control: the same ring without weights.
        (
            replace(LIGHT, topology=Ring(k=1), weighting="confidence", confidence=INFORMATIVE),
            replace(LIGHT, topology=Ring(k=1)),
        ),
    ],
    ids=["full-unweighted", "ring-weighted"],
)
def test_engine_outcomes_match_the_simulator(model: DebateModel, control: DebateModel) -> None:
    engine = engine_simulation(model, ENGINE_DEBATES, seed=0)
    rows = compare(engine, simulate(model, SIM_DEBATES, seed=0))
    worst = max(rows, key=lambda r: abs(r.z))
    assert abs(worst.z) <= Z, f"{worst.statistic}: engine {worst.engine} vs simulator {worst.simulator}"
    assert np.isfinite(worst.z)
    control_rows = compare(engine, simulate(control, SIM_DEBATES, seed=0))
    assert max(abs(r.z) for r in control_rows) > Z


def test_cli_engine_check_compares_the_engine_with_the_simulator() -> None:
    from typer.testing import CliRunner

    from moot.theory.cli import theory_app

    result = CliRunner().invoke(theory_app, ["engine-check", "--questions", "80", "--debates", "5000", "--rounds", "3"])
    assert result.exit_code == 0, result.output
    assert "engine vs simulator" in result.output and "largest |z|" in result.output
    assert sum(line.startswith("│ round") for line in result.output.splitlines()) == 3 * 5
