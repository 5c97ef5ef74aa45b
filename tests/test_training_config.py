"""The training config: Zhu et al.'s defaults, and bad input as one ConfigError naming the file and key."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from moot.backends.config import LocalBackendConfig, ScriptedBackendConfig
from moot.errors import ConfigError
from moot.training.config import TrainConfig, load_train_config, parse_train_config
from moot.training.types import GRPOSettings

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "training" / "train-confidence.toml"


def config(**changes: object) -> TrainConfig:
    return parse_train_config({"model": "qwen2.5-0.5b", "task": "arithmetic", "output": "out", **changes}, "t.toml")


def test_defaults_are_the_papers_where_it_gives_them() -> None:
    c = config()
    assert (c.targets.questions, c.targets.temperature, c.targets.top_p) == (5000, 1.0, 0.9)
    assert c.subset.size == 10000 and (c.subset.low, c.subset.high) == (0.2, 0.8)
    assert c.expression.lora_rank == 64 and c.perception.lora_rank == 64
    assert c.expression.enabled and c.perception.enabled and c.evaluation.enabled
    assert c.evaluation.protocol == "confidence"
    # the defaults that are the paper's say so in their descriptions (docs/training.md's table reads them)
    fields = TrainConfig.model_fields["targets"].annotation.model_fields  # type: ignore[union-attr]
    for name in ("questions", "temperature", "top_p"):
        assert "Zhu et al." in (fields[name].description or ""), name
    assert "Zhu et al.: 64" in (GRPOSettings.model_fields["lora_rank"].description or "")


def test_stage_settings_are_grpo_settings_without_the_switch() -> None:
    c = config(perception={"steps": 3, "agents": 4, "enabled": False})
    settings = c.perception.settings()
    assert type(settings) is GRPOSettings and settings.steps == 3 and settings.lora_rank == 64
    assert not c.perception.enabled and c.perception.agents == 4


def test_the_sampling_backend_defaults_to_the_local_server_with_the_model() -> None:
    assert config().sampling_backend() == LocalBackendConfig(model="qwen2.5-0.5b")
    scripted = config(targets={"backend": {"kind": "scripted"}})
    assert scripted.sampling_backend() == ScriptedBackendConfig()


def test_training_splits() -> None:
    assert config().training_split() == "generated"  # a generated task trains on its own questions
    assert config(task="csqa").training_split() == "train"
    assert config(task="csqa").evaluation_split() == "validation"
    assert config(task="csqa", targets={"split": "validation"}).training_split() == "validation"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model": "qwen2.5-05b"}, "t.toml: model: unknown model 'qwen2.5-05b'"),
        ({"model": "qwen2.5-05b"}, "did you mean qwen2.5-0.5b?"),
        ({"model": "./missing.gguf"}, "model: ./missing.gguf: no such file or folder"),
        ({"task": "arithmatic"}, "task: unknown task 'arithmatic'; did you mean arithmetic?"),
        ({"task": "mmlu"}, "targets: task mmlu has no training split 'train' (its splits: test, validation, dev)"),
        ({"task": "biographies"}, "task biographies has no training split 'train' (its splits: people)"),
        ({"targets": {"sample": 4}}, "t.toml: targets.sample: unknown key"),
        ({"targets": {"samples": 1}}, "targets.samples: Input should be greater than or equal to 2"),
        ({"subset": {"low": 0.9, "high": 0.1}}, "subset: low (0.9) must not exceed high (0.1)"),
        ({"expression": {"lora_rank": 0}}, "expression.lora_rank: Input should be greater than or equal to 1"),
        ({"evaluation": {"split": "nope"}}, "t.toml: evaluation: split: task arithmetic has splits generated"),
        ({"model": "Qwen/Qwen2.5-0.5B-Instruct"}, "t.toml: targets: backend: the default local backend serves"),
    ],
)
def test_bad_input_is_one_config_error(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config(**changes)
    assert message in str(caught.value)


def test_missing_keys_are_named() -> None:
    with pytest.raises(ConfigError, match=r"t.toml: task: required key is missing; output: required key is missing"):
        parse_train_config({"model": "qwen2.5-0.5b"}, "t.toml")


def test_hub_ids_and_local_folders_are_accepted_with_a_backend(tmp_path: Path) -> None:
    hub = config(model="Qwen/Qwen2.5-0.5B-Instruct", targets={"backend": {"kind": "scripted"}})
    assert hub.model == "Qwen/Qwen2.5-0.5B-Instruct"
    folder = tmp_path / "model"
    folder.mkdir()
    with pytest.raises(ConfigError, match="a folder without config.json is not a Hugging Face model"):
        config(model=str(folder), targets={"backend": {"kind": "scripted"}})
    (folder / "config.json").write_text("{}")
    assert config(model=str(folder), targets={"backend": {"kind": "scripted"}}).model == str(folder)
    not_gguf = tmp_path / "weights.gguf"
    not_gguf.write_bytes(b"nope")
    with pytest.raises(ConfigError, match="not a GGUF file"):
        config(model=str(not_gguf))


def test_files_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_train_config(tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("model = [")
    with pytest.raises(ConfigError, match=f"{bad}: malformed TOML"):
        load_train_config(bad)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('model = "qwen2.5-0.5b"\ntask = "arithmetic"\noutput = "o"\nrounds = 3\n')
    with pytest.raises(ConfigError, match=f"{unknown}: rounds: unknown key"):
        load_train_config(unknown)


def test_the_example_is_valid() -> None:
    example = load_train_config(EXAMPLE)
    assert (
        example.model == "qwen2.5-0.5b" and example.targets.questions == 24 and example.training_split() == "validation"
    )


def test_the_docs_table_names_every_setting() -> None:
    """docs/training.md's settings table lists every key of the config (``*.key``: both GRPO stages)."""
    docs = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    table = "\n".join(line for line in docs.splitlines() if line.startswith("| `"))
    for name, field in TrainConfig.model_fields.items():
        section = field.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            for key in section.model_fields:
                stage = name in ("expression", "perception") and key in GRPOSettings.model_fields
                assert f"`{name}.{key}`" in table or (stage and f"`*.{key}`" in table), f"{name}.{key}"
        else:
            assert f"| `{name}` |" in table, name
