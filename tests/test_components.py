"""Protocol components with scripted agents: topology, history modes, peer rendering, stopping, judge."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from moot.backends.base import GenerationRequest
from moot.backends.config import ScriptedBackendConfig
from moot.backends.scripted import ScriptedBackend
from moot.calls import Caller
from moot.debate import FinalStatus, resolve_protocol, run_debate
from moot.debate.agents import Agent, AgentSpec
from moot.debate.components.stopping.consensus import Consensus
from moot.debate.components.stopping.judge import JudgeConfidence, read_judge
from moot.debate.components.stopping.stable import Stable
from moot.debate.components.topology import Full, Graph, NoTopology, Ring, Star, Topology
from moot.errors import ConfigError
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import Question
from tests.helpers import SCRIPTED, scripted_agents

TASK = ArithmeticTask()
BIOGRAPHIES = Path(__file__).parent / "fixtures" / "tasks" / "biographies_article.json"
QUESTION = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")


def sent(agent: Agent) -> list[GenerationRequest]:
    return cast(ScriptedBackend, agent.backend).requests


def heard(agent: Agent, round_index: int, names: dict[str, str]) -> set[str]:
    """Which agents' round-(r-1) replies appear in the last message agent sent in round r."""
    last = sent(agent)[round_index].messages[-1].content
    return {name for name, text in names.items() if f"```{text}```" in last}


def judge_agent(replies: list[str]) -> Agent:
    return Agent(AgentSpec(name="judge", backend=SCRIPTED), ScriptedBackend(replies))


# -- topology ---------------------------------------------------------------------------------


def test_topologies_and_density() -> None:
    assert Full().peers(3) == [[1, 2], [0, 2], [0, 1]]
    assert Ring(k=1).peers(5) == [[1, 4], [0, 2], [1, 3], [2, 4], [0, 3]]
    assert Ring(k=2).peers(5) == Full().peers(5)
    assert Star(hub=1).peers(4) == [[1], [0, 2, 3], [1], [1]]
    assert Graph(edges=((1,), (0, 2), (1,))).peers(3) == [[1], [0, 2], [1]]
    assert Full().density(4) == 1.0
    assert Ring().density(5) == pytest.approx(2 * 5 / (5 * 4))  # 5 undirected edges
    assert Star().density(4) == pytest.approx(2 * 3 / (4 * 3))  # 3 undirected edges
    assert NoTopology().density(3) == 0.0


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        (Graph(edges=((0,), (0,))), "agent 0 hears itself"),
        (Graph(edges=((1,), (5,))), "agent 1 hears agent 5, which does not exist"),
        (Graph(edges=((1,), ())), "agent 1 hears no other agent"),
        (Graph(edges=((1,),)), "one list of heard agents per agent"),
        (Star(hub=7), "the hub is agent 7"),
    ],
)
def test_invalid_graphs_fail_at_configuration(topology: Topology, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_protocol("society", agents=2, components={"topology": topology})


def test_contradictory_settings_fail_at_configuration() -> None:
    with pytest.raises(ConfigError, match="aggregation 'judge' needs stopping kind 'judge'"):
        resolve_protocol("society", components={"aggregation": "judge"})
    with pytest.raises(ConfigError, match="min_rounds"):
        resolve_protocol("society", rounds=2, components={"stopping": Stable(min_rounds=3)})
    with pytest.raises(ConfigError, match="unknown protocol component 'memory'"):
        resolve_protocol("society", components={"memory": "all"})


async def test_sparse_ring_agents_hear_only_their_neighbours() -> None:
    agents = scripted_agents(*[[f"r0-{i} {i}", f"r1-{i} {i}", f"r2-{i} {i}"] for i in range(5)])
    protocol = resolve_protocol("sparse", agents=5)
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    assert result.rounds_used == 3
    names = {f"agent-{i + 1}": f"r0-{i} {i}" for i in range(5)}
    assert heard(agents[0], 1, names) == {"agent-2", "agent-5"}
    assert heard(agents[2], 1, names) == {"agent-2", "agent-4"}
    later = {f"agent-{i + 1}": f"r1-{i} {i}" for i in range(5)}
    assert heard(agents[4], 2, later) == {"agent-4", "agent-1"}


async def test_star_hub_hears_all_and_spokes_hear_the_hub() -> None:
    agents = scripted_agents(*[[f"a{i} {i}", f"b{i} {i}"] for i in range(4)])
    await run_debate(QUESTION, TASK, resolve_protocol("star", rounds=2), agents, caller=Caller())
    names = {f"agent-{i + 1}": f"a{i} {i}" for i in range(4)}
    assert heard(agents[0], 1, names) == {"agent-2", "agent-3", "agent-4"}
    assert all(heard(a, 1, names) == {"agent-1"} for a in agents[1:])


async def test_self_refine_revises_alone_for_r_rounds() -> None:
    (agent,) = scripted_agents(["5", "6", "-19"])
    result = await run_debate(QUESTION, TASK, resolve_protocol("self-refine"), [agent], caller=Caller())
    assert [r.turns[0].answer for r in result.rounds] == ["5", "6", "-19"] and result.correct
    assert all(m.content.startswith("Can you verify") for m in sent(agent)[2].messages[-3::2])
    assert len(sent(agent)[2].messages) == 6  # system, question, reply, check, reply, check


# -- history modes and rendering ---------------------------------------------------------------


async def test_fresh_history_sends_one_new_prompt_with_own_and_peer_replies() -> None:
    agents = scripted_agents(["mine 1", "again 2", "x 3"], ["theirs 4", "again 5", "y 6"])
    protocol = resolve_protocol("society", agents=2, rounds=3, components={"history": "fresh"})
    await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    third = sent(agents[0])[2].messages
    assert [m.role for m in third] == ["system", "user"]
    text = third[1].content
    assert "\nThis was your most recent opinion:\nagain 2\n" in text  # DAR's wording (the "task" templates)
    assert "```again 5```" in text and "mine 1" not in text and "theirs 4" not in text
    assert text.endswith("to the question:\n            " + TASK.render(QUESTION))


async def test_grouped_rendering_counts_agents_per_answer() -> None:
    agents = scripted_agents(["a 7", "z"], ["b 7", "z"], ["c 9", "z"], ["d none", "z"])
    protocol = resolve_protocol("society", agents=4, components={"rendering": "grouped"})
    await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    message = sent(agents[3])[1].messages[-1].content
    assert "2 agents think the answer is 7:\n ```a 7```\n ```b 7```" in message
    assert "1 agent think the answer is 9:\n ```c 9```" in message
    message = sent(agents[0])[1].messages[-1].content
    assert "1 agent gave no clear answer:\n ```d none```" in message


async def test_agreement_intensity_is_a_per_agent_prompt_parameter() -> None:
    agents = scripted_agents(["1", "2"], ["3", "4"])
    agents[1] = Agent(agents[1].spec.model_copy(update={"agreement": 8}), agents[1].backend)
    await run_debate(QUESTION, TASK, resolve_protocol("society", agents=2), agents, caller=Caller())
    assert "about 80% of the time" in sent(agents[1])[1].messages[-1].content
    assert "% of the time" not in sent(agents[0])[1].messages[-1].content


# -- stopping ---------------------------------------------------------------------------------


async def test_consensus_stops_early_and_records_why() -> None:
    agents = scripted_agents(
        ["4", "-19"],
        ["5", "-19"],
        ["6", "-19"],
    )
    protocol = resolve_protocol("society", rounds=5, components={"stopping": Consensus()})
    caller = Caller()
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=caller)
    assert (result.rounds_used, result.stop_reason, result.final_answer) == (2, "consensus", "-19")
    assert caller.usage.calls == 6

    agents = scripted_agents(["4", "4", "9"], ["4", "5", "9"], ["6", "5", "9"])
    protocol = resolve_protocol("society", rounds=3, components={"stopping": Consensus(fraction=0.6)})
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    assert (result.rounds_used, result.stop_reason) == (1, "consensus")  # 2 of 3 agree after round 0


