"""The 2025-2026 presets with scripted agents: Free-MAD's trajectory score and anti-conformity cue, and
Mixture-of-Agents' layers and aggregator (moa, self-moa). Scores are checked against sums worked by hand."""

from __future__ import annotations

from typing import cast

import pytest

from moot.backends.base import Message
from moot.backends.scripted import ScriptedBackend, register_scripted_model
from moot.calls import Caller
from moot.debate import FinalStatus, resolve_protocol, run_debate
from moot.debate.agents import Agent, AgentSpec
from moot.debate.components.aggregation import trajectory_scores
from moot.debate.prompts import MOA_SYNTHESIZE
from moot.debate.protocol_presets import PRESETS
from moot.debate.registry import parse
from moot.errors import ConfigError
from moot.tasks.arithmetic import STEP_BY_STEP, ArithmeticTask
from moot.tasks.base import Question
from tests.helpers import SCRIPTED, scripted_agents

register_scripted_model("settling-heter", lambda request, index: "the answer is 4")

TASK = ArithmeticTask()
QUESTION = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")
WEIGHTS = (20.0, 25.0, 30.0, 20.0)  # initial, change penalty, change bonus, keep


def sent(agent: Agent) -> list[list[Message]]:
    return [list(r.messages) for r in cast(ScriptedBackend, agent.backend).requests]


def helper(*replies: str) -> Agent:
    return Agent(AgentSpec(name="judge", backend=SCRIPTED), ScriptedBackend(list(replies)))


# -- Free-MAD ---------------------------------------------------------------------------------------------
def test_trajectory_scores_by_hand() -> None:
    # round 0: A, B, B -> A 20, B 40. Round 1 (scale 1/2): agent 1 keeps A (+10), agent 2 changes B -> A
    # (B -12.5, A +15), agent 3 keeps B (+10): A 45, B 37.5.
    scores = trajectory_scores([["A", "B", "B"], ["A", "A", "B"]], WEIGHTS)
    assert scores == {"A": 45.0, "B": 37.5}
    # a third round (scale 1/3): everyone takes B: A -25/3 twice, B +10 twice and keep +20/3
    scores = trajectory_scores([["A", "B", "B"], ["A", "A", "B"], ["B", "B", "B"]], WEIGHTS)
    assert scores["A"] == pytest.approx(45 - 2 * 25 / 3)
    assert scores["B"] == pytest.approx(37.5 + 2 * 10 + 20 / 3)


def test_an_unread_reply_changes_no_score_and_a_reply_after_one_only_adds() -> None:
    # agent 2 unread in round 1: B keeps its 20 (no penalty); agent 1 unread in round 0, reads A in round 1: +15
    scores = trajectory_scores([[None, "B"], ["A", None]], WEIGHTS)
    assert scores == {"B": 20.0, "A": 15.0}
    assert trajectory_scores([[None, None]], WEIGHTS) == {}


async def test_free_mad_picks_the_best_trajectory_where_the_last_majority_differs() -> None:
    # round 0: 3, 3, 3 -> 3: 60; round 1 (scale 1/2): agent 1 keeps 3 (+10), agents 2 and 3 change to 8
    # (3: -12.5 twice, 8: +15 twice) -> 3: 45, 8: 30. The last round's majority would be 8.
    agents = scripted_agents(["so 3", "so 3"], ["so 3", "so 8"], ["so 3", "so 8"])
    result = await run_debate(QUESTION, TASK, resolve_protocol("free-mad"), agents, caller=Caller())
    assert result.final_answer == "3"
    last = result.rounds[-1].vote
    assert last.weights == (("3", 45.0), ("8", 30.0))
    assert last.counts == (("3", 1), ("8", 2))


async def test_free_mad_keeps_a_minority_that_held_its_answer() -> None:
    # round 0: 3, 8, 8 -> 3: 20, 8: 40; round 1: agent 1 keeps 3 (+10), agents 2 and 3 both change to 5
    # (8: -12.5 twice, 5: +15 twice) -> 3: 30, 8: 15, 5: 30: a tie of 3 and 5, broken by first appearance: 3.
    # The last round's majority would be 5.
    agents = scripted_agents(["so 3", "so 3"], ["so 8", "so 5"], ["so 8", "so 5"])
    result = await run_debate(QUESTION, TASK, resolve_protocol("free-mad"), agents, caller=Caller())
    assert result.rounds[-1].vote.tied == ("3", "5")
    assert result.final_answer == "3"
    abstaining = resolve_protocol("free-mad", tie_rule="abstain")
    agents = scripted_agents(["so 3", "so 3"], ["so 8", "so 5"], ["so 8", "so 5"])
    result = await run_debate(QUESTION, TASK, abstaining, agents, caller=Caller())
    assert result.final_answer is None and result.status == FinalStatus.ABSTAINED


async def test_free_mad_shares_society_round_0_and_adds_anti_conformity_to_the_debate_round() -> None:
    free = scripted_agents(["a 1", "b 1"], ["a 2", "b 2"], ["a 3", "b 3"])
    society = scripted_agents(["a 1", "b 1"], ["a 2", "b 2"], ["a 3", "b 3"])
    await run_debate(QUESTION, TASK, resolve_protocol("free-mad"), free, caller=Caller())
    await run_debate(QUESTION, TASK, resolve_protocol("society"), society, caller=Caller())
    assert sent(free[0])[0] == sent(society[0])[0]  # round 0: the same request
    debate_prompt = sent(free[0])[1][-1].content
    assert debate_prompt.startswith("Do not follow the other agents because several of them agree.")
    assert debate_prompt.endswith(sent(society[0])[1][-1].content)


