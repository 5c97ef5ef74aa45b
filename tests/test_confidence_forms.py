"""The confidence statements small models write, read and removed before the answer is extracted.

The golden replies (tests/fixtures/confidence_replies.json) are real replies from the shipped store
runs/replicate/across.sqlite (conditions confidence and diverse-confidence, arithmetic); each one's
confidence and arithmetic answer were read by hand from its text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from moot.debate.components.cues import ConfidenceCue
from moot.debate.confidence import split_confidence
from moot.tasks import get_task

TASK = get_task("arithmetic")
REPLIES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "fixtures" / "confidence_replies.json").read_text(encoding="utf-8")
)


def read(text: str) -> tuple[float | None, str | None]:
    """(confidence, answer) as a debate reads an arithmetic reply (Debate.speak: the cue, then extraction)."""
    rest, confidence = ConfidenceCue().read(text)
    return confidence, TASK.extract(rest).answer


def test_the_fixture_covers_enough_replies() -> None:
    assert len(REPLIES) >= 40
    assert sum("(read before)" in r["form"] for r in REPLIES) >= 10


@pytest.mark.parametrize("reply", REPLIES, ids=[r["source"].split(" ", 1)[1] for r in REPLIES])
def test_real_replies_read_as_checked_by_hand(reply: dict[str, Any]) -> None:
    confidence, answer = read(reply["text"])
    assert confidence == reply["confidence"]
    assert answer == reply["answer"]


@pytest.mark.parametrize(
    ("text", "confidence", "answer"),
    [
        # a confidence in its own \boxed{} is not the answer; the answer's \boxed{} stays the answer
        ("So the result is \\(\\boxed{155}\\).\n\nConfidence: \\boxed{9}", 9.0, "155"),
        ("\\boxed{155}\n\n**Confidence:**\n\\boxed{8}", 8.0, "155"),
        ("\\boxed{155}\nMy confidence in this answer is \\(\\boxed{10}\\).", 10.0, "155"),
        ("The result is 155 and I'm 90% confident.", 9.0, "155"),
        ("The result is 155, with 9/10 confidence.", 9.0, "155"),
        ("The result is 155. My confidence is 0.9.", 9.0, "155"),
        ("The result is 155. I'd put my confidence at 7 out of 10.", 7.0, "155"),
        ("The result is 155. Confidence (0-10): 7", 7.0, "155"),
        ("1. The result is 155.\n2. My confidence is 9.", 9.0, "155"),  # the list number 2 goes too
        # real answers stay answers
        ("The answer is 90.", None, "90"),
        ("I am confident the answer is 90.", None, "90"),
        ("I stand by my confidence that the final answer is \\(\\boxed{90}\\).", None, "90"),
        ("Confidence: high, since 3+4 = 7", None, "7"),
        ("My confidence that it is 42 is high.", None, "42"),
        ("I'm not 100% confident, but the answer is 42.", None, "42"),
        ("The answer is\n73. Confidence: 10", 10.0, "73"),  # "73." is the answer, not a list number
        ("The rating: 9 stars. The answer is 4", None, "4"),  # "Rating: N" counts only opening a line
    ],
)
def test_forms_hand_checked(text: str, confidence: float | None, answer: str) -> None:
    assert read(text) == (confidence, answer)


def test_a_range_or_a_scale_states_no_value_but_is_removed() -> None:
    assert read("The result is -239.\nMy confidence is between 8 and 10.") == (None, "-239")
    assert read("The result is -118. I'm confident on a scale from 0 to 10, with 10 being sure.") == (None, "-118")
    rest, value = split_confidence("Confidence: 8. I rate it on a scale of 10.", 10)
    assert value == 8.0 and " ".join(rest.split()) == "I rate it ."
