"""Accounting and per-question tables, read back from a run store as typed records.

``usage`` is the one computation of calls, tokens, model time and cost, for ``moot run``'s
totals, the stored summary and the report.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from moot.runner.config import Price
from moot.runner.records import StoredCall, StoredResult
from moot.runner.store import RunStore

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Usage:
    """Calls and tokens. ``calls``/tokens/model time/cost are what was paid for (calls stored under a
    condition); ``used_*`` count every call the debates needed (agents' turns, every candidate of a
    diversity-aware round 0's pool, judges, moderators, filters, scorers), including calls shared with
    another condition or replayed. Per question, used is never less than paid (``usage``), so
    ``shared_calls`` is never negative."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0  # model time of the paid calls
    cost: float | None = 0.0  # US dollars; None when some paid call's model has no price
    unpriced: frozenset[str] = frozenset()  # model names without a price
    used_calls: int = 0
    used_prompt_tokens: int = 0
    used_completion_tokens: int = 0

    @property
    def used_tokens(self) -> int:
        return self.used_prompt_tokens + self.used_completion_tokens

    @property
    def shared_calls(self) -> int:
        """Calls used but paid by another condition or an earlier identical call (round 0 shared, replays)."""
        return self.used_calls - self.calls


Unit = tuple[str, str, str, int]  # condition, task, question id, seed


@dataclass(frozen=True)
class UsedCalls:
    """What one stored result's debate used: its calls and their prompt and completion tokens."""

    condition: str
    task: str
    question_id: str
    seed: int
    calls: int
    prompt_tokens: int
    completion_tokens: int

    @property
    def unit(self) -> Unit:
        return (self.condition, self.task, self.question_id, self.seed)


def helper_usage(stored: StoredResult) -> tuple[int, int, int]:
    """Calls, prompt and completion tokens of a result's non-agent calls: judges, Liang's moderator and
    final judge, retention filters, and a judge-scored task's scorer (its tokens are not recorded per
    question, only its calls)."""
    result = stored.result
    verdicts = [r.judge for r in result.rounds if r.judge is not None]
    if result.final_judge is not None:
        verdicts.append(result.final_judge)
    filters = [r.retention for r in result.rounds if r.retention is not None]
    return (
        sum(v.calls for v in verdicts) + sum(f.filter_calls for f in filters) + stored.scorer_calls,
        sum(v.prompt_tokens for v in verdicts) + sum(f.filter_prompt_tokens for f in filters),
        sum(v.completion_tokens for v in verdicts) + sum(f.filter_completion_tokens for f in filters),
    )


def used_calls(stored: StoredResult) -> UsedCalls:
    """The calls a stored result's debate used: one per agent turn, except a diversity-aware round 0, which
    used every candidate of its pool (M calls, of which N replies were kept as the agents' turns), plus its
    helpers' calls (``helper_usage``)."""
    calls, prompt_tokens, completion_tokens = helper_usage(stored)
    for record in stored.result.rounds:
        if record.pool is not None:
            calls += len(record.pool.texts)
            prompt_tokens += record.pool.prompt_tokens
            completion_tokens += record.pool.completion_tokens
            continue
        for turn in record.turns:
            calls += 1
            prompt_tokens += turn.prompt_tokens
            completion_tokens += turn.completion_tokens
    question = stored.result.question.id
    return UsedCalls(stored.condition, stored.task, question, stored.seed, calls, prompt_tokens, completion_tokens)


def usage(
    calls: Iterable[StoredCall],
    results: Iterable[StoredResult | UsedCalls],
    prices: Mapping[str, Price],
    by: Callable[[Unit], K],
) -> dict[K, Usage]:
    """Paid and used calls and tokens grouped by ``by((condition, task, question id, seed))``, priced by model name (US dollars
    per million tokens; the prompt tokens a server reported cached at the price's ``cached_prompt``; a call
    answered in a provider batch at the price's ``batch`` share). A group with a
    call whose model has no price has cost None. ``results``: the
    stored results, or their ``used_calls`` (what a report streaming a large store keeps).

    Used is counted per question (condition, task, question id, seed) as the larger of what its result
    records (``used_calls``) and what the question paid: calls a question made but its result does not
    record (the successful calls of a round that then failed, a question not finished yet, a call made
    again with --no-cache) were needed too, so used is never less than paid and shared never negative."""
    out: dict[K, Usage] = {}
    paid: dict[Unit, tuple[int, int, int]] = {}
    for c in calls:
        unit = (c.condition, c.task, c.question_id, c.seed)
        key = by(unit)
        u = out.get(key, Usage())
        price = prices.get(c.model_name)
        cost = None
        if price is not None and u.cost is not None:
            cost = u.cost + price.dollars(c.prompt_tokens, c.completion_tokens, c.cached_tokens, c.batched)
        out[key] = replace(
            u,
            calls=u.calls + 1,
            prompt_tokens=u.prompt_tokens + c.prompt_tokens,
            completion_tokens=u.completion_tokens + c.completion_tokens,
            latency_s=u.latency_s + c.latency_s,
            cost=cost,
            unpriced=u.unpriced if price is not None else u.unpriced | {c.model_name},
        )
        n, p, q = paid.get(unit, (0, 0, 0))
        paid[unit] = (n + 1, p + c.prompt_tokens, q + c.completion_tokens)
    used: dict[Unit, tuple[int, int, int]] = {}
    for r in results:
        x = r if isinstance(r, UsedCalls) else used_calls(r)
        used[x.unit] = (x.calls, x.prompt_tokens, x.completion_tokens)
    for unit in dict.fromkeys([*used, *paid]):
        recorded, made = used.get(unit, (0, 0, 0)), paid.get(unit, (0, 0, 0))
        n, p, q = (max(a, b) for a, b in zip(recorded, made))
        key = by(unit)
        u = out.get(key, Usage())
        out[key] = replace(
            u,
            used_calls=u.used_calls + n,
            used_prompt_tokens=u.used_prompt_tokens + p,
            used_completion_tokens=u.used_completion_tokens + q,
        )
    return out


@dataclass(frozen=True)
class ConditionSummary:
    """Totals of one condition (or of the run): its results and its ``usage``."""

    name: str
    questions: int = 0
    correct: int = 0
    unparsed: int = 0
    abstained: int = 0
    errors: int = 0
    rounds: int = 0
    metric_sum: float = 0.0  # a task's own score (biographies: fact precision), where it applies
    metric_count: int = 0
    usage: Usage = Usage()
    replies: int = 0  # the agents' replies, every round
    truncated: int = 0  # of them, cut off by the token limit (finish reason "length")
    confidence_missing: int | None = None  # replies without a stated confidence, where the protocol asks one
    confidence_replies: int = 0  # the replies of the conditions that ask for a confidence
    reasoned: int = 0  # replies with a reasoning model's reasoning, read apart from their content
    reasoning_tokens: int = 0  # their reasoning tokens (of the agents' completion tokens, where counted)
    reasoning_only: int = 0  # replies that reasoned and gave no content: unparsed

    @property
    def accuracy(self) -> float:
        return self.correct / self.questions if self.questions else 0.0

    @property
    def metric(self) -> float | None:
        """The mean of the task's own score over the questions that have one."""
        return self.metric_sum / self.metric_count if self.metric_count else None


def _summary(
    name: str, results: list[StoredResult], used: Usage, asked: frozenset[str] = frozenset()
) -> ConditionSummary:
    """``asked``: the conditions whose protocol asks agents for a confidence."""
    metrics = [r.metric for r in results if r.metric is not None]
    turns = [(r.condition, t) for r in results for record in r.result.rounds for t in record.turns]
    stating = [t for condition, t in turns if condition in asked]
    return ConditionSummary(
        name=name,
        questions=len(results),
        correct=sum(r.result.correct for r in results),
        unparsed=sum(r.result.status == "unparsed" for r in results),
        abstained=sum(r.result.status == "abstained" for r in results),
        errors=sum(r.result.status == "error" for r in results),
        rounds=sum(r.result.rounds_used for r in results),
        metric_sum=sum(metrics, 0.0),
        metric_count=len(metrics),
        usage=used,
        replies=len(turns),
        truncated=sum(t.truncated for _, t in turns),
        confidence_missing=sum(t.confidence is None for t in stating) if stating else None,
        confidence_replies=len(stating),
        reasoned=sum(t.reasoning is not None for _, t in turns),
        reasoning_tokens=sum(t.reasoning_tokens or 0 for _, t in turns),
        reasoning_only=sum(t.reasoning_only for _, t in turns),
    )


def summarize(store: RunStore) -> tuple[list[ConditionSummary], ConditionSummary]:
    """Per-condition summaries (in the run's condition order) and the run's total."""
    conditions = store.conditions()
    names = list(conditions)
    asked = frozenset(n for n, c in conditions.items() if c.protocol.confidence is not None)
    prices = store.run_meta().config.prices
    results = store.results()
    calls = store.calls()
    per_condition = usage(calls, results, prices, lambda unit: unit[0])
    total = usage(calls, results, prices, lambda unit: None).get(None, Usage())
    return (
        [_summary(n, [r for r in results if r.condition == n], per_condition.get(n, Usage()), asked) for n in names],
        _summary("total", results, total, asked),
    )


@dataclass(frozen=True)
class QuestionRow:
    condition: str
    task: str
    question_id: str
    seed: int
    prompt: str
    gold: str
    answers: tuple[tuple[str | None, ...], ...]  # per round, in agent order
    final_answer: str | None
    status: str
    correct: bool
    error: str | None
    tie_broken: bool = False  # the final answer was picked by the tie rule (see ``tie_broken``)


def tie_broken(result: Any, judged: bool = False) -> bool:
    """Whether ``result``'s final answer (a DebateResult's) was settled by the tie rule: picked among
    answers tied at the top of the deciding vote. ``judged``: the protocol's final answer is a judge's
    or a moderator's (its aggregation is ``judged``), never settled by a tie rule."""
    if judged or not result.rounds or result.final_answer is None:
        return False
    vote = result.rounds[-1].vote
    return len(vote.tied) > 1 and vote.winner == result.final_answer


def question_rows(store: RunStore) -> list[QuestionRow]:
    """Every stored result with its answers per round, in the run's question, seed and condition order."""
    judged = {name: c.protocol.aggregation.judged for name, c in store.conditions().items()}
    return [
        QuestionRow(
            r.condition,
            r.task,
            r.result.question.id,
            r.seed,
            r.result.question.prompt,
            r.result.question.gold,
            tuple(tuple(t.answer for t in record.turns) for record in r.result.rounds),
            r.result.final_answer,
            r.result.status.value,
            r.result.correct,
            r.result.error,
            tie_broken(r.result, judged.get(r.condition, False)),
        )
        for r in store.results()
    ]


def summary_json(store: RunStore) -> dict[str, Any]:
    """The summary as JSON (stored in the run's meta at the end of each session)."""
    conditions, total = summarize(store)

    def as_dict(s: ConditionSummary) -> dict[str, Any]:
        return {
            "name": s.name,
            "questions": s.questions,
            "correct": s.correct,
            "unparsed": s.unparsed,
            "abstained": s.abstained,
            "errors": s.errors,
            "rounds": s.rounds,
            "calls": s.usage.calls,
            "prompt_tokens": s.usage.prompt_tokens,
            "completion_tokens": s.usage.completion_tokens,
            "latency_s": s.usage.latency_s,
            "cost": s.usage.cost,
            "used_calls": s.usage.used_calls,
            "used_prompt_tokens": s.usage.used_prompt_tokens,
            "used_completion_tokens": s.usage.used_completion_tokens,
            "metric_sum": s.metric_sum,
            "metric_count": s.metric_count,
            "accuracy": s.accuracy,
            "metric": s.metric,
            "unpriced_models": sorted(s.usage.unpriced),
        }

    return json.loads(json.dumps({"conditions": [as_dict(c) for c in conditions], "total": as_dict(total)}))