async def test_stable_stops_when_no_answer_changed_and_cap_is_max_rounds() -> None:
    agents = scripted_agents(["1", "2", "2", "3"], ["4", "5", "5", "6"])
    protocol = resolve_protocol("society", agents=2, rounds=4, components={"stopping": Stable()})
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    assert (result.rounds_used, result.stop_reason) == (3, "stable")

    agents = scripted_agents(["1", "2", "3"], ["4", "5", "6"])
    protocol = resolve_protocol("society", agents=2, rounds=3, components={"stopping": Stable()})
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    assert (result.rounds_used, result.stop_reason) == (3, "max_rounds")


async def test_du_adaptive_judge_stops_at_threshold_and_majority_still_decides() -> None:
    agents = scripted_agents(["7", "-19", "x"], ["8", "-19", "x"], ["8", "5", "x"])
    judge = judge_agent(['{"answer": "8", "confidence": 60}', 'I pick {"answer": "5", "confidence": 95}'])
    caller = Caller()
    result = await run_debate(QUESTION, TASK, resolve_protocol("du-adaptive"), agents, caller=caller, judge=judge)
    assert (result.rounds_used, result.stop_reason) == (2, "judge_confident")
    assert result.final_answer == "-19" and result.correct  # the agents' majority, not the judge's "5"
    assert [(r.judge.answer, r.judge.confidence) for r in result.rounds if r.judge] == [("8", 60.0), ("5", 95.0)]
    assert caller.usage.calls == 2 * 3 + 2  # judge calls count as model calls
    judge_prompt = sent(judge)[1].messages[-1].content
    assert "agent-1: ```-19```" in judge_prompt and "agent-3: ```5```" in judge_prompt
    assert "```7```" not in judge_prompt  # the judge reads the latest round only


