"""Real moderator and final-judge replies of the embedded 0.5B model (a Liang run on ARC-Challenge,
collected by tests/fixtures/tasks/harvest_moderator_replies.py), each answer field's letter checked
by hand: the reader of moderators' answers must read what the model really writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moot.debate.schedules.liang import read_moderator
from moot.tasks.base import Question
from moot.tasks.choice import field_letter

RECORDS = json.loads((Path(__file__).parent / "fixtures" / "tasks" / "moderator_replies.json").read_text())


def test_the_fixture_holds_bare_letters_and_prose() -> None:
    fields = [r["debate_answer"].strip() for r in RECORDS]
    assert len(RECORDS) >= 20
    assert any(len(f) == 1 for f in fields)  # a bare "B": the form that was never read before
    assert any(r["expected"] is None for r in RECORDS)  # and fields that name no choice


@pytest.mark.parametrize("record", RECORDS, ids=[f"{r['question_id']}-{i}" for i, r in enumerate(RECORDS)])
def test_a_real_moderators_answer_field_reads_as_checked_by_hand(record: dict[str, object]) -> None:
    assert read_moderator(str(record["reply"])).answer_text == record["debate_answer"]
    question = Question(id=str(record["question_id"]), prompt="", gold=str(record["gold"]), metadata=record)
    assert field_letter(str(record["debate_answer"]), question) == record["expected"]
