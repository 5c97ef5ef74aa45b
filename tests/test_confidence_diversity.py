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


@pytest.mark.parametrize(
    ("text", "confidence"),
    [
        # each written form of "eight out of ten", read on Zhu et al.'s 0-10 scale (hand-checked)
        ("The answer is 42.\nConfidence: 8", 8.0),
        ("The answer is 42.\nConfidence: 80%", 8.0),  # a percentage: 80 / 100 x 10
        ("The answer is 42.\nConfidence: 80 percent", 8.0),
        ("The answer is 42.\nConfidence: 8/10", 8.0),  # a stated scale: 8 / 10 x 10
        ("The answer is 42.\nConfidence: 8 out of 10", 8.0),
        ("The answer is 42.\nConfidence: 0.8", 8.0),  # a fraction (decimal point, at most 1): 0.8 x 10
        ("The answer is 42.\nConfidence: .8", 8.0),
        ("The answer is 42.\n**Confidence:** 80%", 8.0),
        # the boundary cases of the fraction rule
        ("The answer is 42.\nConfidence: 1", 1.0),  # an integer is on the scale: 1/10, not 100%
        ("The answer is 42.\nConfidence: 0", 0.0),
        ("The answer is 42.\nConfidence: 1.0", 10.0),  # a decimal point and at most 1: a probability of 1
        ("The answer is 42.\nConfidence: 0.85", 8.5),
        ("The answer is 42.\nConfidence: 8.5", 8.5),  # a decimal above 1 is on the scale
        ("The answer is 42.\nConfidence: 10", 10.0),
        # out of range after reading: missing, never clipped (85 is not taken for a percentage)
        ("The answer is 42.\nConfidence: 85", None),
        ("The answer is 42.\nConfidence: 120%", None),
        ("The answer is 42.\nConfidence: 12 out of 10", None),
    ],
)
def test_each_written_form_of_a_confidence_reads_on_the_0_10_scale(text: str, confidence: float | None) -> None:
    stripped, value = split_confidence(text, 10)
    assert value == (pytest.approx(confidence) if confidence is not None else None)
    assert " ".join(stripped.split()) == "The answer is 42."  # the statement is removed in every form
    assert TASK.extract(stripped).answer == "42"


def test_the_fraction_rule_follows_the_scale() -> None:
    assert split_confidence("Confidence: 0.8", 100)[1] == pytest.approx(80.0)
    assert split_confidence("Confidence: 80", 100)[1] == 80.0
    assert split_confidence("Confidence: 80%", 100)[1] == 80.0
    assert split_confidence("Confidence: 0.8", 1)[1] == pytest.approx(0.8)  # on 0-1 a fraction is the value
    assert split_confidence("Confidence: 1", 1)[1] == 1.0
    assert split_confidence("Confidence: 7/10", 7)[1] == pytest.approx(4.9)


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
    # no new answer is left: a parsed candidate comes before "no idea" although that one shares no token;
    # candidate 3 shares only "10" with 0 (1/9), candidate 1 five of six
    assert select_diverse(pool, 4) == [0, 5, 2, 3]
    assert select_diverse(pool, 5) == [0, 5, 2, 3, 1]
    assert select_diverse(pool, 6) == [0, 5, 2, 3, 1, 4]  # the unparsed one only when no parsed one is left
    assert jaccard("a b c", "b c d") == pytest.approx(2 / 4)
    with pytest.raises(ValueError):
        select_diverse(pool, 7)


def test_an_unparsed_candidate_is_never_preferred_to_a_parsed_one() -> None:
    pool = [
        Candidate("two plus two makes 4", "4"),  # 0
        Candidate("two plus two makes 4 again", "4"),  # 1: a repeat of 0's answer, text close to it
        Candidate("hmm I cannot tell", None),  # 2: unparsed, its text the most different
    ]
    assert select_diverse(pool, 2) == [0, 1]  # a repeated parsed answer, not the unparsed text
    assert select_diverse(pool, 3) == [0, 1, 2]  # too few parsed candidates: the unparsed one fills the place
    only_unparsed = [Candidate("no idea", None), Candidate("not sure", None)]
    assert select_diverse(only_unparsed, 1) == [0]


async def test_diverse_initialisation_gives_agents_parsed_candidates_first() -> None:
    # pool of 4 for 2 agents: candidates 0 and 2 from agent-1 (parsed, answer 10), 1 and 3 from agent-2
    # (unparsed); the second agent gets candidate 2, a repeat, not an unparsed reply
    agents = scripted_agents(
        ["adding first gives 10", "adding first gives 10 again", "r1 10"],
        ["no idea at all", "hmm unsure", "r1 10"],
    )
    protocol = resolve_protocol("diverse", agents=2, components={"pool_size": 4})
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    pool = result.rounds[0].pool
    assert pool is not None and pool.answers == ("10", None, "10", None)
    assert pool.selected == (0, 2)
    assert [t.answer for t in result.rounds[0].turns] == ["10", "10"]


