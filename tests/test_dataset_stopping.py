"""A stopping rule over all questions at once (Hu et al.'s stability detection, preset ``stable``): the runner plays
the condition round by round, stops every question when the rule says so, pays no call twice, resumes, and refuses
where the rule cannot see every question (a shard, a single debate)."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from moot.backends.base import GenerationRequest
from moot.backends.scripted import register_scripted_model
from moot.calls import Caller
from moot.debate import resolve_protocol, run_debate
from moot.errors import ConfigError
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import Experiment
from moot.runner.shards import Shard
from moot.runner.store import RunStore
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import Question
from tests.helpers import arithmetic_experiment, run, scripted_agents


def _round(request: GenerationRequest) -> int:
    return sum(1 for m in request.messages if m.role == "user") - 1


def _spread(request: GenerationRequest) -> int:
    """1, 2 or 3, fixed by the request's seed (each agent's own)."""
    return hashlib.sha256(str(request.seed).encode()).digest()[0] % 3 + 1


def settling(request: GenerationRequest, index: int) -> str:
    """Round 0: answers spread by agent; every later round: everyone answers 7, so the agreement settles."""
    return f"the answer is {7 if _round(request) >= 1 else _spread(request)}"


def swinging(request: GenerationRequest, index: int) -> str:
    """Even rounds: everyone answers 7; odd rounds: each agent its own number: the agreement never settles."""
    return f"the answer is {7 if _round(request) % 2 == 0 else 10 + _spread(request) * 3 + request.seed % 97}"


register_scripted_model("settling", settling)
register_scripted_model("swinging", swinging)


def experiment(model: str, count: int = 12, rounds: int = 6) -> Any:
    conditions = [
        {"name": "society", "protocol": "society", "rounds": 2},
        {"name": "stable", "protocol": "stable", "rounds": rounds},
    ]
    return parse_experiment(arithmetic_experiment("stable", conditions, count, model))


def results(path: Path, condition: str) -> list[dict[str, Any]]:
    store = RunStore.open(path)
    try:
        return sorted((r for r in store.rows("results") if r["condition"] == condition), key=lambda r: r["question_id"])
    finally:
        store.close()


def test_every_question_stops_when_the_agreement_has_settled(tmp_path: Path) -> None:
    # agreement counts: round 0 spread, rounds 1-3 all 3 of 3: KS(1,0) large, KS(2,1) = KS(3,2) = 0 -> two stable
    # rounds running after round 3: every question used 4 rounds (0-3), none the cap of 6
    path = tmp_path / "run.sqlite"
    outcome = run(experiment("settling"), path)
    stable = results(path, "stable")
    assert len(stable) == 12
    assert {(r["rounds_used"], r["stop_reason"], r["final_answer"]) for r in stable} == {(4, "dataset_stable", "7")}
    # no call paid twice: round 0 and round 1 are society's (the same requests), rounds 2-3 are the stable arm's
    calls = [c for c in sqlite3.connect(path).execute("select round, condition from calls")]
    assert len(calls) == outcome.calls == 12 * 3 * 4
    assert sorted({r for r, _ in calls}) == [0, 1, 2, 3]


def test_an_agreement_that_never_settles_runs_every_question_to_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    run(experiment("swinging", rounds=4), path)
    stable = results(path, "stable")
    assert {(r["rounds_used"], r["stop_reason"]) for r in stable} == {(4, "max_rounds")}


def test_a_lost_result_is_restored_from_the_store_with_no_new_call(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    run(experiment("settling"), path)
    before = results(path, "stable")
    db = sqlite3.connect(path)
    db.execute("delete from results where condition = 'stable' and question_id = ?", (before[5]["question_id"],))
    db.execute("delete from turns where condition = 'stable' and question_id = ?", (before[5]["question_id"],))
    db.commit()
    db.close()
    again = run(experiment("settling"), path)
    assert again.calls == 0 and again.ran == 1
    after = results(path, "stable")
    drop = ("session", "created_at")
    assert [{k: v for k, v in r.items() if k not in drop} for r in after] == [
        {k: v for k, v in r.items() if k not in drop} for r in before
    ]


def test_the_stability_preset_is_refused_by_a_shard_and_by_a_single_debate(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="decides for all its questions at once.*without --shard"):
        Experiment(experiment("settling"), tmp_path / "s.sqlite", Shard(1, 2))
    agents = scripted_agents(*[["so 1"] for _ in range(3)])
    question = Question(id="q1", prompt="1+1", gold="2")
    with pytest.raises(ConfigError, match="decides for all questions at once"):
        asyncio.run(run_debate(question, ArithmeticTask(), resolve_protocol("stable"), agents, caller=Caller()))


def test_the_dry_run_bounds_it_by_its_cap(tmp_path: Path) -> None:
    from moot.runner.plan import plan_experiment

    experiment_ = Experiment(experiment("settling", count=2), tmp_path / "plan.sqlite")
    try:
        plan = asyncio.run(plan_experiment(experiment_))
    finally:
        experiment_.close()
    stable = next(c for c in plan.conditions if c.name == "stable")
    assert stable.calls_per_question == 3 * 6
