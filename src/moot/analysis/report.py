"""A run's report, read from its store: per task and condition, every figure the tables and plots show.

``build_report`` reads results, turns, calls, questions, conditions, meta and sessions. It uses
what the store holds: calibration appears once turns (or judges) carry confidences, the
retention and efficiency figures once debate rounds record which replies were forwarded, and
a task metric's figures once results carry the task's own score. The retained diversity of debate
rounds is measured here, from the kept replies' stored texts (``Diversities``), where the store does not
hold it: a debate does not measure it.

The store is read one result at a time (``RunStore.iter_results``): the statistics keep a lean copy of
each transcript (answers, correctness, confidences; no texts), and ``Report.transcripts`` reads the
full transcripts from the store again when iterated (``StoredTranscripts``), so that a report of a
20,000-question run fits in memory and its HTML streams page by page (``moot.analysis.html``).

The question (task, question id) is the statistical unit; seeds repeat it. Accuracy intervals,
paired tests, Cochran's Q and round differences combine each question's seeds first (see
``moot.analysis.stats``); descriptive counts (rounds, transitions, oracles, diversity,
calibration) are counted over question x seed results, and the tables say so.
"""

from __future__ import annotations

import contextlib
import math
import operator
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import overload

from moot.analysis import stats
from moot.analysis.budget import EqualBudget, Measure, VotePool
from moot.analysis.calibration import Calibration, ConfidenceSpread, calibrate, confidence_spread, to_probabilities
from moot.analysis.formatting import percent
from moot.analysis.readers import MOOT, TaskReaders, correctness_by_reader, get_reader, reread, task_readers
from moot.analysis.transitions import (
    AgentChanges,
    Diversity,
    Oracle,
    Trajectory,
    Transitions,
    agent_changes,
    first_to_final,
    initial_diversity,
    oracle,
    round_to_round,
)
from moot.debate.records import TRUNCATED, DebateResult, JudgeVerdict, PoolRecord, RetentionRecord, Turn
from moot.errors import MootError
from moot.runner.config import ResolvedCondition
from moot.runner.records import StoredResult
from moot.runner.store import RunStore
from moot.runner.summary import Usage, UsedCalls, usage, used_calls
from moot.tasks.base import ParseStatus

UnitKey = tuple[str, str, int]  # task, question id, seed
ResultKey = tuple[str, str, str, int]  # condition, task, question id, seed: one stored result
QuestionKey = tuple[str, str]  # task, question id: the statistical unit
JUDGE_SCALE = 100.0  # judges and moderators state confidence on 0-100


class AnalysisError(MootError):
    """A report or comparison cannot be made (no results, unknown condition or task)."""


# -- transcripts ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TurnView:
    agent: str
    text: str
    answer: str | None
    parsed: bool
    correct: bool
    confidence: float | None  # as stored (0-1 or 0-100)
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    shown_new: tuple[tuple[str, str], ...]  # (role, content) added to the agent's context this round
    shown: tuple[tuple[str, str], ...]  # (role, content): everything the agent was shown
    retained: str | None  # rounds >= 1 with retention: whose previous replies the agent heard, and why
    nll: float | None = None  # uncertainty of the reply from its log-probabilities, where they were asked
    anll: float | None = None
    perplexity: float | None = None

    @property
    def truncated(self) -> bool:
        """Cut off by the token limit (finish reason "length")."""
        return self.finish_reason == TRUNCATED


@dataclass(frozen=True, slots=True)
class RoundView:
    index: int
    turns: tuple[TurnView, ...]
    votes: tuple[tuple[str, int], ...]
    winner: str | None
    winner_correct: bool
    judge: JudgeVerdict | None  # a judge's or moderator's verdict after the round
    system_answer: str | None  # the round's answer as the protocol aggregates (majority, or the judge's)
    system_correct: bool
    pool: PoolRecord | None = None  # a diversity-aware round 0: candidates sampled and the ones retained
    retention: RetentionRecord | None = None  # rounds >= 1: the previous replies forwarded


