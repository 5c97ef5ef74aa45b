"""The report's records: per task, per condition and per pair of conditions, every figure the tables and plots
show, as frozen dataclasses (built by ``moot.analysis.report``; the statistics in ``moot.analysis.summaries``).

The question (task, question id) is the statistical unit; seeds repeat it. Accuracy intervals, paired tests,
Cochran's Q and round differences combine each question's seeds first (see ``moot.analysis.stats_repeats``);
descriptive counts (rounds, transitions, oracles, diversity, calibration) are counted over question x seed
results, and the tables say so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from moot.analysis import stats
from moot.analysis.budget import EqualBudget
from moot.analysis.budget_pools import VotePool
from moot.analysis.calibration import Calibration, ConfidenceSpread
from moot.analysis.differs import Differences
from moot.analysis.formatting import percent
from moot.analysis.gains import TaskGains
from moot.analysis.readers import MOOT, TaskReaders
from moot.analysis.transcripts import Transcript
from moot.analysis.transitions import AgentChanges, Diversity, Oracle, Transitions
from moot.runner.summary import Usage


@dataclass(frozen=True)
class Efficiency:
    """What retention forwarded, and what choosing it cost, over the debate rounds (r >= 1) that record it.

    ``forwarded`` counts the replies shown to agents, summed over agents, rounds and questions; ``full``
    is what forwarding every reply would have shown in the protocol's topology (None if unknown).
    """

    rules: tuple[str, ...]
    rounds: int  # debate rounds with a retention record, summed over questions
    forwarded: int
    full: int | None
    fallbacks: int  # rounds whose filter selection was invalid or empty, so every reply was kept
    filter_calls: int
    filter_prompt_tokens: int
    filter_completion_tokens: int
    diversity: float | None  # mean over rounds of the kept replies' diversity
    diversity_measure: str | None
    anll: float | None  # mean ANLL of the condition's turns that record one
    anll_turns: int
    perplexity: float | None  # mean perplexity of the turns that record one

    @property
    def forwarded_per_round(self) -> float:
        return self.forwarded / self.rounds if self.rounds else math.nan

    @property
    def full_per_round(self) -> float | None:
        return None if self.full is None or not self.rounds else self.full / self.rounds

    @property
    def fewer(self) -> float | None:
        """The share of replies not forwarded, against forwarding every reply (0 for rule "all")."""
        return None if not self.full else 1 - self.forwarded / self.full

    @property
    def comparison(self) -> str:
        """E.g. "42 of 48 replies forwarded, 12.5% fewer than forwarding every reply"."""
        if self.full is None:
            return f"{self.forwarded:,} replies forwarded (the topology is unknown: no comparison)"
        if self.fewer is None:
            return f"{self.forwarded:,} replies forwarded (the topology forwards none)"
        share = f"{percent(self.fewer)} fewer" if self.fewer >= 0 else f"{percent(-self.fewer)} more"
        return f"{self.forwarded:,} of {self.full:,} replies forwarded, {share} than forwarding every reply"


@dataclass(frozen=True)
class ReplyCounts:
    """The agents' replies of a condition (every round, every question): how many could not be read
    (unparsed), were cut off by the token limit (finish reason "length"), or lack a stated confidence
    where the protocol asks for one (None where it does not ask)."""

    replies: int
    unparsed: int
    truncated: int
    confidence_missing: int | None
    rulings: int = 0  # judges' and moderators' verdicts (Liang's per round and final; a stopping judge's)
    rulings_unreadable: int = 0  # of those, the ones no reader could read (after the repair call, if any)
    reasoned: int = 0  # replies with a reasoning model's reasoning, read apart from their content
    reasoning_tokens: int = 0  # their reasoning's tokens (where the server counted them)
    reasoning_only: int = 0  # replies that reasoned and gave no content (unparsed; truncated ones among them)

    @property
    def confidence_text(self) -> str:
        """E.g. "confidence missing in 3 of 40 replies" ("" where confidence is not asked)."""
        if self.confidence_missing is None:
            return ""
        return f"confidence missing in {self.confidence_missing} of {self.replies} replies"


@dataclass(frozen=True)
class BestRound:
    """DAR's way of reporting a debate, per seed and as mean ± std over seeds: the final accuracy, and the
    majority-vote accuracy of each debate round r >= 1 with the best of them.

    A question that stopped before round r keeps its last round's vote; an errored one counts wrong.
    ``best_round`` maximises the mean over seeds (the earliest on ties), one round for every seed. Picking
    the best round after seeing the results is an optimistic selection, not a held-out estimate.
    """

    final: stats.SeedSpread
    by_round: tuple[tuple[int, stats.SeedSpread], ...]
    best_round: int

    @property
    def best(self) -> stats.SeedSpread:
        return dict(self.by_round)[self.best_round]

    @property
    def debate_rounds(self) -> int:
        return len(self.by_round)


@dataclass(frozen=True)
class ConditionReport:
    name: str
    protocol: str
    agents: int
    accuracy: stats.Proportion
    unparsed: int
    abstained: int
    errors: int
    mean_rounds: float
    rounds: tuple[tuple[int, int, int], ...]  # (rounds used, questions, right)
    stop_reasons: tuple[tuple[str, int], ...]
    accuracy_by_round: tuple[tuple[int, int, int], ...]  # (round, questions reaching it, system answer right)
    usage: Usage
    first_to_final: tuple[tuple[int, Transitions], ...]
    first_to_final_total: Transitions
    round_to_round: tuple[tuple[int, Transitions], ...]
    agent_changes: tuple[AgentChanges, ...]
    oracle: Oracle
    diversity: Diversity | None
    calibration: Calibration | None  # agents' stated confidences
    judge_calibration: Calibration | None  # a judge's confidence in its answer after each round
    efficiency: Efficiency | None = None  # None when no round records retention
    questions: int = 0  # distinct questions (accuracy.n counts question x seed results)
    seed_accuracy: stats.SeedSpread | None = None  # accuracy per seed, mean ± std over seeds
    best_round: BestRound | None = None  # peer-style debates with a debate round: DAR's reporting
    judge_confidence: ConfidenceSpread | None = None  # judges' and moderators' 0-100 confidence, study bins
    metric: stats.MetricSummary | None = None  # the task's own score, where its results carry one
    replies: ReplyCounts | None = None  # the agents' replies: unparsed, truncated, confidence missing


@dataclass(frozen=True)
class PairReport:
    a: str
    b: str
    accuracy: stats.PairedComparison
    holm_p: float | None  # with three or more conditions: McNemar p adjusted over all pairs of the task
    rounds: stats.RoundDifference
    metric: stats.MetricComparison | None = None  # the task's own score, where its results carry one
    metric_name: str | None = None  # the task card's description of its metric
    accuracy_applies: bool = True  # False for a task scored only by its metric (biographies)
    questions: int = 0  # questions both answered
    seeds: int = 1  # distinct seeds among them
    readers: TaskReaders | None = None  # ``moot compare``: the pair under each documented reader
    differs: Differences | None = None  # what else A and B differ in besides the protocol (moot.analysis.differs)
    gains: TaskGains | None = None  # ``moot compare`` of a debate and a single agent: the gain split

    @property
    def unit(self) -> str:
        return unit_text(self.questions, self.seeds)


def unit_text(questions: int, seeds: int) -> str:
    """The statistical unit in words: "n = 6 questions x 3 seeds"."""
    return f"n = {questions} question{'s' if questions != 1 else ''} x {seeds} seed{'s' if seeds != 1 else ''}"


@dataclass(frozen=True)
class TaskReport:
    task: str
    units: int  # (question, seed) pairs with a result under some condition
    conditions: tuple[ConditionReport, ...]
    pairs: tuple[PairReport, ...]
    cochran: stats.CochranQ | None
    questions: int = 0  # distinct questions with a result under some condition: the unit
    seeds: tuple[int, ...] = ()  # distinct seeds
    metric_name: str | None = None  # the task card's description of its metric, where results carry one
    accuracy_applies: bool = True  # False for a task scored only by its metric (biographies)
    readers: TaskReaders | None = None  # accuracy and every pair's verdict under each documented reader
    vote_pool: VotePool | None = None  # vote@k of the run's pool (``moot.analysis.budget``), where it has one
    # vote@k of every pool the equal-budget rows use (one per round-0 request the arms start from)
    vote_pools: tuple[VotePool, ...] = ()
    # every other condition against the vote@k of the pool sampled with its own round-0 request, in tokens
    equal_budget: tuple[EqualBudget, ...] | None = None
    gains: TaskGains | None = None  # debates against single agents, split into voting and exchange

    @property
    def repeated(self) -> bool:
        """Some question has results for more than one seed: statistics combine them per question."""
        return self.units > self.questions

    @property
    def unit(self) -> str:
        return unit_text(self.questions, len(self.seeds))

    @property
    def scored(self) -> bool:
        """The task's results carry its own metric."""
        return any(c.metric is not None for c in self.conditions)


@dataclass(frozen=True)
class Report:
    name: str
    path: str
    status: str
    moot_version: str
    wall_s: float
    seed: int
    resamples: int
    condition_names: tuple[str, ...]
    tasks: tuple[TaskReport, ...]
    transcripts: Sequence[Transcript]  # every result's transcript, in the run's order (``StoredTranscripts``)
    reader: str = MOOT  # the reader of the final answers the main tables score (``moot.analysis.readers``)
    # (configured model name, the model that answered, its calls): two under one name mean a mixed run
    models: tuple[tuple[str, str, int], ...] = ()
    # (configured model name, its engine in one line: moot.backends.engine_record), as the run recorded them
    engines: tuple[tuple[str, str], ...] = ()
