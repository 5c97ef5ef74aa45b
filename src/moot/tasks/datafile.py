"""A data file as a task, with no Python: a JSONL, CSV or Parquet file, a format and the columns to read.

A ``[[tasks]]`` table with ``format`` (or ``moot run --format``) builds one of these from its ``data`` file:

- ``number``: the gold is a number; a reply's answer is its last number (``last_number``: a "{final
  answer: N}" or ``\\boxed{}`` first), scored by numeric equality; debate wording: Du et al.'s
  arithmetic, with their request "Make sure to state your answer at the end of the response.".
- ``choice``: the question's choices are lettered (A), (B), ... and asked in Du et al.'s MMLU wording
  (``MultipleChoiceTask``); a reply's answer is its last "(X)" / "the answer is X" / "{final answer: X}"
  whose letter is one of the question's. ``choices`` is a list (JSONL, Parquet) or one CSV cell
  joined by ``|`` ("Paris|London|Rome"); 2 to 10 choices. The gold may be a letter (A-J, any case),
  a 0-based index (an integer, or its digits in CSV), or the text of one choice; a gold that two of
  these readings take to different choices is an error.
- ``text``: the gold is a string; a reply's answer is the text after its last "Answer:" or "answer is"
  ("the answer is", "my final answer is"; to the end of that line, or the next non-empty line when that is empty), else its last non-empty
  line; scored by exact match after SQuAD's normalisation (lower case, punctuation and the articles a,
  an, the removed, whitespace collapsed; Unicode punctuation is removed as well as ASCII).

``fields`` maps the task's keys (``question``, ``answer``, ``choices`` for choice, ``id`` optionally)
to the file's columns. The question's id is its ``id`` column's value, else the row's number (as the
errors name it: JSONL the line, CSV the data row, Parquet the row, from 1). ``prompt`` is a template
over the row (e.g. "Q: {question}"): a name in braces is one of the keys of ``fields`` or a column of
the file, ``{{`` and ``}}`` are literal braces; the gold (``{answer}`` or its column) may not be named.
Without ``prompt`` the question is the ``question`` column as written. The format's own answer request
is appended (for choice: the lettered choices, then the request).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Self

from moot.errors import ConfigError
from moot.registry import Registry
from moot.tasks.base import DataSource, Extraction, Question, TaskCard
from moot.tasks.choice import LETTERS, MultipleChoiceTask, choice_letter, field_letter
from moot.tasks.data import FILE_SPLIT, DatasetTask, Row, file_sha256, read_records
from moot.tasks.extract import canonical_number, last_number, numbers_equal

OPTIONAL = ("id",)  # the key of ``fields`` every format may be given; each format names those it needs
CHOICE_SEPARATOR = "|"  # joins the choices in one CSV cell
MIN_CHOICES = 2
NUMBER_REQUEST = "Make sure to state your answer at the end of the response."
TEXT_REQUEST = 'Make sure to state your answer at the end of the response, as "Answer: <your answer>".'


def fields_problem(format: str, fields: Mapping[str, str]) -> str | None:
    """Why ``fields`` does not suit ``format`` (a key missing or unknown, a column name empty), or None."""
    required = FILE_FORMATS.lookup(format).required
    missing = [key for key in required if key not in fields]
    if missing:
        return f"format {format} needs fields {', '.join(missing)} (the file's column for each)"
    unknown = [key for key in fields if key not in (*required, *OPTIONAL)]
    if unknown:
        return f"format {format} takes fields {', '.join((*required, *OPTIONAL))}; unknown: {', '.join(unknown)}"
    empty = [key for key, column in fields.items() if not column.strip()]
    if empty:
        return f"fields {', '.join(empty)}: the column name is empty"
    return None


def template_names(template: str) -> list[str]:
    """The names a prompt template fills in, in order; a ConfigError for a malformed template (an
    unmatched brace) or a placeholder that is not a plain name ("{a.b}", "{a[0]}", "{a!r}", "{a:>5}")."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ConfigError(
            f"prompt template {template[:60]!r}: {exc} (write {{{{ and }}}} for literal braces)"
        ) from None
    names = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name or not re.fullmatch(r"[^.\[\]{}!:]+", name) or spec or conversion:
            shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise ConfigError(f"prompt template: {shown} is not a field name in braces, such as {{question}}")
        names.append(name)
    return names