def test_diversity_measures() -> None:
    distinct, entropy = answer_diversity(["1", "1", "2", None])
    assert distinct == pytest.approx(2 / 4)
    assert entropy == pytest.approx(1.5)  # p = 1/2, 1/4, 1/4
    assert answer_diversity(["4", "4"]) == (0.5, 0.0)
    assert text_diversity(["a b", "a b", "c"]) == pytest.approx((0 + 1 + 1) / 3)


def requests(agent) -> list[GenerationRequest]:  # type: ignore[no-untyped-def]
    return cast(ScriptedBackend, agent.backend).requests


@pytest.mark.parametrize(
    ("preset", "final", "weights"),
    [
        # Zhu et al.: confidence is shown to peers, the final answer is the majority of the last round
        ("confidence", "5", None),
        # moot's weighted variant: 9 outweighs 1 + 2
        ("confidence-weighted", "-19", (("5", 3.0), ("-19", 9.0))),
    ],
)
async def test_confidence_presets_ask_and_show_confidence_and_aggregate_as_named(
    preset: str, final: str, weights: tuple[tuple[str, float], ...] | None
) -> None:
    agents = scripted_agents(
        ["I get 5.\nConfidence: 2", "Still 5.\nConfidence: 1"],
        ["It is -19.\nConfidence: 9", "-19.\nConfidence: 9"],
        ["5 it is. Confidence: 3", "5. Confidence: 2"],
    )
    result = await run_debate(QUESTION, TASK, resolve_protocol(preset), agents, caller=Caller())
    first = requests(agents[0])[0].messages[-1].content
    assert first.startswith(TASK.render(QUESTION)) and 'on its own line as "Confidence: N"' in first
    update = requests(agents[0])[1].messages[-1].content
    assert "One agent response (confidence 9/10): ```It is -19.\nConfidence: 9```" in update
    assert "One agent response (confidence 3/10)" in update and update.endswith('as "Confidence: N".')
    assert [t.confidence for t in result.rounds[1].turns] == [1.0, 9.0, 2.0]
    assert [t.answer for t in result.rounds[1].turns] == ["5", "-19", "5"]
    assert result.final_answer == final and result.correct == (final == "-19")
    assert result.rounds[1].vote.weights == weights
    assert result.rounds[1].vote.counts == (("5", 2), ("-19", 1))


def test_descriptions_say_how_the_final_answer_is_taken() -> None:
    weighted = resolve_protocol("confidence-weighted").describe()
    assert weighted["aggregation"] == (
        "confidence-weighted majority: each parsed answer adds its agent's stated confidence (0-10); "
        "a missing confidence weighs 0; if every weight is 0, the unweighted majority; ties: first"
    )
    assert weighted["confidence"] == "stated on 0-10, shown to peers"
    plain = resolve_protocol("confidence")
    assert plain.describe()["aggregation"] == "majority (ties: first)"
    assert "the final answer is the majority of the last round, as in the paper" in plain.reference
    assert "majority of the last round" in resolve_protocol("diverse-confidence").reference
    vote = resolve_protocol("confidence-vote")
    assert vote.aggregation.kind == "confidence" and "not one of Zhu et al. 2026's baselines" in vote.reference
    assert "a missing confidence weighs 0" in vote.reference


async def test_a_missing_confidence_weighs_nothing_in_the_weighted_debate() -> None:
    agents = scripted_agents(["5", "5"], ["-19 Confidence: 2", "-19 Confidence: 2"], ["5", "5"])
    result = await run_debate(QUESTION, TASK, resolve_protocol("confidence-weighted"), agents, caller=Caller())
    assert [t.confidence for t in result.rounds[1].turns] == [None, 2.0, None]
    assert result.rounds[1].vote.weights == (("5", 0.0), ("-19", 2.0)) and result.final_answer == "-19"


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
    kinds = {
        name: (spec.initializer.kind, spec.confidence is not None, spec.aggregation.kind)
        for name in ("confidence", "confidence-weighted", "diverse-confidence", "diverse-confidence-weighted")
        for spec in [resolve_protocol(name)]
    }
    assert kinds == {
        "confidence": ("independent", True, "majority"),  # the paper's protocol
        "confidence-weighted": ("independent", True, "confidence"),
        "diverse-confidence": ("diverse", True, "majority"),  # the paper's protocol
        "diverse-confidence-weighted": ("diverse", True, "confidence"),
    }
    with pytest.raises(ConfigError, match="aggregation 'confidence' needs confidence = true"):
        resolve_protocol("society", components={"aggregation": "confidence"})
    with pytest.raises(ConfigError, match="pool_size >= agents"):
        resolve_protocol("diverse", agents=5, components={"pool_size": 3})
