"""A run's report, read from its store: per task and condition, every figure the tables and plots show.

``build_report`` reads results, turns, calls, questions, conditions, meta and sessions. It uses
what the store holds: calibration appears once turns (or judges) carry confidences, and the
retention and efficiency figures once debate rounds record which replies were forwarded.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from moot.analysis import stats
from moot.analysis.calibration import Calibration, calibrate, to_probabilities
from moot.analysis.formatting import percent
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
from moot.debate.records import JudgeVerdict, PoolRecord, RetentionRecord, Turn
from moot.errors import MootError
from moot.runner.config import ResolvedCondition
from moot.runner.records import StoredResult
from moot.runner.store import RunStore
from moot.runner.summary import Usage, usage
from moot.tasks.base import ParseStatus

UnitKey = tuple[str, str, int]  # task, question id, seed
JUDGE_SCALE = 100.0  # judges and moderators state confidence on 0-100


class AnalysisError(MootError):
    """A report or comparison cannot be made (no results, unknown condition or task)."""


# -- transcripts ------------------------------------------------------------------------
@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Transcript:
    """One question under one condition, as the viewer shows it."""

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

    @property
    def key(self) -> UnitKey:
        return (self.task, self.question_id, self.seed)

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


@dataclass(frozen=True)
class PairReport:
    a: str
    b: str
    accuracy: stats.PairedComparison
    holm_p: float | None  # with three or more conditions: McNemar p adjusted over all pairs of the task
    rounds: stats.RoundDifference


@dataclass(frozen=True)
class TaskReport:
    task: str
    units: int  # (question, seed) pairs with a result under some condition
    conditions: tuple[ConditionReport, ...]
    pairs: tuple[PairReport, ...]
    cochran: stats.CochranQ | None


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
    transcripts: tuple[Transcript, ...]


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


def _turn_view(turn: Turn, before: Messages | None, retained: str | None) -> TurnView:
    shown = tuple((m.role, m.content) for m in turn.shown)
    return TurnView(
        agent=turn.agent,
        text=turn.text,
        answer=turn.answer,
        parsed=turn.parse_status == ParseStatus.PARSED,
        correct=bool(turn.correct),
        confidence=turn.confidence,
        finish_reason=turn.finish_reason,
        prompt_tokens=turn.prompt_tokens,
        completion_tokens=turn.completion_tokens,
        shown_new=_new_messages(shown, before),
        shown=shown,
        retained=retained,
        nll=turn.nll,
        anll=turn.anll,
        perplexity=turn.perplexity,
    )


def transcript(stored: StoredResult, condition: ResolvedCondition | None) -> Transcript:
    """One stored result as the viewer shows it; ``condition`` is None for a condition the store does not list."""
    result, question = stored.result, stored.result.question
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
            retained = None if retention is None else _retained_text(retention, turn.agent, order, peers, agents)
            views.append(_turn_view(turn, previous.get(turn.agent), retained))
            previous[turn.agent] = views[-1].shown
        winner = record.vote.winner
        winner_correct = winner is not None and any(v.correct and v.answer == winner for v in views)
        judge = record.judge
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
                pool=record.pool,
                retention=retention,
            )
        )
    return Transcript(
        task=stored.task,
        question_id=question.id,
        seed=stored.seed,
        condition=stored.condition,
        prompt=question.prompt,
        gold=question.gold,
        rounds=tuple(rounds),
        final_answer=result.final_answer,
        status=result.status.value,
        correct=result.correct,
        rounds_used=result.rounds_used,
        stop_reason=result.stop_reason,
        error=result.error,
        final_judge=result.final_judge,
    )


def read_transcripts(store: RunStore) -> list[Transcript]:
    """Every stored result with its rounds, in question, seed and condition order."""
    conditions = store.conditions()
    return [transcript(r, conditions.get(r.condition)) for r in store.results()]


def _calibration(
    transcripts: list[Transcript], agent_scale: float | None
) -> tuple[Calibration | None, Calibration | None]:
    """Agents' stated confidences (on their protocol's 0..scale) and judges' (0-100) against correctness."""
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
    return agents, judge


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


def _condition_report(
    name: str, condition: ResolvedCondition | None, transcripts: list[Transcript], usage: Usage
) -> ConditionReport:
    # debate dynamics leave out questions that ended with an error (counted apart, scored wrong)
    trajectories = [t.trajectory() for t in transcripts if t.status != "error"]
    n = len(transcripts)
    right = sum(t.correct for t in transcripts)
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
    agents_cal, judge_cal = _calibration(transcripts, float(scale) if scale else None)
    return ConditionReport(
        name=name,
        protocol=condition.protocol.name if condition is not None else "",
        agents=len(condition.agents) if condition is not None else 0,
        accuracy=stats.wilson(right, n),
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
    )


