"""What a task is: questions, how to ask them, how to read and score a reply, and what it says of itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, runtime_checkable

from moot.errors import ConfigError

if TYPE_CHECKING:
    from moot.backends.base import Backend
    from moot.calls import Caller
    from moot.debate.records import DebateResult


class ParseStatus(StrEnum):
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


@dataclass(frozen=True)
class DataSource:
    """Where a task's questions come from: the offline files, the hub, or a local file.

    For ``hub``, ``path`` optionally replaces the hub repository (a local folder in the
    hub's layout); for ``file`` it is the data file.
    """

    kind: Literal["offline", "hub", "file"] = "offline"
    path: str | None = None


@dataclass(frozen=True)
class TaskCard:
    """A task as the catalogue (`moot tasks`) shows it."""

    name: str
    description: str
    answer_format: str  # the format request appended to every prompt
    splits: tuple[str, ...]
    offline: str  # e.g. "test 1,319", "generated", or why nothing is shipped
    licence: str
    metric: str  # how replies are scored, in words
    source: str  # the homepage or reference


@dataclass(frozen=True)
class MetricContext:
    """What a task metric may use: the scorer's backend, the question's caller (so that its calls are
    counted, stored and replayed), the name the scorer speaks as, and the seed of the debate."""

    backend: Backend
    caller: Caller
    agent: str
    seed: int


@dataclass(frozen=True)
class TaskMetric:
    """A task's own score of one debate, beside accuracy: its value (None when undefined) and detail."""

    value: float | None
    detail: dict[str, Any]


@runtime_checkable
class Task(Protocol):
    """A benchmark: loads questions, renders them, extracts and scores answers.

    ``answer_instruction`` is the format request appended to the question and
    to every debate prompt (Du et al. repeat it in each round). ``splits``: the
    first is the default.
    """

    @property
    def name(self) -> str: ...

    @property
    def answer_instruction(self) -> str: ...

    @property
    def system_prompt(self) -> str | None: ...

    @property
    def splits(self) -> tuple[str, ...]: ...

    def questions(self, count: int, seed: int, split: str | None = None) -> list[Question]:
        """``count`` questions of ``split`` in an order fixed by ``seed`` (a prefix is stable as count grows)."""
        ...

    def by_ids(self, ids: Sequence[str], split: str | None = None) -> list[Question]:
        """The questions with these ids, in this order; an unknown id is a ConfigError."""
        ...

    def render(self, question: Question) -> str: ...

    def extract(self, text: str) -> Extraction: ...

    def score(self, answer: str, question: Question) -> bool: ...

    def card(self) -> TaskCard:
        """The task's catalogue card (counting its offline questions may read them)."""
        ...

    def provenance(self) -> dict[str, Any]:
        """What the questions were read from (or how they were generated): recorded with a run."""
        ...

    def with_source(self, source: DataSource) -> Task:
        """The same task reading its questions from ``source`` (a file is read and checked now);
        a ConfigError when it cannot (a generated task reads no file)."""
        ...

    async def metric(self, result: DebateResult, context: MetricContext) -> TaskMetric | None:
        """The task's own score of a finished debate (e.g. an LLM judge's), or None when it has none."""
        ...


class TaskBase:
    """What every task shares unless it says otherwise: generated questions (no data source), a
    card from its class attributes, and no metric beyond accuracy."""

    name: str
    answer_instruction: str
    system_prompt: str | None = None
    description: str = ""
    licence: str = "generated"
    source_url: str = ""
    metric_description: str = "accuracy"
    offline_note: str = "generated"

    @property
    def splits(self) -> tuple[str, ...]:
        raise NotImplementedError

    def offline(self) -> str:
        """The catalogue's "offline data" column."""
        return self.offline_note

    def card(self) -> TaskCard:
        return TaskCard(
            name=self.name,
            description=self.description,
            answer_format=self.answer_instruction,
            splits=self.splits,
            offline=self.offline(),
            licence=self.licence,
            metric=self.metric_description,
            source=self.source_url,
        )

    def provenance(self) -> dict[str, Any]:
        return {"task": self.name, "source": "generated"}

    def with_source(self, source: DataSource) -> Self:
        if source.kind == "offline":
            return self
        if source.kind == "file":
            raise ConfigError(f"task {self.name} generates its questions; it reads no data file")
        raise ConfigError(f"task {self.name} has no Hugging Face hub dataset")

    async def metric(self, result: DebateResult, context: MetricContext) -> TaskMetric | None:
        return None
