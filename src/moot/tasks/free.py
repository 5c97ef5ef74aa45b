"""A user's own question, asked as written and read with another task's answer extractor."""

from __future__ import annotations

from collections.abc import Sequence

from moot.tasks.base import Extraction, Question, Task, TaskBase


class FreeQuestionTask(TaskBase):
    """Wraps a task for questions that come from the user (``moot ask``): there is no gold
    answer, so nothing is ever scored correct; the wrapped task gives the format request,
    system prompt and extractor."""

    def __init__(self, task: Task):
        self._task = task
        self.name = f"{task.name} (own question)"
        self.answer_instruction = task.answer_instruction
        self.system_prompt = task.system_prompt

    def question(self, text: str) -> Question:
        return Question(id="ask", prompt=text, gold="")

    splits: tuple[str, ...] = ("own",)

    def questions(self, count: int, seed: int, split: str | None = None) -> list[Question]:
        raise NotImplementedError("a free question task has no question set")

    def by_ids(self, ids: Sequence[str], split: str | None = None) -> list[Question]:
        raise NotImplementedError("a free question task has no question set")

    def render(self, question: Question) -> str:
        return f"{question.prompt} {self.answer_instruction}"

    def extract(self, text: str) -> Extraction:
        return self._task.extract(text)

    def read_reply(self, text: str, question: Question) -> Extraction:
        return self._task.read_reply(text, question)

    def read_answer(self, text: str, question: Question) -> Extraction:
        return self._task.read_answer(text, question)

    def score(self, answer: str, question: Question) -> bool:
        return False
