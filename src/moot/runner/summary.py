"""Accounting and per-question tables, read back from a run store."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from moot.runner.store import RunStore


@dataclass
class ConditionSummary:
    """Totals of one condition. ``calls``/tokens are what the condition itself paid for;
    ``used_*`` count every call its debates used, including calls shared with other
    conditions or replayed."""

    name: str
    questions: int = 0
    correct: int = 0
    unparsed: int = 0
    abstained: int = 0
    errors: int = 0
    rounds: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost: float | None = 0.0
    used_calls: int = 0
    used_prompt_tokens: int = 0
    used_completion_tokens: int = 0
    unpriced: set[str] = field(default_factory=set)
    metric_sum: float = 0.0  # a task's own score (biographies: fact precision), where it applies
    metric_count: int = 0

    @property
    def accuracy(self) -> float:
        return self.correct / self.questions if self.questions else 0.0

    @property
    def metric(self) -> float | None:
        """The mean of the task's own score over the questions that have one."""
        return self.metric_sum / self.metric_count if self.metric_count else None


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


def helper_usage(result: dict[str, Any]) -> tuple[int, int, int]:
    """Calls, prompt and completion tokens of a stored result's non-agent calls: judges, Liang's
    moderator and final judge, retention filters, and a judge-scored task's judge (its tokens are
    not recorded per question, only its calls)."""
    calls = prompt_tokens = completion_tokens = 0
    for vote in json.loads(result["votes"]):
        parts = [vote.get("judge")]
        if vote.get("retention"):
            r = vote["retention"]
            parts.append({"calls": r["filter_calls"], "prompt_tokens": r["filter_prompt_tokens"],
                          "completion_tokens": r["filter_completion_tokens"]})  # fmt: skip
        for part in parts:
            if part:  # a verdict is one call unless it says otherwise (a JSON repair, a two-step judge)
                calls += part.get("calls", 1)
                prompt_tokens += part.get("prompt_tokens", 0)
                completion_tokens += part.get("completion_tokens", 0)
    if result.get("final_judge"):
        final = json.loads(result["final_judge"])
        calls += final.get("calls", 1)
        prompt_tokens += final.get("prompt_tokens", 0)
        completion_tokens += final.get("completion_tokens", 0)
    if result.get("metric_detail"):
        calls += sum(agent["calls"] for agent in json.loads(result["metric_detail"]).values())
    return calls, prompt_tokens, completion_tokens


def summarize(store: RunStore) -> tuple[list[ConditionSummary], ConditionSummary]:
    """Per-condition summaries (in the run's condition order) and the run's total."""
    prices = store.meta().get("config", {}).get("prices", {})
    names = list(store.conditions())
    by_name = {n: ConditionSummary(n) for n in names}
    for r in store.rows("results"):
        s = by_name[r["condition"]]
        s.questions += 1
        s.correct += r["correct"]
        s.rounds += r["rounds_used"]
        s.unparsed += r["status"] == "unparsed"
        s.abstained += r["status"] == "abstained"
        s.errors += r["status"] == "error"
        if r["metric"] is not None:
            s.metric_sum += r["metric"]
            s.metric_count += 1
        calls, prompt_tokens, completion_tokens = helper_usage(r)
        s.used_calls += calls
        s.used_prompt_tokens += prompt_tokens
        s.used_completion_tokens += completion_tokens
    for t in store.rows("turns"):
        s = by_name[t["condition"]]
        s.used_calls += 1
        s.used_prompt_tokens += t["prompt_tokens"]
        s.used_completion_tokens += t["completion_tokens"]
    total = ConditionSummary("total")
    for c in store.rows("calls"):
        for s in (by_name[c["condition"]], total):
            s.calls += 1
            s.prompt_tokens += c["prompt_tokens"]
            s.completion_tokens += c["completion_tokens"]
            s.latency_s += c["latency_s"]
            price = prices.get(c["model_name"])
            if price is None:
                s.unpriced.add(c["model_name"])
            elif s.cost is not None:
                s.cost += (c["prompt_tokens"] * price["prompt"] + c["completion_tokens"] * price["completion"]) / 1e6
    for s in [*by_name.values()]:
        for attr in ("questions", "correct", "unparsed", "abstained", "errors", "rounds", "used_calls",
                     "used_prompt_tokens", "used_completion_tokens", "metric_sum", "metric_count"):  # fmt: skip
            setattr(total, attr, getattr(total, attr) + getattr(s, attr))
    for s in [*by_name.values(), total]:
        if s.unpriced:
            s.cost = None
    return [by_name[n] for n in names], total


def question_rows(store: RunStore) -> list[QuestionRow]:
    """Every stored result with its answers per round, in the run's question and condition order."""
    questions = {(q["task"], q["question_id"]): q for q in store.rows("questions")}
    answers: dict[tuple[str, str, str, int], dict[int, list[tuple[str, str | None]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for t in store.rows("turns"):
        answers[(t["condition"], t["task"], t["question_id"], t["seed"])][t["round"]].append((t["agent"], t["answer"]))
    agent_order = {
        name: [a["name"] for a in config["agents"]] for name, config in store.conditions().items()
    }
    question_index = {(q["task"], q["question_id"]): i for i, q in enumerate(questions.values())}
    condition_index = {name: i for i, name in enumerate(agent_order)}
    rows = []
    for r in store.rows("results"):
        key = (r["condition"], r["task"], r["question_id"], r["seed"])
        order = agent_order[r["condition"]]
        per_round = tuple(
            tuple(a for _, a in sorted(turns, key=lambda t: order.index(t[0])))
            for _, turns in sorted(answers[key].items())
        )
        q = questions[(r["task"], r["question_id"])]
        rows.append(
            QuestionRow(
                r["condition"], r["task"], r["question_id"], r["seed"], q["prompt"], q["gold"], per_round,
                r["final_answer"], r["status"], bool(r["correct"]), r["error"],
            )  # fmt: skip
        )
    rows.sort(key=lambda r: (question_index[(r.task, r.question_id)], r.seed, condition_index[r.condition]))
    return rows


def summary_json(store: RunStore) -> dict[str, Any]:
    conditions, total = summarize(store)
    def as_dict(s: ConditionSummary) -> dict[str, Any]:
        d = {k: v for k, v in s.__dict__.items() if k != "unpriced"}
        d["accuracy"] = s.accuracy
        d["metric"] = s.metric
        d["unpriced_models"] = sorted(s.unpriced)
        return d
    return json.loads(json.dumps({"conditions": [as_dict(c) for c in conditions], "total": as_dict(total)}))
