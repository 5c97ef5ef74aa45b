"""``moot run --dry-run`` (moot.runner.plan): hand-counted calls per protocol, round-0 sharing, the prompt bound's
formula on rendered requests, and the bound against real scripted runs. No model is loaded: the planned
experiments name an openai server on a closed port, which any start would fail to reach."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moot.cli import app
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import Experiment, run_experiment
from moot.runner.plan import MESSAGE_ALLOWANCE, REPLY_ALLOWANCE, REQUEST_ALLOWANCE, Plan, plan_experiment
from moot.runner.session import RunOptions

UNREACHABLE = {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
SCRIPTED = {"kind": "scripted", "model": "numbers"}
MAX_TOKENS = 64


def experiment(conditions: list[dict[str, Any]], backend: dict[str, Any], questions: int = 3, **more: Any) -> Any:
    return parse_experiment(
        {
            "name": "plan",
            "tasks": [{"name": "arithmetic", "count": questions}],
            "agent": {"backend": backend, "sampling": {"max_tokens": MAX_TOKENS}},
            "conditions": conditions,
            **more,
        }
    )


def plan_of(config: Any, path: Path) -> Plan:
    exp = Experiment(config, path)
    try:
        return asyncio.run(plan_experiment(exp))
    finally:
        exp.close()


def one(protocol: str) -> list[dict[str, Any]]:
    return [{"name": protocol, "protocol": protocol}]


@pytest.mark.parametrize(
    ("protocol", "calls"),
    [
        ("single", 1),
        ("vote", 3),  # 3 agents, round 0 only
        ("society", 6),  # 3 agents x 2 rounds
        # 2 debaters + a moderator + its repair (a placeholder is no ruling) each of 3 rounds; at the cap the final
        # judge lists the candidates, decides, and is repaired: 12 + 3
        ("liang", 15),
        ("du-adaptive", 24),  # 3 agents x 6 rounds (the cap) + a judge after each round
        ("dar", 14),  # 4 agents x 3 rounds + the filter before rounds 1 and 2
        ("diverse", 9),  # a pool of 6 candidates in round 0, then 3 agents in round 1
    ],
)
def test_calls_per_question_are_the_protocols(tmp_path: Path, protocol: str, calls: int) -> None:
    plan = plan_of(experiment(one(protocol), UNREACHABLE), tmp_path / "r.sqlite")
    (condition,) = plan.conditions
    assert (condition.questions, condition.calls_per_question, condition.bound.calls) == (3, calls, 3 * calls)
    assert condition.bound.completion_tokens == 3 * calls * MAX_TOKENS
    assert plan.unpriced == ("m",) and plan.total.cost is None
    assert not (tmp_path / "r.sqlite").exists()  # a dry run creates no store


def test_round0_is_counted_once_where_conditions_share_it(tmp_path: Path) -> None:
    arms = [{"name": p, "protocol": p} for p in ("single", "vote", "society")]
    shared = plan_of(experiment(arms, UNREACHABLE), tmp_path / "a.sqlite")
    # single's agent-1 and vote's agents are society's round 0: society's 6 calls a question in all
    assert [(c.name, c.bound.calls, c.shared) for c in shared.conditions] == [
        ("single", 3, 0),
        ("vote", 6, 3),
        ("society", 9, 9),
    ]
    assert shared.total.calls == 3 * 6
    apart = plan_of(experiment(arms, UNREACHABLE, share_round0=False), tmp_path / "b.sqlite")
    assert [(c.bound.calls, c.shared) for c in apart.conditions] == [(3, 0), (9, 0), (18, 0)]
    assert apart.total.calls == 3 * (1 + 3 + 6)


def test_cost_is_priced_per_model(tmp_path: Path) -> None:
    config = experiment(one("vote"), UNREACHABLE, prices={"m": {"prompt": 2.0, "completion": 10.0}})
    plan = plan_of(config, tmp_path / "r.sqlite")
    total = plan.total
    assert plan.unpriced == ()
    assert total.cost == pytest.approx((2.0 * total.prompt_tokens + 10.0 * total.completion_tokens) / 1e6)


def requests(path: Path) -> list[tuple[str, int, str, dict[str, Any]]]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT condition, round, agent, request FROM calls ORDER BY rowid").fetchall()
    finally:
        db.close()
    return [(c, r, a, json.loads(q)) for c, r, a, q in rows]


def test_the_prompt_bound_is_the_formula_on_the_rendered_requests(tmp_path: Path) -> None:
    """Hand-checked on the requests a scripted society run sent: bytes outside replies, per-message and
    per-request allowances, each reply shown again at max_tokens + its allowance."""
    run = tmp_path / "run.sqlite"
    config = experiment(one("society"), SCRIPTED, questions=1)
    asyncio.run(run_experiment(config, run, RunOptions()))
    sent = requests(run)
    db = sqlite3.connect(run)
    replies = [t for (t,) in db.execute("SELECT text FROM turns WHERE round = 0")]
    db.close()
    expected = 0
    for _, round_index, _, request in sent:
        messages = request["messages"]
        text = sum(len(m["content"].encode()) for m in messages)
        shown = sum(m["content"].count(r) for m in messages for r in set(replies)) if round_index else 0
        hidden = (
            sum(len(r.encode()) * m["content"].count(r) for m in messages for r in set(replies)) if round_index else 0
        )
        expected += REQUEST_ALLOWANCE + MESSAGE_ALLOWANCE * len(messages) + text - hidden
        expected += shown * (MAX_TOKENS + REPLY_ALLOWANCE)
    # round 1: every agent sees its own reply (chat history) and its two peers'
    assert sum(m["content"].count(r) for _, i, _, q in sent if i for m in q["messages"] for r in set(replies)) == 9
    plan = plan_of(config.model_copy(update={"agent": config.agent}), tmp_path / "plan.sqlite")
    assert plan.total.prompt_tokens == expected


@pytest.mark.parametrize("protocols", [("single", "vote", "society"), ("liang",), ("du-adaptive", "gated"), ("dar",)])
def test_the_bound_holds_on_scripted_runs(tmp_path: Path, protocols: tuple[str, ...]) -> None:
    arms = [{"name": p, "protocol": p} for p in protocols]
    config = experiment(arms, SCRIPTED, questions=4, prices={"numbers": {"prompt": 1.0, "completion": 3.0}})
    path = tmp_path / "run.sqlite"
    before = plan_of(config, path)
    asyncio.run(run_experiment(config, path, RunOptions()))
    db = sqlite3.connect(path)
    by_condition = {
        c: (n, p, k)
        for c, n, p, k in db.execute(
            "SELECT condition, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM calls GROUP BY condition"
        )
    }
    db.close()
    calls = sum(n for n, _, _ in by_condition.values())
    prompt = sum(p for _, p, _ in by_condition.values())
    completion = sum(k for _, _, k in by_condition.values())
    assert before.total.calls >= calls and before.total.prompt_tokens >= prompt
    assert before.total.completion_tokens >= completion
    assert before.total.cost is not None and before.total.cost >= (prompt + 3 * completion) / 1e6
    if protocols == ("single", "vote", "society"):  # fixed rounds: the calls are exact, condition by condition
        assert {c.name: c.bound.calls for c in before.conditions} == {c: n for c, (n, _, _) in by_condition.items()}
    after = plan_of(config, path)  # what the store holds, and nothing left
    assert (after.stored_results, after.stored.calls, after.remaining_questions, after.remaining.calls) == (
        4 * len(protocols),
        calls,
        0,
        0,
    )
    assert after.stored.prompt_tokens == prompt and after.stored.cost == pytest.approx((prompt + 3 * completion) / 1e6)


def test_the_cli_dry_run_prints_bounds_and_loads_nothing(tmp_path: Path) -> None:
    store = tmp_path / "r.sqlite"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "-p",
            "single",
            "-p",
            "society",
            "-q",
            "2",
            "-b",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "-m",
            "m",
            "-o",
            str(store),
            "--dry-run",
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    total = next(line for line in lines if "total" in line).split("│")
    assert [cell.strip() for cell in total[1:4]] == ["total", "4", "12"]  # 2 questions x 2 arms; 2 x 6 calls
    assert any(line.startswith(f"store {store}: 0 results, 0 calls") for line in lines)
    assert 'no price for m: cost not bounded (add [prices."MODEL"] to the experiment)' in lines
    assert not store.exists()
