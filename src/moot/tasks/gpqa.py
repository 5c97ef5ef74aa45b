"""GPQA: graduate-level "Google-proof" science questions (Rein et al. 2023).

Source: https://github.com/idavidrein/gpqa, hub Idavidrein/gpqa (gated; configs
gpqa_main (448), gpqa_diamond (198), gpqa_extended (546); one split, "train").
Licence: CC BY 4.0. Its authors ask that examples never be published in plain text, so
moot ships no item and its tests use synthetic rows only: load it from the hub (accept
the terms and log in) or from the CSV of the authors' release (--data PATH).

Schema (the release's CSV columns): "Question", "Correct Answer", "Incorrect Answer 1"
to "Incorrect Answer 3", "Record ID". The four choices are shuffled per question by a
generator seeded from ``choice_seed`` and the record id; the seed and the resulting order
are kept in the question's metadata.
"""

from __future__ import annotations

import random

from moot.errors import ConfigError
from moot.seeds import derive_seed
from moot.tasks.base import DataSource, Question
from moot.tasks.choice import MultipleChoiceTask
from moot.tasks.data import OFFLINE, HubDataset, Row
from moot.tasks.registry import TASKS

VARIANTS = {"main": "gpqa_main", "diamond": "gpqa_diamond", "extended": "gpqa_extended"}
ANSWER_FIELDS = ("Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3")


def choice_order(choice_seed: int, record_id: str) -> list[int]:
    """The shown order of the four answers (index 0 is the correct one), fixed by the seed and record."""
    order = [0, 1, 2, 3]
    random.Random(derive_seed("gpqa-choices", choice_seed, record_id)).shuffle(order)
    return order


class GPQATask(MultipleChoiceTask):
    description = 'graduate-level "Google-proof" science questions (Rein et al. 2023)'
    data_splits = ("train",)
    licence = "CC BY 4.0 (gated; do not publish examples in plain text)"
    source_url = "https://github.com/idavidrein/gpqa"
    offline_note = "not shipped, by the authors' request (gated hub or local CSV)"

    def __init__(
        self,
        variant: str = "main",
        choice_seed: int = 0,
        *,
        source: DataSource = OFFLINE,
        system_prompt: str | None = None,
    ) -> None:
        if variant not in VARIANTS:
            raise ConfigError(f"unknown GPQA variant {variant!r}; variants: {', '.join(VARIANTS)}")
        super().__init__(source=source, system_prompt=system_prompt)
        self.variant = variant
        self.choice_seed = choice_seed
        self.name = "gpqa" if variant == "main" else f"gpqa-{variant}"
        self.hub = HubDataset("Idavidrein/gpqa", VARIANTS[variant], gated=True)
        self.version = f"Idavidrein/gpqa {VARIANTS[variant]}; choices shuffled with choice_seed={choice_seed}"

    def not_offline_message(self) -> str:
        return (
            f"task {self.name}: GPQA is not shipped (its authors ask that examples not be published in plain "
            "text); load it from the Hugging Face hub (data 'hub': accept the terms on "
            "https://huggingface.co/datasets/Idavidrein/gpqa and log in) or from the release's CSV (a local file)"
        )

    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        record = row.text("Record ID").strip()
        answers = [row.text_or_number(f).strip() for f in ANSWER_FIELDS]
        order = choice_order(self.choice_seed, record)
        return [
            self.choice_question(
                row,
                f"gpqa-{record}",
                row.text("Question"),
                [answers[i] for i in order],
                order.index(0),
                "Correct Answer",
                choice_seed=self.choice_seed,
                order=order,
            )
        ]


TASKS.register("gpqa", GPQATask)
TASKS.register("gpqa-diamond", lambda: GPQATask("diamond"))
TASKS.register("gpqa-extended", lambda: GPQATask("extended"))