@dataclass(frozen=True, slots=True)
class Transcript:
    """One question under one condition, as the viewer shows it (``lean``: without its texts)."""

    task: str
    question_id: str
    seed: int
    condition: str
    prompt: str
    gold: str
    rounds: tuple[RoundView, ...]
    final_answer: str | None
    status: str
    correct: bool
    rounds_used: int
    stop_reason: str
    error: str | None
    final_judge: JudgeVerdict | None = None  # a separate final judge's verdict, where the protocol has one
    metric: float | None = None  # the task's own score (None: none, or the task could not score it)
    scored: bool = False  # the task's metric was computed for this result (its value may still be None)
    rulings: int = 0  # judges' and moderators' verdicts (read before a lean copy drops their texts)
    rulings_unreadable: int = 0  # of those, the ones no reader of JSON-like rulings reads

    @property
    def key(self) -> UnitKey:
        return (self.task, self.question_id, self.seed)

    @property
    def result_key(self) -> ResultKey:
        return (self.condition, self.task, self.question_id, self.seed)

    @property
    def question(self) -> QuestionKey:
        return (self.task, self.question_id)

    def trajectory(self) -> Trajectory:
        agents = tuple(t.agent for t in self.rounds[0].turns) if self.rounds else ()
        return Trajectory(
            agents=agents,
            answers=tuple(tuple(t.answer for t in r.turns) for r in self.rounds),
            correct=tuple(tuple(t.correct for t in r.turns) for r in self.rounds),
            system_answers=tuple(r.system_answer for r in self.rounds),
            system_correct=tuple(r.system_correct for r in self.rounds),
            final_answer=self.final_answer,
            final_correct=self.correct,
            rounds_used=self.rounds_used,
        )

    @property
    def changed(self) -> bool:
        """Some agent changed its answer between rounds, or the system's answer changed."""
        t = self.trajectory()
        return t.any_agent_changed or t.system_changed


# -- per condition ----------------------------------------------------------------------
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

    @property
    def confidence_text(self) -> str:
        """E.g. "confidence missing in 3 of 40 replies" ("" where confidence is not asked)."""
        if self.confidence_missing is None:
            return ""
        return f"confidence missing in {self.confidence_missing} of {self.replies} replies"


def reply_counts(turns: Iterable[TurnView], confidence_asked: bool, rulings: tuple[int, int] = (0, 0)) -> ReplyCounts:
    """Count the agents' replies ``turns``: unparsed, truncated and (where asked) missing a confidence;
    ``rulings``: the judges' and moderators' verdicts and how many of them no reader of JSON-like rulings
    can read (``Transcript.rulings``, ``rulings_unreadable``), which count as unreadable, never guessed."""
    listed = list(turns)
    return ReplyCounts(
        replies=len(listed),
        unparsed=sum(not t.parsed for t in listed),
        truncated=sum(t.truncated for t in listed),
        confidence_missing=sum(t.confidence is None for t in listed) if confidence_asked else None,
        rulings=rulings[0],
        rulings_unreadable=rulings[1],
    )


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
    equal_budget: tuple[EqualBudget, ...] | None = None  # every other condition against its vote@k, in tokens

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


# -- reading the store --------------------------------------------------------------------
Messages = tuple[tuple[str, str], ...]  # (role, content)


def _new_messages(shown: Messages, before: Messages | None) -> Messages:
    """What was added to an agent's context since its previous turn (its own reply excluded)."""
    if before is None or shown[: len(before)] != before:
        return shown
    added = shown[len(before) :]
    return added[1:] if added and added[0][0] == "assistant" else added


def _peers(condition: ResolvedCondition | None) -> list[list[int]] | None:
    """Who hears whom in the condition's topology (agent indices), or None when unknown or invalid."""
    if condition is None:
        return None
    try:
        return condition.protocol.topology.peers(condition.protocol.agents)
    except MootError:
        return None


def _retained_text(
    retention: RetentionRecord, agent: str, order: list[str], peers: list[list[int]] | None, agents: int
) -> str:
    """What one agent heard of the previous round: "heard agent-1, agent-4 (dar kept 2 of 4)"."""
    rule, kept = retention.rule, list(retention.kept)
    if retention.fallback:
        why = f"{rule} fallback: filter selection invalid or empty, kept all {len(kept)}"
    elif rule == "all":
        why = "all replies kept"
    else:
        why = f"{rule} kept {len(kept)} of {agents}"
    if peers is not None and agent in order and order.index(agent) < len(peers):
        heard = [order[j] for j in peers[order.index(agent)] if j < len(order) and order[j] in kept]
        return f"heard {', '.join(heard) or 'no peer'} ({why})"
    return f"kept {', '.join(kept) or 'none'} ({why})"


def _judge_correct(judge: JudgeVerdict, turns: Iterable[TurnView], gold: str) -> bool:
    """A verdict is right when it names an answer some agent got right, or the gold answer."""
    if judge.answer is None:
        return False
    right = {t.answer for t in turns if t.correct}
    return judge.answer in right or judge.answer.strip() == gold.strip()


