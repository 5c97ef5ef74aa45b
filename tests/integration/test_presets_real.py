"""One real-model run per preset family (0.5B, small budgets): independent answers, full and sparse
debate, fresh history with grouped rendering, self-refinement, and judge-based adaptive stopping."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from moot.runner.store import RunStore

pytestmark = pytest.mark.model


def test_every_preset_family_runs_on_the_real_model(tiny_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    config = parse_experiment(
        {
            "name": "families",
            "tasks": [{"name": "arithmetic", "count": 1, "seed": 2}],
            "agent": {
                "backend": {"kind": "local", "model": "qwen2.5-0.5b", "n_ctx": 4096},
                "sampling": {"temperature": 0.7, "max_tokens": 40},
            },
            "conditions": [
                {"name": "vote", "protocol": "vote", "agents": 2},
                {"name": "sparse", "protocol": "sparse", "agents": 4, "rounds": 2},
                {"name": "fresh", "protocol": "society", "agents": 2, "history": "fresh", "rendering": "grouped"},
                {"name": "refine", "protocol": "self-refine", "rounds": 2},
                {
                    "name": "adaptive",
                    "protocol": "du-adaptive",
                    "agents": 2,
                    "rounds": 2,
                    "judge": {"sampling": {"temperature": 0.0, "max_tokens": 60}},
                },
            ],
        }
    )
    path = tmp_path / "run.sqlite"
    outcome = asyncio.run(run_experiment(config, path))
    store = RunStore.open(path)
    results = {r["condition"]: r for r in store.rows("results")}
    assert set(results) == {"vote", "sparse", "fresh", "refine", "adaptive"}
    assert all(r["status"] in ("answered", "unparsed") for r in results.values())
    assert results["vote"]["rounds_used"] == 1 and results["sparse"]["rounds_used"] == 2
    assert results["refine"]["rounds_used"] == 2
    assert results["adaptive"]["stop_reason"] in ("judge_confident", "max_rounds")
    adaptive_votes = json.loads(results["adaptive"]["votes"])
    assert all(v["judge"]["text"] for v in adaptive_votes)
    turns = list(store.rows("turns"))
    fresh_round1 = [json.loads(t["shown"]) for t in turns if t["condition"] == "fresh" and t["round"] == 1]
    assert all(
        len(shown) == 2 and "This was your most recent opinion" in shown[-1]["content"] for shown in fresh_round1
    )
    sparse_round1 = [t for t in turns if t["condition"] == "sparse" and t["round"] == 1]
    assert all(json.loads(t["shown"])[-1]["content"].count("One agent response:") == 2 for t in sparse_round1)
    # round 0 is shared: agent-1 and agent-2 answer once for every condition that starts from them
    calls = list(store.rows("calls"))
    round0 = [c for c in calls if c["round"] == 0 and c["agent"] != "judge"]
    assert len(round0) == 4  # agents 1-4 of sparse; the others reuse agents 1-2
    # round 0: 4 shared agent calls; round 1: sparse 4, fresh 2, refine 1, adaptive 2 if it went on;
    # plus one judge call per adaptive round
    adaptive_round1 = 2 if len(adaptive_votes) == 2 else 0
    assert outcome.calls == len(calls) == 4 + 4 + 2 + 1 + adaptive_round1 + len(adaptive_votes)
    store.close()


def test_liang_runs_on_the_real_model(tiny_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    config = parse_experiment(
        {
            "name": "liang",
            "tasks": [{"name": "arithmetic", "count": 1, "seed": 3}],
            "agent": {
                "backend": {"kind": "local", "model": "qwen2.5-0.5b", "n_ctx": 4096},
                "sampling": {"temperature": 0.7, "max_tokens": 48},
            },
            "conditions": [
                {
                    "name": "liang",
                    "protocol": "liang-fixed",
                    "rounds": 1,
                    "judge": {"sampling": {"temperature": 0.0, "max_tokens": 96}},
                }
            ],
        }
    )
    path = tmp_path / "run.sqlite"
    outcome = asyncio.run(run_experiment(config, path))
    store = RunStore.open(path)
    (result,) = store.rows("results")
    assert result["status"] in ("answered", "unparsed") and result["stop_reason"] == "max_rounds"
    final = json.loads(result["final_judge"])
    (vote,) = json.loads(result["votes"])
    moderator_calls = vote["judge"]["calls"]
    assert final["calls"] in (2, 3) and moderator_calls in (1, 2)
    assert outcome.calls == 2 + moderator_calls + final["calls"]
    agents = [c["agent"] for c in store.rows("calls")]
    assert agents.count("moderator") == moderator_calls and agents.count("judge") == final["calls"]
    store.close()


def test_confidence_and_diversity_presets_run_on_the_real_model(tiny_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    config = parse_experiment(
        {
            "name": "zhu",
            "tasks": [{"name": "arithmetic", "count": 1, "seed": 4}],
            "agent": {
                "backend": {"kind": "local", "model": "qwen2.5-0.5b", "n_ctx": 4096},
                "sampling": {"temperature": 1.0, "top_p": 0.9, "max_tokens": 48},
            },
            "conditions": [
                {"name": "confidence", "protocol": "confidence", "agents": 2},
                {"name": "confidence-vote", "protocol": "confidence-vote", "agents": 2},
                {"name": "diverse", "protocol": "diverse", "agents": 2, "pool_size": 3},
                {"name": "diverse-confidence", "protocol": "diverse-confidence", "agents": 2, "pool_size": 3},
            ],
        }
    )
    path = tmp_path / "run.sqlite"
    asyncio.run(run_experiment(config, path))
    store = RunStore.open(path)
    results = {r["condition"]: r for r in store.rows("results")}
    assert set(results) == {"confidence", "confidence-vote", "diverse", "diverse-confidence"}
    assert all(r["status"] in ("answered", "unparsed") for r in results.values())
    for name in ("diverse", "diverse-confidence"):
        pool = json.loads(results[name]["votes"])[0]["pool"]
        assert len(pool["texts"]) == 3 and len(pool["selected"]) == 2
    turns = [t for t in store.rows("turns") if t["condition"].startswith("confidence")]
    first = json.loads(turns[0]["shown"])[-1]["content"]
    assert "Confidence: N" in first
    # whatever the small model wrote, a stated confidence is in range and anything else is missing
    assert all(t["confidence"] is None or 0 <= t["confidence"] <= 10 for t in turns)
    store.close()


def test_dar_and_mad_m2_run_on_the_real_model_with_logprobs(tiny_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    config = parse_experiment(
        {
            "name": "dar",
            "tasks": [{"name": "arithmetic", "count": 1, "seed": 5}],
            "agent": {
                "backend": {"kind": "local", "model": "qwen2.5-0.5b", "n_ctx": 4096},
                "sampling": {"temperature": 0.7, "max_tokens": 40},
            },
            "conditions": [
                {
                    "name": "dar",
                    "protocol": "dar",
                    "agents": 3,
                    "rounds": 2,
                    "judge": {"sampling": {"temperature": 0.0, "max_tokens": 24}},
                },
                {"name": "mad-m2", "protocol": "mad-m2", "agents": 3, "rounds": 2},
            ],
        }
    )
    path = tmp_path / "run.sqlite"
    outcome = asyncio.run(run_experiment(config, path))
    store = RunStore.open(path)
    turns = list(store.rows("turns"))
    assert turns and all(t["anll"] is not None and t["anll"] >= 0 and t["perplexity"] >= 1 for t in turns)
    results = {r["condition"]: r for r in store.rows("results")}
    dar_retention = json.loads(results["dar"]["votes"])[1]["retention"]
    assert dar_retention["filter_calls"] == 1 and 1 <= len(dar_retention["kept"]) <= 3
    m2_retention = json.loads(results["mad-m2"]["votes"])[1]["retention"]
    assert len(m2_retention["kept"]) == 2  # ceil(0.5 x 3)
    # round 0 is shared (same fresh prompt, both ask for log-probabilities): 3 + 3 + 3 + 1 filter call
    assert outcome.calls == 10
    store.close()


def test_the_2026_presets_run_on_the_real_model(tiny_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Free-MAD, Mixture-of-Agents and Self-MoA end to end: round 0 shared with the other peer protocols, the
    aggregator's call stored as the result's final verdict, Free-MAD's scores stored with its vote."""
    config = parse_experiment(
        {
            "name": "y2026",
            "tasks": [{"name": "arithmetic", "count": 1, "seed": 2}],
            "agent": {
                "backend": {"kind": "local", "model": "qwen2.5-0.5b", "n_ctx": 4096},
                "sampling": {"temperature": 0.7, "max_tokens": 40},
            },
            "conditions": [
                {"name": "free-mad", "protocol": "free-mad"},
                {"name": "moa", "protocol": "moa", "agents": 2},
                {"name": "self-moa", "protocol": "self-moa", "agents": 3, "judge": {"sampling": {"max_tokens": 60}}},
            ],
        }
    )
    path = tmp_path / "run.sqlite"
    outcome = asyncio.run(run_experiment(config, path))
    store = RunStore.open(path)
    results = {r["condition"]: r for r in store.rows("results")}
    assert all(r["status"] in ("answered", "unparsed") for r in results.values())
    for name in ("moa", "self-moa"):
        final = json.loads(results[name]["final_judge"])
        assert final["text"] and final["answer"] == results[name]["final_answer"]
    assert results["free-mad"]["final_judge"] is None
    free_votes = json.loads(results["free-mad"]["votes"])
    assert len(free_votes) == 2 and free_votes[-1]["weights"] is not None
    calls = list(store.rows("calls"))
    aggregator = [c for c in calls if c["agent"] == "aggregator"]
    assert len(aggregator) == 2  # one for moa, one for self-moa
    assert "Responses from models:" in json.loads(aggregator[0]["request"])["messages"][0]["content"]
    # round 0: agents 1-3 once for all three conditions; round 1: free-mad 3, moa 2; 2 aggregator calls
    round0 = [c for c in calls if c["round"] == 0 and c["agent"] != "aggregator"]
    assert len(round0) == 3
    assert outcome.calls == len(calls) == 3 + 3 + 2 + 2
    store.close()
