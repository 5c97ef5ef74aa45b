"""Fault handling over real HTTP: a fault-injecting proxy in front of the real llama-server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from moot.backends.base import GenerationRequest, Message
from moot.backends.config import OpenAIBackendConfig
from moot.backends.openai_api import OpenAIBackend
from moot.errors import BackendError
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from moot.runner.session import RunOptions
from moot.runner.store import RunStore
from tests.integration.servers import ECHO_KEY, FAULT_KINDS, SERVER_KEY, SERVER_KEY_ENV, FaultProxy

pytestmark = [pytest.mark.model, pytest.mark.server]

HELLO = (Message("user", "Say hello."),)


@pytest.fixture
def proxy(llama_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultProxy]:
    monkeypatch.setenv(SERVER_KEY_ENV, SERVER_KEY)
    fault_proxy = FaultProxy(llama_server)
    yield fault_proxy
    fault_proxy.close()


def backend(proxy: FaultProxy, **changes: object) -> OpenAIBackend:
    config = OpenAIBackendConfig(base_url=proxy.url, model="qwen-test", api_key_env=SERVER_KEY_ENV)
    return OpenAIBackend(config.model_copy(update=changes))


async def test_transient_failures_are_retried_with_backoff(proxy: FaultProxy) -> None:
    proxy.faults = [503, 429, "drop"]
    client = backend(proxy, max_retries=3)
    start = time.monotonic()
    reply = await client.generate(GenerationRequest(messages=HELLO, max_tokens=8, temperature=0.0))
    await client.aclose()
    assert reply.samples[0].text
    assert proxy.seen == 4  # three failures, then success
    assert time.monotonic() - start > 0.5  # waited between attempts


async def test_retries_are_bounded(proxy: FaultProxy) -> None:
    proxy.faults = [500, 500, 500, 500]
    client = backend(proxy, max_retries=2)
    with pytest.raises(BackendError, match="answered HTTP 500: injected 500"):
        await client.generate(GenerationRequest(messages=HELLO, max_tokens=8))
    await client.aclose()
    assert proxy.seen == 3


async def test_client_errors_such_as_context_length_are_not_retried(proxy: FaultProxy) -> None:
    client = backend(proxy, max_retries=3)
    with pytest.raises(BackendError, match=r"answered HTTP 4\d\d"):
        await client.generate(GenerationRequest(messages=(Message("user", "word " * 6000),), max_tokens=8))
    await client.aclose()
    assert proxy.seen == 1


async def test_timeouts_are_retried_then_reported(proxy: FaultProxy) -> None:
    proxy.faults = ["slow:3", "slow:3"]
    client = backend(proxy, max_retries=1, timeout_s=1.0)
    # the SDK's read timeout or moot's deadline on the whole attempt, whichever fires first: both 1 s
    with pytest.raises(BackendError, match="cannot reach|gave no complete reply within 1 s"):
        await client.generate(GenerationRequest(messages=HELLO, max_tokens=8))
    await client.aclose()
    assert proxy.seen == 2


def test_a_run_keeps_going_past_permanent_failures_and_retries_them_later(proxy: FaultProxy, tmp_path: Path) -> None:
    config = parse_experiment(
        {
            "name": "faults",
            "concurrency": 1,
            "tasks": [{"name": "arithmetic", "count": 3}],
            "agent": {
                "backend": {
                    "kind": "openai",
                    "base_url": proxy.url,
                    "model": "qwen-test",
                    "api_key_env": SERVER_KEY_ENV,
                    "max_retries": 1,
                },
                "sampling": {"temperature": 0.0, "max_tokens": 24},
            },
            "conditions": [{"name": "single", "protocol": "single"}],
        }
    )
    path = tmp_path / "run.sqlite"
    proxy.faults = ["pass", 502, 502]  # question 2 fails twice: beyond one retry
    outcome = asyncio.run(run_experiment(config, path))
    assert outcome.ran == 3
    store = RunStore.open(path)
    status = {r["question_id"]: (r["status"], r["error"]) for r in store.rows("results")}
    assert status["arithmetic-s0-1"] == ("error", f"{proxy.url} answered HTTP 502: injected 502")
    assert status["arithmetic-s0-0"][0] != "error" and status["arithmetic-s0-2"][0] != "error"
    assert [e["error"] for e in store.rows("call_errors")] == [
        f"BackendError: {proxy.url} answered HTTP 502: injected 502"
    ]
    store.close()
    retry = asyncio.run(run_experiment(config, path, RunOptions(retry_errors=True)))
    assert retry.ran == 1 and retry.calls == 1
    store = RunStore.open(path)
    assert all(r["status"] != "error" for r in store.rows("results"))
    store.close()


async def test_requests_per_minute_spaces_request_starts(proxy: FaultProxy) -> None:
    client = backend(proxy, requests_per_minute=240)  # one start every 0.25 s
    start = time.monotonic()
    reply = await client.generate(GenerationRequest(messages=HELLO, n=4, max_tokens=2, temperature=0.0))
    await client.aclose()
    assert len(reply.samples) == 4 and proxy.seen == 4
    assert time.monotonic() - start >= 0.75


def test_a_run_completes_through_every_fault_kind_with_its_errors_counted(proxy: FaultProxy, tmp_path: Path) -> None:
    """Every fault kind (malformed bodies, null content, a 401 echoing the key, 5xx, 429, a dropped
    connection), each followed by a good reply: every retryable fault is retried and answered, the 401
    is one question's error (its key masked), and the run completes."""
    config = parse_experiment(
        {
            "name": "mixed-faults",
            "concurrency": 1,  # questions in order; a question's two agents still call at once
            "tasks": [{"name": "arithmetic", "count": 5}],
            "agent": {
                "backend": {
                    "kind": "openai",
                    "base_url": proxy.url,
                    "model": "qwen-test",
                    "api_key_env": SERVER_KEY_ENV,
                    "max_retries": 2,
                },
                "sampling": {"temperature": 0.0, "max_tokens": 32},
            },
            "conditions": [{"name": "society", "protocol": "society", "agents": 2, "rounds": 2}],
        }
    )
    kinds = [kind for kind in FAULT_KINDS if kind != ECHO_KEY] + [ECHO_KEY]
    proxy.faults = [entry for kind in kinds for entry in (kind, "pass")]
    path = tmp_path / "run.sqlite"
    outcome = asyncio.run(run_experiment(config, path))
    assert proxy.faults == [] and proxy.injected == {str(kind): 1 for kind in kinds}
    assert outcome.ran == 5 and outcome.errors == 1  # the 401 only: every other fault was retried
    store = RunStore.open(path)
    try:
        assert store.meta()["status"] == "complete"
        status = [(r["status"], r["error"]) for r in store.rows("results")]
        errors = [e for s, e in status if s == "error"]
        assert len(status) == 5 and len(errors) == 1
        assert errors[0] == f"{proxy.url} answered HTTP 401: Incorrect API key provided: Bearer ***"
        retries = proxy.seen - store.count("calls") - store.count("call_errors")
        assert retries == len(kinds) - 1
    finally:
        store.close()
    assert SERVER_KEY.encode() not in path.read_bytes()