def _turn_view(turn: Turn, before: Messages | None, retained: str | None, lean: bool = False) -> TurnView:
    shown = () if lean else tuple((m.role, m.content) for m in turn.shown)
    return TurnView(
        agent=turn.agent,
        text="" if lean else turn.text,
        answer=turn.answer,
        parsed=turn.parse_status == ParseStatus.PARSED,
        correct=bool(turn.correct),
        confidence=turn.confidence,
        finish_reason=turn.finish_reason,
        prompt_tokens=turn.prompt_tokens,
        completion_tokens=turn.completion_tokens,
        shown_new=() if lean else _new_messages(shown, before),
        shown=shown,
        retained=None if lean else retained,
        nll=turn.nll,
        anll=turn.anll,
        perplexity=turn.perplexity,
    )


def transcript(stored: StoredResult, condition: ResolvedCondition | None, lean: bool = False) -> Transcript:
    """One stored result as the viewer shows it; ``condition`` is None for a condition the store does not list.

    ``lean``: without its texts (replies, what agents were shown, the prompt, judges' and filters' replies,
    pool candidates), what the statistics need and no more: a large run's transcripts fit in memory."""
    from moot.debate.components.stopping.judge import read_object

    result, question = stored.result, stored.result.question
    verdicts = [v for v in (*(r.judge for r in result.rounds), result.final_judge) if v is not None]
    order = [a.name for a in condition.agents] if condition is not None else []
    peers = _peers(condition)
    judged = condition is not None and condition.protocol.judged
    previous: dict[str, Messages] = {}
    rounds: list[RoundView] = []
    for record in result.rounds:
        retention = record.retention if record.index > 0 else None
        agents = len(order) or (len(rounds[-1].turns) if rounds else len(record.turns))
        views = []
        for turn in record.turns:
            retained = None
            if retention is not None and not lean:
                retained = _retained_text(retention, turn.agent, order, peers, agents)
            views.append(_turn_view(turn, previous.get(turn.agent), retained, lean))
            previous[turn.agent] = views[-1].shown
        winner = record.vote.winner
        winner_correct = winner is not None and any(v.correct and v.answer == winner for v in views)
        judge = record.judge
        pool = record.pool
        if lean:
            judge = replace(judge, text="") if judge is not None else None
            pool = replace(pool, texts=()) if pool is not None else None
            retention = replace(retention, filter_text=None) if retention is not None else None
        system = (
            (judge.answer, _judge_correct(judge, views, question.gold))
            if (judge is not None and judged)
            else (winner, winner_correct)
        )
        rounds.append(
            RoundView(
                index=record.index,
                turns=tuple(views),
                votes=record.vote.counts,
                winner=winner,
                winner_correct=winner_correct,
                judge=judge,
                system_answer=system[0],
                system_correct=system[1],
                pool=pool,
                retention=retention,
            )
        )
    return Transcript(
        task=stored.task,
        question_id=question.id,
        seed=stored.seed,
        condition=stored.condition,
        prompt="" if lean else question.prompt,
        gold=question.gold,
        rounds=tuple(rounds),
        final_answer=result.final_answer,
        status=result.status.value,
        correct=result.correct,
        rounds_used=result.rounds_used,
        stop_reason=result.stop_reason,
        error=result.error,
        final_judge=replace(result.final_judge, text="") if lean and result.final_judge else result.final_judge,
        metric=_number(stored.metric),
        scored=stored.metric is not None or stored.metric_detail is not None,
        rulings=len(verdicts),
        rulings_unreadable=sum(read_object(v.text) is None for v in verdicts),
    )


def read_transcripts(store: RunStore, lean: bool = False) -> list[Transcript]:
    """Every stored result with its rounds, in question, seed and condition order (``lean``: without texts)."""
    conditions = store.conditions()
    return [transcript(r, conditions.get(r.condition), lean) for r in store.iter_results()]


# -- retained diversity ---------------------------------------------------------------
def kept_texts(result: DebateResult) -> dict[int, tuple[str, ...]]:
    """For each debate round whose retention record stores no diversity (runs since a debate stopped measuring
    it), the texts of the previous round's replies it kept, by round index."""
    out: dict[int, tuple[str, ...]] = {}
    for previous, record in zip(result.rounds, result.rounds[1:]):
        retention = record.retention
        if retention is None or record.index == 0 or retention.diversity is not None:
            continue
        kept = set(retention.kept)
        out[record.index] = tuple(t.text for t in previous.turns if t.agent in kept)
    return out