def pair_report(
    a: str,
    b: str,
    results: dict[str, dict[UnitKey, Transcript]],
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
) -> PairReport:
    """Compare conditions A and B on the questions (and seeds) both answered."""
    common = [k for k in results[a] if k in results[b]]
    ra = [results[a][k] for k in common]
    rb = [results[b][k] for k in common]
    return PairReport(
        a=a,
        b=b,
        accuracy=stats.compare_paired([t.correct for t in ra], [t.correct for t in rb], seed, resamples),
        holm_p=None,
        rounds=stats.compare_rounds([t.rounds_used for t in ra], [t.rounds_used for t in rb], seed, resamples),
    )


def _task_report(
    task: str,
    names: list[str],
    conditions: dict[str, ResolvedCondition],
    transcripts: list[Transcript],
    usage: dict[tuple[str, str], Usage],
    seed: int,
    resamples: int,
) -> TaskReport:
    results: dict[str, dict[UnitKey, Transcript]] = {n: {} for n in names}
    for t in transcripts:
        results[t.condition][t.key] = t
    present = [n for n in names if results[n]]
    reports = tuple(
        _condition_report(n, conditions.get(n), list(results[n].values()), usage.get((n, task), Usage(cost=None)))
        for n in present
    )
    pairs = [pair_report(a, b, results, seed, resamples) for i, a in enumerate(present) for b in present[i + 1 :]]
    cochran = None
    if len(present) >= 3:
        adjusted = stats.holm([p.accuracy.mcnemar_p for p in pairs])
        pairs = [PairReport(p.a, p.b, p.accuracy, h, p.rounds) for p, h in zip(pairs, adjusted)]
        common = [k for k in results[present[0]] if all(k in results[n] for n in present)]
        cochran = stats.cochran_q([[results[n][k].correct for n in present] for k in common])
    units = len({t.key for t in transcripts})
    return TaskReport(task, units, reports, tuple(pairs), cochran)


def _open(run: RunStore | Path | str) -> tuple[RunStore, bool]:
    if isinstance(run, RunStore):
        return run, False
    return RunStore.open(Path(run)), True


def build_report(run: RunStore | Path | str, seed: int = 0, resamples: int = stats.DEFAULT_RESAMPLES) -> Report:
    """The report of a stored run (a path or an open store). ``seed`` and ``resamples`` fix every bootstrap."""
    store, owned = _open(run)
    try:
        if store.count("results") == 0:
            raise AnalysisError(f"{store.path} holds no results yet")
        meta = store.run_meta()
        conditions = store.conditions()
        results = store.results()
        transcripts = [transcript(r, conditions.get(r.condition)) for r in results]
        names = list(dict.fromkeys([*conditions, *(t.condition for t in transcripts)]))
        paid = usage(store.calls(), results, meta.config.prices, lambda condition, task: (condition, task))
        tasks = list(dict.fromkeys(t.task for t in transcripts))
        by_task = {task: [t for t in transcripts if t.task == task] for task in tasks}
        return Report(
            name=meta.name,
            path=str(store.path),
            status=meta.status,
            moot_version=meta.moot_version,
            wall_s=float(sum(s.wall_s for s in store.sessions())),
            seed=seed,
            resamples=resamples,
            condition_names=tuple(names),
            tasks=tuple(_task_report(task, names, conditions, by_task[task], paid, seed, resamples) for task in tasks),
            transcripts=tuple(transcripts),
        )
    finally:
        if owned:
            store.close()


def compare_conditions(
    run: RunStore | Path | str,
    a: str,
    b: str,
    task: str | None = None,
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
) -> list[tuple[str, PairReport]]:
    """The paired comparison of conditions A and B, per task (or on one ``task``)."""
    store, owned = _open(run)
    try:
        known = list(store.conditions())
        for name in (a, b):
            if name not in known:
                raise AnalysisError(f"no condition {name!r} in {store.path}; conditions: {', '.join(known)}")
        if a == b:
            raise AnalysisError("compare two different conditions")
        transcripts = [t for t in read_transcripts(store) if t.condition in (a, b)]
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
            out.append((name, pair_report(a, b, results, seed, resamples)))
        if not out or all(p.accuracy.n == 0 for _, p in out):
            raise AnalysisError(f"conditions {a!r} and {b!r} share no answered question in {store.path}")
        return out
    finally:
        if owned:
            store.close()
