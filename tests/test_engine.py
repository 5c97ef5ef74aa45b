"""Round semantics of the engine, with scripted agents: who sees what, votes, statuses, seeds."""

from __future__ import annotations

from typing import cast

import pytest

from moot.backends.base import GenerationRequest
from moot.backends.scripted import ScriptedBackend
from moot.calls import Caller
from moot.debate import FinalStatus, resolve_protocol, run_debate
from moot.debate.context import call_seed
from moot.errors import ConfigError
from moot.tasks.arithmetic import STEP_BY_STEP, ArithmeticTask
from moot.tasks.base import ParseStatus, Question
from tests.helpers import scripted_agents

TASK = ArithmeticTask()
QUESTION = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")
ASK = TASK.render(QUESTION)


def requests_of(agent) -> list[GenerationRequest]:  # type: ignore[no-untyped-def]
    return cast(ScriptedBackend, agent.backend).requests


async def test_society_each_agent_sees_all_peers_previous_replies_in_chat_history() -> None:
    agents = scripted_agents(
        ["A0: 1", "A1: -19"],
        ["B0: 2", "B1: -19"],
        ["C0: 3", "C1: 7"],
    )
    protocol = resolve_protocol("society", agents=3, rounds=2)
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())

    for agent in agents:
        first, second = requests_of(agent)
        assert [m.role for m in first.messages] == ["system", "user"]
        assert first.messages[0].content == STEP_BY_STEP
        assert first.messages[1].content == ASK
        # Round 1: own history (question, own round-0 reply) plus one user message with the peers.
        assert [m.role for m in second.messages] == ["system", "user", "assistant", "user"]
        assert second.messages[:2] == first.messages
    own = {"agent-1": "A0: 1", "agent-2": "B0: 2", "agent-3": "C0: 3"}
    for agent in agents:
        second = requests_of(agent)[1]
        assert second.messages[2].content == own[agent.name]
        debate = second.messages[3].content
        peers = [text for name, text in own.items() if name != agent.name]
        assert debate.startswith("These are the recent/updated opinions from other agents: ")
        assert debate.count("One agent response:") == 2
        assert all(f"```{p}```" in debate for p in peers)
        assert own[agent.name] not in debate
        assert debate.index(peers[0]) < debate.index(peers[1])  # peers in agent order
        assert debate.endswith(TASK.answer_instruction)

    assert [t.answer for t in result.rounds[0].turns] == ["1", "2", "3"]
    assert [t.answer for t in result.rounds[1].turns] == ["-19", "-19", "7"]
    assert result.final_answer == "-19" and result.correct and result.status is FinalStatus.ANSWERED
    assert result.rounds_used == 2 and result.stop_reason == "max_rounds"
    assert [t.correct for t in result.rounds[1].turns] == [True, True, False]
    # What each turn records as shown is exactly what was sent.
    assert result.rounds[1].turns[0].shown == requests_of(agents[0])[1].messages


async def test_round_r_shows_round_r_minus_1_replies_not_older_ones() -> None:
    agents = scripted_agents(["a0 1", "a1 2", "a2 3"], ["b0 4", "b1 5", "b2 6"])
    protocol = resolve_protocol("society", agents=2, rounds=3)
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    third = requests_of(agents[0])[2].messages
    assert "```b1 5```" in third[-1].content
    assert "b0 4" not in third[-1].content  # the older reply is only in agent-1's earlier user message
    assert "```b0 4```" in third[3].content
    assert [m.role for m in third] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [r.index for r in result.rounds] == [0, 1, 2]


async def test_vote_and_single_make_one_independent_round() -> None:
    agents = scripted_agents(["5"], ["6"], ["6"])
    result = await run_debate(QUESTION, TASK, resolve_protocol("vote"), agents, caller=Caller())
    assert result.rounds_used == 1 and result.final_answer == "6"
    assert all(len(requests_of(a)) == 1 for a in agents)

    (solo,) = scripted_agents(["The answer is -19."])
    result = await run_debate(QUESTION, TASK, resolve_protocol("single"), [solo], caller=Caller())
    assert result.correct and result.rounds_used == 1


async def test_unparsed_replies_do_not_vote_and_all_unparsed_is_scored_wrong() -> None:
    agents = scripted_agents(["no idea"], ["-19"], ["no clue"])
    result = await run_debate(QUESTION, TASK, resolve_protocol("vote"), agents, caller=Caller())
    assert result.final_answer == "-19" and result.correct
    assert result.rounds[0].vote.unparsed == 2
    assert result.rounds[0].turns[0].parse_status is ParseStatus.UNPARSED
    assert result.rounds[0].turns[0].correct is False

    agents = scripted_agents(["no idea"], ["none"], ["?"])
    result = await run_debate(QUESTION, TASK, resolve_protocol("vote"), agents, caller=Caller())
    assert result.final_answer is None and result.status is FinalStatus.UNPARSED and not result.correct


