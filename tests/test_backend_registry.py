"""The backend registry: every kind (built-in or a plug-in's) is registered by its ``kind``, parsed from a
table through the registry and dumped as its own class; built-in kinds dump byte for byte as before, so
stored runs keep their fingerprints; a plug-in's kind works in an experiment file and on the command line;
scripted models are a registry too; `moot backends` lists every kind."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from typer.testing import CliRunner

from moot.backends.base import GenerationRequest, Message
from moot.backends.config import (
    BACKEND_KINDS,
    BackendConfig,
    BackendSettings,
    LocalBackendConfig,
    ScriptedBackendConfig,
    UnregisteredBackend,
    backend_kinds,
    parse_backend,
    register_backend,
)
from moot.backends.scripted import SCRIPTED_MODELS, ScriptedBackend, register_scripted_model, scripted_models
from moot.cli import app
from moot.debate.agents import AgentSpec
from moot.debate.registry import STORED, load_plugin
from moot.errors import ConfigError
from moot.runner.config_files import load_experiment
from moot.runner.config_resolve import experiment_hash, fingerprint_hash, results_fingerprint
from moot.runner.options import AgentOptions
from moot.runner.store import RunStore

ROOT = Path(__file__).resolve().parents[1]
BUILT_IN = ["local", "vllm", "llama-cpp", "openai", "hf", "scripted"]

# fingerprints of two example experiments, as computed before backends had a registry
FINGERPRINTS = {
    "examples/replicate/du.toml": "2aadf00f73d9349d1144b39d9782e09b43932ff051741aa42560c78283bff4e6",
    "examples/scripted-smoke.toml": "bfe84e3a807b6bf1ddd9447aa72c20ab8f8ba9936b4c6e49cf63fe0d570cdaea",
}

# a table of each kind and its dump, as the closed union of kinds dumped it (checked against that code)
DUMPS: list[tuple[dict[str, Any], str]] = [
    ({}, '{"kind": "local", "model": null, "logprobs": true, "n_ctx": 8192, "n_threads": null}'),
    (
        {"kind": "local", "model": "qwen2.5-0.5b", "n_ctx": 4096, "slots": 3, "port": 8081},
        '{"kind": "local", "model": "qwen2.5-0.5b", "logprobs": true, "n_ctx": 4096, "n_threads": null, '
        '"slots": 3, "port": 8081}',
    ),
    (
        {"kind": "llama-cpp", "model": "x.gguf", "n_threads": 2},
        '{"kind": "llama-cpp", "model": "x.gguf", "logprobs": true, "n_ctx": 8192, "n_threads": 2}',
    ),
    (
        {"kind": "openai", "base_url": "http://user:pw@h/v1", "model": "m", "requests_per_minute": 30},
        '{"kind": "openai", "model": "m", "logprobs": true, "base_url": "http://***@h/v1", '
        '"api_key_env": "OPENAI_API_KEY", "timeout_s": 600.0, "max_retries": 2, "max_concurrency": 8, '
        '"requests_per_minute": 30.0}',
    ),
    (
        {"kind": "openai", "base_url": ["http://a/v1", "http://b/v1"], "cooldown_s": 5},
        '{"kind": "openai", "model": null, "logprobs": true, "base_url": ["http://a/v1", "http://b/v1"], '
        '"api_key_env": "OPENAI_API_KEY", "timeout_s": 600.0, "max_retries": 2, "max_concurrency": 8, '
        '"requests_per_minute": null, "cooldown_s": 5.0}',
    ),
    (
        {"kind": "hf", "adapter": "out/adapter", "dtype": "bfloat16"},
        '{"kind": "hf", "model": null, "logprobs": true, "adapter": "out/adapter", "dtype": "bfloat16", '
        '"device": null, "n_threads": null}',
    ),
    (
        {"kind": "scripted", "delay_s": 0.1, "logprobs": False},
        '{"kind": "scripted", "model": null, "logprobs": false, "delay_s": 0.1}',
    ),
]

# a user's backend kind, in a file of its own
PLUGIN = """
from typing import Literal

from moot.backends.config import BackendSettings, register_backend
from moot.backends.scripted import ScriptedBackend


@register_backend
class Mine(BackendSettings):
    summary = "a test plug-in's backend"
    kind: Literal["mine"] = "mine"
    answer: int = 7

    def build(self):
        return ScriptedBackend(lambda request, index: f"The answer is {self.answer}.", model="mine", record=False)

    def model_name(self):
        return "mine"