def prompt_problem(template: str, fields: Mapping[str, str]) -> str | None:
    """Why ``template`` cannot be a prompt (malformed, or naming the gold answer), or None."""
    try:
        names = template_names(template)
    except ConfigError as exc:
        return str(exc)
    gold = ("answer", fields.get("answer", "answer"))
    if any(name in gold for name in names):
        return "the prompt template may not show the gold answer ({answer})"
    return None


# -- text answers --------------------------------------------------------------------------------------

_ANSWER_MARK = re.compile(r"(?i:\banswer\s*:|\banswer\s+is\b\s*:?)")  # "Answer:", "(the|my final) answer is"
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalise(text: str) -> str:
    """SQuAD's answer normalisation (its evaluation script's ``normalize_answer``): lower case, punctuation
    removed (Unicode punctuation too, where SQuAD removes ASCII only), the articles a, an and the removed,
    whitespace collapsed. "The Eiffel Tower." and "eiffel tower" are both "eiffel tower"."""
    lowered = text.lower()
    kept = "".join(c for c in lowered if c not in string.punctuation and not unicodedata.category(c).startswith("P"))
    return " ".join(_ARTICLES.sub(" ", kept).split())


def text_answer(reply: str) -> str | None:
    """A reply's stated answer: the text after its last "Answer:" or "answer is" ("the answer is", "my final
    answer is") to that line's end (the next non-empty line when nothing follows on it), else its last
    non-empty line; stripped. None when there is none, or it is nothing but punctuation and articles."""
    marks = list(_ANSWER_MARK.finditer(reply))
    if marks:
        after = reply[marks[-1].end() :]
        lines = [line.strip() for line in after.split("\n")]
        found = lines[0] or next((line for line in lines[1:] if line), "")
    else:
        found = next((line.strip() for line in reversed(reply.split("\n")) if line.strip()), "")
    return found if normalise(found) else None


# -- the task ------------------------------------------------------------------------------------------


class DataFileTask(DatasetTask):
    """A task read from a user's data file: the rows as the format reads them, the columns ``fields``
    names, the prompt ``prompt`` renders. Built (and its file read and checked) by ``data_file_task``."""

    format: ClassVar[str]
    required: ClassVar[tuple[str, ...]] = ("question", "answer")  # the keys ``fields`` must give
    score: Callable[[str, Question], bool]  # each format's own comparison (a method of every format's class)
    answer_instruction: str
    description = "questions from a data file"
    licence = "unknown (a local file)"
    data_splits = (FILE_SPLIT,)

    def __init__(self, name: str, path: str | Path, fields: Mapping[str, str], prompt: str | None = None) -> None:
        super().__init__(source=DataSource("file", str(path)))
        self.name = name
        self.fields = dict(fields)
        self.prompt_template = prompt
        self.source_url = str(path)

    # -- reading rows

    def read_file(self, path: Path) -> Iterable[Row]:
        if not path.is_file():
            raise ConfigError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
        return read_records(path)

    def column(self, key: str) -> str:
        return self.fields[key]

    def question_id(self, row: Row) -> str:
        if "id" in self.fields:
            return row.text_or_number(self.column("id")).strip()
        return str(row.number)

    def question_text(self, row: Row) -> str:
        """The row's question: the template filled in from the row, else the question column."""
        if self.prompt_template is None:
            return row.text_or_number(self.column("question")).strip()
        values = {}
        for name in template_names(self.prompt_template):
            column = self.fields.get(name, name)
            if column == self.fields.get("choices"):
                values[name] = ", ".join(self.choices(row))
            else:
                values[name] = row.text_or_number(column).strip()
        return self.prompt_template.format_map(values).strip()

    def choices(self, row: Row) -> list[str]:
        raise NotImplementedError

    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        raise NotImplementedError

    # -- what it says of itself

    def with_source(self, source: DataSource) -> Self:
        if source.kind == "file" and source.path == self.source.path:
            return self
        raise ConfigError(f"task {self.name} reads its data file {self.source.path}; it has no other source")

    def offline(self) -> str:
        try:
            return f"{len(self.items()):,} questions in {self.source.path}"
        except ConfigError as exc:
            return f"unavailable: {exc}"

    def card(self) -> TaskCard:
        return replace(super().card(), description=f"questions from {self.source.path} (format {self.format})")

    def provenance(self) -> dict[str, Any]:
        """The file (path and sha256), the format, the columns read and the prompt template."""
        path = Path(str(self.source.path))
        return {
            "task": self.name,
            "source": "file",
            "file": str(path),
            "sha256": file_sha256(path) if path.is_file() else None,
            "format": self.format,
            "fields": dict(self.fields),
            "prompt": self.prompt_template,
        }


