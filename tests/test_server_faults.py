"""A server that answers badly: every malformed reply is a failed call, retried within the bound, then a
question error, and the run goes on; a dead server is caught before any store is made.

The server is real HTTP on 127.0.0.1: tests.integration.servers.FaultProxy without an upstream answers
canned chat completions and spoils them on request.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from moot.backends.base import GenerationRequest, Message
from moot.backends.config import OpenAIBackendConfig
from moot.backends.openai_api import OpenAIBackend
from moot.errors import BackendError
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from moot.runner.session import RunOptions
from moot.runner.store import RunStore
from tests.integration.servers import BODY_FAULTS, CANNED_MODEL, FaultProxy, Served, free_port, refused

HELLO = (Message("user", "What is 2+2?"),)
REASONS = {
    "truncated": "returned a reply that is not valid JSON, truncated?",
    "bad-utf8": "returned a reply that is not valid UTF-8",
    "html": "returned text/html; charset=utf-8, not JSON (HTTP 200): <html>",
    "wrong-choices": "returned a malformed reply (choices: Input should be a valid list)",
    "wrong-usage": "returned a malformed reply (usage.prompt_tokens: Input should be a valid integer)",
    "wrong-content": "returned a malformed reply (choices.0.message.content: Input should be a valid string)",
    "null-content": "returned a reply without message content (null)",
}


@pytest.fixture
def server() -> Iterator[FaultProxy]:
    fake = FaultProxy(None)
    yield fake
    fake.close()


def backend(server: FaultProxy, **changes: Any) -> OpenAIBackend:
    return OpenAIBackend(OpenAIBackendConfig(base_url=server.url, model=CANNED_MODEL).model_copy(update=changes))


def test_every_fault_kind_has_a_reason() -> None:
    assert set(REASONS) == set(BODY_FAULTS)


@pytest.mark.parametrize("kind", BODY_FAULTS)
async def test_a_malformed_reply_is_retried_then_a_clear_backend_error(server: FaultProxy, kind: str) -> None:
    client = backend(server, max_retries=1)
    server.faults = [kind, kind]
    with pytest.raises(BackendError) as raised:
        await client.generate(GenerationRequest(messages=HELLO, max_tokens=8))
    assert str(raised.value).startswith(f"{server.url} {REASONS[kind]}")
    assert server.seen == 2 and client.retries == 1  # retried once: the bound
    server.faults = [kind]  # once only: the retry gets the reply
    reply = await client.generate(GenerationRequest(messages=HELLO, max_tokens=8))
    await client.aclose()
    assert reply.samples[0].text == "The answer is 4." and reply.samples[0].prompt_tokens == 7
    assert server.seen == 4 and client.retries == 2


async def test_malformed_replies_share_one_bound_with_server_errors(server: FaultProxy) -> None:
    client = backend(server, max_retries=3)
    server.faults = [503, "truncated", "drop", "html"]
    with pytest.raises(BackendError, match="text/html"):
        await client.generate(GenerationRequest(messages=HELLO, max_tokens=8))
    await client.aclose()
    assert server.seen == 4


def experiment(server: FaultProxy, count: int) -> Any:
    return parse_experiment(
        {
            "name": "faults",
            "concurrency": 1,
            "tasks": [{"name": "arithmetic", "count": count}],
            "agent": {
                "backend": {"kind": "openai", "base_url": server.url, "model": CANNED_MODEL, "max_retries": 1},
                "sampling": {"temperature": 0.0, "max_tokens": 24},
            },
            "conditions": [{"name": "single", "protocol": "single"}],
        }
    )


def results(path: Path) -> dict[str, tuple[str, str | None]]:
    store = RunStore.open(path)
    try:
        return {r["question_id"]: (r["status"], r["error"]) for r in store.rows("results")}
    finally:
        store.close()


def test_a_run_goes_on_past_every_malformed_reply_and_retries_them_later(server: FaultProxy, tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    # question 0 passes; question i + 1 gets fault i twice (beyond one retry); the last passes
    server.faults = ["pass", *(kind for kind in BODY_FAULTS for _ in range(2))]
    outcome = asyncio.run(run_experiment(experiment(server, len(BODY_FAULTS) + 2), path))
    assert outcome.ran == len(BODY_FAULTS) + 2 and outcome.errors == len(BODY_FAULTS)
    status = results(path)
    for i, kind in enumerate(BODY_FAULTS, 1):
        state, error = status[f"arithmetic-s0-{i}"]
        assert state == "error" and (error or "").startswith(f"{server.url} {REASONS[kind]}")
    assert (
        status["arithmetic-s0-0"][0] == "answered" and status[f"arithmetic-s0-{len(BODY_FAULTS) + 1}"][0] == "answered"
    )
    retry = asyncio.run(run_experiment(experiment(server, len(BODY_FAULTS) + 2), path, RunOptions(retry_errors=True)))
    assert retry.ran == len(BODY_FAULTS) and retry.calls == len(BODY_FAULTS)
    assert all(s == "answered" for s, _ in results(path).values())


def test_null_content_is_a_failed_call_that_retry_errors_retries(server: FaultProxy, tmp_path: Path) -> None:
    """Not an empty reply scored as unparsed: an error, stored as such, and run again by --retry-errors."""
    path = tmp_path / "run.sqlite"
    server.faults = ["null-content", "null-content"]
    asyncio.run(run_experiment(experiment(server, 1), path))
    store = RunStore.open(path)
    try:
        assert store.count("turns") == 0 and store.count("calls") == 0
        assert [e["error"] for e in store.rows("call_errors")] == [
            f"BackendError: {server.url} {REASONS['null-content']}"
        ]
    finally:
        store.close()
    assert results(path) == {"arithmetic-s0-0": ("error", f"{server.url} {REASONS['null-content']}")}
    asyncio.run(run_experiment(experiment(server, 1), path, RunOptions(retry_errors=True)))
    assert results(path)["arithmetic-s0-0"] == ("answered", None)


def moot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "moot", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.parametrize("model", [["--model", "some-model"], []], ids=["model-given", "server-default"])
def test_a_dead_server_is_caught_before_any_store_is_made(tmp_path: Path, model: list[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    result = moot("run", "--backend", "openai", "--base-url", url, *model, "-q", "2", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip() == f"moot: error: {refused(url)}"
    assert list(tmp_path.iterdir()) == []  # no runs/ folder, no store


def test_a_dead_server_with_a_model_makes_no_store_through_the_library(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    config = parse_experiment(
        {
            "name": "dead",
            "tasks": [{"name": "arithmetic", "count": 2}],
            "agent": {"backend": {"kind": "openai", "base_url": url, "model": "m", "max_retries": 0}},
            "conditions": [{"name": "single", "protocol": "single"}],
        }
    )
    with pytest.raises(BackendError, match="cannot reach"):
        asyncio.run(run_experiment(config, tmp_path / "dead.sqlite"))
    assert list(tmp_path.iterdir()) == []


async def test_a_server_without_a_model_list_is_reachable_when_the_model_is_given() -> None:
    import http.server

    class NoModels(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return None

        def do_GET(self) -> None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    http_server = Served()
    http_server.serve(NoModels)
    url = http_server.url
    try:
        await OpenAIBackend(OpenAIBackendConfig(base_url=url, model="m")).check()
        with pytest.raises(BackendError, match="answered HTTP 404"):
            await OpenAIBackend(OpenAIBackendConfig(base_url=url)).check()  # no model: it must list one
    finally:
        http_server.close()
