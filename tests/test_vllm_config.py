"""The vllm backend's settings without a server: what they validate to, the command and environment vLLM
is started with, and which Python runs it (the real server: tests/integration/test_vllm.py)."""

from __future__ import annotations

import sys

import pytest
from pydantic import ValidationError

from moot.backends.config import VLLMBackendConfig, parse_backend
from moot.backends.managed import ALIAS
from moot.backends.vllm_server import PYTHON_ENV, VLLMBackend, VLLMServer


def _value(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_a_vllm_table_validates_as_its_kind_and_reads_back_equal() -> None:
    config = parse_backend(kind="vllm", model="Qwen/Qwen2.5-0.5B-Instruct", tensor_parallel_size=2, extra_args=["--x"])
    assert isinstance(config, VLLMBackendConfig)
    assert config.extra_args == ("--x",) and config.n_ctx == 8192 and config.python is None
    assert parse_backend(**config.model_dump(mode="json", exclude_none=True)) == config
    with pytest.raises(ValidationError, match="gpu_memory_utilization"):
        parse_backend(kind="vllm", gpu_memory_utilization=1.5)
    with pytest.raises(ValidationError, match="dtype"):
        parse_backend(kind="vllm", dtype="int4")


def test_the_command_passes_the_settings_through_and_binds_127_0_0_1() -> None:
    server = VLLMServer(
        "Qwen/Qwen2.5-0.5B-Instruct",
        python="/opt/vllm/bin/python",
        slots=6,
        n_ctx=2048,
        dtype="bfloat16",
        tensor_parallel_size=2,
        gpu_memory_utilization=0.8,
        extra_args=("--enforce-eager",),
    )
    server.folder = "Qwen/Qwen2.5-0.5B-Instruct"
    command = server.command(8123)
    assert command[:3] == ["/opt/vllm/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    assert _value(command, "--host") == "127.0.0.1" and _value(command, "--port") == "8123"
    assert _value(command, "--served-model-name") == ALIAS
    assert _value(command, "--max-model-len") == "2048" and _value(command, "--max-num-seqs") == "6"
    assert _value(command, "--dtype") == "bfloat16" and _value(command, "--tensor-parallel-size") == "2"
    assert _value(command, "--gpu-memory-utilization") == "0.8"
    assert _value(command, "--generation-config") == "vllm"  # not the folder's sampling defaults
    assert "--enable-prefix-caching" in command and "--enable-prompt-tokens-details" in command
    assert command[-1] == "--enforce-eager"


def test_the_cpu_builds_settings_are_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    server = VLLMServer("m", slots=1, n_ctx=512, cpu_kv_cache_gib=1.5, n_threads=2)
    env = server.environment()
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "1.5" and env["OMP_NUM_THREADS"] == "2"
    assert "VLLM_CPU_KVCACHE_SPACE" not in VLLMServer("m", slots=1, n_ctx=512).environment()


def test_the_python_is_the_configs_else_the_environments_else_moots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PYTHON_ENV, raising=False)
    assert VLLMServer("m", slots=1, n_ctx=512).python == sys.executable
    monkeypatch.setenv(PYTHON_ENV, "/env/python")
    assert VLLMServer("m", slots=1, n_ctx=512).python == "/env/python"
    assert VLLMServer("m", python="/given/python", slots=1, n_ctx=512).python == "/given/python"


def test_the_server_is_sized_by_the_runner_unless_given_and_capped_by_max_concurrency() -> None:
    sized = VLLMBackend(VLLMServer("m", slots=0, n_ctx=512), model_id="m")
    sized.plan(3)
    assert sized.parallel == 6  # 3 agents x 2 questions in flight
    given = VLLMBackend(VLLMServer("m", slots=16, n_ctx=512), model_id="m")
    given.plan(3)
    given.cap_concurrency(4)
    assert given.parallel == 4
