"""The default ``local`` backend against the real llama-server it starts: a debate, slots, sizing,
log-probabilities, and every way the server can fail (a port in use, a model it rejects, death
mid-run, more agents than slots)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
from pathlib import Path

import pytest

from moot.backends.base import GenerationRequest, Message
from moot.backends.config import LocalBackendConfig
from moot.backends.factory import make_backend
from moot.backends.llama_server import LlamaServerBackend
from moot.errors import BackendError, ConfigError
from moot.models import REGISTRY, TEST_MODEL
from moot.runner.config import parse_experiment
from moot.runner.experiment import RunOptions, run_experiment
from tests.helpers import query

pytestmark = [pytest.mark.model, pytest.mark.server]

POEM = (Message("user", "Write one short sentence about the sea."),)


def experiment(questions: int, agents: int = 3, **backend: object) -> object:
    return parse_experiment(
        {
            "name": "managed",
            "tasks": [{"name": "arithmetic", "count": questions}],
            "agent": {
                "backend": {"kind": "local", "model": TEST_MODEL, "n_ctx": 2048, **backend},
                "sampling": {"temperature": 0.7, "max_tokens": 48},
            },
            "conditions": [{"name": "society", "protocol": "society", "agents": agents, "rounds": 2}],
        }
    )


def server_pids() -> set[int]:
    """llama-server processes that are children of this test process."""
    me = os.getpid()
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == me and b"llama-server" in cmd:
            found.add(int(entry.name))
    return found


def test_a_run_starts_sizes_uses_and_stops_its_server(tiny_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    before = server_pids()
    outcome = asyncio.run(run_experiment(experiment(3), tmp_path / "run.sqlite"))
    assert outcome.calls == 18 and outcome.errors == 0
    assert server_pids() == before  # stopped with the run
    models = json.loads(query(tmp_path / "run.sqlite", "SELECT value FROM meta WHERE key = 'models'")[0][0])
    assert models == {TEST_MODEL: {"backend": "local", "model_id": "gguf:" + REGISTRY[TEST_MODEL].sha256}}
    texts = [text for (text,) in query(tmp_path / "run.sqlite", "SELECT text FROM turns")]
    assert len(texts) == 18 and all(texts)


async def test_the_server_answers_with_log_probabilities_and_seeds_reproduce_at_temperature_0(tiny_model) -> None:  # type: ignore[no-untyped-def]
    backend = make_backend(LocalBackendConfig(model=TEST_MODEL, n_ctx=2048, slots=2))
    assert isinstance(backend, LlamaServerBackend)
    try:
        await backend.check()
        request = GenerationRequest(messages=POEM, temperature=0.0, max_tokens=24, seed=7, logprobs=True)
        first, again = await asyncio.gather(backend.generate(request), backend.generate(request))
        assert first.samples[0].text == again.samples[0].text
        logprobs = first.samples[0].logprobs
        assert logprobs is not None and len(logprobs) == first.samples[0].completion_tokens
        assert all(t.logprob <= 0 for t in logprobs)
        assert first.model == backend.model_id
    finally:
        await backend.aclose()


def test_more_agents_than_slots_queue_and_finish(tiny_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    outcome = asyncio.run(run_experiment(experiment(2, agents=3, slots=1), tmp_path / "run.sqlite"))
    assert outcome.calls == 12 and outcome.errors == 0


async def test_a_port_in_use_is_one_clear_error(tiny_model) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        backend = make_backend(LocalBackendConfig(model=TEST_MODEL, port=port))
        with pytest.raises(ConfigError, match=f"port {port} on 127.0.0.1 is in use"):
            await backend.check()
        await backend.aclose()


async def test_a_model_file_the_server_rejects_is_one_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + os.urandom(4096))
    backend = make_backend(LocalBackendConfig(model=str(broken)))
    with pytest.raises(BackendError, match="llama-server could not start on broken.gguf: .*") as caught:
        await backend.check()
    assert "\n" not in str(caught.value)
    await backend.aclose()


def test_a_server_that_dies_mid_run_ends_its_questions_as_errors_and_the_rerun_finishes(  # type: ignore[no-untyped-def]
    tiny_model, tmp_path: Path
) -> None:
    output = tmp_path / "run.sqlite"
    config = experiment(4, agents=2)
    killed: list[int] = []
    others = server_pids()  # the session's shared llama-server, if another test started it

    def kill_after_first(unit: object, result: object) -> None:
        if not killed:
            pids = server_pids() - others
            assert len(pids) == 1
            (pid,) = pids
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    async def first_run() -> object:
        from moot.runner.experiment import Experiment

        exp = Experiment(config, output)  # type: ignore[arg-type]
        try:
            return await exp.run(on_result=kill_after_first)
        finally:
            exp.close()

    asyncio.run(first_run())
    assert killed
    statuses = [status for (status,) in query(output, "SELECT status FROM results")]
    errors = [error for (error,) in query(output, "SELECT error FROM results WHERE status = 'error'")]
    assert len(statuses) == 4 and errors
    assert all("llama-server exited with code" in e for e in errors), errors
    again = asyncio.run(run_experiment(config, output, RunOptions(retry_errors=True)))  # type: ignore[arg-type]
    assert again.errors == 0 and again.ran == len(errors)
    assert [status for (status,) in query(output, "SELECT status FROM results")].count("error") == 0
