"""Backend configs: one typed variant per kind, old flat dumps still load, each kind builds its backend."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from moot.backends.config import (
    BACKEND_KINDS,
    LlamaCppBackendConfig,
    LocalBackendConfig,
    OpenAIBackendConfig,
    ScriptedBackendConfig,
    default_backend,
    parse_backend,
)
from moot.backends.factory import make_backend
from moot.backends.llama_server import LlamaServerBackend
from moot.backends.local import LocalBackend
from moot.backends.openai_api import OpenAIBackend
from moot.backends.scripted import ScriptedBackend
from moot.errors import ConfigError
from moot.runner.config import AgentTemplate
from moot.runner.config_files import load_experiment

# every option of every kind, as runs stored before the variants dumped a backend
OLD_DUMP: dict[str, Any] = {
    "kind": "local",
    "model": None,
    "base_url": None,
    "api_key_env": "OPENAI_API_KEY",
    "n_ctx": 8192,
    "n_threads": None,
    "timeout_s": 600.0,
    "max_retries": 2,
    "max_concurrency": 8,
    "requests_per_minute": None,
    "delay_s": 0.0,
    "logprobs": True,
}


def test_a_table_without_kind_is_a_local_backend() -> None:
    assert parse_backend() == default_backend() == LocalBackendConfig()
    assert AgentTemplate.model_validate({"backend": {"model": "qwen2.5-0.5b"}}).backend == LocalBackendConfig(
        model="qwen2.5-0.5b"
    )


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, LocalBackendConfig()),
        ({"n_ctx": 4096, "model": "qwen2.5-0.5b"}, LocalBackendConfig(n_ctx=4096, model="qwen2.5-0.5b")),
        ({"kind": "openai", "base_url": "u", "timeout_s": 30}, OpenAIBackendConfig(base_url="u", timeout_s=30)),
        ({"kind": "scripted", "logprobs": False}, ScriptedBackendConfig(logprobs=False)),
    ],
)
def test_old_flat_dumps_load_as_their_kind(changes: dict[str, Any], expected: object) -> None:
    config = AgentTemplate.model_validate({"backend": OLD_DUMP | changes}).backend
    assert config == expected and type(config) is type(expected)


@pytest.mark.parametrize(
    ("table", "key", "owner"),
    [
        ({"base_url": "http://h/v1"}, "base_url", "openai"),
        ({"kind": "openai", "n_ctx": 4096}, "n_ctx", "local or vllm or llama-cpp"),
        ({"kind": "llama-cpp", "slots": 4}, "slots", "local or vllm"),
        ({"kind": "local", "tensor_parallel_size": 2}, "tensor_parallel_size", "vllm"),
        ({"kind": "local", "delay_s": 0.5}, "delay_s", "scripted"),
    ],
)
def test_an_option_of_another_kind_is_refused_by_name(table: dict[str, Any], key: str, owner: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_backend(**table)
    (error,) = info.value.errors()
    assert error["loc"] == (key,) and f"an option of the {owner} backend" in error["msg"]


def test_experiment_files_name_the_key(tmp_path: Path) -> None:
    def load(backend: str) -> ConfigError:
        path = tmp_path / "exp.toml"
        path.write_text(
            f'[agent]\nbackend = {{ {backend} }}\n[[tasks]]\nname = "arithmetic"\ncount = 2\n'
            '[[conditions]]\nname = "a"\nprotocol = "vote"\n'
        )
        with pytest.raises(ConfigError) as info:
            load_experiment(path)
        return info.value

    assert "agent.backend.base_url: an option of the openai backend, not of the local one" in str(
        load('kind = "local", base_url = "http://h/v1"')
    )
    assert "agent.backend.n_ctxx: unknown key" in str(load("n_ctxx = 1"))
    assert "agent.backend: unknown backend kind sglang; kinds: local, vllm, llama-cpp, openai, hf, scripted" in str(
        load('kind = "sglang"')
    )
    assert "agent.backend.n_ctx: Input should be greater than or equal to 256" in str(load("n_ctx = 1"))


def test_toml_round_trip_and_hashing(tmp_path: Path) -> None:
    text = (
        '[agent]\nbackend = { kind = "openai", base_url = "http://h/v1", model = "m", requests_per_minute = 30 }\n'
        '[[tasks]]\nname = "arithmetic"\ncount = 2\n'
        '[[conditions]]\nname = "a"\nprotocol = "vote"\n'
        '[[conditions.agents]]\nbackend = { kind = "scripted", delay_s = 0.1 }\n'
        "[[conditions.agents]]\nbackend = { n_ctx = 2048 }\n"
    )
    path = tmp_path / "exp.toml"
    path.write_text(text)
    config = load_experiment(path)
    configs = [config.agent.backend, *(a.backend for a in config.conditions[0].agents)]  # type: ignore[union-attr]
    assert [type(c) for c in configs] == [OpenAIBackendConfig, ScriptedBackendConfig, LocalBackendConfig]
    assert configs == [
        OpenAIBackendConfig(base_url="http://h/v1", model="m", requests_per_minute=30),
        ScriptedBackendConfig(delay_s=0.1),
        LocalBackendConfig(n_ctx=2048),
    ]
    for c in configs:
        assert c is not None
        dumped = c.model_dump(mode="json", exclude_none=True)
        # a dump holds only its kind's options, and reads back (from TOML too) as an equal, equally hashed config
        assert set(dumped) <= set(type(c).model_fields)
        table = ", ".join(f"{k} = {json.dumps(v)}" for k, v in dumped.items())
        again = parse_backend(**tomllib.loads(f"backend = {{ {table} }}")["backend"])
        assert again == c and hash(again) == hash(c)
    assert len({*configs, *configs}) == 3


async def test_each_kind_builds_its_backend(tmp_path: Path) -> None:
    assert set(BACKEND_KINDS) == {"local", "vllm", "llama-cpp", "openai", "hf", "scripted"}
    scripted = make_backend(ScriptedBackendConfig(delay_s=0.5))
    assert isinstance(scripted, ScriptedBackend) and scripted.model_id == "scripted:numbers"
    with pytest.raises(ConfigError, match="unknown scripted model 'poetry'; known: numbers"):
        make_backend(ScriptedBackendConfig(model="poetry"))

    openai = make_backend(OpenAIBackendConfig(base_url="http://127.0.0.1:9/v1", model="m", max_concurrency=3))
    assert isinstance(openai, OpenAIBackend) and openai.parallel == 3
    assert openai.model_id == "openai:http://127.0.0.1:9/v1:m"
    await openai.aclose()
    with pytest.raises(ConfigError, match="needs a base URL"):
        make_backend(OpenAIBackendConfig())

    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    managed = make_backend(LocalBackendConfig(model=str(gguf), n_ctx=512, n_threads=1, slots=3))
    assert isinstance(managed, LlamaServerBackend) and managed.parallel == 3  # nothing starts before check()
    assert (managed.server.n_ctx, managed.server.n_threads, managed.server.model_path) == (512, 1, gguf)
    assert managed.model_id.startswith("gguf:") and managed.server.proc is None
    await managed.aclose()

    pytest.importorskip("llama_cpp")
    local = make_backend(LlamaCppBackendConfig(model=str(gguf), n_ctx=512, n_threads=1))
    try:
        assert isinstance(local, LocalBackend) and (local.n_ctx, local.n_threads) == (512, 1)
        assert local.model_id == managed.model_id and local.model_path == gguf and local.name == "llama-cpp"
    finally:
        await local.aclose()


def test_model_names_and_descriptions() -> None:
    assert LocalBackendConfig().model_name() == "qwen2.5-1.5b"
    assert LocalBackendConfig(model="x.gguf").describe() == "x.gguf"
    assert OpenAIBackendConfig(base_url="http://h/v1").describe() == "server-default at http://h/v1"
    assert OpenAIBackendConfig(model="m").model_name() == "m"
