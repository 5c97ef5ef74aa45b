"""What a task is: questions, how to ask them, how to read and score a reply, and what it says of itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, runtime_checkable

from moot.errors import ConfigError
from moot.tasks.extract import canonical_number, field_number
from moot.tasks.wording import ChoiWording, DebateWording, du_arithmetic

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
    counted, stored and replayed), the name the scorer speaks as, the seed of the debate, and the
    scorer's sampling (the condition's ``judge`` settings; by default temperature 0)."""

    backend: Backend
    caller: Caller
    agent: str
    seed: int
    temperature: float = 0.0
    max_tokens: int = 512


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

    def debate_wording(self, question: Question) -> DebateWording:
        """The wording of the chat-history debate prompts for ``question`` (Du et al.'s, per task)."""
        ...

    def choi_wording(self, question: Question) -> ChoiWording:
        """Choi et al.'s question template and format request for ``question`` (the ``choi`` templates)."""
        ...

    def extract(self, text: str) -> Extraction: ...

    def read_reply(self, text: str, question: Question) -> Extraction:
        """An agent's reply to ``question`` read as ``extract`` reads it, unless the answer's canonical
        form depends on the question (chess-move: a move in any notation becomes its UCI in the position)."""
        ...

    def read_answer(self, text: str, question: Question) -> Extraction:
        """An answer stated in a field written by a moderator or judge (Liang's ``debate_answer``, a
        judge's ``answer``): short forms such as a bare letter are read as well as a full reply."""
        ...

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
    # Whether a reply is right or wrong (``score``) and accuracy is reported; False for a task scored by its
    # ``metric`` alone (biographies' fact precision), whose report then shows no accuracy.
    accuracy_applies: bool = True
    offline_note: str = "generated"
    metric_uses_judge: bool = False  # its ``metric`` asks the condition's judge model (biographies)
    # the registered answer format its replies are in (moot.tasks.answer_formats: the paper's and the strict
    # reader of such replies), or None where no reader but moot's applies
    answer_format: str | None = None

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

    def render(self, question: Question) -> str:
        raise NotImplementedError

    def debate_wording(self, question: Question) -> DebateWording:
        """The default for tasks Du et al. never ran: their arithmetic wording ("One agent response",
        "can you provide an updated answer?") closed by this task's own format request."""
        return du_arithmetic(self.answer_instruction)

    def choi_wording(self, question: Question) -> ChoiWording:
        """The default where Choi et al. have no template: the task's own question prompt, which
        holds its format request."""
        return ChoiWording(self.render(question), "")

    def extract(self, text: str) -> Extraction:
        raise NotImplementedError

    def read_reply(self, text: str, question: Question) -> Extraction:
        return self.extract(text)

    def read_answer(self, text: str, question: Question) -> Extraction:
        """A moderator's or judge's answer field: read as a reply is (a bare "42" is a number already),
        except that where the reply reader reads a number (arithmetic, GSM8K), a number the field states
        before anything else wins over later mentions (``field_number``): a field that opens with a
        number standing alone ("537, not 533"), else one directly followed by the rejection of another
        ("The answer is 537, not 533"). A reader of another kind (a move, a biography) is left as it is."""
        reply = self.read_reply(text, question)
        numeric = reply.answer is not None and canonical_number(reply.answer) is not None
        number = field_number(text) if numeric else None
        return Extraction.of(number) if number is not None else reply

    def with_source(self, source: DataSource) -> Self:
        if source.kind == "offline":
            return self
        if source.kind == "file":
            raise ConfigError(f"task {self.name} generates its questions; it reads no data file")
        raise ConfigError(f"task {self.name} has no Hugging Face hub dataset")

    async def metric(self, result: DebateResult, context: MetricContext) -> TaskMetric | None:
        return None