class NumberFileTask(DataFileTask):
    """``format = "number"``: a numeric gold, the last number of a reply, numeric equality."""

    format = "number"
    answer_instruction = NUMBER_REQUEST
    metric_description = "accuracy (numeric equality)"

    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        column = self.column("answer")
        value = row.get(column)
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise row.error(column, f"must be a number (format number), got {type(value).__name__}")
        written = row.text_or_number(column)
        gold = canonical_number(written.strip())
        if gold is None:
            raise row.error(column, f"must be a number (format number), got {written[:40]!r}")
        return [Question(id=self.question_id(row), prompt=self.question_text(row), gold=gold)]

    def render(self, question: Question) -> str:
        return f"{question.prompt} {self.answer_instruction}"

    def extract(self, text: str) -> Extraction:
        return Extraction.of(last_number(text))

    def score(self, answer: str, question: Question) -> bool:
        return numbers_equal(answer, question.gold)


class TextFileTask(DataFileTask):
    """``format = "text"``: a string gold, the reply's stated answer, normalised exact match."""

    format = "text"
    answer_instruction = TEXT_REQUEST
    metric_description = (
        "accuracy (normalised exact match, as SQuAD: lower case, punctuation and articles removed, "
        "whitespace collapsed)"
    )

    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        column = self.column("answer")
        gold = row.text_or_number(column).strip()
        if not normalise(gold):
            raise row.error(column, f"is {gold[:40]!r}: nothing is left of it to compare once normalised")
        return [Question(id=self.question_id(row), prompt=self.question_text(row), gold=gold)]

    def render(self, question: Question) -> str:
        return f"{question.prompt} {self.answer_instruction}"

    def extract(self, text: str) -> Extraction:
        return Extraction.of(text_answer(text))

    def score(self, answer: str, question: Question) -> bool:
        return normalise(answer) == normalise(question.gold)


