"""What a task is: questions, how to ask them, how to read and score a reply."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol


class ParseStatus(str, Enum):
    """Whether an answer could be extracted from a reply. Unparsed is never a guess, never correct."""

    PARSED = "parsed"
    UNPARSED = "unparsed"


@dataclass(frozen=True)
class Extraction:
    answer: str | None
    status: ParseStatus

    @classmethod
    def of(cls, answer: str | None) -> Extraction:
        return cls(answer, ParseStatus.PARSED if answer is not None else ParseStatus.UNPARSED)


@dataclass(frozen=True)
class Question:
    """One benchmark item."""

    id: str
    prompt: str
    gold: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


class Task(Protocol):
    """A benchmark: loads questions, renders them, extracts and scores answers.

    ``answer_instruction`` is the format request appended to the question and
    to every debate prompt (Du et al. repeat it in each round).
    """

    name: str
    answer_instruction: str
    system_prompt: str | None
    splits: tuple[str, ...]  # the first is the default

    def questions(self, count: int, seed: int, split: str | None = None) -> list[Question]:
        """``count`` questions of ``split`` in an order fixed by ``seed`` (a prefix is stable as count grows)."""
        ...

    def by_ids(self, ids: Sequence[str], split: str | None = None) -> list[Question]:
        """The questions with these ids, in this order; an unknown id is a ConfigError."""
        ...

    def render(self, question: Question) -> str: ...

    def extract(self, text: str) -> Extraction: ...

    def score(self, answer: str, question: Question) -> bool: ...
