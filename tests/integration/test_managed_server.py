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
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from moot.runner.session import RunOptions
from moot.trace import Trace, breakdown, read_trace
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


def test_the_requests_do_not_depend_on_slots_or_questions_in_flight_and_a_trace_times_every_call(  # type: ignore[no-untyped-def]
    tiny_model, tmp_path: Path
) -> None:
    wide = experiment(3)  # the default sizing: 2 questions in flight on 6 slots
    outcome = asyncio.run(run_experiment(wide, tmp_path / "wide.sqlite", RunOptions(trace=tmp_path / "t.jsonl")))
    assert outcome.calls == 18 and outcome.errors == 0
    # the same experiment one request at a time, every call looked up in the wide run's store: each request
    # it makes is one the wide run made, byte for byte, so none is sent
    narrow = experiment(3, slots=1).model_copy(update={"concurrency": 1, "calls_from": (tmp_path / "wide.sqlite",)})
    again = asyncio.run(run_experiment(narrow, tmp_path / "narrow.sqlite"))
    assert (again.calls, again.copied, again.errors) == (0, 18, 0)
    rows = "SELECT condition, question_id, final_answer, correct, votes FROM results ORDER BY question_id"
    assert query(tmp_path / "narrow.sqlite", rows) == query(tmp_path / "wide.sqlite", rows)

    lines = read_trace(tmp_path / "t.jsonl")
    run, calls = lines[0], [line for line in lines if line["kind"] == "call"]
    slots = run["slots"]
    assert run["kind"] == "run" and (slots, run["concurrency"]) == (6, 2) and lines[-1]["kind"] == "end"
    assert len(calls) == 18 and {(c["question_id"], c["agent"], c["round"]) for c in calls} == {
        (q, f"agent-{a}", r) for q, *_ in query(tmp_path / "wide.sqlite", "SELECT question_id FROM questions")
        for a in (1, 2, 3) for r in (0, 1)
    }  # fmt: skip
    stored = dict(query(tmp_path / "wide.sqlite", "SELECT key, completion_tokens FROM calls"))
    for c in calls:
        (sample,) = c["samples"]
        assert c["queued"] <= sample["sent"] <= sample["done"] <= c["done"]
        assert 0 <= sample["slot"] < slots and 1 <= sample["busy"] <= slots
        server = sample["server"]  # llama-server's own timings
        assert server["predicted_n"] == sample["completion_tokens"] and server["prompt_ms"] > 0
    assert sum(stored.values()) == sum(c["samples"][0]["completion_tokens"] for c in calls)
    b = breakdown(lines)
    assert b.slots == slots and b.calls == 18 and b.completion_tokens == sum(stored.values())
    assert b.generating_s + b.prompt_s + b.other_busy_s + b.idle_s == pytest.approx(b.slot_s)
    assert 0 < b.generating_s < b.slot_s and sum(b.busy_shares) == pytest.approx(1.0)


async def test_ngram_speculation_drafts_yet_each_seeded_reply_is_the_one_sampled_without_it(  # type: ignore[no-untyped-def]
    tiny_model, tmp_path: Path
) -> None:
    """llama-server verifies a draft by sampling the model itself at each drafted position and keeping the
    draft only while they agree, so the sampled text is the model's own: the same seeded requests, sent one
    at a time to a server with and without speculation, give the same replies at temperature 1."""
    copy = "Repeat this sentence three times: 'Seven swans swim slowly south, singing softly to the moon.'"
    requests = [
        GenerationRequest(messages=(Message("user", copy),), temperature=1.0, max_tokens=64, seed=seed)
        for seed in range(8)
    ]
    texts: dict[str, list[str]] = {}
    for speculative in ("none", "ngram"):
        trace = Trace(tmp_path / f"{speculative}.jsonl")
        backend = make_backend(LocalBackendConfig(model=TEST_MODEL, n_ctx=2048, slots=1, speculative=speculative))
        try:
            texts[speculative] = []
            for i, request in enumerate(requests):
                with trace.call({"agent": "a", "round": i}):
                    texts[speculative].append((await backend.generate(request)).samples[0].text)
        finally:
            await backend.aclose()
            trace.close()
    server = [c["samples"][0]["server"] for c in read_trace(tmp_path / "ngram.jsonl") if c["kind"] == "call"]
    accepted = sum(t.get("draft_n_accepted", 0) for t in server)
    assert accepted > 20  # the copies were drafted, and most drafts kept
    same = sum(a == b for a, b in zip(texts["none"], texts["ngram"], strict=True))
    assert same >= 7, (same, texts)


async def test_a_kv_cache_larger_than_the_machines_memory_is_one_clear_error(tiny_model) -> None:  # type: ignore[no-untyped-def]
    backend = make_backend(LocalBackendConfig(model=TEST_MODEL, n_ctx=1_048_576, slots=64))
    with pytest.raises(BackendError) as caught:
        await backend.check()
    await backend.aclose()
    message = str(caught.value)
    assert message.startswith("llama-server could not allocate a KV cache of 64 slots x 1048576 tokens (")
    assert "GiB), more memory than this machine has: set fewer slots" in message and "\n" not in message


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