class ChoiceFileTask(DataFileTask, MultipleChoiceTask):
    """``format = "choice"``: lettered choices in Du et al.'s MMLU wording; a reply's letter must be one
    of its question's."""

    format = "choice"
    required = ("question", "answer", "choices")
    letters = LETTERS
    metric_description = "accuracy (the chosen letter)"

    def choices(self, row: Row) -> list[str]:
        column = self.column("choices")
        value = row.get(column)
        if row.from_csv and isinstance(value, str):
            parts = [part.strip() for part in value.split(CHOICE_SEPARATOR)]
            if any(not part for part in parts):
                raise row.error(column, f"has an empty choice (CSV: the choices joined by {CHOICE_SEPARATOR!r})")
            found = parts
        else:
            found = [c.strip() for c in row.texts(column)]
        if not MIN_CHOICES <= len(found) <= len(LETTERS):
            raise row.error(column, f"must have {MIN_CHOICES} to {len(LETTERS)} choices, got {len(found)}")
        return found

    def gold_index(self, row: Row, choices: list[str]) -> int:
        """The gold's choice: a letter, a 0-based index or a choice's text (one reading, or all agreeing)."""
        column = self.column("answer")
        value = row.get(column)
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise row.error(column, f"must be a letter, a 0-based index or a choice's text, got {value!r}")
        written = str(value).strip()
        readings: dict[str, int] = {}
        if len(written) == 1 and written.upper() in LETTERS[: len(choices)]:
            readings["a letter"] = LETTERS.index(written.upper())
        numeric = isinstance(value, int) or (row.from_csv and written.isascii() and written.isdigit())
        if numeric and len(written) < 4 and 0 <= int(written) < len(choices):
            readings["an index"] = int(written)
        if written in choices:
            readings["a choice's text"] = choices.index(written)
        if not readings:
            raise row.error(
                column,
                f"is {written[:40]!r}: not a letter A-{LETTERS[len(choices) - 1]}, a 0-based index below "
                f"{len(choices)} or one of the {len(choices)} choices",
            )
        if len(set(readings.values())) > 1:
            said = ", ".join(f"as {how} choice {LETTERS[i]}" for how, i in readings.items())
            raise row.error(column, f"is {written[:40]!r}: ambiguous ({said})")
        return next(iter(readings.values()))

    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        choices = self.choices(row)
        gold = self.gold_index(row, choices)
        qid, stem = self.question_id(row), self.question_text(row)
        return [self.choice_question(row, qid, stem, choices, gold, self.column("answer"))]

    def items(self, split: str | None = None) -> list[Question]:
        """The questions; ``letters`` becomes the letters of the question with most choices."""
        questions = super().items(split)
        self.letters = LETTERS[: max(len(q.metadata["choices"]) for q in questions)]
        return questions

    def read_reply(self, text: str, question: Question) -> Extraction:
        """The reply's letter, among its question's letters only (a "(D)" of a 3-choice question is none)."""
        return Extraction.of(choice_letter(text, LETTERS[: len(question.metadata.get("choices", LETTERS))]))

    def read_answer(self, text: str, question: Question) -> Extraction:
        letters = LETTERS[: len(question.metadata.get("choices", LETTERS))]
        return Extraction.of(field_letter(text, question, letters))


def _format_problem(name: str) -> str | None:
    return None if name.isidentifier() else f"a data file format's name is one word, got {name!r}"


# name -> the task class that reads a data file in that format (a plug-in may register its own)
FILE_FORMATS: Registry[type[DataFileTask]] = Registry("format", check_name=_format_problem)
for _cls in (NumberFileTask, ChoiceFileTask, TextFileTask):
    FILE_FORMATS.register(_cls.format, _cls)


def unknown_format(format: str) -> str | None:
    """'unknown format ...; choose ...' when no data-file format is registered as ``format``, else None."""
    if format in FILE_FORMATS:
        return None
    known = list(FILE_FORMATS)
    return f"unknown format {format!r}; choose {', '.join(known[:-1])} or {known[-1]}"


def data_file_task(
    name: str, path: str | Path, format: str, fields: Mapping[str, str], prompt: str | None = None
) -> DataFileTask:
    """The task of ``format`` over the data file ``path`` (JSONL, CSV or Parquet), reading the columns
    ``fields`` names; the file is read and every row checked now (a bad row is a ConfigError naming the
    file, the row and the field)."""
    if (problem := unknown_format(format)) is not None:
        raise ConfigError(problem)
    problem = fields_problem(format, fields) or (prompt_problem(prompt, fields) if prompt is not None else None)
    if problem is not None:
        raise ConfigError(problem)
    task = FILE_FORMATS[format](name, path, fields, prompt)
    task.items()
    return task
