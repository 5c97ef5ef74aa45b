"""Every table of a report, grouped by task: which tables a task shows, in what order (``sections``).

The tables themselves are declared in ``moot.analysis.tables`` (one row per condition) and
``moot.analysis.compare_tables`` (comparisons of conditions); the terminal, Markdown and HTML renderers
show the sections listed here.
"""

from __future__ import annotations

from dataclasses import dataclass

from moot.analysis.columns import Table
from moot.analysis.compare_tables import (
    equal_budget_rows_table,
    frontier_table,
    metric_pairs_table,
    pairs_table,
    reader_tables,
    round_difference_table,
    seed_pairs_table,
    vote_at_k_table,
)
from moot.analysis.gains import gains_table
from moot.analysis.records import Report, TaskReport
from moot.analysis.tables import (
    agents_table,
    best_round_table,
    by_round_table,
    calibration_tables,
    diversity_table,
    efficiency_table,
    metric_table,
    oracle_table,
    overview,
    replies_table,
    rounds_table,
    seeds_table,
    steps_table,
    transitions_table,
)


@dataclass(frozen=True)
class Section:
    task: str
    tables: tuple[Table, ...]
    notes: tuple[str, ...] = ()


def show_best_round(task: TaskReport) -> bool:
    """The DAR-style table adds to the overview once a peer-style debate has two or more debate rounds (a
    best round to choose) or the run has several seeds (a spread over seeds)."""
    found = [c.best_round for c in task.conditions if c.best_round is not None]
    return bool(found) and (task.repeated or any(b.debate_rounds >= 2 for b in found))


def sections(report: Report) -> list[Section]:
    """Every table of the report, grouped by task."""
    out = []
    for task in report.tasks:
        tables = [overview(task)]
        if task.repeated and task.accuracy_applies:
            tables.append(seeds_table(task))
        if task.accuracy_applies and show_best_round(task):
            tables.append(best_round_table(task))
        if task.scored:
            tables.append(metric_table(task))
        tables += [replies_table(task), rounds_table(task)]
        if task.accuracy_applies:
            tables.append(by_round_table(task))
        if (e := efficiency_table(task)) is not None:
            tables.append(e)
        if task.pairs and task.scored:
            tables.append(metric_pairs_table(task))
        if task.pairs and task.accuracy_applies:
            tables.append(pairs_table(task))
            if task.repeated:
                tables.append(seed_pairs_table(task))
        if task.gains is not None:
            tables.append(gains_table(task.gains))
        if task.accuracy_applies and task.vote_pools:
            tables.extend(vote_at_k_table(pool) for pool in task.vote_pools)
            if task.equal_budget:
                tables.append(equal_budget_rows_table(task.equal_budget))
            tables.append(frontier_table(task))
        tables += reader_tables(task)
        if task.pairs:
            tables.append(round_difference_table(task))
        if task.accuracy_applies:  # right and wrong answers: none where a task is scored by its metric alone
            tables += [transitions_table(task), steps_table(task), oracle_table(task), agents_table(task)]
            if (d := diversity_table(task)) is not None:
                tables.append(d)
            tables += calibration_tables(task)
        out.append(Section(task.task, tuple(t for t in tables if t.rows or t.key == "overview")))
    return out
