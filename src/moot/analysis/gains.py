"""Debate gains split into voting and exchange: what a debate gains over a single agent, in two parts.

A debate D whose final answer is a vote of its agents (two or more rounds) is compared with a single agent S.
Its round 0 is a vote too: V_D, the majority of D's own round-0 answers under D's aggregation and tie rule (the
vote each stored result records in ``rounds[0].vote``, its winner scored as the task scores it). Per question,

- total = D - S, what the debate gains;
- voting = V_D - S, what voting on independent answers alone gains;
- exchange = D - V_D, what the agents' reading of each other adds on top of that vote,

so that voting + exchange = total for every question (accuracies over the same seeds). Each part is a paired
comparison (``stats_repeats.compare_repeats``: exact McNemar test, a sign test on questions with repeated seeds, and a
cluster bootstrap interval), on the question x seed results that both D and S have. Holm's adjustment runs per
task over both parts of every debate in the table; the totals get their own Holm family (every debate against
its single agent in the table).

A condition is not split where its final answer is not a vote of its agents (Liang et al.'s moderator, a judge)
or where it has one round (a vote with no exchange: all of its difference is voting); the table says why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from pathlib import Path
from typing import Literal, Protocol

from moot.analysis import stats, stats_repeats
from moot.analysis.columns import Column, Table, table
from moot.analysis.formatting import DASH, fixed, interval, p_value
from moot.analysis.transcripts import open_run
from moot.debate.protocols import ProtocolSpec
from moot.debate.records import DebateResult
from moot.runner.records import StoredResult
from moot.runner.store import RunStore

ALPHA = 0.05  # a part carries an effect when its Holm p is below this
PartName = Literal["total", "voting", "exchange"]
Carrier = Literal["voting", "exchange", "both", "neither"]


class GainUnit(Protocol):
    """One result as the split needs it: a ``GainRow``, or a row of docs/results/*.csv (``ResultRow``)."""

    @property
    def condition(self) -> str: ...
    @property
    def task(self) -> str: ...
    @property
    def question_id(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def correct(self) -> bool: ...
    @property
    def round0_correct(self) -> bool | None: ...


def round0_correct(result: DebateResult) -> bool:
    """Whether the result's round-0 vote is right: its recorded winner is the answer of a round-0 turn that the
    task scored right (as the report's ``RoundView.winner_correct``). No winner (every reply unparsed, a tie
    under the abstain rule) or no round (an errored result) is wrong."""
    if not result.rounds:
        return False
    first = result.rounds[0]
    winner = first.vote.winner
    return winner is not None and any(t.correct and t.answer == winner for t in first.turns)


@dataclass(frozen=True)
class GainRow:
    """A stored result's correctness and its round-0 vote's (``round0_correct``), by condition, task, question
    and seed: moot's reading of the answers."""

    condition: str
    task: str
    question_id: str
    seed: int
    correct: bool
    round0_correct: bool | None

    @classmethod
    def of(cls, stored: StoredResult) -> GainRow:
        result = stored.result
        return cls(
            stored.condition, stored.task, result.question.id, stored.seed, result.correct, round0_correct(result)
        )


# -- which conditions split ---------------------------------------------------------------------------------
def single_agent(protocol: ProtocolSpec | None) -> bool:
    """One agent answering once, its answer final: the baseline a debate's gain is measured against."""
    return protocol is not None and protocol.agents == 1 and protocol.rounds == 1 and not protocol.judged


def no_split_reason(protocol: ProtocolSpec | None) -> str | None:
    """Why a condition's difference from a single agent is not split (None: it is split)."""
    if protocol is None:
        return "no configuration in the store"
    if protocol.judged:
        return "the final answer is a judge's or moderator's"
    if not protocol.style.has_peers:
        return "the agents are not voting peers"
    if protocol.rounds < 2:
        return "one round: no exchange (all voting)"
    return None


@dataclass(frozen=True)
class NoSplit:
    """A debate compared with a single agent whose difference is not split, and why."""

    task: str
    debate: str
    single: str
    reason: str


def gain_pairs(
    pairs: Iterable[tuple[str, str]], protocols: Mapping[str, ProtocolSpec | None]
) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """Of compared pairs, those where exactly one side is a single agent, as (debate, single): the ones to split,
    and the others with the reason they are not split, as (debate, single, reason)."""
    split: list[tuple[str, str]] = []
    unsplit: list[tuple[str, str, str]] = []
    for a, b in pairs:
        a_single, b_single = single_agent(protocols.get(a)), single_agent(protocols.get(b))
        if a_single == b_single:
            continue
        debate, single = (b, a) if a_single else (a, b)
        reason = no_split_reason(protocols.get(debate))
        if reason is None:
            split.append((debate, single))
        else:
            unsplit.append((debate, single, reason))
    return split, unsplit


# -- the split ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GainPart:
    """One part of a debate's gain: the paired comparison of its two terms and its Holm-adjusted p."""

    name: PartName
    comparison: stats.PairedComparison
    holm_p: float

    @property
    def difference(self) -> float:
        return self.comparison.difference


@dataclass(frozen=True)
class QuestionGain:
    """One question's accuracies over the seeds both D and S ran: the debate's, the single agent's, and the
    debate's round-0 vote's; ``total`` = ``voting`` + ``exchange``."""

    question_id: str
    debate: float
    single: float
    vote: float

    @property
    def total(self) -> float:
        return self.debate - self.single

    @property
    def voting(self) -> float:
        return self.vote - self.single

    @property
    def exchange(self) -> float:
        return self.debate - self.vote


@dataclass(frozen=True)
class GainSplit:
    """Debate D against single agent S on one task, split into voting (V_D - S) and exchange (D - V_D)."""

    task: str
    debate: str
    single: str
    n: int  # questions
    seeds: int  # the most seeds paired on one question
    total: GainPart
    voting: GainPart
    exchange: GainPart
    questions: tuple[QuestionGain, ...]

    @property
    def parts(self) -> tuple[GainPart, GainPart, GainPart]:
        return (self.total, self.voting, self.exchange)


@dataclass(frozen=True)
class TaskGains:
    """One task's debates against single agents: the splits and the debates not split."""

    task: str
    splits: tuple[GainSplit, ...]
    unsplit: tuple[NoSplit, ...]


Outcomes = dict[int, tuple[bool, bool | None]]  # seed -> (correct, round-0 vote correct)


def _by_condition(units: Iterable[GainUnit]) -> dict[tuple[str, str], dict[str, Outcomes]]:
    """(task, condition) -> question id -> seed -> (correct, round0_correct), questions in first-seen order."""
    out: dict[tuple[str, str], dict[str, Outcomes]] = {}
    for u in units:
        out.setdefault((u.task, u.condition), {}).setdefault(u.question_id, {})[u.seed] = (u.correct, u.round0_correct)
    return out


def _mean(by_seed: Mapping[int, bool]) -> float:
    return sum(by_seed.values()) / len(by_seed)


def _split(
    task: str,
    debate: str,
    single: str,
    d: Mapping[str, Outcomes],
    s: Mapping[str, Outcomes],
    seed: int,
    resamples: int,
) -> GainSplit | None:
    """D against S on the question x seed results both have, each part's p not yet adjusted (None: no
    question in common). A debate result without ``round0_correct`` is a ValueError."""
    rows: list[tuple[str, dict[int, bool], dict[int, bool], dict[int, bool]]] = []
    for q, outcomes in d.items():
        seeds = [k for k in outcomes if k in s.get(q, {})]
        if not seeds:
            continue
        if any(outcomes[k][1] is None for k in seeds):
            raise ValueError(f"{debate} on {task}: question {q} has no round-0 vote (round0_correct is empty)")
        debate_right = {k: outcomes[k][0] for k in seeds}
        vote_right = {k: bool(outcomes[k][1]) for k in seeds}
        rows.append((q, debate_right, {k: s[q][k][0] for k in seeds}, vote_right))
    if not rows:
        return None
    dd, ss, vv = [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows]
    terms: tuple[tuple[PartName, list[dict[int, bool]], list[dict[int, bool]]], ...] = (
        ("total", dd, ss),
        ("voting", vv, ss),
        ("exchange", dd, vv),
    )
    compared = [(name, stats_repeats.compare_repeats(a, b, seed, resamples)) for name, a, b in terms]
    total, voting, exchange = (GainPart(name, c, c.mcnemar_p) for name, c in compared)
    return GainSplit(
        task=task,
        debate=debate,
        single=single,
        n=len(rows),
        seeds=max(len(r[1]) for r in rows),
        total=total,
        voting=voting,
        exchange=exchange,
        questions=tuple(QuestionGain(q, _mean(x), _mean(y), _mean(v)) for q, x, y, v in rows),
    )


def _holm(splits: Sequence[GainSplit]) -> list[GainSplit]:
    """The splits of one task with Holm-adjusted p: over both parts of every split, and over the totals."""
    parts = stats.holm([p.comparison.mcnemar_p for s in splits for p in (s.voting, s.exchange)])
    totals = stats.holm([s.total.comparison.mcnemar_p for s in splits])
    return [
        replace(
            s,
            total=replace(s.total, holm_p=totals[i]),
            voting=replace(s.voting, holm_p=parts[2 * i]),
            exchange=replace(s.exchange, holm_p=parts[2 * i + 1]),
        )
        for i, s in enumerate(splits)
    ]


def split_gains(
    units: Iterable[GainUnit],
    pairs: Sequence[tuple[str, str]],
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
) -> tuple[GainSplit, ...]:
    """Each (debate, single) pair of ``pairs`` split into voting and exchange on every task where both have
    results, in task then pair order; Holm per task over the table (see the module's docstring).

    ``units`` are results with condition, task, question_id, seed, correct and round0_correct (``GainRow.of`` a
    stored result, or docs/results/*.csv rows): a debate's round0_correct must be set (True or False), a
    single agent's is not read. The caller says which condition is the debate (``gain_pairs`` picks them from
    the stored conditions)."""
    grouped = _by_condition(units)
    out: list[GainSplit] = []
    for task in dict.fromkeys(task for task, _ in grouped):
        splits = []
        for debate, single in pairs:
            d, s = grouped.get((task, debate)), grouped.get((task, single))
            split = _split(task, debate, single, d, s, seed, resamples) if d is not None and s is not None else None
            if split is not None:
                splits.append(split)
        out += _holm(splits)
    return tuple(out)


def task_gains(
    task: str,
    pairs: Iterable[tuple[str, str]],
    protocols: Mapping[str, ProtocolSpec | None],
    units: Iterable[GainUnit],
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
) -> TaskGains | None:
    """The split of every compared pair of ``task`` in which one side is a single agent (None: no such pair)."""
    split, unsplit = gain_pairs(pairs, protocols)
    if not split and not unsplit:
        return None
    rows = [u for u in units if u.task == task]
    return TaskGains(
        task,
        split_gains(rows, split, seed, resamples),
        tuple(NoSplit(task, debate, single, reason) for debate, single, reason in unsplit),
    )


def store_gains(
    run: RunStore | Path | str, seed: int = 0, resamples: int = stats.DEFAULT_RESAMPLES
) -> tuple[TaskGains, ...]:
    """Per task of a stored run, every debate against every single agent, split (as ``moot report`` shows it)."""
    store, owned = open_run(run)
    try:
        protocols = {name: c.protocol for name, c in store.conditions().items()}
        units = [GainRow.of(r) for r in store.iter_results()]
    finally:
        if owned:
            store.close()
    out = []
    for task in dict.fromkeys(u.task for u in units):
        names = list(dict.fromkeys(u.condition for u in units if u.task == task))
        gains = task_gains(task, combinations(names, 2), protocols, units, seed, resamples)
        if gains is not None:
            out.append(gains)
    return tuple(out)


def carrier(split: GainSplit, paper_difference: float) -> Carrier:
    """Which part carries a paper's effect (``paper_difference``: the paper's debate - single, or just its sign):
    a part carries it when its difference goes the paper's way (the same sign, not zero) with Holm p < 0.05.
    "both" when voting and exchange both do, "neither" when none does; a paper difference of 0 is a ValueError."""
    if paper_difference == 0:
        raise ValueError("the paper's difference has no direction")
    way = 1 if paper_difference > 0 else -1
    carries = [p.name for p in (split.voting, split.exchange) if p.difference * way > 0 and p.holm_p < ALPHA]
    if len(carries) == 2:
        return "both"
    return "voting" if carries == ["voting"] else "exchange" if carries == ["exchange"] else "neither"


# -- the table ------------------------------------------------------------------------------------------------
PART_TEXT: dict[PartName, str] = {
    "total": "total: debate - single",
    "voting": "voting: round-0 vote - single",
    "exchange": "exchange: debate - round-0 vote",
}


@dataclass(frozen=True)
class GainLine:
    """A row of the gains table: a part of a split, or a debate that is not split (``part`` None)."""

    debate: str
    single: str
    part: GainPart | None
    reason: str = ""


def _cells(get: Callable[[GainPart], str]) -> Callable[[GainLine], str]:
    return lambda line: DASH if line.part is None else get(line.part)


GAINS_COLUMNS: tuple[Column[GainLine], ...] = (
    Column("debate", lambda r: r.debate),
    Column("single", lambda r: r.single),
    Column("part", lambda r: PART_TEXT[r.part.name] if r.part is not None else f"not split: {r.reason}"),
    Column("questions", _cells(lambda p: str(p.comparison.n))),
    Column("up / down", _cells(lambda p: f"{p.comparison.a_only} / {p.comparison.b_only}")),
    Column(
        "difference (95% CI)",
        _cells(
            lambda p: (
                f"{fixed(p.difference, 3, sign=True)} "
                f"{interval(p.comparison.difference_ci.low, p.comparison.difference_ci.high)}"
            )
        ),
    ),
    Column("p", _cells(lambda p: p_value(p.comparison.mcnemar_p))),
    Column("Holm p", _cells(lambda p: p_value(p.holm_p))),
)


def gains_table(gains: TaskGains, short: bool = False) -> Table:
    """The debate gains split of one task: total, voting and exchange of every split debate, then the debates not
    split and why. ``short`` (``moot compare``, one pair): without the debate, single and questions columns, which
    the title names."""
    lines = [GainLine(s.debate, s.single, p) for s in gains.splits for p in s.parts]
    lines += [GainLine(u.debate, u.single, None, u.reason) for u in gains.unsplit]
    if short and len(lines) > 0:
        first = lines[0]
        n = f", {gains.splits[0].n} questions" if gains.splits else ""
        title = f"{first.debate} - {first.single} on {gains.task}: voting and exchange{n}"
        columns = GAINS_COLUMNS[2:3] + GAINS_COLUMNS[4:]
    else:
        title = f"Debate gains split: voting and exchange, {gains.task}"
        columns = GAINS_COLUMNS
    repeated = any(s.seeds > 1 for s in gains.splits)
    test = (
        "the exact sign test on questions (each question's accuracy over its seeds)"
        if repeated
        else "the exact McNemar test"
    )
    return table(
        "gains",
        title,
        columns,
        lines,
        "A debate's difference from a single agent in two parts, per question (moot's reading of the answers): "
        "voting = the majority vote of the "
        "debate's own round-0 answers (its aggregation and tie rule) - single; exchange = debate - that vote; they "
        "sum to the total. Each part is paired on the question x seed results both conditions have: up / down "
        f"count the questions where the part's first term is higher / lower than its second; p is {test}; the "
        "difference is the mean over questions with a paired (cluster) percentile bootstrap 95% interval. Holm "
        "over both parts of every debate in the table; the totals' Holm over the table's totals.",
    )
