"""Paid, used and shared calls (``moot.runner.summary.usage``), counted by hand on scripted runs.

Paid: the calls stored under a condition. Used: every call its debates needed, a diversity-aware round 0's
whole candidate pool included. Shared (used - paid): calls it reused from another condition or an earlier
identical call, never negative.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from moot.analysis import build_report
from moot.backends.base import GenerationRequest
from moot.backends.scripted import Responder, seeded_numbers
from moot.errors import BackendError
from moot.runner.store import RunStore
from moot.runner.summary import summarize, summary_json
from tests.helpers import arithmetic_experiment, write_store


def run(
    path: Path,
    conditions: list[dict],
    questions: int,
    model: str = "numbers",
    models: dict[str, Responder] | None = None,
) -> Path:
    return write_store(path, arithmetic_experiment("accounting", conditions, questions, model, seeds=[0]), models)


def stored_calls(path: Path) -> dict[str, tuple[int, int, int]]:
    """condition -> (calls, prompt tokens, completion tokens) as the calls table holds them."""
    db = sqlite3.connect(path)
    try:
        rows = db.execute(
            "SELECT condition, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM calls GROUP BY condition"
        ).fetchall()
    finally:
        db.close()
    return {c: (n, p, q) for c, n, p, q in rows}


def test_a_diverse_round_0_counts_its_whole_pool_as_used(tmp_path: Path) -> None:
    """3 agents, a pool of 6, 2 rounds, 2 questions. By hand, per question: round 0 samples 6 candidates
    (6 calls, 3 kept as the agents' turns), round 1 is one call per agent (3): 9 calls, 18 for 2 questions,
    all paid by the condition itself (nothing to share: its pool seeds and prompts are its own), so used 18
    and shared 0. Before: used counted the 3 kept turns, 12, and shared was -6 (the issue's diverse-confidence
    run: paid 360, used 240, shared -120)."""
    path = run(
        tmp_path / "diverse.sqlite",
        [
            {"name": "dv", "protocol": "diverse", "agents": 3, "rounds": 2, "pool_size": 6},
            {"name": "dc", "protocol": "diverse-confidence", "agents": 3, "rounds": 2, "pool_size": 6},
        ],
        questions=2,
    )
    paid = stored_calls(path)
    assert paid["dv"][0] == paid["dc"][0] == 2 * (6 + 3)
    store = RunStore.read(path)
    try:
        conditions, total = summarize(store)
        summary = summary_json(store)
    finally:
        store.close()
    for c in conditions:
        u = c.usage
        assert (u.calls, u.used_calls, u.used_calls - u.calls) == (18, 18, 0)
        used = (u.used_prompt_tokens, u.used_completion_tokens)
        assert used == paid[c.name][1:] == (u.prompt_tokens, u.completion_tokens)
    assert (total.usage.calls, total.usage.used_calls) == (36, 36) and total.usage.shared_calls == 0
    assert [(c["calls"], c["used_calls"]) for c in summary["conditions"]] == [(18, 18), (18, 18)]
    # the report counts the same
    report = build_report(path, resamples=200)
    assert [(c.usage.calls, c.usage.used_calls) for c in report.tasks[0].conditions] == [(18, 18), (18, 18)]


def test_shared_round_0_is_counted_once_paid_and_never_negative(tmp_path: Path) -> None:
    """single (1 agent) and vote (3 agents) share round 0: agent-1's call is made once. By hand, for 2
    questions: 3 distinct calls per question are paid (6 in all, split between the two conditions by which
    asked first); single uses 1 per question and vote 3: used 2 + 6 = 8, shared 8 - 6 = 2."""
    path = run(
        tmp_path / "shared.sqlite",
        [{"name": "single", "protocol": "single"}, {"name": "vote", "protocol": "vote", "agents": 3}],
        questions=2,
    )
    store = RunStore.read(path)
    try:
        conditions, total = summarize(store)
    finally:
        store.close()
    single, vote = (c.usage for c in conditions)
    assert (single.used_calls, vote.used_calls) == (2, 6)
    assert single.calls + vote.calls == total.usage.calls == 6
    assert total.usage.used_calls == 8 and total.usage.used_calls - total.usage.calls == 2
    assert single.used_calls >= single.calls and vote.used_calls >= vote.calls


def test_calls_of_a_failed_round_are_used_too(tmp_path: Path) -> None:
    """society, 3 agents, 2 rounds, 1 question; in round 1 one agent's call always fails. By hand: round 0's
    3 calls and round 1's 2 successful calls are stored (paid 5; a failed call is not stored); the errored
    result records round 0 only (3 turns). The 2 calls of the failed round were needed too: used 5, shared 0
    (before: used 3, shared -2)."""
    failing: set[int] = set()
    round1: set[int] = set()

    def one_agent_fails_in_round_1(request: GenerationRequest, index: int) -> str:
        if any(m.role == "assistant" for m in request.messages):  # round 1: the agent's own reply is there
            round1.add(request.seed)
            if len(round1) == 3 and not failing:
                failing.add(request.seed)  # the third agent to speak in round 1
            if request.seed in failing:
                raise BackendError("server went away")
        return seeded_numbers(request, index)

    path = run(
        tmp_path / "flaky.sqlite",
        [{"name": "society", "protocol": "society", "agents": 3, "rounds": 2}],
        questions=1,
        model="flaky",
        models={"flaky": one_agent_fails_in_round_1},
    )
    assert stored_calls(path)["society"][0] == 5
    store = RunStore.read(path)
    try:
        (society,), total = summarize(store)
        (result,) = store.results()
    finally:
        store.close()
    assert result.result.status == "error" and [len(r.turns) for r in result.result.rounds] == [3]
    assert (society.usage.calls, society.usage.used_calls) == (5, 5)
    assert society.usage.used_prompt_tokens == society.usage.prompt_tokens and society.usage.shared_calls == 0