async def test_judge_aggregation_takes_the_judges_answer_and_cap_ends_the_debate() -> None:
    agents = scripted_agents(["7", "7"], ["7", "7"])
    judge = judge_agent(['{"answer": "-19", "confidence": 10}', '{"answer": "-19", "confidence": 20}'])
    protocol = resolve_protocol(
        "society",
        agents=2,
        rounds=2,
        components={"stopping": JudgeConfidence(threshold=90), "aggregation": "judge"},
    )
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller(), judge=judge)
    assert (result.rounds_used, result.stop_reason, result.final_answer) == (2, "max_rounds", "-19")
    assert result.correct and result.status is FinalStatus.ANSWERED
    with pytest.raises(ConfigError, match="needs a judge agent"):
        await run_debate(QUESTION, TASK, protocol, scripted_agents(["1"], ["2"]), caller=Caller())


@pytest.mark.parametrize(
    ("reply", "answer", "confidence"),
    [
        ('{"answer": "42", "confidence": 88}', "42", 88.0),
        ('Thinking... {"answer": "(-3)", "confidence": 100} done', "-3", 100.0),
        ("The answer is 12. Confidence: 75", "12", 75.0),  # no JSON: the reply less its confidence statement
        ('{"answer": "5", "confidence": 150}', "5", None),  # out of range: missing, not clipped
        ('{"answer": "5", "confidence": "high"}', "5", None),
        ("no idea", None, None),
    ],
)
def test_judge_replies_are_parsed_robustly(reply: str, answer: str | None, confidence: float | None) -> None:
    reading = read_judge(TASK, QUESTION, reply)
    assert (reading.answer, reading.confidence) == (answer, confidence)


def test_a_helper_judge_defaults_to_the_first_agents_backend_and_sampling() -> None:
    """The papers' code samples every role alike (Liang: temperature 0 for all; the stopping study: 0.0
    throughout; DAR: the filter as the agents), so a protocol's helper samples as agent 1 unless the
    condition's judge table says otherwise; a judge that only scores a task samples greedily."""
    from moot.runner.config_files import parse_experiment
    from moot.runner.config_resolve import resolve

    config = parse_experiment(
        {
            "tasks": [{"name": "arithmetic", "count": 1}],
            "agent": {"backend": {"kind": "scripted"}, "sampling": {"temperature": 0.9}},
            "conditions": [
                {"name": "adaptive", "protocol": "du-adaptive"},
                {"name": "plain", "protocol": "society"},
            ],
            "presets": {
                "ring-consensus": {"base": "sparse", "agents": 5, "stopping": {"kind": "consensus", "fraction": 0.8}}
            },
        }
    )
    adaptive, plain = resolve(config)
    assert adaptive.judge is not None and adaptive.judge.backend == ScriptedBackendConfig()
    assert adaptive.judge.sampling == adaptive.agents[0].sampling and plain.judge is None
    assert adaptive.judge.sampling.temperature == 0.9
    pinned = parse_experiment(
        {
            **config.model_dump(),
            "conditions": [{"name": "a", "protocol": "du-adaptive", "judge": {"sampling": {"temperature": 0.0}}}],
        }
    )
    assert resolve(pinned)[0].judge.sampling.temperature == 0.0  # type: ignore[union-attr]
    scorer = parse_experiment(
        {
            "tasks": [{"name": "biographies", "data": str(BIOGRAPHIES), "count": 1}],
            "agent": {"backend": {"kind": "scripted"}, "sampling": {"temperature": 0.9}},
            "conditions": [{"name": "s", "protocol": "society", "judge": {}}],
        }
    )
    assert resolve(scorer)[0].judge.sampling.temperature == 0.0  # type: ignore[union-attr]  # a task's scorer
    custom = parse_experiment({**config.model_dump(), "conditions": [{"name": "c", "protocol": "ring-consensus"}]})
    (c,) = resolve(custom)
    assert (c.protocol.name, c.protocol.agents, c.protocol.topology.kind) == ("ring-consensus", 5, "ring")
    assert c.protocol.stopping.fraction == 0.8


async def test_gated_keeps_a_unanimous_round_0_and_debates_a_split_one() -> None:
    """The gating preset: agreement at round 0 ends the question with its answer (3 calls); any
    disagreement, or an answer that cannot be read, gets society's debate round (6 calls), whose first
    requests are society's own, so a store shares them."""
    gated = resolve_protocol("gated")
    assert (gated.agents, gated.rounds, gated.stopping.kind) == (3, 2, "consensus")

    caller = Caller()
    result = await run_debate(QUESTION, TASK, gated, scripted_agents(["-19"], ["-19"], ["-19"]), caller=caller)
    assert (result.rounds_used, result.stop_reason, result.final_answer, caller.usage.calls) == (
        1,
        "consensus",
        "-19",
        3,
    )

    for first in (["4", "-19"], ["no idea", "-19"]):  # a split round 0; an unread round-0 answer
        caller = Caller()
        agents = scripted_agents(first, ["-19", "-19"], ["-19", "-19"])
        result = await run_debate(QUESTION, TASK, gated, agents, caller=caller)
        assert (result.rounds_used, result.final_answer, caller.usage.calls) == (2, "-19", 6)

        society_agents = scripted_agents(first, ["-19", "-19"], ["-19", "-19"])
        await run_debate(QUESTION, TASK, resolve_protocol("society"), society_agents, caller=Caller())
        assert [sent(a) for a in agents] == [sent(a) for a in society_agents]
