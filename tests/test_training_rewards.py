"""The reward parts on hand-written completions, with hand-checked values."""

from __future__ import annotations

import pytest

from moot.tasks import get_task
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import Question
from moot.training.rewards import Calibration, Correctness, Engagement, ReplyReader, stage_rewards
from moot.training.types import TrainingExample

TASK = ArithmeticTask()
QUESTION = Question("q1", "1+2*3+4-5*6", "-19")
READER = ReplyReader(TASK, {"q1": QUESTION})
EXPRESSION = TrainingExample("q1", "arithmetic", "expression", (), "-19", target_confidence=0.25)
PERCEPTION = TrainingExample(
    "q1", "arithmetic", "perception", (), "-19", 0.25, peer_answers=("-19", "11"), peer_confidences=(0.8, None)
)


@pytest.mark.parametrize(
    ("completion", "right"),
    [
        ("1 + 6 + 4 - 30 = -19.\nConfidence: 8", 1.0),
        ("The answer is -19", 1.0),
        ("I get 11.\nConfidence: 9", 0.0),
        ("I cannot tell.", 0.0),  # unparsed: wrong, never a guess
        ("-19 ... Confidence: 8", 1.0),  # the statement is removed before the answer is read (not 8)
        ("It is 8.\nConfidence: 8", 0.0),
    ],
)
def test_correctness(completion: str, right: float) -> None:
    assert Correctness(READER)(EXPRESSION, completion) == right


@pytest.mark.parametrize(
    ("completion", "brier"),
    [
        ("-19\nConfidence: 8", -0.04),  # right at 0.8: -(0.8 - 1)^2
        ("-19\nConfidence: 10", 0.0),
        ("11\nConfidence: 8", -0.64),  # wrong at 0.8: -(0.8 - 0)^2
        ("11\nConfidence: 0", 0.0),
        ("-19\nConfidence: 3/10", -0.49),
        ("-19\nConfidence: 60%", -0.16),
        ("-19", -1.0),  # no confidence: the worst score
        ("-19\nConfidence: 11", -1.0),  # out of range reads as missing
        ("-19\nConfidence: high", -1.0),
    ],
)
def test_calibration_is_the_negative_brier_score(completion: str, brier: float) -> None:
    assert Calibration(READER)(EXPRESSION, completion) == pytest.approx(brier)


def test_calibration_against_the_self_consistency_target() -> None:
    part = Calibration(READER, target="self-consistency")
    assert part(EXPRESSION, "11\nConfidence: 5") == pytest.approx(-((0.5 - 0.25) ** 2))
    assert part(EXPRESSION, "-19\nConfidence: 2") == pytest.approx(-((0.2 - 0.25) ** 2))
    assert part(EXPRESSION, "-19") == -1.0
    without = TrainingExample("q1", "arithmetic", "expression", (), "-19")  # no target: against correctness
    assert part(without, "-19\nConfidence: 8") == pytest.approx(-0.04)
    with pytest.raises(ValueError, match="calibration target"):
        Calibration(READER, target="gold")


@pytest.mark.parametrize(
    ("completion", "score"),
    [
        ("-19\nConfidence: 8", 0.0),  # only its own statement
        ("The other agent says 11 but I get -19.\nConfidence: 7", 0.5),
        ("Agent 2 is confident in 11, but the order of operations gives -19.\nConfidence: 7", 1.0),
        ("My peers disagree; their confidence is low. -19\nConfidence: 9", 1.0),
        ("I am confident: -19.", 0.5),  # confidence without its own statement, no peer cue
        ("Another view: 11. I keep -19. Confidence: 6", 0.5),
        ("-19. My confidence is 8. Confidence: 8", 0.5),  # two statements: more than its own
    ],
)
def test_engagement(completion: str, score: float) -> None:
    assert Engagement()(PERCEPTION, completion) == score


def test_engagement_needs_peers() -> None:
    assert Engagement()(EXPRESSION, "The other agents are confident.") == 0.0


def test_multiple_choice_replies_are_read_by_the_tasks_extractor() -> None:
    task = get_task("csqa")
    question = Question("c1", "Where do fish live?", "B", {"choices": ["desert", "water", "sky", "car", "moon"]})
    example = TrainingExample("c1", "csqa", "expression", (), "B")
    known, unknown = ReplyReader(task, {"c1": question}), ReplyReader(task, {})  # unknown id: the example's gold
    for reader in (known, unknown):
        assert Correctness(reader)(example, "The answer is (B).\nConfidence: 9") == 1.0
        assert Correctness(reader)(example, "The answer is (C).\nConfidence: 9") == 0.0
        assert Correctness(reader)(example, "the ocean") == 0.0  # no letter and no choice named: unparsed
    # an option named by its text is read as its letter, as in a debate (``choice.reply_letter``), where the
    # question's choices are known; without them it is unparsed
    assert Correctness(known)(example, "water") == 1.0
    assert Correctness(unknown)(example, "water") == 0.0


def test_stage_rewards() -> None:
    expression = stage_rewards("expression", TASK, {}, correctness=1.0, calibration=0.5)
    assert [(p.name, p.weight) for p in expression] == [("correctness", 1.0), ("calibration", 0.5)]
    perception = stage_rewards("perception", TASK, {}, engagement=0.25)
    assert [(p.name, p.weight) for p in perception] == [
        ("correctness", 1.0),
        ("calibration", 1.0),
        ("engagement", 0.25),
    ]
    assert [p.name for p in stage_rewards("perception", TASK, {}, engagement=0.0)] == ["correctness", "calibration"]
    total = sum(
        p.weight * p(PERCEPTION, "The other agent is confident in 11; I get -19.\nConfidence: 8") for p in perception
    )
    assert total == pytest.approx(1.0 * 1.0 + 1.0 * -0.04 + 0.25 * 1.0)
