"""Accuracy round by round, and Debate or Vote's martingale check (Choi et al., NeurIPS 2025).

Choi et al. argue that debate alone does not raise the agents' expected correctness: their belief trajectories
form a martingale, so what debate adds over a vote of the first answers is close to nothing. Two curves test it
on a stored run, per condition and task, with the question as the unit (a question's value is its mean over the
seeds that ran it):

- the vote's accuracy at round r: the round's majority vote (as the run recorded it) right;
- the agents' mean correctness at round r: the share of the round's agents whose own answer is right.

And the step from round r to r + 1: the change in the agents' mean correctness on the questions that reached both
rounds, with a paired percentile bootstrap interval over questions and an exact sign test. Under the martingale
claim every step's interval holds 0. Questions that stopped early (an adaptive rule) count only for the rounds
they reached, so each point and step says how many questions it holds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from moot.analysis import stats
from moot.analysis.stats import Interval, SignTest
from moot.debate.records import FinalStatus
from moot.errors import MootError
from moot.runner.records import StoredResult
from moot.tasks import Task, get_task


@dataclass(frozen=True)
class RoundPoint:
    """One round: how many questions reached it, the vote's accuracy and the agents' mean correctness."""

    round: int
    questions: int
    vote: float
    vote_ci: Interval
    agents: float
    agents_ci: Interval


@dataclass(frozen=True)
class RoundStep:
    """The change in the agents' mean correctness from round ``start`` to ``start + 1`` (later minus earlier)."""

    start: int
    questions: int
    change: float
    ci: Interval
    sign: SignTest


@dataclass(frozen=True)
class RoundStudy:
    condition: str
    task: str
    agents: int
    points: tuple[RoundPoint, ...]
    steps: tuple[RoundStep, ...]

    @property
    def martingale_holds(self) -> bool:
        """Every step's interval holds 0 (no step raises or lowers the agents' correctness detectably)."""
        return all(s.ci.low <= 0 <= s.ci.high for s in self.steps)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def round_study(
    results: Iterable[StoredResult], condition: str, task: str, seed: int = 0, resamples: int = stats.DEFAULT_RESAMPLES
) -> RoundStudy:
    """The per-round curves and steps of ``condition`` on ``task`` from the stored ``results`` (errored results, whose
    rounds may be cut short by a failed call, are left out)."""
    # question -> round -> values over seeds
    vote: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    agents: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    width = 0
    try:
        scorer: Task | None = get_task(task)
    except MootError:
        scorer = None  # a task moot cannot build here (a data file elsewhere): a turn giving the winner scores it
    for stored in results:
        result = stored.result
        if stored.condition != condition or stored.task != task or result.status == FinalStatus.ERROR:
            continue
        qid = result.question.id
        for record in result.rounds:
            winner = record.vote.winner
            if winner is None:
                right = False
            elif scorer is not None:
                right = scorer.score(winner, result.question)
            else:
                right = any(t.answer == winner and bool(t.correct) for t in record.turns)
            vote[qid][record.index].append(float(right))
            agents[qid][record.index].append(_mean([float(bool(t.correct)) for t in record.turns]))
            width = max(width, len(record.turns))
    if not vote:
        raise ValueError(f"no stored result of condition {condition!r} on task {task!r}")
    rounds = sorted({r for by_round in vote.values() for r in by_round})
    points = []
    for r in rounds:
        reached = [q for q in vote if r in vote[q]]
        votes = [_mean(vote[q][r]) for q in reached]
        means = [_mean(agents[q][r]) for q in reached]
        points.append(
            RoundPoint(
                r,
                len(reached),
                _mean(votes),
                stats.bootstrap_mean(votes, seed, resamples),
                _mean(means),
                stats.bootstrap_mean(means, seed, resamples),
            )
        )
    steps = []
    for r in rounds[:-1]:
        both = [q for q in agents if r in agents[q] and r + 1 in agents[q]]
        if not both:
            continue
        diffs = [_mean(agents[q][r + 1]) - _mean(agents[q][r]) for q in both]
        steps.append(
            RoundStep(r, len(both), _mean(diffs), stats.bootstrap_mean(diffs, seed, resamples), stats.sign_test(diffs))
        )
    return RoundStudy(condition, task, width, tuple(points), tuple(steps))
