"""Readers validated before they judge: each reader's accuracy on a hand-labelled sample of a store's replies.

A reader that misreads a model's answers (a parser that cannot read ``\\(\\boxed{N}\\).``, a confidence line read
as the answer) would make every verdict look fragile. So each reader is checked on a sample of real stored replies
that a person has labelled with the answer a careful reader reads (``benchmarks/reader_sample.py`` draws one;
docs/results/readers/ holds the published stores' samples). A line of a sample is a JSON object naming the stored
reply (``condition``, ``task``, ``question_id``, ``seed``, ``round``, ``agent``), its ``text`` and its ``label``:
the answer in the task's canonical form (a plain number, a letter), or null when the reply commits to none; a null
label counts as labelled only with a ``note`` saying why (an unlabelled line has neither, and is skipped).

A reader's accuracy on the store is the share of the labelled replies it applies to whose reading equals the label,
compared as the task compares answers (``Task.score`` with the label as the gold: "413.0" is 413, "b" is B); no
reading and a null label agree. The readers are those of ``moot.analysis.readers``, with moot's reader as moot's
current code reads each reply (``ProtocolSpec.read_reply``: a stated confidence removed, then the task's or Choi
et al.'s reader), so that a fix to it shows here; ``stored`` is the answers stored in the turns, which moot's
verdicts rest on. A reader below ``TRUSTED`` does not mark a verdict fragile (``readers.breaking``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from moot.analysis import stats
from moot.analysis.readers import MOOT, READERS, TRUSTED, reading
from moot.analysis.transcripts import AnalysisError, open_run
from moot.runner.config import ResolvedCondition
from moot.runner.store import RunStore
from moot.tasks import get_task
from moot.tasks.base import Question, Task

__all__ = [
    "STORED",
    "TRUSTED",
    "Disagreement",
    "LabelledReply",
    "ReaderAccuracy",
    "accuracies",
    "agrees",
    "default_store",
    "load_sample",
    "reader_accuracy",
]

STORED = "stored"  # the answers stored in the turns: what moot's verdicts rest on
STORES = Path("runs/replicate")  # where benchmarks/reader_sample.py draws samples from
Place = tuple[str, str, str, int, int, str]  # a stored reply: condition, task, question id, seed, round, agent


@dataclass(frozen=True)
class LabelledReply:
    """One line of a sample: a stored reply, its text and the answer a careful reader reads in it."""

    index: int  # the line's place in the sample, from 0
    store: str
    place: Place
    text: str
    label: str | None
    note: str

    @property
    def task(self) -> str:
        return self.place[1]

    @property
    def labelled(self) -> bool:
        """A label, or a null label with a note saying why the reply commits to no answer."""
        return self.label is not None or bool(self.note.strip())


@dataclass(frozen=True)
class Disagreement:
    """A labelled reply that a reader reads otherwise."""

    index: int
    label: str | None
    reading: str | None
    text: str


@dataclass(frozen=True)
class ReaderAccuracy:
    """A reader's agreement with the labels of a store's sample: ``agreed`` of the ``n`` labelled replies it
    applies to, the Wilson interval of that share, and the replies it reads otherwise."""

    store: str
    reader: str
    n: int
    agreed: int
    interval: stats.Interval
    disagreements: tuple[Disagreement, ...]

    @property
    def accuracy(self) -> float:
        """agreed / n (NaN when the reader applies to no labelled reply)."""
        return self.agreed / self.n if self.n else float("nan")

    @property
    def trusted(self) -> bool:
        """Whether the reader reads the store's replies well enough to judge a verdict (``TRUSTED``)."""
        return self.n > 0 and self.accuracy >= TRUSTED


