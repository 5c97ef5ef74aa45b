"""Batch mode against a real model: the Files and Batches endpoints (tests.integration.servers.BatchServer) in
front of a real llama-server serving the 0.5B model, driven through the real openai SDK.

A society debate (3 agents x 2 rounds) on arithmetic goes out in two waves, one batch a round, and its store
holds what a live run against the same server holds: the same questions, the same round-0 requests and call
keys, as many calls a round, every reply read from the batches' output files. (Whether a reply is the very
same text depends on the server's batching of its float arithmetic; tests/test_batches.py compares whole
stores with a canned server.)
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from moot.backends import batches
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from tests.helpers import query
from tests.integration.servers import SERVER_KEY, SERVER_KEY_ENV, BatchServer


def experiment(url: str, batch: bool) -> dict[str, object]:
    backend = {"kind": "openai", "base_url": url, "api_key_env": SERVER_KEY_ENV, "batch_poll_s": 0.2}
    return {
        "name": "batched-real",
        "tasks": [{"name": "arithmetic", "count": 2}],
        "agent": {"backend": backend, "sampling": {"temperature": 0.0, "max_tokens": 96}},
        "conditions": [{"name": "society", "protocol": "society"}],
        "batch": batch,
    }


def test_a_batched_debate_on_a_real_model_stores_what_a_live_one_does(
    llama_server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(SERVER_KEY_ENV, SERVER_KEY)
    monkeypatch.setattr(batches, "GATHER_S", 0.5)
    server = BatchServer(llama_server, workers=2)
    try:
        batched, live = tmp_path / "batched.sqlite", tmp_path / "live.sqlite"
        outcome = asyncio.run(run_experiment(parse_experiment(experiment(server.url, batch=True)), batched))
        assert outcome.errors == 0 and outcome.ran == 2
        assert server.created == 2 and server.executed == 12 and server.forwarded == 0  # no live call
        asyncio.run(run_experiment(parse_experiment(experiment(server.url, batch=False)), live))
        assert server.forwarded == 12
    finally:
        server.close()
    first = "SELECT key, agent, request FROM calls WHERE round = 0 ORDER BY key"
    assert query(batched, first) == query(live, first)  # round 0's requests, the same call keys
    count = "SELECT round, count(*) FROM calls GROUP BY round"
    assert query(batched, count) == query(live, count) == [(0, 6), (1, 6)]
    replies = [json.loads(r) for (r,) in query(batched, "SELECT reply FROM calls")]
    assert {s["batch"] for r in replies for s in r["samples"]} == set(server.batches)
    assert all(s["text"].strip() and s["completion_tokens"] > 0 for r in replies for s in r["samples"])
    answers = "SELECT question_id, status FROM results ORDER BY question_id"
    assert query(batched, answers) == query(live, answers)
