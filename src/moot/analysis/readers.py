"""Reader sensitivity: each verdict re-derived under the documented readers of the agents' replies.

A verdict (condition A does better than B, significantly or not) should not rest on how one reply is read.
Three readers are documented:

- ``moot``: moot's own reading, the answers stored in the turns (not re-read);
- ``paper``: the paper's own reference parser: Du et al.'s ``parse_answer`` for arithmetic
  (math/gen_math.py), GSM8K (gsm/eval_gsm.py) and MMLU (mmlu/eval_mmlu.py); for a condition with Choi
  et al.'s templates (history fresh, templates "choi": the DAR presets, mad-m2, society-fresh) Choi et al.'s
  evaluator, which moot already reads them by; no other task has one (the reader does not apply);
- ``strict``: only the format the prompt asked for: arithmetic, a number ending the reply; GSM8K, the last
  ``\\boxed{}``; multiple choice, the last "(X)"; knights and knaves, the last "Answer:" line (no fallback to
  the final paragraph, as moot's reading has); Choi et al.'s templates, "{final answer: X}".

A result is re-read from its stored replies, with no model call: every turn of its final round is read again
and voted on with the condition's own aggregation and tie rule (a random tie's recorded seed reused). A
condition whose final answer is a judge's or moderator's keeps moot's reading ("not re-read"). Where moot's
reading drove the debate itself (components that declare ``reads_answers``: consensus or stable stopping, distinct-answer retention, the last-vote cue, confidence
weighting, diversity-aware initialisation), only the final vote is re-read: the debate stays as it ran.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from moot.analysis import stats, stats_repeats
from moot.analysis.formatting import DASH, fixed, p_value
from moot.debate.protocols import ProtocolSpec
from moot.debate.records import DebateResult, FinalStatus, Vote
from moot.errors import ConfigError, MootError, unknown_name
from moot.runner.config import ResolvedCondition
from moot.runner.records import StoredResult
from moot.seeds import derive_seed
from moot.tasks import get_task
from moot.tasks.answer_formats import ANSWER_FORMATS, AnswerFormat, ReadFn
from moot.tasks.base import Question, Task
from moot.tasks.extract import boxed_contents, canonical_number
from moot.tasks.knights import MAX_PEOPLE, MIN_PEOPLE, NAMES, read_answer_line

MOOT = "moot"


# -- the readers' parsers ----------------------------------------------------------------------------
def du_arithmetic(text: str) -> str | None:
    """Du et al.'s arithmetic reading (math/gen_math.py): commas become full stops, the reply is split on
    spaces and the last piece that ``float()`` accepts is the answer ("is 550." -> 550; "**550**" is not
    read). A NaN or infinity, which Du's code would keep as an answer that never scores, is None here."""
    for part in reversed(text.replace(",", ".").split(" ")):
        try:
            value = float(part)
        except ValueError:
            continue
        return canonical_number(repr(value)) if math.isfinite(value) else None
    return None


_DU_GSM_BRACES = re.compile(r"\{([0-9.,$]*)\}")
_DU_GSM_NUMBER = re.compile(r"\d+\.?\d*")


def du_gsm8k(text: str) -> str | None:
    """Du et al.'s GSM8K reading (gsm/eval_gsm.py ``parse_answer``, then ``solve_math_problems``): the last
    ``{...}`` holding only digits, ".", "," and "$" (so "\\boxed{18}" but not "{-5}"), its digits and full
    stops kept; else the last unsigned number in the reply. Du's evaluator scores a reply with neither as
    correct; here it is None (unparsed), never correct."""
    for body in reversed(_DU_GSM_BRACES.findall(text)):
        if digits := re.sub(r"[^0-9.]", "", body):
            return canonical_number(digits)
    numbers = _DU_GSM_NUMBER.findall(text)
    return canonical_number(numbers[-1]) if numbers else None


_DU_CHOICE = re.compile(r"\((\w)\)")


def du_choice(text: str) -> str | None:
    """Du et al.'s MMLU reading (mmlu/eval_mmlu.py ``parse_answer``): the last "(X)" with X one word
    character, upper-cased. Their fallback to the reply's last number (a vote that can never be right) is
    None here."""
    found = _DU_CHOICE.findall(text)
    return found[-1].upper() if found else None