async def test_majority_uses_the_last_round_only_and_the_tie_rule() -> None:
    agents = scripted_agents(["-19", "3"], ["-19", "4"])
    result = await run_debate(QUESTION, TASK, resolve_protocol("society", agents=2), agents, caller=Caller())
    assert result.final_answer == "3"  # tie between "3" and "4": earliest agent (Du et al.)
    assert not result.correct

    agents = scripted_agents(["-19", "3"], ["-19", "4"])
    protocol = resolve_protocol("society", agents=2, tie_rule="abstain")
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    assert result.final_answer is None and result.status is FinalStatus.ABSTAINED and not result.correct


async def test_agent_without_peers_in_later_round_gets_the_reflection_prompt() -> None:
    # a one-agent "society" has no peers: Du et al. fall back to self-reflection
    agents = scripted_agents(["1", "-19"])
    result = await run_debate(QUESTION, TASK, resolve_protocol("society", agents=1), agents, caller=Caller())
    prompt = requests_of(agents[0])[1].messages[-1].content
    assert prompt.startswith("Can you verify that your answer is correct. Please reiterate your answer")
    assert result.final_answer == "-19"


async def test_a_failing_call_records_an_error_and_keeps_earlier_rounds() -> None:
    agents = scripted_agents(["1", "2"], ["3"])  # agent-2 runs out of replies in round 1
    caller = Caller()
    result = await run_debate(QUESTION, TASK, resolve_protocol("society", agents=2), agents, caller=caller)
    assert result.status is FinalStatus.ERROR and not result.correct
    assert result.error == "scripted backend ran out of replies"
    assert result.rounds_used == 1 and [t.answer for t in result.rounds[0].turns] == ["1", "3"]
    assert caller.usage.errors == 1 and caller.usage.calls == 3


async def test_usage_counts_every_call_and_its_tokens() -> None:
    agents = scripted_agents(["one two 3", "four 5"], ["6", "seven 8"])
    caller = Caller()
    await run_debate(QUESTION, TASK, resolve_protocol("society", agents=2), agents, caller=caller)
    assert caller.usage.calls == 4 and caller.usage.samples == 4
    assert caller.usage.completion_tokens == 3 + 2 + 1 + 2
    sent = [r for a in agents for r in requests_of(a)]
    assert caller.usage.prompt_tokens == sum(len(m.content.split()) for r in sent for m in r.messages)


async def test_call_seeds_are_distinct_per_agent_and_round_and_shared_across_protocols() -> None:
    society = scripted_agents(["1", "2"], ["3", "4"], ["5", "6"])
    await run_debate(QUESTION, TASK, resolve_protocol("society"), society, caller=Caller(), seed=7)
    vote = scripted_agents(["1"], ["3"], ["5"])
    await run_debate(QUESTION, TASK, resolve_protocol("vote"), vote, caller=Caller(), seed=7)
    seeds = [r.seed for a in society for r in requests_of(a)]
    assert len(set(seeds)) == 6
    # round 0 of society and vote send identical requests: a paired comparison shares them
    for s, v in zip(society, vote):
        assert requests_of(s)[0] == requests_of(v)[0]
        assert requests_of(s)[0].seed == call_seed(7, QUESTION, s, 0)
    other = scripted_agents(["1"], ["3"], ["5"])
    await run_debate(QUESTION, TASK, resolve_protocol("vote"), other, caller=Caller(), seed=8)
    assert requests_of(other[0])[0].seed != requests_of(vote[0])[0].seed


async def test_persona_replaces_the_task_system_prompt() -> None:
    agents = scripted_agents(["1"], persona="You are a skeptical mathematician.")
    await run_debate(QUESTION, TASK, resolve_protocol("single"), agents, caller=Caller())
    assert requests_of(agents[0])[0].messages[0].content == "You are a skeptical mathematician."
    agents = scripted_agents(["1"], persona="")
    await run_debate(QUESTION, TASK, resolve_protocol("single"), agents, caller=Caller())
    assert [m.role for m in requests_of(agents[0])[0].messages] == ["user"]


async def test_agent_count_must_match_the_protocol() -> None:
    with pytest.raises(ConfigError, match="needs 3 agents, got 2"):
        await run_debate(QUESTION, TASK, resolve_protocol("society"), scripted_agents(["1"], ["2"]), caller=Caller())
