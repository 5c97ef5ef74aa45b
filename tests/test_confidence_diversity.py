"""Zhu et al.'s interventions with scripted agents: verbalised confidence, confidence-weighted votes,
diversity-aware initialisation (hand-checked pools), and their presets."""

from __future__ import annotations

from typing import cast

import pytest

from moot.backends.base import GenerationRequest
from moot.backends.scripted import ScriptedBackend
from moot.calls import Caller
from moot.debate import resolve_protocol, run_debate
from moot.debate.components.aggregation import weighted_vote
from moot.debate.confidence import split_confidence
from moot.debate.diversity import Candidate, answer_diversity, jaccard, select_diverse, text_diversity
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import Question
from tests.helpers import scripted_agents

TASK = ArithmeticTask()
QUESTION = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")


@pytest.mark.parametrize(
    ("text", "rest", "confidence"),
    [
        ("The answer is 42.\nConfidence: 8", "The answer is 42.", 8.0),
        ("Answer: 7. Confidence level: 7/10.", "Answer: 7.", 7.0),
        ("**Confidence:** 9 out of 10\nSo the answer is 12", "So the answer is 12", 9.0),
        ("confidence: 80/100 and the result is 5", "and the result is 5", 8.0),  # rescaled to 0-10
        ("Confidence (0-10): 5", "", 5.0),
        ("Confidence: 3 at first. Confidence: 6", "at first.", 6.0),  # the last statement wins
        ("I am sure. Confidence: 11", "I am sure.", None),  # out of range: missing
        ("Confidence: -2", "", None),
        ("Confidence: high. The answer is 4", "Confidence: high. The answer is 4", None),
        ("The answer is 4", "The answer is 4", None),
    ],
)
def test_confidence_is_read_and_removed_before_extraction(text: str, rest: str, confidence: float | None) -> None:
    stripped, value = split_confidence(text, 10)
    assert value == confidence
    assert " ".join(stripped.split()) == rest


def test_a_trailing_confidence_is_not_taken_as_the_answer() -> None:
    stripped, value = split_confidence("3+4 = 7, so the answer is 7.\nConfidence: 9", 10)
    assert TASK.extract(stripped).answer == "7" and value == 9.0


def test_weighted_vote_hand_checked() -> None:
    vote = weighted_vote(["3", "5", "5", None], [9, 2, 3, 10])
    assert vote.winner == "3" and vote.weights == (("3", 9.0), ("5", 5.0))  # 9 beats 2 + 3
    assert vote.counts == (("3", 1), ("5", 2)) and vote.unparsed == 1
    tie = weighted_vote(["3", "5", "5"], [6, 3, 3])
    assert tie.tied == ("3", "5") and tie.winner == "3"  # ties: the earliest agent, as unweighted
    assert weighted_vote(["3", "5", "5"], [6, 3, 3], "abstain").winner is None
    missing = weighted_vote(["3", "5", "5"], [None, 2, None])
    assert missing.winner == "5" and missing.weights == (("3", 0.0), ("5", 2.0))  # missing weighs 0
    zeros = weighted_vote(["3", "5", "5"], [0, 0, None])
    assert zeros.winner == "5" and zeros.weights is None  # all-zero weights: the plain majority
    assert weighted_vote([None, None], [5, 5]).winner is None


def test_greedy_selection_on_hand_checked_pools() -> None:
    pool = [
        Candidate("add then multiply gives 10", "10"),  # 0
        Candidate("add then multiply gives 10 again", "10"),  # 1: same answer, near-identical text
        Candidate("first multiply then add gives 12", "12"),  # 2
        Candidate("something entirely different here 10", "10"),  # 3: same answer, different text
        Candidate("no idea", None),  # 4
        Candidate("careful steps yield 7", "7"),  # 5
    ]
    # new answers first; among them the text least like those chosen: after 0, candidate 5 shares
    # no token with it while 2 shares 4 of 7 (Jaccard 0.57); then 2, the last new answer
    assert select_diverse(pool, 3) == [0, 5, 2]
    # no new answer is left: "no idea" shares no token (0), candidate 3 shares "10" with 0 (1/9)
    assert select_diverse(pool, 4) == [0, 5, 2, 4]
    assert select_diverse(pool, 5) == [0, 5, 2, 4, 3]
    assert jaccard("a b c", "b c d") == pytest.approx(2 / 4)
    with pytest.raises(ValueError):
        select_diverse(pool, 7)


