"""A run's stored results as the report views them: transcripts, read from the run's store.

``transcript`` turns one stored result into the viewer's ``Transcript`` (``lean``: without its texts, what
the statistics need and no more). ``StoredTranscripts`` reads the full transcripts from the store again each
time it is iterated, so that a report of a 20,000-question run fits in memory and its HTML streams page by
page (``moot.analysis.html``). The retained diversity of debate rounds is measured here, from the kept
replies' stored texts (``Diversities``), where the store does not hold it: a debate does not measure it.
"""

from __future__ import annotations

import contextlib
import math
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import overload

from moot.analysis.transitions import Trajectory
from moot.debate.records import TRUNCATED, DebateResult, JudgeVerdict, PoolRecord, RetentionRecord, Turn
from moot.errors import MootError
from moot.runner.config import ResolvedCondition
from moot.runner.records import StoredResult
from moot.runner.store import RunStore
from moot.tasks.base import ParseStatus

UnitKey = tuple[str, str, int]  # task, question id, seed
ResultKey = tuple[str, str, str, int]  # condition, task, question id, seed: one stored result
QuestionKey = tuple[str, str]  # task, question id: the statistical unit


# -- opening a run ----------------------------------------------------------------------
class AnalysisError(MootError):
    """A report or comparison cannot be made (no results, unknown condition or task)."""


def open_run(run: RunStore | Path | str) -> tuple[RunStore, bool]:
    """The run's store, read-only (a report changes nothing on disk), and whether the caller opened it (and
    so closes it): a store passed in stays open."""
    if isinstance(run, RunStore):
        return run, False
    return RunStore.read(Path(run)), True


def finite(x: float | None) -> float | None:
    """A finite stored number, or None."""
    return float(x) if x is not None and math.isfinite(x) else None


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
    reasoning: str | None = None  # a reasoning model's reasoning, apart from ``text`` (its content)
    reasoning_tokens: int | None = None
    reasoned: bool = False  # the reply had reasoning (kept when a lean view drops its text)
    reasoning_only: bool = False  # it reasoned and gave no content: unparsed, never read from the reasoning

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


# -- reading the store --------------------------------------------------------------------
Messages = tuple[tuple[str, str], ...]  # (role, content)


def _new_messages(shown: Messages, before: Messages | None) -> Messages:
    """What was added to an agent's context since its previous turn (its own reply excluded)."""
    if before is None or shown[: len(before)] != before:
        return shown
    added = shown[len(before) :]
    return added[1:] if added and added[0][0] == "assistant" else added


def topology_peers(condition: ResolvedCondition | None) -> list[list[int]] | None:
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


def judge_correct(judge: JudgeVerdict, turns: Iterable[TurnView], gold: str) -> bool:
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
        reasoning=None if lean else turn.reasoning,
        reasoning_tokens=turn.reasoning_tokens,
        reasoned=turn.reasoning is not None,
        reasoning_only=turn.reasoning_only,
    )


def transcript(stored: StoredResult, condition: ResolvedCondition | None, lean: bool = False) -> Transcript:
    """One stored result as the viewer shows it; ``condition`` is None for a condition the store does not list.

    ``lean``: without its texts (replies, what agents were shown, the prompt, judges' and filters' replies,
    pool candidates), what the statistics need and no more: a large run's transcripts fit in memory."""
    from moot.debate.components.stopping.judge import read_object

    result, question = stored.result, stored.result.question
    verdicts = [v for v in (*(r.judge for r in result.rounds), result.final_judge) if v is not None]
    order = [a.name for a in condition.agents] if condition is not None else []
    peers = topology_peers(condition)
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
            (judge.answer, judge_correct(judge, views, question.gold))
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
        metric=finite(stored.metric),
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
        store, _ = open_run(self.path)
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