_STRICT_NUMBER = re.compile(r"[-\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_STRICT_BOXED = re.compile(r"\\boxed\{(.*)\}")


def strict_number_at_end(text: str) -> str | None:
    """A number that ends the reply (Du et al.'s arithmetic prompt: "state your answer at the end"): the
    last whitespace-separated token, less markdown and LaTeX around it ("**", "_", "`", "$") and a closing
    "." or "!", or a ``\\boxed{N}`` token, read as one number; else None ("= 155**" -> 155, "$155$" -> 155,
    "\\boxed{-70} Both agents agree" -> None)."""
    tokens = text.split()
    if not tokens:
        return None
    token = tokens[-1].rstrip("*_`$.!").lstrip("*_`$")
    if boxed := _STRICT_BOXED.fullmatch(token):
        token = boxed.group(1).strip("$")
    return canonical_number(token) if _STRICT_NUMBER.fullmatch(token) else None


def strict_boxed(text: str) -> str | None:
    """The content of the reply's last ``\\boxed{}`` (the GSM8K prompt asks for one), when it is one number
    (a "$" or "\\$" around it allowed); else None. No other number in the reply is read."""
    contents = boxed_contents(text)
    if not contents:
        return None
    body = contents[-1].strip().replace("\\$", "").strip("$").strip()
    return canonical_number(body) if _STRICT_NUMBER.fullmatch(body) else None


_STRICT_CHOICE = re.compile(r"\(([A-J])\)")


def strict_choice(text: str) -> str | None:
    """The letter of the reply's last "(X)" (the multiple-choice prompt asks for "(X)"), X a capital
    letter A-J with nothing else inside the brackets; else None."""
    found = _STRICT_CHOICE.findall(text)
    return found[-1] if found else None


# -- the registry ------------------------------------------------------------------------------------
@functools.cache
def _task(name: str) -> Task | None:
    """The task called ``name`` (None when moot does not know it here)."""
    try:
        return get_task(name)
    except MootError:
        return None


def task_kind(name: str) -> str | None:
    """The answer format the task called ``name`` declares (``Task.answer_format``: "arithmetic", "gsm8k",
    "mmlu", "choice", "knights:<n>", or a plug-in's), the key of ``ANSWER_FORMATS``; None for free-form tasks
    and unknown ones."""
    return getattr(_task(name), "answer_format", None)


# moot's answer formats, registered where their readers are defined
ANSWER_FORMATS.register("arithmetic", AnswerFormat(du_arithmetic, strict_number_at_end))
ANSWER_FORMATS.register("gsm8k", AnswerFormat(du_gsm8k, strict_boxed))
ANSWER_FORMATS.register("mmlu", AnswerFormat(du_choice, strict_choice))
ANSWER_FORMATS.register("choice", AnswerFormat(None, strict_choice))
for _n in range(MIN_PEOPLE, MAX_PEOPLE + 1):  # knights and knaves: strictly, the last "Answer:" line naming all
    ANSWER_FORMATS.register(f"knights:{_n}", AnswerFormat(None, functools.partial(read_answer_line, names=NAMES[:_n])))


@dataclass(frozen=True)
class Reader:
    """A documented way to read a reply's final answer: ``role`` names the parser it takes from each answer
    format ("paper" or "strict"); ``None`` for moot's own reading, the answers stored in the turns."""

    name: str
    description: str
    role: Literal["paper", "strict"] | None

    @property
    def parsers(self) -> dict[str, ReadFn] | None:
        """Its parser of each answer format that has one (None for moot's reader)."""
        if self.role is None:
            return None
        found = {name: getattr(f, self.role) for name, f in ANSWER_FORMATS.items()}
        return {name: parser for name, parser in found.items() if parser is not None}

    def applies(self, task: str) -> bool:
        """Whether the reader reads ``task``'s replies (moot's always does)."""
        parsers = self.parsers
        return parsers is None or task_kind(task) in parsers

    def read(self, task: str, text: str) -> str | None:
        """``text`` read as a reply to ``task``: a canonical answer, or None. A ConfigError for moot's reader
        (it does not re-read) or a task the reader does not apply to."""
        kind = task_kind(task)
        parsers = self.parsers
        if parsers is None or kind is None or kind not in parsers:
            raise ConfigError(f"reader {self.name!r} does not read replies to task {task!r}")
        return parsers[kind](text)


READERS: dict[str, Reader] = {
    r.name: r
    for r in (
        Reader(MOOT, "moot's own reading: the answers stored in the turns", None),
        Reader(
            "paper",
            "the paper's own parser: Du et al.'s parse_answer (arithmetic, GSM8K, MMLU); Choi et al.'s evaluator "
            "for conditions with their templates",
            "paper",
        ),
        Reader(
            "strict",
            "only the format asked for: a number ending the reply (arithmetic), the last \\boxed{} (GSM8K), the "
            'last "(X)" (multiple choice), the last "Answer:" line (knights), "{final answer: X}" (Choi et al.\'s '
            "templates)",
            "strict",
        ),
    )
}


def get_reader(name: str) -> Reader:
    """The reader called ``name``; an unknown name is a ConfigError naming the known ones."""
    if name not in READERS:
        raise ConfigError(unknown_name("reader", name, READERS))
    return READERS[name]


# -- re-reading a stored result ----------------------------------------------------------------------
def choi_templates(condition: ResolvedCondition | None) -> bool:
    """The condition's prompts are Choi et al.'s templates (history fresh, templates "choi")."""
    if condition is None:
        return False
    history = condition.protocol.history
    return history.kind == "fresh" and getattr(history, "templates", "task") == "choi"


def rereadable(condition: ResolvedCondition | None) -> bool:
    """The condition's final answer is a vote of its agents' replies (peers, not a judge's or moderator's
    answer), so that another reader can re-derive it."""
    return condition is not None and condition.protocol.style.has_peers and not condition.protocol.judged


def driven_by_reading(condition: ResolvedCondition | None) -> tuple[str, ...]:
    """The components of the condition whose behaviour used moot's reading while the debate ran (those that
    declare ``reads_answers``: consensus or stable stopping, distinct-answer retention, the last-vote cue,
    confidence weighting, diversity-aware initialisation), so that only the final vote is re-read."""
    if condition is None:
        return ()
    return tuple(f"{c.kind} {c.family}" for c in condition.protocol.components() if c.reads_answers)


def reading(reader: Reader, task: str, condition: ResolvedCondition | None, question: Question) -> ReadFn | None:
    """How ``reader`` reads the replies of ``condition`` on ``task`` (None where it does not apply). With Choi
    et al.'s templates, "paper" and "strict" are their evaluator's reading (``choi_number``, ``choi_choice``)."""
    if reader.parsers is None:
        raise ConfigError("moot's reader keeps the stored answers: nothing to re-read")
    if choi_templates(condition):
        instance = _task(task)
        try:
            return instance.choi_wording(question).read if instance is not None else None
        except (MootError, NotImplementedError, AttributeError):
            return None  # a task without Choi et al.'s templates
    if not reader.applies(task):
        return None
    return functools.partial(reader.read, task)


def revote(result: DebateResult, protocol: ProtocolSpec, read: ReadFn, seed: int) -> Vote:
    """The final round's vote with every reply read by ``read`` (the earlier rounds' too, for an aggregation that
    scores every round), under the protocol's aggregation and tie rule; a random tie is broken with the seed the
    stored vote records (else the one the engine derives from the run's ``seed``, the question and the round)."""
    aggregation = protocol.aggregation
    rounds = result.rounds if aggregation.reads_rounds else result.rounds[-1:]
    read_rounds = [replace(r, turns=tuple(replace(t, answer=read(t.text)) for t in r.turns)) for r in rounds]
    last = read_rounds[-1]
    tie_seed = last.vote.tie_seed
    if tie_seed is None:
        tie_seed = derive_seed(seed, result.question.id, "tie", last.index)
    return aggregation.round_vote(read_rounds[:-1], last.turns, protocol.tie_rule, tie_seed)


def reread(stored: StoredResult, condition: ResolvedCondition | None) -> dict[str, bool | None]:
    """Whether the result is right under each reader, by name (None: the reader does not apply). A condition
    that is not re-read (``rereadable``) keeps moot's correctness under every reader; an errored result or
    one without rounds stays wrong."""
    result = stored.result
    out: dict[str, bool | None] = {MOOT: result.correct}
    task = _task(stored.task)
    for name, reader in READERS.items():
        if name == MOOT:
            continue
        if not rereadable(condition):
            out[name] = result.correct if condition is not None else None
            continue
        assert condition is not None
        read = reading(reader, stored.task, condition, result.question)
        if read is None or task is None:
            out[name] = None
        elif result.status == FinalStatus.ERROR or not result.rounds:
            out[name] = False
        else:
            winner = revote(result, condition.protocol, read, stored.seed).winner
            out[name] = winner is not None and task.score(winner, result.question)
    return out


def condition_note(condition: ResolvedCondition | None) -> str:
    """How a condition is re-read, in words."""
    if condition is None:
        return "not re-read: the condition is not in the store's list"
    if not rereadable(condition):
        return "not re-read: the final answer is a judge's or moderator's"
    parts = driven_by_reading(condition)
    if parts:
        return f"final vote re-read; {', '.join(parts)} ran on moot's reading"
    return "re-read"


# -- verdicts under each reader ------------------------------------------------------------------------
Correctness = Mapping[str, Mapping[object, Mapping[int, bool | None]]]  # condition -> question -> seed -> right


def _repeats(by_question: Mapping[object, Mapping[int, bool | None]]) -> dict[object, dict[int, bool]] | None:
    """The questions' correctness by seed; None when some result has no value (the reader does not apply)."""
    out: dict[object, dict[int, bool]] = {}
    for q, seeds in by_question.items():
        for s, v in seeds.items():
            if v is None:
                return None
            out.setdefault(q, {})[s] = v
    return out


Verdict = tuple[int, bool]  # a difference's direction (-1, 0, 1) and whether its p is below 0.05
# The validated accuracies: reader -> its accuracy on a hand-labelled sample of the store's replies
# (``moot.analysis.reader_check``); a reader absent is unvalidated.
Accuracies = Mapping[str, float]
# The accuracy a reader needs on the store's labelled sample to judge a verdict: below it, the reader misreads
# the model's replies often enough (one in twenty) that its disagreement says more about the reader than the verdict.
TRUSTED = 0.95


def misread(accuracies: Accuracies | None) -> tuple[str, ...]:
    """The validated readers below ``TRUSTED``, in order."""
    return tuple(r for r, a in (accuracies or {}).items() if not a >= TRUSTED)


def breaking(verdicts: Sequence[tuple[str, Verdict | None]], accuracies: Accuracies | None = None) -> tuple[str, ...]:
    """The readers whose verdict differs from moot's reader's, in order (None: the reader does not apply,
    and breaks nothing; nor does any reader where moot's does not apply, nor a reader whose validated accuracy
    is below ``TRUSTED``: ``misread``). The rule of every readers column."""
    base = dict(verdicts).get(MOOT)
    if base is None:
        return ()
    skip = misread(accuracies)
    return tuple(r for r, v in verdicts if v is not None and r != MOOT and r not in skip and v != base)


def robustness(breaks: Sequence[str], accuracies: Accuracies | None = None) -> str:
    """ "robust", or "breaks under: paper, strict", then the readers that misread the model with their accuracy:
    "robust (paper misreads this model: 61%)". The text of every readers column."""
    text = "robust" if not breaks else f"breaks under: {', '.join(breaks)}"
    notes = [f"{r} misreads this model: {_percent(accuracies[r])}" for r in misread(accuracies) if accuracies]
    return f"{text} ({'; '.join(notes)})" if notes else text


def _percent(accuracy: float) -> str:
    """An accuracy in percent, "61%"; where a whole percent would round up to ``TRUSTED``, one decimal rounded
    down ("94.9%")."""
    return f"{math.floor(accuracy * 1000) / 10:.1f}%" if round(accuracy, 2) >= TRUSTED else f"{accuracy:.0%}"


@dataclass(frozen=True)
class ReaderVerdict:
    """One pair under one reader: the paired comparison and the p its verdict rests on (Holm-adjusted where
    the family is adjusted); ``comparison`` None: the reader does not apply to both conditions."""

    reader: str
    comparison: stats.PairedComparison | None
    p: float | None

    @property
    def applies(self) -> bool:
        return self.comparison is not None

    @property
    def direction(self) -> int:
        """The sign of the difference A - B (0: none)."""
        d = self.comparison.difference if self.comparison is not None else 0.0
        return (d > 0) - (d < 0)

    @property
    def significant(self) -> bool:
        return self.p is not None and self.p < 0.05

    @property
    def text(self) -> str:
        """E.g. "A better, significant", "no difference", "not applicable"."""
        if not self.applies:
            return "not applicable"
        way = {1: "A better", -1: "B better", 0: "no difference"}[self.direction]
        return f"{way}, {'significant' if self.significant else 'not significant'}"


@dataclass(frozen=True)
class PairReaders:
    """A paired comparison under every reader; ``adjusted``: p is Holm-adjusted over the comparison's family."""

    a: str
    b: str
    verdicts: tuple[ReaderVerdict, ...]
    adjusted: bool
    accuracies: Accuracies | None = None  # validated on the store (``breaking``); None: unvalidated

    def under(self, reader: str) -> ReaderVerdict:
        return next(v for v in self.verdicts if v.reader == reader)

    @property
    def breaks(self) -> tuple[str, ...]:
        """The applicable readers whose verdict (direction, significance) differs from moot's (``breaking``)."""
        return breaking(
            [(v.reader, (v.direction, v.significant) if v.applies else None) for v in self.verdicts], self.accuracies
        )

    @property
    def robust(self) -> bool:
        return not self.breaks

    @property
    def summary(self) -> str:
        """ "robust" or "breaks under: paper, strict" (``robustness``)."""
        return robustness(self.breaks, self.accuracies)


@dataclass(frozen=True)
class ConditionReaders:
    """A condition's accuracy under each reader (None: the reader does not apply) and how it is re-read."""

    name: str
    accuracy: tuple[tuple[str, stats.Proportion | None], ...]
    note: str


@dataclass(frozen=True)
class TaskReaders:
    """A task's reader sensitivity: each condition's accuracy and each compared pair's verdicts by reader."""

    conditions: tuple[ConditionReaders, ...]
    pairs: tuple[PairReaders, ...]
    adjusted: bool


def reader_pairs(
    by_reader: Mapping[str, Correctness],
    pairs: Sequence[tuple[str, str]],
    adjust: bool,
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
    accuracies: Accuracies | None = None,
) -> tuple[PairReaders, ...]:
    """Each pair's paired comparison under each reader (``stats_repeats.compare_repeats`` on the questions both
    answered), with Holm's adjustment over the pairs the reader applies to where ``adjust``; ``accuracies``: the
    readers' validated accuracies on the store (``breaking``)."""
    verdicts: dict[tuple[str, str], list[ReaderVerdict]] = {pair: [] for pair in pairs}
    for name, correctness in by_reader.items():
        compared: list[tuple[tuple[str, str], stats.PairedComparison]] = []
        for a, b in pairs:
            ra, rb = _repeats(correctness.get(a, {})), _repeats(correctness.get(b, {}))
            if ra is None or rb is None:
                verdicts[(a, b)].append(ReaderVerdict(name, None, None))
                continue
            common = [q for q in ra if q in rb]
            comparison = stats_repeats.compare_repeats(
                [ra[q] for q in common], [rb[q] for q in common], seed, resamples
            )
            compared.append(((a, b), comparison))
        ps = [c.mcnemar_p for _, c in compared]
        adjusted = stats.holm(ps) if adjust and ps else ps
        for (pair, comparison), p in zip(compared, adjusted):
            verdicts[pair].append(ReaderVerdict(name, comparison, p))
    order = list(by_reader)
    return tuple(
        PairReaders(a, b, tuple(sorted(verdicts[(a, b)], key=lambda v: order.index(v.reader))), adjust, accuracies)
        for a, b in pairs
    )


def task_readers(
    by_reader: Mapping[str, Correctness],
    conditions: Mapping[str, ResolvedCondition | None],
    pairs: Sequence[tuple[str, str]],
    adjust: bool,
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
    accuracies: Accuracies | None = None,
) -> TaskReaders:
    """Every condition's accuracy and every pair's verdicts under each reader (see ``reader_pairs``)."""
    rows = []
    for name, condition in conditions.items():
        accuracy = []
        for reader, correctness in by_reader.items():
            repeats = _repeats(correctness.get(name, {}))
            value = stats_repeats.question_accuracy(list(repeats.values()), seed, resamples) if repeats else None
            accuracy.append((reader, value))
        rows.append(ConditionReaders(name, tuple(accuracy), condition_note(condition)))
    return TaskReaders(tuple(rows), reader_pairs(by_reader, pairs, adjust, seed, resamples, accuracies), adjust)


def correctness_by_reader(
    rereads: Mapping[tuple[str, str, str, int], Mapping[str, bool | None]], task: str
) -> dict[str, dict[str, dict[object, dict[int, bool | None]]]]:
    """Re-read results (by condition, task, question id, seed) regrouped per reader for one task:
    reader -> condition -> question id -> seed -> right (None: the reader does not apply)."""
    out: dict[str, dict[str, dict[object, dict[int, bool | None]]]] = {name: {} for name in READERS}
    for (condition, t, question, seed), values in rereads.items():
        if t != task:
            continue
        for name in READERS:
            out[name].setdefault(condition, {}).setdefault(question, {})[seed] = values.get(name)
    return out


# -- text ------------------------------------------------------------------------------------------------
def readers_note(task: str) -> str:
    """The readers in one line, and which do not apply to ``task``."""
    described = "; ".join(f"{r.name}: {r.description}" for r in READERS.values())
    missing = [r.name for r in READERS.values() if not r.applies(task)]
    absent = (
        f" No {' or '.join(missing)} reader exists for {task} (except under Choi et al.'s templates): not applicable."
        if missing
        else ""
    )
    return f"Readers: {described}.{absent}"


def verdict_cells(v: ReaderVerdict) -> tuple[str, str, str]:
    """(A - B, p, verdict) as table cells."""
    if v.comparison is None:
        return DASH, DASH, v.text
    return fixed(v.comparison.difference, 3, sign=True), p_value(v.p), v.text