class Diversities:
    """DAR's retained diversity, measured at report time from the kept replies' stored texts for the rounds
    that do not store it (a debate no longer measures it: no embedding model on its path). Rounds are queued
    result by result and measured in batches of about ``batch`` texts (``moot.debate.diversity
    .retained_diversity``: one encode per batch where the MiniLM model measures it), keeping only the values:
    a large run's texts are never all held at once. A round that stores its diversity keeps it."""

    def __init__(self, batch: int = 4096):
        self.batch = batch
        self.values: dict[ResultKey, dict[int, float]] = {}  # result -> round index -> diversity
        self.measure: str | None = None  # the measure's name, once some round is measured
        self._pending: list[tuple[ResultKey, int, tuple[str, ...]]] = []
        self._texts = 0

    def add(self, stored: StoredResult) -> bool:
        """Queue the rounds of ``stored`` without a stored diversity; whether it has any."""
        groups = kept_texts(stored.result)
        for index, texts in groups.items():
            self._pending.append((stored.key, index, texts))
            self._texts += len(texts)
        if self._texts >= self.batch:
            self.flush()
        return bool(groups)

    def flush(self) -> None:
        """Measure the queued rounds."""
        if not self._pending:
            return
        from moot.debate.diversity import retained_diversity

        values, self.measure = retained_diversity([texts for _, _, texts in self._pending])
        for (key, index, _), value in zip(self._pending, values):
            self.values.setdefault(key, {})[index] = value
        self._pending, self._texts = [], 0


def with_diversity(t: Transcript, values: Mapping[int, float] | None, measure: str | None) -> Transcript:
    """``t`` with the retained diversity measured for its rounds (by round index) in their retention records."""
    if not values:
        return t
    rounds = tuple(
        replace(r, retention=replace(r.retention, diversity=values[r.index], diversity_measure=measure))
        if r.retention is not None and r.index in values
        else r
        for r in t.rounds
    )
    return replace(t, rounds=rounds)


class StoredTranscripts(Sequence[Transcript]):
    """A report's transcripts, read from the run's store each time they are iterated, in the run's order.

    A large run's transcripts do not fit in memory together (a 20,000-question run's replies and what each
    agent was shown); this sequence holds only the keys of the results the report was built from, so a
    run still writing its store adds none. Indexing reads the store up to the index."""

    def __init__(
        self,
        path: Path,
        keys: Iterable[ResultKey],
        diversity: Mapping[ResultKey, Mapping[int, float]] | None = None,
        measure: str | None = None,
    ):
        self.path = path
        self.keys = tuple(keys)
        self._wanted = frozenset(self.keys)
        # the retained diversity the report measured for rounds that do not store it (``Diversities``)
        self._diversity = diversity or {}
        self._measure = measure

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator[Transcript]:
        store, _ = _open(self.path)
        with contextlib.closing(store):
            conditions = store.conditions()
            for r in store.iter_results():
                if r.key in self._wanted:
                    yield with_diversity(
                        transcript(r, conditions.get(r.condition)), self._diversity.get(r.key), self._measure
                    )

    @overload
    def __getitem__(self, index: int) -> Transcript: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Transcript, ...]: ...

    def __getitem__(self, index: int | slice) -> Transcript | tuple[Transcript, ...]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step < 0:
                return tuple(self)[index]
            return tuple(islice(self, start, stop, step))
        i = operator.index(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("transcript index out of range")
        return next(islice(self, i, None))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredTranscripts):
            return (self.path, self.keys) == (other.path, other.keys)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.path, self.keys))

    def __repr__(self) -> str:
        return f"StoredTranscripts({str(self.path)!r}, {len(self)} results)"


def _calibration(
    transcripts: list[Transcript], agent_scale: float | None
) -> tuple[Calibration | None, Calibration | None, ConfidenceSpread | None]:
    """Agents' stated confidences (on their protocol's 0..scale) and judges' (0-100) against correctness;
    the judges' and moderators' confidences also in the stopping study's bins, with median and IQR."""
    agent_conf: list[float] = []
    agent_right: list[bool] = []
    judge_conf: list[float] = []
    judge_right: list[bool] = []
    for t in transcripts:
        for r in t.rounds:
            for turn in r.turns:
                if turn.confidence is not None:
                    agent_conf.append(float(turn.confidence))
                    agent_right.append(turn.correct)
            if r.judge is not None and r.judge.confidence is not None:
                judge_conf.append(float(r.judge.confidence))
                judge_right.append(_judge_correct(r.judge, r.turns, t.gold))
    agents = calibrate(to_probabilities(agent_conf, agent_scale), agent_right) if agent_conf else None
    judge = calibrate(to_probabilities(judge_conf, JUDGE_SCALE), judge_right) if judge_conf else None
    spread = confidence_spread(judge_conf, judge_right) if judge_conf else None
    return agents, judge, spread


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _number(x: float | None) -> float | None:
    """A finite stored number, or None."""
    return float(x) if x is not None and math.isfinite(x) else None


