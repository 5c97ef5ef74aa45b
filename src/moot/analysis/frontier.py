"""The accuracy-cost frontier (issue 39): every condition of a task and its pool's vote@k as points of accuracy
against cost per question, and which points no other beats.

A point is on the frontier of a cost measure (tokens or calls per question) when no other point of its task beats
it: none is more accurate at a cost no higher, nor as accurate for less. Conditions carry their accuracy interval (Wilson; with repeated
seeds the cluster bootstrap over questions); a vote@k point is an exact mean over the pool's questions
(``moot.analysis.budget``) and has none. Cost per question counts every call a question's debate used (helpers
and a shared round 0 included), per question x seed result. The report plots these points, tabulates them and
writes them as CSV (``moot report --figures``).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass

from moot.analysis.records import Report, TaskReport


@dataclass(frozen=True)
class Point:
    task: str
    name: str  # the condition's name, or "vote@k" for the pool's vote of k answers
    k: int | None  # k for a vote@k point, None for a condition
    tokens: float  # used prompt + completion tokens per question
    calls: float  # used calls per question
    accuracy: float
    low: float  # the accuracy's 95% interval; NaN for a vote@k point
    high: float
    on_tokens_frontier: bool
    on_calls_frontier: bool


_TOLERANCE = 1e-9  # accuracies closer than this are equal, and costs within this share of each other: a vote@k's
# exact mean and a count's ratio differ in their last bits (vote@3 of a 3-answer pool is the 3-agent vote itself)


def _beats(j: tuple[float, float], i: tuple[float, float]) -> bool:
    """Whether (cost, accuracy) ``j`` beats ``i``: more accurate at a cost no higher, or as accurate for less."""
    (cj, aj), (ci, ai) = j, i
    slack = _TOLERANCE * max(1.0, abs(ci))
    return (aj > ai + _TOLERANCE and cj <= ci + slack) or (aj >= ai - _TOLERANCE and cj < ci - slack)


def beaten_by(points: Sequence[tuple[float, float]]) -> list[int | None]:
    """For each (cost, accuracy): the index of the cheapest point that beats it (``_beats``; the most accurate
    of those on a tie), None where none does (the point is on the frontier)."""
    out: list[int | None] = []
    for point in points:
        better = [j for j, other in enumerate(points) if _beats(other, point)]
        out.append(min(better, key=lambda j: (points[j][0], -points[j][1]), default=None))
    return out


def dominated(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For each (cost, accuracy): whether another point beats it (more accurate at a cost no higher, or as
    accurate for less)."""
    return [b is not None for b in beaten_by(points)]


def _on_frontier(costs: Sequence[float], accuracies: Sequence[float]) -> list[bool]:
    beaten = dominated(list(zip(costs, accuracies)))
    return [not b and not math.isnan(a) for b, a in zip(beaten, accuracies)]


def task_frontier(task: TaskReport) -> tuple[Point, ...]:
    """The task's conditions (in the report's order) then its pool's vote@k for k = 1..K, with their place on
    each frontier; empty where the task is not scored by accuracy."""
    if not task.accuracy_applies:
        return ()
    raw: list[tuple[str, int | None, float, float, float, float, float]] = []
    for c in task.conditions:
        n = max(1, c.accuracy.n)
        a = c.accuracy
        raw.append((c.name, None, c.usage.used_tokens / n, c.usage.used_calls / n, a.estimate, a.low, a.high))
    if task.vote_pool is not None:
        raw += [(f"vote@{r.k}", r.k, r.tokens, r.calls, r.accuracy, math.nan, math.nan) for r in task.vote_pool.rows]
    accuracies = [r[4] for r in raw]
    by_tokens = _on_frontier([r[2] for r in raw], accuracies)
    by_calls = _on_frontier([r[3] for r in raw], accuracies)
    return tuple(
        Point(task.task, name, k, tokens, calls, accuracy, low, high, t, c)
        for (name, k, tokens, calls, accuracy, low, high), t, c in zip(raw, by_tokens, by_calls)
    )


def frontier(report: Report) -> tuple[Point, ...]:
    """Every task's points (``task_frontier``), task by task."""
    return tuple(p for t in report.tasks for p in task_frontier(t))


CSV_COLUMNS = (
    "task", "point", "k", "tokens_per_question", "calls_per_question", "accuracy", "ci_low", "ci_high",
    "on_tokens_frontier", "on_calls_frontier",
)  # fmt: skip


def frontier_csv(points: Sequence[Point]) -> str:
    """The points as CSV, numbers unrounded (an empty cell: no k, or no interval for a vote@k)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for p in points:
        writer.writerow(
            [
                p.task,
                p.name,
                "" if p.k is None else p.k,
                repr(p.tokens),
                repr(p.calls),
                repr(p.accuracy),
                "" if math.isnan(p.low) else repr(p.low),
                "" if math.isnan(p.high) else repr(p.high),
                int(p.on_tokens_frontier),
                int(p.on_calls_frontier),
            ]
        )
    return out.getvalue()