def load_sample(path: Path | str) -> tuple[LabelledReply, ...]:
    """The lines of a sample file (JSON lines, see the module's docstring), labelled or not; a line that is not a
    JSON object naming its reply is an AnalysisError naming the line."""
    out: list[LabelledReply] = []
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            place: Place = (
                str(item["condition"]),
                str(item["task"]),
                str(item["question_id"]),
                int(item["seed"]),
                int(item["round"]),
                str(item["agent"]),
            )
            label = item.get("label")
            out.append(
                LabelledReply(
                    len(out),
                    str(item.get("store", "")),
                    place,
                    str(item["text"]),
                    None if label is None else str(label),
                    str(item.get("note") or ""),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise AnalysisError(f"{path}, line {i + 1}: not a labelled reply ({exc!r})") from None
    return tuple(out)


def default_store(sample: Sequence[LabelledReply]) -> Path:
    """The store a sample was drawn from by ``benchmarks/reader_sample.py``: runs/replicate/STORE.sqlite, STORE the
    sample's ``store``; an AnalysisError when the sample names none or the store is not there."""
    names = {r.store for r in sample}
    path = STORES / f"{names.pop()}.sqlite" if len(names) == 1 and "" not in names else None
    if path is None or not path.is_file():
        raise AnalysisError(
            "name the store the sample was drawn from with --store"
            + (f" (no {path})" if path is not None else " (the sample names no one store)")
        )
    return path


def agrees(task: Task, reading: str | None, label: str | None) -> bool:
    """Whether a reading is the label, compared as the task compares answers (``Task.score``, the label as the
    gold); no reading agrees with a null label only."""
    if reading is None or label is None:
        return reading is None and label is None
    return task.score(reading, Question(id="label", prompt="", gold=label))


def _stored(store: RunStore, wanted: set[Place]) -> dict[Place, tuple[str, str | None]]:
    """The text and stored answer of each wanted reply."""
    out = {}
    for row in store.rows("turns"):
        place = (row["condition"], row["task"], row["question_id"], row["seed"], row["round"], row["agent"])
        if place in wanted:
            out[place] = (row["text"], row["answer"])
    return out


def _readings(
    reply: LabelledReply,
    task: Task,
    condition: ResolvedCondition,
    question: Question,
    stored: str | None,
) -> dict[str, str | None]:
    """The reply as each reader reads it (a reader that does not apply is absent)."""
    out: dict[str, str | None] = {MOOT: condition.protocol.read_reply(task, question, reply.text)[0].answer}
    out[STORED] = stored
    for name, reader in READERS.items():
        if name != MOOT and (read := reading(reader, reply.task, condition, question)) is not None:
            out[name] = read(reply.text)
    return out


def check_sample(sample: Sequence[LabelledReply], store: RunStore | Path | str) -> tuple[ReaderAccuracy, ...]:
    """Every reader's accuracy on the labelled replies of ``sample`` (see the module's docstring), read with the
    store's conditions and questions: moot's, the stored answers', then the other readers'. A reply the store does
    not hold, as the sample gives it, is an AnalysisError: a sample is checked against the store it was drawn from."""
    opened, owned = open_run(store)
    try:
        conditions, questions = opened.conditions(), opened.questions()
        labelled = [r for r in sample if r.labelled]
        stored = _stored(opened, {r.place for r in labelled})
        path = opened.path
    finally:
        if owned:
            opened.close()
    store_name = (sample[0].store if sample else "") or path.stem
    tallies: dict[str, list[tuple[LabelledReply, str | None, bool]]] = {r: [] for r in (MOOT, STORED, *READERS)}
    for reply in labelled:
        condition, question = conditions.get(reply.place[0]), questions.get((reply.task, reply.place[2]))
        if reply.place not in stored or stored[reply.place][0] != reply.text or condition is None or question is None:
            raise AnalysisError(
                f"reply {reply.index} of the sample ({', '.join(map(str, reply.place))}) is not in {path} as the "
                "sample gives it: check a sample against the store it was drawn from"
            )
        task = get_task(reply.task)
        for reader, read in _readings(reply, task, condition, question, stored[reply.place][1]).items():
            tallies[reader].append((reply, read, agrees(task, read, reply.label)))
    return tuple(_accuracy(store_name, reader, rows) for reader, rows in tallies.items())


def _accuracy(store: str, reader: str, rows: Sequence[tuple[LabelledReply, str | None, bool]]) -> ReaderAccuracy:
    """A reader's tally as its accuracy with a Wilson interval and its disagreements."""
    agreed = sum(ok for _, _, ok in rows)
    share = stats.wilson(agreed, len(rows))
    missed = tuple(Disagreement(r.index, r.label, read, r.text) for r, read, ok in rows if not ok)
    return ReaderAccuracy(store, reader, len(rows), agreed, stats.Interval(share.low, share.high), missed)


def reader_accuracy(sample_path: Path | str, store_path: RunStore | Path | str) -> tuple[ReaderAccuracy, ...]:
    """Every reader's accuracy on the labelled sample at ``sample_path``, checked against the store it was drawn
    from (``check_sample``): moot's current reader, the stored answers, the paper's and the strict reader."""
    return check_sample(load_sample(sample_path), store_path)


def accuracies(results: Sequence[ReaderAccuracy]) -> dict[str, float]:
    """The validated accuracies a verdict takes (``readers.breaking``): reader -> accuracy, for the readers that
    apply to some labelled reply. moot's verdict reader keeps the stored answers, so its accuracy is theirs."""
    measured = {r.reader: r.accuracy for r in results if r.n > 0}
    source = {name: STORED if name == MOOT else name for name in READERS}
    return {name: measured[source[name]] for name in READERS if source[name] in measured}