def _efficiency(condition: ResolvedCondition | None, transcripts: list[Transcript]) -> Efficiency | None:
    """Retention's forwarded replies, fallbacks, filter cost and kept diversity; None when no round records it."""
    records = [r.retention for t in transcripts for r in t.rounds if r.retention is not None]
    if not records:
        return None
    peers = _peers(condition)
    diversities = [d for x in records if (d := _number(x.diversity)) is not None]
    anlls = [a for t in transcripts for r in t.rounds for turn in r.turns if (a := _number(turn.anll)) is not None]
    perplexities = [
        p for t in transcripts for r in t.rounds for turn in r.turns if (p := _number(turn.perplexity)) is not None
    ]
    measures = list(dict.fromkeys(x.diversity_measure for x in records if x.diversity_measure))
    return Efficiency(
        rules=tuple(dict.fromkeys(x.rule for x in records)),
        rounds=len(records),
        forwarded=sum(x.forwarded for x in records),
        full=None if peers is None else len(records) * sum(len(p) for p in peers),
        fallbacks=sum(x.fallback for x in records),
        filter_calls=sum(x.filter_calls for x in records),
        filter_prompt_tokens=sum(x.filter_prompt_tokens for x in records),
        filter_completion_tokens=sum(x.filter_completion_tokens for x in records),
        diversity=_mean(diversities),
        diversity_measure=", ".join(measures) or None,
        anll=_mean(anlls),
        anll_turns=len(anlls),
        perplexity=_mean(perplexities),
    )


def _by_question(transcripts: Iterable[Transcript]) -> dict[QuestionKey, dict[int, Transcript]]:
    """Results grouped by question (in first-seen order), each question's by seed."""
    out: dict[QuestionKey, dict[int, Transcript]] = {}
    for t in transcripts:
        out.setdefault(t.question, {})[t.seed] = t
    return out


def _correct(groups: Mapping[QuestionKey, Mapping[int, Transcript]]) -> list[dict[int, bool]]:
    return [{s: t.correct for s, t in g.items()} for g in groups.values()]


def _metrics(groups: Mapping[QuestionKey, Mapping[int, Transcript]]) -> list[dict[int, float | None]]:
    """Each question's metric values by seed, over the results the task scored."""
    return [{s: t.metric for s, t in g.items() if t.scored} for g in groups.values()]


def peer_style(condition: ResolvedCondition | None) -> bool:
    """Agents that answer together and vote each round (the peer schedule, two or more agents, the final
    answer their vote, not a judge's) with at least one debate round: DAR's kind of debate."""
    if condition is None:
        return False
    p = condition.protocol
    return p.style.has_peers and p.agents >= 2 and not p.judged and p.rounds >= 2


def best_round_report(transcripts: list[Transcript]) -> BestRound | None:
    """The final and per-round majority-vote accuracy per seed and over seeds, and the best debate round.
    None without a debate round."""
    last = max((len(t.rounds) for t in transcripts), default=0)
    if last < 2:
        return None
    final: dict[int, list[float]] = defaultdict(list)
    rounds: dict[int, dict[int, list[float]]] = {r: defaultdict(list) for r in range(1, last)}
    for t in transcripts:
        final[t.seed].append(float(t.correct))
        for r in range(1, last):
            if t.status == "error" or not t.rounds:
                right = False
            else:
                right = t.rounds[min(r, len(t.rounds) - 1)].winner_correct
            rounds[r][t.seed].append(float(right))
    spreads = tuple((r, stats.seed_spread(by_seed)) for r, by_seed in rounds.items())
    best = max(spreads, key=lambda x: (x[1].mean, -x[0]))[0]
    return BestRound(stats.seed_spread(final), spreads, best)