"""


class Holder(BaseModel):
    backend: BackendConfig


@pytest.fixture
def mine(tmp_path: Path) -> Iterator[Path]:
    """A plug-in file registering backend kind ``mine``, loaded; unregistered again afterwards."""
    path = tmp_path / "mine.py"
    path.write_text(PLUGIN, encoding="utf-8")
    load_plugin(path)
    yield path
    BACKEND_KINDS.pop("mine", None)


def test_built_in_kinds_are_registered_in_order() -> None:
    assert list(backend_kinds())[: len(BUILT_IN)] == BUILT_IN
    assert all(issubclass(kind, BackendSettings) for kind in backend_kinds().values())


@pytest.mark.parametrize(("table", "dumped"), DUMPS)
def test_every_built_in_kind_dumps_as_before(table: dict[str, Any], dumped: str) -> None:
    holder = Holder(backend=table)
    assert json.dumps(holder.model_dump(mode="json")) == '{"backend": ' + dumped + "}"
    assert json.dumps(parse_backend(**table).model_dump(mode="json")) == dumped
    if "***" not in dumped:  # reads back equal (a URL's credentials are not stored)
        assert Holder.model_validate_json(holder.model_dump_json()) == holder


@pytest.mark.parametrize("path", sorted(FINGERPRINTS))
def test_example_fingerprints_are_unchanged(path: str) -> None:
    assert experiment_hash(load_experiment(ROOT / path)) == FINGERPRINTS[path]


def test_a_stored_run_reads_back_and_keeps_its_fingerprint() -> None:
    path = ROOT / "runs/replicate/du.sqlite"
    if not path.is_file():
        pytest.skip("runs/replicate/du.sqlite is not here")
    store = RunStore.read(path)
    try:
        conditions = store.conditions()
        rows = store._db.execute("SELECT name, config FROM conditions ORDER BY rowid").fetchall()
        meta = store.run_meta()
    finally:
        store.close()
    for name, text in rows:  # each condition dumps byte for byte as stored
        assert json.dumps(conditions[name].model_dump(mode="json")) == text
    assert all(type(a.backend) is LocalBackendConfig for c in conditions.values() for a in c.agents)
    assert fingerprint_hash(results_fingerprint(meta.config, tuple(conditions.values()))) == meta.fingerprint_hash
    assert meta.fingerprint_hash == experiment_hash(load_experiment(ROOT / "examples/replicate/du.toml"))


def test_a_plugin_kind_parses_dumps_its_own_fields_and_builds(mine: Path) -> None:
    holder = Holder(backend={"kind": "mine", "answer": 3})
    assert type(holder.backend).__name__ == "Mine" and holder.backend.kind == "mine"
    assert holder.model_dump(mode="json") == {"backend": {"kind": "mine", "model": None, "logprobs": True, "answer": 3}}
    assert Holder.model_validate(holder.model_dump(mode="json")) == holder
    with pytest.raises(ValidationError, match="answer"):
        Holder(backend={"kind": "mine", "answer": "many"})
    with pytest.raises(ValidationError, match="an option of the mine backend, not of the local one"):
        Holder(backend={"answer": 3})
    assert isinstance(holder.backend.build(), ScriptedBackend)


def test_a_plugin_kind_runs_in_an_experiment_file(mine: Path, tmp_path: Path) -> None:
    experiment = tmp_path / "mine.toml"
    experiment.write_text(
        f'name = "mine"\nplugins = ["{mine.name}"]\n[[tasks]]\nname = "arithmetic"\ncount = 2\n'
        '[agent]\nbackend = { kind = "mine", answer = 4 }\n'
        '[[conditions]]\nname = "society"\nprotocol = "society"\nagents = 2\nrounds = 2\n',
        encoding="utf-8",
    )
    config = load_experiment(experiment)
    assert config.agent.backend is not None and config.agent.backend.kind == "mine"
    store = tmp_path / "mine.sqlite"
    result = CliRunner().invoke(app, ["run", str(experiment), "--output", str(store)])
    assert result.exit_code == 0, result.output
    reader = RunStore.read(store)
    try:
        results = reader.results()
        (condition,) = reader.conditions().values()
    finally:
        reader.close()
    assert len(results) == 2 and {r.result.final_answer for r in results} == {"4"}  # the plug-in's replies
    assert condition.agents[0].backend.model_dump(mode="json")["answer"] == 4

    BACKEND_KINDS.pop("mine")  # the plug-in is gone: the run still reads back, as stored, and keeps its hash
    reader = RunStore.read(store)
    try:
        meta, (stored,) = reader.run_meta(), reader.conditions().values()
    finally:
        reader.close()
    assert isinstance(meta.config.agent.backend, UnregisteredBackend) and meta.config.agent.backend.kind == "mine"
    assert isinstance(stored.agents[0].backend, UnregisteredBackend)
    assert stored.model_dump(mode="json") == condition.model_dump(mode="json")
    assert fingerprint_hash(results_fingerprint(meta.config, (stored,))) == meta.fingerprint_hash


def test_a_stored_unknown_kind_reads_back_as_a_record_and_refuses_to_build() -> None:
    table = {"kind": "gone", "model": "m", "logprobs": True, "port": 9, "knob": [1, 2]}
    spec = AgentSpec.model_validate({"name": "a", "backend": table}, context=STORED)
    assert isinstance(spec.backend, UnregisteredBackend) and spec.backend.describe() == "m"
    assert spec.model_dump(mode="json")["backend"] == table  # the stored form, kept as it was
    with pytest.raises(ConfigError, match="backend kind 'gone' is not registered"):
        spec.backend.build()
    with pytest.raises(
        ValidationError, match="unknown backend kind gone; kinds: local, vllm, llama-cpp, openai, hf, scripted"
    ):
        AgentSpec.model_validate({"name": "a", "backend": table})


def test_register_backend_refuses_a_taken_kind_or_none() -> None:
    with pytest.raises(ConfigError, match="backend kind 'local' is already registered by moot.backends.config"):

        @register_backend
        class Other(BackendSettings):
            kind: str = "local"

    with pytest.raises(ConfigError, match="needs a default kind"):

        @register_backend
        class Nameless(BackendSettings):
            pass

    assert BACKEND_KINDS["local"] is LocalBackendConfig and register_backend(LocalBackendConfig) is LocalBackendConfig


def test_the_backend_option_takes_every_registered_kind(mine: Path) -> None:
    assert AgentOptions.of(backend="scripted").agent_template().backend == ScriptedBackendConfig()
    backend = AgentOptions.of(backend="mine").agent_template().backend
    assert backend is not None and backend.kind == "mine"
    with pytest.raises(
        ConfigError, match="unknown backend 'vlm'; choose local, vllm, llama-cpp, openai, hf, scripted or mine"
    ):
        AgentOptions.of(backend="vlm")


def test_scripted_models_are_a_registry() -> None:
    def shout(request: GenerationRequest, index: int) -> str:
        return request.messages[-1].content.upper()

    assert "numbers" in scripted_models()
    register_scripted_model("shout-test", shout)
    try:
        register_scripted_model("shout-test", shout)  # the same function again: nothing changes
        backend = ScriptedBackendConfig(model="shout-test").build()
        assert isinstance(backend, ScriptedBackend) and backend.model_id == "scripted:shout-test"
        with pytest.raises(ConfigError, match="scripted model 'shout-test' is already registered"):
            register_scripted_model("shout-test", lambda request, index: "")
        with pytest.raises(ConfigError, match="one word"):
            register_scripted_model("two words", shout)
    finally:
        SCRIPTED_MODELS.pop("shout-test", None)
    with pytest.raises(ConfigError, match="unknown scripted model 'shout-test'; known: numbers"):
        ScriptedBackendConfig(model="shout-test").build()


async def test_a_registered_scripted_model_replies() -> None:
    register_scripted_model("last-test", lambda request, index: request.messages[-1].content)
    try:
        backend = ScriptedBackendConfig(model="last-test").build()
        reply = await backend.generate(GenerationRequest(messages=(Message("user", "two words"),)))
    finally:
        SCRIPTED_MODELS.pop("last-test", None)
    assert reply.samples[0].text == "two words"


def test_moot_backends_lists_every_kind_with_its_settings(mine: Path) -> None:
    result = CliRunner().invoke(app, ["backends"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    for kind in [*BUILT_IN, "mine"]:
        assert f"│ {kind} " in result.output
    assert "n_ctx=8192" in result.output and "answer=7" in result.output and "a test plug-in's backend" in result.output
    assert "scripted models: numbers" in result.output


def test_run_help_names_every_built_in_kind() -> None:
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.replace("│", " ").split())
    for kind in BUILT_IN:
        assert f"{kind} (" in text
    assert "`moot backends` lists every registered kind" in text


def test_the_readmes_backend_example_runs(tmp_path: Path) -> None:
    """The manual's own backend (docs/extending.md), as written (its Python and TOML blocks), runs an experiment."""
    readme = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Your own backend") :]
    python, toml = (re.search(rf"```{lang}\n(.*?)```", section, re.S) for lang in ("python", "toml"))
    assert python is not None and toml is not None
    (tmp_path / "echo.py").write_text(python.group(1), encoding="utf-8")
    experiment = tmp_path / "echo.toml"
    experiment.write_text(
        'name = "echo"\n'
        + toml.group(1)
        + '[[tasks]]\nname = "arithmetic"\ncount = 2\n[[conditions]]\nname = "vote"\nprotocol = "vote"\nagents = 2\n',
        encoding="utf-8",
    )
    try:
        store = tmp_path / "echo.sqlite"
        result = CliRunner().invoke(app, ["run", str(experiment), "--output", str(store)])
        assert result.exit_code == 0, result.output
        reader = RunStore.read(store)
        try:
            turns = [t for r in reader.results() for t in r.result.rounds[0].turns]
        finally:
            reader.close()
        assert turns and all(t.text.startswith("Heard: ") for t in turns)
    finally:
        BACKEND_KINDS.pop("echo", None)
