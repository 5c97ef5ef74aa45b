"""The data builder: the harder subset, and examples rendered exactly as the confidence protocol renders
rounds 0 and 1 (pinned by hand, and against a real debate's ``shown`` messages)."""

from __future__ import annotations

import asyncio

import pytest

from moot.backends.base import Message
from moot.calls import Caller
from moot.debate.engine import run_debate
from moot.debate.protocol_presets import resolve_protocol
from moot.debate.records import Turn
from moot.tasks import get_task
from moot.tasks.arithmetic import STEP_BY_STEP, ArithmeticTask
from moot.tasks.base import ParseStatus, Question
from moot.training.data import draw_samples, expression_examples, harder_subset, perception_examples
from moot.training.targets import QuestionTarget, question_target
from tests.helpers import scripted_agents

TASK = ArithmeticTask()
QUESTION = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")
ASK = (
    "What is the result of 1+2*3+4-5*6? Make sure to state your answer at the end of the response. After your "
    'answer, rate your confidence that it is correct on a scale from 0 to 10, on its own line as "Confidence: N".'
)


def sample(text: str, answer: str | None, correct: bool, confidence: float | None) -> Turn:
    status = ParseStatus.PARSED if answer is not None else ParseStatus.UNPARSED
    return Turn("agent-1", 0, text, answer, status, correct, "stop", 5, 5, 0.0, 1, (), confidence=confidence)


SAMPLES = (
    sample("So it is -19.\nConfidence: 9", "-19", True, 9.0),
    sample("I get 11. Confidence: 4", "11", False, 4.0),
    sample("The answer is -19.\nConfidence: 6", "-19", True, 6.0),
    sample("Hmm, 30?", "30", False, None),
)
TARGET = question_target(QUESTION, SAMPLES)


def target(qid: str, accuracy: float) -> QuestionTarget:
    return QuestionTarget(Question(qid, "1+1", "2"), SAMPLES, "2", accuracy)


def test_the_harder_subset_keeps_the_band_in_order_up_to_its_size() -> None:
    targets = [target(f"q{i}", a) for i, a in enumerate([0.0, 0.25, 0.5, 1.0, 0.75, 0.2, 0.8, 0.81])]
    kept = harder_subset(targets, 0.2, 0.8, 10)
    assert [t.question.id for t in kept] == ["q1", "q2", "q4", "q5", "q6"]  # bounds included, order kept
    assert [t.question.id for t in harder_subset(targets, 0.2, 0.8, 2)] == ["q1", "q2"]
    assert harder_subset(targets, 0.4, 0.6, 10) == [targets[2]]


def test_an_expression_example_is_the_confidence_presets_round_zero_by_hand() -> None:
    (example,) = expression_examples(TASK, [TARGET])
    assert example.messages == (Message("system", STEP_BY_STEP), Message("user", ASK))
    assert (example.stage, example.question_id, example.gold, example.task) == ("expression", "q1", "-19", "arithmetic")
    assert example.target_confidence == pytest.approx(0.5)
    assert example.peer_answers == () and example.peer_confidences == ()


def test_a_perception_example_is_round_one_as_the_protocol_renders_it_by_hand() -> None:
    (example,) = perception_examples(TASK, [TARGET], agents=3, draws=1, seed=0)
    own, first, second = draw_samples(TARGET, 3, 0, 0)
    label = {9.0: "9/10", 4.0: "4/10", 6.0: "6/10", None: "not stated"}
    peers = "".join(
        f"\n\n One agent response (confidence {label[t.confidence]}): ```{t.text}```" for t in (first, second)
    )
    debate = (
        "These are the recent/updated opinions from other agents: "
        + peers
        + "\n\n Use these opinions carefully as additional advice, can you provide an updated answer? Make sure to "
        "state your answer at the end of the response. After your answer, rate your confidence that it is correct on "
        'a scale from 0 to 10, on its own line as "Confidence: N".'
    )
    assert example.messages == (
        Message("system", STEP_BY_STEP),
        Message("user", ASK),
        Message("assistant", own.text),
        Message("user", debate),
    )
    assert example.stage == "perception"
    assert example.peer_answers == (first.answer, second.answer)
    expected = tuple(None if t.confidence is None else t.confidence / 10 for t in (first, second))
    assert example.peer_confidences == expected


@pytest.mark.parametrize("agents", [2, 3, 4])
def test_perception_examples_match_a_real_confidence_debate(agents: int) -> None:
    """Agent 1's round-1 messages in a confidence debate whose agents said the drawn samples in round 0."""
    task = get_task("gsm8k")  # another task's debate wording ("One agent solution")
    question = Question("g1", "Tom has 3 apples and buys 4. How many?", "7")
    samples = tuple(
        sample(f"It is {n}.\nConfidence: {c}", str(n), n == 7, float(c)) for n, c in [(7, 8), (6, 5), (7, 3), (9, 9)]
    )
    tgt = question_target(question, samples)
    for draw in range(3):
        (example,) = perception_examples(task, [tgt], agents=agents, draws=1, seed=draw)
        chosen = draw_samples(tgt, agents, draw, 0)
        scripted = scripted_agents(*[[t.text, "done"] for t in chosen])
        result = asyncio.run(
            run_debate(
                question, task, resolve_protocol("confidence", agents=agents, rounds=2), scripted, caller=Caller()
            )
        )
        assert example.messages == result.rounds[1].turns[0].shown
        assert "One agent solution (confidence" in example.messages[-1].content


def test_draws_are_seeded_distinct_and_reproducible() -> None:
    first = [draw_samples(TARGET, 3, 7, d) for d in range(5)]
    assert first == [draw_samples(TARGET, 3, 7, d) for d in range(5)]
    assert all(len({id(t) for t in drawn}) == 3 for drawn in first)  # distinct samples
    assert len({tuple(t.text for t in drawn) for drawn in first}) > 1  # draws differ
    assert len(draw_samples(TARGET, 6, 0, 0)) == 6  # more agents than samples: some repeat
    examples = perception_examples(TASK, [TARGET], agents=3, draws=4, seed=1)
    assert len(examples) == 4 and examples == perception_examples(TASK, [TARGET], agents=3, draws=4, seed=1)