def _condition_report(
    name: str,
    condition: ResolvedCondition | None,
    transcripts: list[Transcript],
    usage: Usage,
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
) -> ConditionReport:
    # debate dynamics leave out questions that ended with an error (counted apart, scored wrong)
    trajectories = [t.trajectory() for t in transcripts if t.status != "error"]
    n = len(transcripts)
    groups = _by_question(transcripts)
    by_rounds: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for t in transcripts:
        by_rounds[t.rounds_used][0] += 1
        by_rounds[t.rounds_used][1] += t.correct
    by_round: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for t in transcripts:
        for r in t.rounds:
            by_round[r.index][0] += 1
            by_round[r.index][1] += r.system_correct
    ftf, ftf_total = first_to_final(trajectories)
    scale = condition.protocol.stated_confidence_scale if condition is not None else None
    agents_cal, judge_cal, judge_spread = _calibration(transcripts, float(scale) if scale else None)
    per_seed: dict[int, list[float]] = defaultdict(list)
    for t in transcripts:
        per_seed[t.seed].append(float(t.correct))
    scored = any(t.scored for t in transcripts)
    return ConditionReport(
        name=name,
        protocol=condition.protocol.name if condition is not None else "",
        agents=len(condition.agents) if condition is not None else 0,
        accuracy=stats.question_accuracy(_correct(groups), seed, resamples),
        unparsed=sum(t.status == "unparsed" for t in transcripts),
        abstained=sum(t.status == "abstained" for t in transcripts),
        errors=sum(t.status == "error" for t in transcripts),
        mean_rounds=sum(t.rounds_used for t in transcripts) / n if n else math.nan,
        rounds=tuple((k, v[0], v[1]) for k, v in sorted(by_rounds.items())),
        stop_reasons=tuple(Counter(t.stop_reason for t in transcripts).most_common()),
        accuracy_by_round=tuple((k, v[0], v[1]) for k, v in sorted(by_round.items())),
        usage=usage,
        first_to_final=tuple(ftf.items()),
        first_to_final_total=ftf_total,
        round_to_round=tuple(round_to_round(trajectories).items()),
        agent_changes=tuple(agent_changes(trajectories)),
        oracle=oracle(trajectories),
        diversity=initial_diversity(trajectories),
        calibration=agents_cal,
        judge_calibration=judge_cal,
        efficiency=_efficiency(condition, transcripts),
        questions=len(groups),
        seed_accuracy=stats.seed_spread(per_seed),
        best_round=best_round_report(transcripts) if peer_style(condition) else None,
        judge_confidence=judge_spread,
        metric=stats.metric_summary(_metrics(groups), seed, resamples) if scored else None,
        replies=reply_counts(
            (turn for t in transcripts for r in t.rounds for turn in r.turns),
            condition is not None and condition.protocol.confidence is not None,
            (sum(t.rulings for t in transcripts), sum(t.rulings_unreadable for t in transcripts)),
        ),
    )


def pair_report(
    a: str,
    b: str,
    results: dict[str, dict[UnitKey, Transcript]],
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
    metric_name: str | None = None,
    accuracy_applies: bool = True,
) -> PairReport:
    """Compare conditions A and B on the questions both answered, the question as the unit: a question's
    seeds that both ran pair up and are combined per question (``stats.compare_repeats``); with one seed
    these are the exact McNemar test, matched odds ratio and paired bootstrap on questions."""
    ga, gb = _by_question(results[a].values()), _by_question(results[b].values())
    common = [q for q in ga if q in gb]
    ca = {q: ga[q] for q in common}
    cb = {q: gb[q] for q in common}
    scored = any(t.scored for g in (*ca.values(), *cb.values()) for t in g.values())
    seeds = {s for q in common for s in ca[q] if s in cb[q]}
    return PairReport(
        a=a,
        b=b,
        accuracy=stats.compare_repeats(_correct(ca), _correct(cb), seed, resamples),
        holm_p=None,
        rounds=stats.compare_rounds_repeats(
            [{s: t.rounds_used for s, t in g.items()} for g in ca.values()],
            [{s: t.rounds_used for s, t in g.items()} for g in cb.values()],
            seed,
            resamples,
        ),
        metric=stats.compare_metric(_metrics(ca), _metrics(cb), seed, resamples) if scored else None,
        metric_name=metric_name if scored else None,
        accuracy_applies=accuracy_applies,
        questions=sum(any(s in cb[q] for s in ca[q]) for q in common),
        seeds=len(seeds),
    )


def task_metric(task: str) -> tuple[str | None, bool]:
    """The task card's description of its metric (None when the task is unknown here) and whether accuracy
    applies: as the task declares it (``TaskBase.accuracy_applies``; biographies is scored by fact precision
    alone); for a task that does not declare it, unless its description is known and does not mention
    accuracy; for a task unknown here, yes."""
    from moot.tasks import get_task

    try:
        instance = get_task(task)
    except MootError:
        return None, True
    declared = getattr(instance, "accuracy_applies", None)
    description = getattr(instance, "metric_description", None)
    if not isinstance(description, str):
        try:
            description = instance.card().metric
        except MootError:
            return None, declared if isinstance(declared, bool) else True
    return description, declared if isinstance(declared, bool) else "accuracy" in description.lower()


