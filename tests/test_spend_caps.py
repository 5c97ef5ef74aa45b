"""Spend caps (``[budget]``, ``moot run --max-calls/--max-total-tokens/--max-cost``) on scripted runs: a cap
stops the run cleanly (questions in flight finish, none starts), the stop reason is stored and printed, and a
rerun with a higher cap continues with no call made twice."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moot.cli import app
from moot.errors import ConfigError
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import Experiment, run_experiment
from moot.runner.session import RunOptions
from moot.runner.store import RunStore

SCRIPTED = {"kind": "scripted", "model": "numbers"}
PRICE = {"prompt": 1000.0, "completion": 1000.0}  # $0.001 a token


def config(budget: dict[str, Any] | None = None, concurrency: int = 1, questions: int = 4) -> Any:
    data: dict[str, Any] = {
        "name": "caps",
        "concurrency": concurrency,
        "tasks": [{"name": "arithmetic", "count": questions}],
        "agent": {"backend": SCRIPTED},
        "conditions": [{"name": "society", "protocol": "society", "agents": 3, "rounds": 2}],
        "prices": {"numbers": PRICE},
    }
    if budget is not None:
        data["budget"] = budget
    return parse_experiment(data)


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def test_a_call_cap_stops_after_the_question_that_reaches_it_and_a_higher_cap_resumes(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    # society: 6 calls a question; one question in flight: 6 < 7 starts the second, 12 >= 7 stops
    outcome = asyncio.run(run_experiment(config({"max_calls": 7}), path, RunOptions()))
    assert (outcome.ran, outcome.calls) == (2, 12)
    assert outcome.stopped is not None and (outcome.stopped.measure, outcome.stopped.limit) == ("calls", 7)
    store = RunStore.read(path)
    try:
        assert store.meta()["stop_reason"] == {"budget": "calls", "limit": 7, "spent": 12, "session": 1}
        assert store.meta()["status"] == "incomplete"
        assert [(s.status, s.calls) for s in store.sessions()] == [("stopped:calls", 12)]
    finally:
        store.close()
    first = set(rows(path, "SELECT key, session FROM calls"))
    # every stored call belongs to a stored result: no question was left half done
    assert rows(path, "SELECT COUNT(DISTINCT question_id) FROM calls") == [(2,)]

    again = asyncio.run(run_experiment(config({"max_calls": 100}), path, RunOptions()))
    assert (again.skipped, again.ran, again.calls, again.replayed, again.stopped) == (2, 2, 12, 0, None)
    keys = rows(path, "SELECT key, session FROM calls")
    assert len(keys) == len({k for k, _ in keys}) == 24  # no call made twice
    assert first <= set(keys)  # session 1's calls are kept as they were
    assert rows(path, "SELECT session, COUNT(*) FROM calls GROUP BY session") == [(1, 12), (2, 12)]
    store = RunStore.read(path)
    try:
        assert store.meta()["stop_reason"] is None and store.meta()["status"] == "complete"
        assert [(s.status, s.calls, s.cached) for s in store.sessions()] == [
            ("stopped:calls", 12, 0),
            ("complete", 12, 0),
        ]
    finally:
        store.close()


def test_questions_in_flight_finish_past_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    # three questions in flight when the first call is made: all three finish (18 calls), the fourth never starts
    outcome = asyncio.run(run_experiment(config({"max_calls": 1}, concurrency=3), path, RunOptions()))
    assert (outcome.ran, outcome.calls) == (3, 18)
    assert rows(path, "SELECT COUNT(*) FROM results") == [(3,)]
    assert rows(path, "SELECT COUNT(DISTINCT question_id) FROM calls") == [(3,)]


def test_a_token_cap_counts_prompt_and_completion_tokens(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    outcome = asyncio.run(run_experiment(config({"max_tokens": 1}), path, RunOptions()))
    assert outcome.ran == 1 and outcome.stopped is not None and outcome.stopped.measure == "tokens"
    ((prompt, completion),) = rows(path, "SELECT SUM(prompt_tokens), SUM(completion_tokens) FROM calls")
    assert outcome.spent is not None and outcome.spent.tokens == prompt + completion


def test_a_rerun_with_the_same_cap_starts_no_question_and_builds_no_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.sqlite"
    asyncio.run(run_experiment(config({"max_calls": 3}), path, RunOptions()))

    async def refuse(*args: Any) -> None:
        raise AssertionError("a cap reached already builds no backend")

    monkeypatch.setattr(Experiment, "_build_agents", refuse)
    outcome = asyncio.run(run_experiment(config({"max_calls": 3}), path, RunOptions()))
    assert (outcome.ran, outcome.calls) == (0, 0)
    assert outcome.stopped is not None and outcome.stopped.spent == 6


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def write(tmp_path: Path, budget: str) -> Path:
    path = tmp_path / "caps.toml"
    path.write_text(
        'name = "caps"\nconcurrency = 1\n[[tasks]]\nname = "arithmetic"\ncount = 4\n'
        '[agent]\nbackend = { kind = "scripted", model = "numbers" }\n'
        '[[conditions]]\nname = "society"\nprotocol = "society"\n'
        "[prices.numbers]\nprompt = 1000.0\ncompletion = 1000.0\n" + budget
    )
    return path


def test_the_cli_prints_the_stop_and_resumes_with_a_higher_cost_cap(tmp_path: Path) -> None:
    file, store = write(tmp_path, ""), tmp_path / "run.sqlite"
    stopped = invoke("run", str(file), "-o", str(store), "--max-cost", "0.05")
    assert stopped.exit_code == 0, stopped.output
    ((prompt, completion),) = rows(store, "SELECT SUM(prompt_tokens), SUM(completion_tokens) FROM calls")
    spent = (prompt + completion) / 1000
    assert spent >= 0.05
    line = next(x for x in stopped.output.splitlines() if x.startswith("stopped:"))
    assert line.startswith(f"stopped: --max-cost $0.05 reached; the store's calls spent ${spent:.6f}".rstrip("0"))
    assert f", ${spent - 0.05:.6f}".rstrip("0") + " over it" in line
    resumed = invoke("run", str(file), "-o", str(store), "--max-cost", "10")
    assert resumed.exit_code == 0, resumed.output
    assert "stopped:" not in resumed.output
    keys = rows(store, "SELECT key FROM calls")
    assert len(keys) == len(set(keys)) == 4 * 6


def test_a_budget_table_in_the_file_stops_the_run(tmp_path: Path) -> None:
    file, store = write(tmp_path, "[budget]\nmax_calls = 1\n"), tmp_path / "run.sqlite"
    result = invoke("run", str(file), "-o", str(store))
    assert "stopped: --max-calls 1 calls reached; the store's calls spent 6 calls" in result.output
    assert rows(store, "SELECT status FROM sessions") == [("stopped:calls",)]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--max-calls", "0"),
        ("--max-calls", "-3"),
        ("--max-total-tokens", "0"),
        ("--max-cost", "nan"),
        ("--max-cost", "inf"),
        ("--max-cost", "-1"),
        ("--max-cost", "0"),
    ],
)
def test_bad_cap_options_are_refused_by_name(tmp_path: Path, option: str, value: str) -> None:
    result = invoke("run", "-b", "scripted", "-m", "numbers", "-o", str(tmp_path / "r.sqlite"), option, value)
    assert result.exit_code != 0
    shown = str(float(value)) if option == "--max-cost" else value
    assert result.output.strip().splitlines() == [
        f"moot: error: option {option}: must be a positive finite number, got {shown}"
    ]
    assert not (tmp_path / "r.sqlite").exists()


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ({"max_cost": 0}, "budget.max_cost: Input should be greater than 0"),
        ({"max_cost": float("nan")}, "budget.max_cost: Input should be a finite number"),
        ({"max_cost": float("inf")}, "budget.max_cost: Input should be a finite number"),
        ({"max_calls": -1}, "budget.max_calls: Input should be greater than or equal to 1"),
        (
            {"max_cost": 5, "currency": "EUR"},
            "budget.currency: currency 'EUR' is not one moot prices in: [prices] and max_cost are US dollars (USD)",
        ),
        ({"max_cost": 5, "dollars": True}, "budget.dollars: unknown key"),
    ],
)
def test_bad_budget_tables_are_refused_by_key(table: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError) as error:
        config(table)
    assert str(error.value) == f"experiment: {problem}"


def test_the_budget_currency_is_usd_in_any_case() -> None:
    assert config({"max_cost": 5, "currency": "usd"}).budget.currency == "USD"


def test_a_price_too_large_to_sum_is_refused_by_key() -> None:
    """1e308 dollars per million tokens once made a dry run's bound $inf; a price is at most $1 a token."""
    table = {
        "name": "p",
        "tasks": [{"name": "arithmetic", "count": 1}],
        "conditions": [{"name": "s", "protocol": "single"}],
    }
    with pytest.raises(ConfigError, match=r"prices.m.completion: Input should be less than or equal to 1000000"):
        parse_experiment(table | {"prices": {"m": {"prompt": 1.0, "completion": 1e308}}})
    assert parse_experiment(table | {"prices": {"m": {"prompt": 1e6, "completion": 1e6}}}).prices["m"].prompt == 1e6
