"""A task written outside moot: name a country's capital (five questions; the reply's last line is the
answer). Use it from an experiment file with ``plugins = ["capitals.py"]`` (a path relative to that file) and
a ``[[tasks]]`` table named ``capitals``; installed, its class is the entry point ``capitals`` of the group
``moot.tasks``, which registers it under that name."""

from __future__ import annotations

from collections.abc import Sequence

from moot.errors import ConfigError
from moot.tasks import Extraction, Question, TaskBase, register_task

CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Kenya": "Nairobi", "Peru": "Lima", "Canada": "Ottawa"}


class CapitalsTask(TaskBase):
    name = "capitals"
    description = "name a country's capital city"
    answer_instruction = "End your response with the city's name alone on the last line."
    splits: tuple[str, ...] = ("generated",)
    metric_description = "accuracy (the city's name, case aside)"

    def questions(self, count: int, seed: int, split: str | None = None) -> list[Question]:
        return self.by_ids([f"capitals-{c.lower()}" for c in CAPITALS][:count])

    def by_ids(self, ids: Sequence[str], split: str | None = None) -> list[Question]:
        by_id = {f"capitals-{c.lower()}": (c, city) for c, city in CAPITALS.items()}
        if unknown := [i for i in ids if i not in by_id]:
            raise ConfigError(f"unknown capitals question {unknown[0]!r}")
        return [Question(id=i, prompt=by_id[i][0], gold=by_id[i][1]) for i in ids]

    def render(self, question: Question) -> str:
        return f"What is the capital of {question.prompt}? {self.answer_instruction}"

    def extract(self, text: str) -> Extraction:
        lines = [line.strip(" *.") for line in text.strip().splitlines() if line.strip(" *.")]
        return Extraction.of(lines[-1] if lines else None)

    def score(self, answer: str, question: Question) -> bool:
        return answer.casefold() == question.gold.casefold()


register_task("capitals", CapitalsTask)