def _task_report(
    task: str,
    names: list[str],
    conditions: dict[str, ResolvedCondition],
    transcripts: list[Transcript],
    usage: dict[tuple[str, str], Usage],
    seed: int,
    resamples: int,
    rereads: Mapping[ResultKey, Mapping[str, bool | None]] | None = None,
) -> TaskReport:
    results: dict[str, dict[UnitKey, Transcript]] = {n: {} for n in names}
    for t in transcripts:
        results[t.condition][t.key] = t
    present = [n for n in names if results[n]]
    reports = tuple(
        _condition_report(
            n, conditions.get(n), list(results[n].values()), usage.get((n, task), Usage(cost=None)), seed, resamples
        )
        for n in present
    )
    scored = any(c.metric is not None for c in reports)
    metric_name, accuracy_applies = task_metric(task) if scored else (None, True)
    pairs = [
        pair_report(a, b, results, seed, resamples, metric_name, accuracy_applies)
        for i, a in enumerate(present)
        for b in present[i + 1 :]
    ]
    sensitivity = None
    if rereads is not None and accuracy_applies:
        sensitivity = task_readers(
            correctness_by_reader(rereads, task),
            {n: conditions.get(n) for n in present},
            [(p.a, p.b) for p in pairs],
            len(present) >= 3,  # Holm over the task's pairs, as the pairs table
            seed,
            resamples,
        )
    cochran = None
    if len(present) >= 3:
        adjusted = stats.holm([p.accuracy.mcnemar_p for p in pairs])
        pairs = [replace(p, holm_p=h) for p, h in zip(pairs, adjusted)]
        groups = {n: _by_question(results[n].values()) for n in present}
        common = [q for q in groups[present[0]] if all(q in groups[n] for n in present)]
        cochran = stats.cochran_q_repeats(
            [[{s: t.correct for s, t in groups[n][q].items()} for n in present] for q in common]
        )
    return TaskReport(
        task,
        len({t.key for t in transcripts}),
        reports,
        tuple(pairs),
        cochran,
        questions=len({t.question for t in transcripts}),
        seeds=tuple(sorted({t.seed for t in transcripts})),
        metric_name=metric_name,
        accuracy_applies=accuracy_applies,
        readers=sensitivity,
    )


def _open(run: RunStore | Path | str) -> tuple[RunStore, bool]:
    if isinstance(run, RunStore):
        return run, False
    return RunStore.read(Path(run)), True  # read-only: a report changes nothing on disk


def under_reader(t: Transcript, correct: Mapping[str, bool | None], reader: str) -> Transcript:
    """``t`` with its final answer scored as ``reader`` reads it (moot's where the reader does not apply).
    Only the final correctness changes: rounds, transitions and oracles keep moot's reading."""
    value = correct.get(reader)
    return t if reader == MOOT or value is None else replace(t, correct=value)


def build_report(
    run: RunStore | Path | str, seed: int = 0, resamples: int = stats.DEFAULT_RESAMPLES, reader: str = MOOT
) -> Report:
    """The report of a stored run (a path or an open store). ``seed`` and ``resamples`` fix every bootstrap;
    ``reader`` (``moot.analysis.readers``) scores the final answers of the main tables (default: moot's own).

    The store is read one result at a time; the statistics keep each result's lean transcript and the
    calls it used, and ``Report.transcripts`` reads the full transcripts again when iterated."""
    get_reader(reader)  # an unknown name fails before any work
    store, owned = _open(run)
    try:
        if store.count("results") == 0:
            raise AnalysisError(f"{store.path} holds no results yet")
        meta = store.run_meta()
        conditions = store.conditions()
        transcripts: list[Transcript] = []
        used: list[UsedCalls] = []
        diversities = Diversities()
        measured: list[int] = []  # the transcripts with rounds whose retained diversity the report measures
        rereads: dict[ResultKey, dict[str, bool | None]] = {}  # each result's correctness under each reader
        for r in store.iter_results():
            rereads[r.key] = reread(r, conditions.get(r.condition))
            transcripts.append(
                under_reader(transcript(r, conditions.get(r.condition), lean=True), rereads[r.key], reader)
            )
            used.append(used_calls(r))
            if diversities.add(r):
                measured.append(len(transcripts) - 1)
        diversities.flush()
        for i in measured:
            t = transcripts[i]
            transcripts[i] = with_diversity(t, diversities.values.get(t.result_key), diversities.measure)
        names = list(dict.fromkeys([*conditions, *(t.condition for t in transcripts)]))
        paid = usage(store.iter_calls(), used, meta.config.prices, lambda unit: (unit[0], unit[1]))
        tasks = list(dict.fromkeys(t.task for t in transcripts))
        by_task: dict[str, list[Transcript]] = {task: [] for task in tasks}
        for t in transcripts:
            by_task[t.task].append(t)
        reports = [
            _task_report(task, names, conditions, by_task[task], paid, seed, resamples, rereads) for task in tasks
        ]
        budgets = _budgets(store, conditions, seed, resamples)
        reports = [
            replace(t, vote_pool=budgets[t.task][0], equal_budget=budgets[t.task][1]) if t.task in budgets else t
            for t in reports
        ]
        return Report(
            name=meta.name,
            path=str(store.path),
            status=meta.status,
            moot_version=meta.moot_version,
            wall_s=float(sum(s.wall_s for s in store.sessions())),
            seed=seed,
            resamples=resamples,
            condition_names=tuple(names),
            tasks=tuple(reports),
            transcripts=StoredTranscripts(
                store.path, (t.result_key for t in transcripts), diversities.values, diversities.measure
            ),
            reader=reader,
        )
    finally:
        if owned:
            store.close()