def test_diversity_measures() -> None:
    distinct, entropy = answer_diversity(["1", "1", "2", None])
    assert distinct == pytest.approx(2 / 4)
    assert entropy == pytest.approx(1.5)  # p = 1/2, 1/4, 1/4
    assert answer_diversity(["4", "4"]) == (0.5, 0.0)
    assert text_diversity(["a b", "a b", "c"]) == pytest.approx((0 + 1 + 1) / 3)


def requests(agent) -> list[GenerationRequest]:  # type: ignore[no-untyped-def]
    return cast(ScriptedBackend, agent.backend).requests


async def test_confidence_preset_asks_shows_and_weights_confidence() -> None:
    agents = scripted_agents(
        ["I get 5.\nConfidence: 2", "Still 5.\nConfidence: 1"],
        ["It is -19.\nConfidence: 9", "-19.\nConfidence: 9"],
        ["5 it is. Confidence: 3", "5. Confidence: 2"],
    )
    result = await run_debate(QUESTION, TASK, resolve_protocol("confidence"), agents, caller=Caller())
    first = requests(agents[0])[0].messages[-1].content
    assert first.startswith(TASK.render(QUESTION)) and 'on its own line as "Confidence: N"' in first
    update = requests(agents[0])[1].messages[-1].content
    assert "One agent response (confidence 9/10): ```It is -19.\nConfidence: 9```" in update
    assert "One agent response (confidence 3/10)" in update and update.endswith('as "Confidence: N".')
    assert [t.confidence for t in result.rounds[1].turns] == [1.0, 9.0, 2.0]
    assert [t.answer for t in result.rounds[1].turns] == ["5", "-19", "5"]
    assert result.final_answer == "-19" and result.correct  # 9 outweighs 1 + 2
    assert result.rounds[1].vote.weights == (("5", 3.0), ("-19", 9.0))


async def test_confidence_vote_is_one_weighted_round() -> None:
    agents = scripted_agents(["7 Confidence: 1"], ["7 Confidence: 2"], ["-19 Confidence: 8"])
    caller = Caller()
    result = await run_debate(QUESTION, TASK, resolve_protocol("confidence-vote"), agents, caller=caller)
    assert result.rounds_used == 1 and caller.usage.calls == 3 and result.final_answer == "-19"


async def test_diverse_initialisation_samples_the_pool_and_debates_from_the_selection() -> None:
    # pool of 6 = 2 x 3 agents, sampled round-robin: candidate j comes from agent j % 3
    agents = scripted_agents(
        ["adding first gives 10", "same again 10", "r1 a 4"],  # candidates 0, 3, then round 1
        ["adding first gives 10 too", "another route 12", "r1 b 4"],  # candidates 1, 4
        ["multiply first gives -19", "no idea", "r1 c 4"],  # candidates 2, 5
    )
    caller = Caller()
    result = await run_debate(QUESTION, TASK, resolve_protocol("diverse"), agents, caller=caller)
    pool = result.rounds[0].pool
    assert pool is not None and len(pool.texts) == 6
    assert pool.answers == ("10", "10", "-19", "10", "12", None)
    assert pool.sources == ("agent-1", "agent-2", "agent-3", "agent-1", "agent-2", "agent-3")
    # one candidate per distinct answer; after 0, "another route 12" shares no token with it,
    # "multiply first gives -19" shares 2 of 6
    assert pool.selected == (0, 4, 2)
    assert [t.answer for t in result.rounds[0].turns] == ["10", "12", "-19"]
    assert [t.agent for t in result.rounds[0].turns] == ["agent-1", "agent-2", "agent-3"]
    assert pool.answer_diversity == 1.0
    assert caller.usage.calls == 6 + 3  # the extra samples count
    # agent-2's round-1 prompt holds the candidates given to agent-1 and agent-3
    update = requests(agents[1])[2].messages[-1].content
    assert "```adding first gives 10```" in update and "```multiply first gives -19```" in update
    assert requests(agents[1])[2].messages[-2].content == "another route 12"
    seeds = [r.seed for a in agents for r in requests(a)[:2]]
    assert len(set(seeds)) == 6  # every candidate is its own sample


def test_presets_and_contradictions() -> None:
    from moot.errors import ConfigError

    assert resolve_protocol("diverse", agents=5, components={"pool_size": 10}).initializer.pool(5) == 10
    assert resolve_protocol("diverse-confidence").aggregation.kind == "confidence"
    with pytest.raises(ConfigError, match="aggregation 'confidence' needs confidence = true"):
        resolve_protocol("society", components={"aggregation": "confidence"})
    with pytest.raises(ConfigError, match="pool_size >= agents"):
        resolve_protocol("diverse", agents=5, components={"pool_size": 3})
