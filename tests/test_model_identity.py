"""One run, one model (issue 42, item 4): resuming against a server that now serves another model is refused
before any call, and a store whose calls were answered by two models says so in its report.

The servers are real HTTP on 127.0.0.1 (tests.integration.servers.FaultProxy answering canned completions).
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from moot.analysis.render import header_lines
from moot.analysis.report import build_report
from moot.backends.base import served_model
from moot.errors import ConfigError
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from moot.runner.session import RunOptions
from tests.integration.servers import FaultProxy


def experiment(url: str) -> Any:
    """Two questions, the model not named: the server's only model answers."""
    return parse_experiment(
        {
            "name": "identity",
            "concurrency": 1,
            "tasks": [{"name": "arithmetic", "count": 2}],
            "agent": {
                "backend": {"kind": "openai", "base_url": url, "max_retries": 0},
                "sampling": {"temperature": 0.0, "max_tokens": 24},
            },
            "conditions": [{"name": "single", "protocol": "single"}],
        }
    )


def test_served_model_is_the_model_part_of_an_id() -> None:
    assert served_model("openai:http://127.0.0.1:8080/v1:qwen-a") == "qwen-a"
    assert served_model("openai:http://a:1/v1,http://b:2/v1:org/model:q4") == "q4"
    assert served_model("gguf:cc32") == "gguf:cc32"


def test_resuming_against_another_model_is_refused_before_any_call(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    server = FaultProxy(None, models=("model-a",))
    try:
        server.faults = ["pass", 503]  # the second question ends with an error: the run has work left
        asyncio.run(run_experiment(experiment(server.url), path))
        assert server.seen == 2
        server.models = ("model-b",)  # the server now serves another model, its only one
        with pytest.raises(ConfigError, match=r"answered by 'model-a'.*now serves 'model-b'.*mix two models"):
            asyncio.run(run_experiment(experiment(server.url), path, RunOptions(retry_errors=True)))
        assert server.seen == 2  # refused before any chat completion
        server.models = ("model-a",)  # the same model again: resumed
        outcome = asyncio.run(run_experiment(experiment(server.url), path, RunOptions(retry_errors=True)))
        assert outcome.ran == 1 and server.seen == 3
    finally:
        server.close()


def test_a_report_names_every_model_that_answered_and_warns_when_they_differ(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    server = FaultProxy(None, models=("model-a",))
    try:
        asyncio.run(run_experiment(experiment(server.url), path))
    finally:
        server.close()
    lines = header_lines(build_report(path))
    assert [line for line in lines if line.startswith("model")] == ["model server-default: model-a (2 calls)"]
    db = sqlite3.connect(path)  # a store made before the check: one call answered by another model
    db.execute("UPDATE calls SET model = replace(model, ':model-a', ':model-b') WHERE rowid = 1")
    db.commit()
    db.close()
    lines = header_lines(build_report(path))
    assert "warning: server-default was answered by 2 models: model-a (1 call), model-b (1 call)" in lines
