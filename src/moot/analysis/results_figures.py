"""The replications document's statistics: each condition's figures and each paired comparison of a task,
computed from the summaries alone (``moot.analysis.results_summaries``) by the functions ``moot report`` uses.

``task_figures`` gathers one task's figures (``TaskFigures``): accuracy per condition, the comparisons with the
paper's figures or stated directions, the readers' verdicts, the equal-budget rows and the debate gains split.
``moot.analysis.results_page`` renders them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from moot.analysis import stats, stats_repeats
from moot.analysis.budget import (
    BudgetReaders,
    EqualBudget,
    debate_cost,
    match_budget,
    unmatched_row,
    with_holm,
)
from moot.analysis.budget_costs import Measure, Spend
from moot.analysis.budget_pools import VotePool
from moot.analysis.differs import also_differs, pair_differences
from moot.analysis.formatting import DASH, fixed
from moot.analysis.gains import GainSplit, NoSplit, TaskGains, carrier, split_gains
from moot.analysis.readers import MOOT, READERS, PairReaders, reader_pairs
from moot.analysis.results_summaries import SIGN, Claim, Direction, Paper, ResultRow, RunFacts
from moot.debate.records import FinalStatus

SEED = 0  # every bootstrap's seed, so the document is the same each time it is made
RESAMPLES = stats.DEFAULT_RESAMPLES


# -- statistics ---------------------------------------------------------------------------------
Repeats = dict[int, bool]  # one question's correctness by seed


@dataclass(frozen=True)
class ConditionFigures:
    name: str
    accuracy: stats.Proportion
    seeds: stats.SeedSpread
    questions: int
    calls_per_question: float  # used, per question x seed
    tokens_per_question: float  # used prompt + completion tokens, per question x seed
    paid_calls: int
    unparsed: int  # no readable final answer: scored wrong
    errors: int


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str
    paired: stats.PairedComparison
    holm_p: float
    paper_difference: float | None  # from the paper's figures
    paper_direction: Direction | None = None  # stated in words, where the paper has no figures for the pair
    readers: PairReaders | None = None  # the verdict under each documented reader (Holm over the same family)
    split: GainSplit | None = None  # a debate against a single agent: its difference as voting and exchange
    differs: str = DASH  # what else the two arms differ in besides the protocol (``differs.also_differs``)

    @property
    def robustness(self) -> str:
        """ "robust" or "breaks under: paper, strict" (the readers column)."""
        return DASH if self.readers is None else self.readers.summary

    @property
    def paper(self) -> str:
        """The paper's side of the row: its figures' difference in points, else the direction it states."""
        if self.paper_difference is not None:
            return _points(self.paper_difference)
        return DASH if self.paper_direction is None else f"{self.paper_direction} (stated)"

    @property
    def verdict(self) -> str:
        """Whether moot's difference goes the paper's way: "yes" (p < 0.05, Holm-adjusted), "direction only",
        "no" (the other way or none), or "—" where the paper gives neither a difference nor a direction."""
        way = self.paper_difference
        if way is None and self.paper_direction is not None:
            way = SIGN[self.paper_direction]
        if way is None:
            return DASH
        if way == 0:
            return "paper: no difference"
        same = self.paired.difference * way > 0
        if not same:
            return "no, reversed" if self.paired.difference != 0 else "no, no difference"
        verdict = "yes" if self.holm_p < 0.05 else "direction only"
        if self.split is None:
            return verdict
        part = carrier(self.split, way)
        return f"{verdict}; {'carried by ' + part if part != 'neither' else 'neither part alone'}"


@dataclass(frozen=True)
class TaskFigures:
    task: str
    questions: int
    seeds: tuple[int, ...]
    conditions: tuple[ConditionFigures, ...]
    comparisons: tuple[Comparison, ...]
    pool: VotePool | None = None  # the default pool: the frontier's vote@k curve
    # every other condition against the vote@k of the pool sampled with its own round-0 request, in tokens
    equal_budget: tuple[EqualBudget, ...] = ()
    budget_readers: tuple[BudgetReaders, ...] = ()  # each matched equal-budget row under every reader, in its order
    pools: tuple[VotePool, ...] = ()  # every pool of the task
    # the equal-budget rows in completion tokens and in calls (``OTHER_MEASURES``)
    other_budgets: tuple[tuple[EqualBudget, ...], ...] = ()
    gains: TaskGains | None = None  # each debate against a single agent, split into voting and exchange


def _by_question(rows: Iterable[ResultRow]) -> dict[str, Repeats]:
    out: dict[str, Repeats] = {}
    for r in rows:
        out.setdefault(r.question_id, {})[r.seed] = r.correct
    return out


def condition_figures(name: str, rows: Sequence[ResultRow]) -> ConditionFigures:
    groups = _by_question(rows)
    per_seed: dict[int, list[float]] = {}
    for r in rows:
        per_seed.setdefault(r.seed, []).append(float(r.correct))
    n = len(rows)
    return ConditionFigures(
        name=name,
        accuracy=stats_repeats.question_accuracy(list(groups.values()), SEED, RESAMPLES),
        seeds=stats_repeats.seed_spread(per_seed),
        questions=len(groups),
        calls_per_question=sum(r.calls for r in rows) / n,
        tokens_per_question=sum(r.prompt_tokens + r.completion_tokens for r in rows) / n,
        paid_calls=sum(r.paid_calls for r in rows),
        unparsed=sum(r.status == FinalStatus.UNPARSED for r in rows),
        errors=sum(r.status == FinalStatus.ERROR for r in rows),
    )


def compare(a: Sequence[ResultRow], b: Sequence[ResultRow]) -> stats.PairedComparison:
    """A against B on the questions both answered (``stats_repeats.compare_repeats``, as ``moot compare``)."""
    ga, gb = _by_question(a), _by_question(b)
    common = [q for q in ga if q in gb]
    return stats_repeats.compare_repeats([ga[q] for q in common], [gb[q] for q in common], SEED, RESAMPLES)


def by_reader(
    by_condition: Mapping[str, Sequence[ResultRow]],
) -> dict[str, dict[str, dict[object, dict[int, bool | None]]]]:
    """reader -> condition -> question id -> seed -> right under the reader (None: it does not apply)."""
    out: dict[str, dict[str, dict[object, dict[int, bool | None]]]] = {}
    for reader in READERS:
        out[reader] = {}
        for condition, rows in by_condition.items():
            groups: dict[object, dict[int, bool | None]] = {}
            for r in rows:
                groups.setdefault(r.question_id, {})[r.seed] = r.correct_under(reader)
            out[reader][condition] = groups
    return out


BUDGET_MEASURE: Measure = "tokens"  # as ``moot report``'s equal-budget table
OTHER_MEASURES: tuple[Measure, ...] = ("completion", "calls")  # the same rows in the other units the summaries give


def equal_budget_rows(
    pools: Sequence[VotePool],
    match: Mapping[str, str | None],
    by_condition: Mapping[str, Sequence[ResultRow]],
    measure: Measure = BUDGET_MEASURE,
) -> tuple[EqualBudget, ...]:
    """Every condition ``match`` names against the vote@k of the pool sampled with its own round-0 request
    (``match``: condition -> pool, None where no pool was; ``pools``: one task's, under one reader) at equal
    ``measure`` per question, from the summary rows alone (``budget.match_budget``, with the seed and resamples
    of the rest of the document), Holm's adjustment over the task's rows: the figures ``moot report`` and ``moot
    compare --budget`` give. A condition no pool matches has a row without figures; under a reader that does not
    read a condition (or its pool), the condition is left out."""
    by_name = {p.condition: p for p in pools}
    reader = pools[0].reader if pools else MOOT
    rows = []
    for name, results in by_condition.items():
        if name not in match or not results:
            continue
        debates: dict[str, list[tuple[bool, Spend]]] = {}
        for r in results:
            right = r.correct_under(reader)
            if right is None:
                break
            spend = Spend(r.calls, r.prompt_tokens, r.completion_tokens)
            debates.setdefault(r.question_id, []).append((right, spend))
        else:
            pool = match[name]
            if pool is None:
                if reader == MOOT:
                    rows.append(unmatched_row(name, results[0].task, measure, debate_cost(debates, measure)))
            elif pool in by_name:
                rows.append(match_budget(by_name[pool], name, debates, measure, SEED, RESAMPLES))
    return tuple(with_holm(rows))


def budget_readers(
    rows: Sequence[EqualBudget],
    pools: Sequence[VotePool],
    match: Mapping[str, str | None],
    by_condition: Mapping[str, Sequence[ResultRow]],
    accuracies: Mapping[str, float] | None = None,
) -> tuple[BudgetReaders, ...]:
    """Each of moot's equal-budget ``rows`` re-derived under every reader that reads the pools (``pools``: the
    task's pools as each reader reads them, ``RunFacts.reader_pools``)."""
    readers = dict.fromkeys(p.reader for p in pools)
    under = {
        reader: {e.debate: e for e in equal_budget_rows([p for p in pools if p.reader == reader], match, by_condition)}
        for reader in readers
    }
    return tuple(
        BudgetReaders(
            e.debate,
            ((MOOT, e), *((r, under[r].get(e.debate) if r in under else None) for r in READERS if r != MOOT)),
            accuracies,
        )
        for e in rows
        if not e.unmatched
    )


def _budget_match(facts: RunFacts, task: str) -> dict[str, str | None]:
    """Condition -> its matched pool on ``task``; a summary written before pools were matched compares every
    condition but the pool with its one pool."""
    if facts.budget_pools:
        return {c: p for t, c, p in facts.budget_pools if t == task}
    pool = next((v.condition for v in facts.vote_pools if v.task == task), None)
    return {} if pool is None else {c: pool for c in facts.conditions if c != pool}


def _stated(paper: Paper) -> dict[tuple[str, str], Claim]:
    """The paper's stated directions by (condition, against), against defaulting to its baseline."""
    out: dict[tuple[str, str], Claim] = {}
    for c in paper.claim:
        against = c.against or paper.baseline
        if against is not None:
            out[(c.condition, against)] = c
    return out


def task_figures(paper: Paper, facts: RunFacts, rows: Sequence[ResultRow], task: str) -> TaskFigures:
    mine = [r for r in rows if r.task == task]
    names = [c for c in facts.conditions if any(r.condition == c for r in mine)]
    by_condition = {c: [r for r in mine if r.condition == c] for c in names}
    figures = tuple(condition_figures(c, by_condition[c]) for c in names)
    paper_accuracy = {f.condition: f.accuracy for f in paper.figure if f.task == task}
    base = paper.baseline
    stated = _stated(paper)
    pairs = [(c, base) for c in names if c != base] if base is not None and base in by_condition else []
    pairs += [p for p in stated if p not in pairs and p[0] in by_condition and p[1] in by_condition]
    paired = [compare(by_condition[a], by_condition[b]) for a, b in pairs]
    profiles = {(a.condition, a.task): a for a in facts.profiles}
    gains = _gains(facts, task, pairs, mine)
    splits = {(g.debate, g.single): g for g in gains.splits} if gains is not None else {}
    adjusted = stats.holm([p.mcnemar_p for p in paired]) if paired else []
    checked = facts.accuracies()
    sensitivity = reader_pairs(by_reader(by_condition), pairs, True, SEED, RESAMPLES, checked) if pairs else ()
    comparisons: list[Comparison] = []
    for (a, b), p, h, r in zip(pairs, paired, adjusted, sensitivity):
        difference = None
        if a in paper_accuracy and b in paper_accuracy:
            difference = paper_accuracy[a] - paper_accuracy[b]
        claim = stated.get((a, b))
        split = splits.get((a, b))
        direction = None if claim is None else claim.direction
        also = also_differs(pair_differences(profiles, a, b, task)) if profiles else DASH
        comparisons.append(Comparison(a, b, p, h, difference, direction, r, split, also))
    pools = [v for v in facts.vote_pools if v.task == task]
    default = facts.pool if facts.budget_pools else (pools[0].condition if pools else None)
    pool = next((v for v in pools if v.condition == default), None)
    match = _budget_match(facts, task)
    budget = equal_budget_rows(pools, match, by_condition)
    readers = budget_readers(budget, [v for v in facts.reader_pools if v.task == task], match, by_condition, checked)
    summaries = {r.debate: r.summary for r in readers}
    budget = tuple(replace(e, readers=summaries.get(e.debate, DASH)) for e in budget)
    profiles = {(a.condition, a.task): a for a in facts.profiles}
    budget = tuple(
        replace(e, differs=pair_differences(profiles, e.debate, e.pool, task, ignore=("agents",))) for e in budget
    )
    others = tuple(equal_budget_rows(pools, match, by_condition, m) for m in OTHER_MEASURES)
    return TaskFigures(
        task,
        len({r.question_id for r in mine}),
        tuple(sorted({r.seed for r in mine})),
        figures,
        tuple(comparisons),
        pool,
        budget,
        readers,
        tuple(pools),
        others,
        gains,
    )


def _gains(facts: RunFacts, task: str, pairs: Sequence[tuple[str, str]], rows: Sequence[ResultRow]) -> TaskGains | None:
    """The compared pairs whose second side is a single agent, split into voting and exchange (``gains``); None
    where no pair is against a single agent, or the summary predates the split (no roles, no round-0 votes)."""
    roles = {name: (single, reason) for name, single, reason in facts.roles}
    wanted = [(a, b) for a, b in pairs if roles.get(b, (False, None))[0] and not roles.get(a, (True, None))[0]]
    if not wanted or any(r.round0_correct is None for r in rows):
        return None
    split = [(a, b) for a, b in wanted if roles[a][1] is None]
    unsplit = tuple(NoSplit(task, a, b, str(roles[a][1])) for a, b in wanted if roles[a][1] is not None)
    return TaskGains(task, split_gains(rows, split, SEED, RESAMPLES), unsplit)


def _points(x: float | None) -> str:
    return DASH if x is None else fixed(100 * x, 1, sign=True)