BUDGET_MEASURE: Measure = "tokens"  # the report's equal-budget comparison: debates against vote@k at equal tokens


def _budgets(
    store: RunStore, conditions: Mapping[str, ResolvedCondition], seed: int, resamples: int
) -> dict[str, tuple[VotePool, tuple[EqualBudget, ...] | None]]:
    """Per task, the vote@k of the run's pool and every other condition against its vote@k at equal tokens
    (``moot.analysis.budget.equal_budget_table``, Holm over the whole table), where the run has a pool: a
    condition of 1 round with K >= 2 agents (``default_pool``), and some other condition. Empty otherwise, or
    where the pool cannot be read: the report never fails for it. Correctness is moot's reading of the answers."""
    from moot.analysis.budget import default_pool, equal_budget_table

    if len(conditions) < 2 or not any(c.protocol.rounds == 1 for c in conditions.values()):
        return {}
    try:
        pool = default_pool(store)
        if conditions[pool].protocol.agents < 2:
            return {}
        pools, rows = equal_budget_table(store, pool, BUDGET_MEASURE, seed, resamples)
    except (MootError, ValueError, KeyError, IndexError, ArithmeticError):
        return {}
    out: dict[str, tuple[VotePool, tuple[EqualBudget, ...] | None]] = {}
    for vote in pools:
        mine = tuple(r for r in rows if r.task == vote.task)
        out[vote.task] = (vote, mine or None)
    return out


def compare_conditions(
    run: RunStore | Path | str,
    a: str,
    b: str,
    task: str | None = None,
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
    reader: str = MOOT,
) -> list[tuple[str, PairReport]]:
    """The paired comparison of conditions A and B, per task (or on one ``task``); ``reader`` scores the final
    answers of the main tables (``under_reader``), and each pair is shown under every reader beside."""
    get_reader(reader)
    store, owned = _open(run)
    try:
        conditions = store.conditions()
        known = list(conditions)
        for name in (a, b):
            if name not in known:
                raise AnalysisError(f"no condition {name!r} in {store.path}; conditions: {', '.join(known)}")
        if a == b:
            raise AnalysisError("compare two different conditions")
        transcripts = []
        rereads: dict[ResultKey, dict[str, bool | None]] = {}
        for r in store.iter_results():
            if r.condition in (a, b):
                rereads[r.key] = reread(r, conditions.get(r.condition))
                transcripts.append(
                    under_reader(transcript(r, conditions.get(r.condition), lean=True), rereads[r.key], reader)
                )
        tasks = list(dict.fromkeys(t.task for t in transcripts))
        if task is not None:
            if task not in tasks:
                raise AnalysisError(f"no results for task {task!r}; tasks: {', '.join(tasks) or 'none'}")
            tasks = [task]
        out = []
        for name in tasks:
            results: dict[str, dict[UnitKey, Transcript]] = {a: {}, b: {}}
            for t in transcripts:
                if t.task == name:
                    results[t.condition][t.key] = t
            scored = any(t.scored for r in results.values() for t in r.values())
            metric_name, accuracy_applies = task_metric(name) if scored else (None, True)
            pair = pair_report(a, b, results, seed, resamples, metric_name, accuracy_applies)
            if accuracy_applies:
                sensitivity = task_readers(
                    correctness_by_reader(rereads, name),
                    {a: conditions.get(a), b: conditions.get(b)},
                    [(a, b)],
                    False,
                    seed,
                    resamples,
                )
                pair = replace(pair, readers=sensitivity)
            out.append((name, pair))
        if not out or all(p.accuracy.n == 0 for _, p in out):
            raise AnalysisError(f"conditions {a!r} and {b!r} share no answered question in {store.path}")
        return out
    finally:
        if owned:
            store.close()