async def test_free_mad_in_fresh_history_puts_the_cue_after_the_peers() -> None:
    protocol = resolve_protocol("free-mad", components={"history": "fresh"})
    agents = scripted_agents(["a 1", "b 1"], ["a 2", "b 2"], ["a 3", "b 3"])
    await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    prompt = sent(agents[0])[1][-1].content
    assert prompt.index("a 2") < prompt.index("Do not follow the other agents") < prompt.index("This was your most")


@pytest.mark.parametrize("kind", ["trajectory", "synthesis"])
def test_trajectory_and_synthesis_need_a_peer_schedule(kind: str) -> None:
    with pytest.raises(ValueError, match=f"aggregation '{kind}' .* peer debate"):
        parse("aggregation", kind).check(PRESETS["liang"])


# -- Mixture-of-Agents ------------------------------------------------------------------------------------
async def test_self_moa_asks_an_aggregator_with_the_synthesize_prompt_and_takes_its_answer() -> None:
    agents = scripted_agents(*[[f"reply {i}: {i}"] for i in range(1, 7)])
    aggregator = helper("Reading them all, the answer is -19")
    result = await run_debate(QUESTION, TASK, resolve_protocol("self-moa"), agents, caller=Caller(), judge=aggregator)
    assert result.final_answer == "-19" and result.correct and result.status == FinalStatus.ANSWERED
    assert result.final_judge is not None and result.final_judge.text.endswith("-19")
    system, user = sent(aggregator)[0]
    assert system.role == "system" and user.role == "user"
    assert system.content == STEP_BY_STEP + "\n\n" + MOA_SYNTHESIZE + "".join(
        f"\n{i}. reply {i}: {i}" for i in range(1, 7)
    )
    assert user.content == TASK.render(QUESTION)
    assert len(result.rounds) == 1 and len(result.rounds[0].turns) == 6


async def test_an_aggregator_reply_with_no_answer_is_unparsed_never_a_vote() -> None:
    agents = scripted_agents(*[["so -19"] for _ in range(6)])  # every proposer right
    result = await run_debate(
        QUESTION, TASK, resolve_protocol("self-moa"), agents, caller=Caller(), judge=helper("I cannot tell.")
    )
    assert result.final_answer is None and result.status == FinalStatus.UNPARSED and not result.correct


async def test_moa_layers_read_every_reply_of_the_layer_before_in_agent_order() -> None:
    agents = scripted_agents(["l1 a1 1", "l2 a1 2"], ["l1 a2 3", "l2 a2 4"], ["l1 a3 5", "l2 a3 6"])
    aggregator = helper("final 4")
    result = await run_debate(QUESTION, TASK, resolve_protocol("moa"), agents, caller=Caller(), judge=aggregator)
    layer_two = sent(agents[1])[1]
    assert [m.role for m in layer_two] == ["system", "user"]
    assert layer_two[0].content.endswith("\n1. l1 a1 1\n2. l1 a2 3\n3. l1 a3 5")
    assert layer_two[1].content == TASK.render(QUESTION)
    assert sent(aggregator)[0][0].content.endswith("\n1. l2 a1 2\n2. l2 a2 4\n3. l2 a3 6")
    assert result.final_answer == "4"


async def test_moa_needs_its_aggregator() -> None:
    agents = scripted_agents(*[["so 1"] for _ in range(6)])
    with pytest.raises(ConfigError, match="needs a judge agent"):
        await run_debate(QUESTION, TASK, resolve_protocol("self-moa"), agents, caller=Caller())


def test_calls_per_round_counts_the_aggregator() -> None:
    assert resolve_protocol("self-moa").calls_per_round() == "6 agent calls + 1 aggregator call after the last round"


# -- Heter-MAD ------------------------------------------------------------------------------------------
def _heter(agents: list[dict[str, object]] | None) -> object:
    from moot.runner.config_files import parse_experiment
    from moot.runner.config_resolve import resolve

    condition: dict[str, object] = {"name": "heter", "protocol": "heter-mad"}
    if agents is not None:
        condition["agents"] = agents
    config = parse_experiment(
        {
            "name": "h",
            "tasks": [{"name": "arithmetic", "count": 2, "seed": 0}],
            "agent": {"backend": {"kind": "scripted", "model": "numbers"}},
            "conditions": [condition],
        }
    )
    return resolve(config)


def test_heter_mad_needs_agents_of_two_models() -> None:
    with pytest.raises(ConfigError, match="needs agents of at least 2 different models; all 3 run numbers"):
        _heter(None)
    other = {"backend": {"kind": "scripted", "model": "settling-heter"}}
    (condition,) = _heter([{}, other, {}])  # type: ignore[misc]
    assert [a.backend.model_name() for a in condition.agents] == ["numbers", "settling-heter", "numbers"]
    assert condition.protocol.min_models == 2 and "min_models" not in condition.protocol.model_dump()


async def test_heter_mad_agents_read_the_other_models_replies() -> None:
    agents = scripted_agents(["big 1", "big 2"], ["small 3", "small 4"], ["big 5", "big 6"])
    await run_debate(QUESTION, TASK, resolve_protocol("heter-mad"), agents, caller=Caller())
    shown = sent(agents[0])[1][-1].content
    assert "small 3" in shown and "big 5" in shown
