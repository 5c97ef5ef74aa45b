"""The hf backend and the GRPO driver without a model: configs, identities, clear errors, the reward plumbing."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from moot.backends.base import Message
from moot.backends.config import HFBackendConfig, parse_backend
from moot.backends.factory import make_backend
from moot.backends.hf import HFBackend, _cut_at_stop
from moot.errors import ConfigError
from moot.hf import adapter_identity, check_adapter, model_identity, resolve_source
from moot.runner.options import AgentOptions
from moot.training.grpo import (
    _check_inputs,
    _check_same_stage,
    completion_text,
    history_of,
    reward_function,
    write_curve,
)
from moot.training.types import GRPOSettings, StepRecord, TrainingExample

ABC_SHA256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # sha256(b"abc"), FIPS 180-2


def _adapter(folder: Path, weights: bytes = b"abc") -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text('{"peft_type": "LORA"}')
    (folder / "adapter_model.safetensors").write_bytes(weights)
    return folder


def _hf_folder(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    return folder


def test_an_hf_table_validates_as_its_kind_and_reads_back_equal() -> None:
    config = parse_backend(kind="hf", model="Qwen/Qwen2.5-0.5B-Instruct", adapter="out/adapter", dtype="bfloat16")
    assert config == HFBackendConfig(model="Qwen/Qwen2.5-0.5B-Instruct", adapter="out/adapter", dtype="bfloat16")
    assert parse_backend(**config.model_dump(mode="json", exclude_none=True)) == config
    assert config.describe() == "Qwen/Qwen2.5-0.5B-Instruct + adapter out/adapter"
    assert HFBackendConfig().model_name() == "qwen2.5-1.5b"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"dtype": "float8"}, "Input should be 'auto', 'float32', 'bfloat16' or 'float16'"),
        ({"adapter": " "}, "an empty adapter path"),
        ({"n_ctx": 4096}, "an option of the local or vllm or llama-cpp backend, not of the hf one"),
        ({"n_threads": 0}, "greater than or equal to 1"),
    ],
)
def test_bad_hf_options_are_refused_by_name(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_backend(kind="hf", **options)


def test_the_command_line_builds_an_hf_agent_with_its_adapter() -> None:
    template = AgentOptions.of(backend="hf", model="qwen2.5-0.5b", adapter="out/adapter", threads=2).agent_template()
    assert template.backend == HFBackendConfig(model="qwen2.5-0.5b", adapter="out/adapter", n_threads=2)
    with pytest.raises(
        ConfigError, match="option n_ctx: an option of the local or vllm or llama-cpp backend, not of the hf"
    ):
        AgentOptions.of(backend="hf", context=4096).agent_template()


def test_a_gguf_file_is_named_by_its_sha256_and_an_adapter_by_its_weights(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(12))
    source = resolve_source(str(gguf))
    assert (source.location, source.gguf_file) == (str(tmp_path.resolve()), "m.gguf")
    assert source.identity == "gguf:" + hashlib.sha256(b"GGUF" + bytes(12)).hexdigest()
    adapter = _adapter(tmp_path / "adapter")
    assert adapter_identity(adapter) == f"adapter:{ABC_SHA256}"
    assert model_identity(source, None) == source.identity
    assert model_identity(source, adapter) == f"{source.identity}+adapter:{ABC_SHA256}"


def test_a_folder_and_a_hub_id_are_named_as_given(tmp_path: Path) -> None:
    folder = _hf_folder(tmp_path / "model")
    assert resolve_source(str(folder)).identity == str(folder.resolve())
    hub = resolve_source("Qwen/Qwen2.5-0.5B-Instruct")
    assert (hub.location, hub.gguf_file, hub.identity) == (
        "Qwen/Qwen2.5-0.5B-Instruct",
        None,
        "Qwen/Qwen2.5-0.5B-Instruct",
    )


async def test_the_backend_is_built_without_loading_and_keeps_base_and_adapted_calls_apart(tmp_path: Path) -> None:
    folder = _hf_folder(tmp_path / "model")
    base = make_backend(HFBackendConfig(model=str(folder)))
    adapted = make_backend(HFBackendConfig(model=str(folder), adapter=str(_adapter(tmp_path / "a"))))
    other = make_backend(HFBackendConfig(model=str(folder), adapter=str(_adapter(tmp_path / "b", b"abd"))))
    try:
        assert isinstance(base, HFBackend) and base.name == "hf" and base.parallel == 1
        assert base.model_id == str(folder.resolve())
        assert adapted.model_id == f"{folder.resolve()}+adapter:{ABC_SHA256}"
        assert len({base.model_id, adapted.model_id, other.model_id}) == 3
    finally:
        await asyncio.gather(base.aclose(), adapted.aclose(), other.aclose())


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("qwen2.5-0.5", "unknown model 'qwen2.5-0.5': .*; did you mean qwen2.5-0.5b?"),
        ("./no/such/model.gguf", "unknown model './no/such/model.gguf': not a registered model"),
    ],
)
def test_an_unknown_model_is_one_clear_error(model: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_backend(HFBackendConfig(model=model))


def test_files_that_are_not_models_are_named(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ConfigError, match="is a file but not a GGUF file"):
        resolve_source(str(tmp_path / "notes.txt"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="has no config.json: not a Hugging Face model folder"):
        resolve_source(str(tmp_path / "empty"))


def test_a_missing_or_incomplete_adapter_is_one_clear_error(tmp_path: Path) -> None:
    folder = _hf_folder(tmp_path / "model")
    with pytest.raises(ConfigError, match="adapter 'nowhere' not found: give the folder of a peft adapter"):
        make_backend(HFBackendConfig(model=str(folder), adapter="nowhere"))
    (tmp_path / "half").mkdir()
    with pytest.raises(ConfigError, match="has no adapter_config.json: not a peft adapter"):
        check_adapter(tmp_path / "half")
    (tmp_path / "half" / "adapter_config.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"has no weights \(adapter_model.safetensors or adapter_model.bin\)"):
        check_adapter(tmp_path / "half")


def test_a_gguf_transformers_cannot_read_is_one_clear_error(tmp_path: Path) -> None:
    from moot.hf import load_model

    gguf = tmp_path / "broken.gguf"
    gguf.write_bytes(b"GGUF" + b"\xff" * 60)
    with pytest.raises(ConfigError, match="transformers could not load the tokenizer of model '.*broken.gguf'"):
        load_model(str(gguf))


@pytest.mark.parametrize(
    ("text", "stop", "cut"),
    [
        ("The answer is 4.\nQ: next", ("\nQ:",), 16),
        ("abc", ("x",), None),
        ("a;b.c", (".", ";"), 1),
        ("abc", ("",), None),
    ],
)
def test_a_reply_ends_before_its_earliest_stop_string(text: str, stop: tuple[str, ...], cut: int | None) -> None:
    assert _cut_at_stop(text, stop) == cut


EXAMPLES = (
    TrainingExample("q1", "arithmetic", "expression", (Message("user", "2+2?"),), gold="4"),
    TrainingExample("q2", "arithmetic", "expression", (Message("user", "3+3?"),), gold="6"),
)


class Contains:
    """A reward part: 1 when the completion contains the example's gold answer."""

    name = "correct"
    weight = 1.0

    def __call__(self, example: TrainingExample, completion: str) -> float:
        return float(example.gold in completion)


def test_each_reward_part_is_a_trl_reward_function_looking_its_example_up_by_index() -> None:
    score = reward_function(Contains(), EXAMPLES)
    assert score.__name__ == "correct"
    completions = [[{"role": "assistant", "content": "It is 4."}], [{"role": "assistant", "content": "It is 4."}], "6!"]
    assert score(completions=completions, index=[0, 1, 1], prompts=None, trainer_state=None) == [1.0, 0.0, 1.0]
    assert completion_text([{"role": "assistant", "content": None}]) == ""


def test_reward_parts_need_examples_and_distinct_names() -> None:
    assert _check_inputs(EXAMPLES, [Contains()]) == ("correct",)
    with pytest.raises(ConfigError, match="at least one training example"):
        _check_inputs((), [Contains()])
    with pytest.raises(ConfigError, match="distinct names; repeated: correct"):
        _check_inputs(EXAMPLES, [Contains(), Contains()])


def test_the_history_keeps_one_row_per_logged_step_and_is_written_as_a_table(tmp_path: Path) -> None:
    logs = [
        {"step": 1, "reward": 0.5, "rewards/correct/mean": 0.5, "elapsed_s": 10.0, "loss": 0.0},
        {"step": 2, "reward": 0.25, "rewards/correct/mean": 0.25, "elapsed_s": 21.5},
        {"step": 2, "train_runtime": 22.0},  # the trainer's closing entry has no reward
    ]
    history = history_of(logs, ["correct"])
    assert history == (StepRecord(1, 0.5, {"correct": 0.5}, 10.0), StepRecord(2, 0.25, {"correct": 0.25}, 21.5))
    csv_path, png_path = write_curve(tmp_path, history, ["correct"])
    with csv_path.open() as f:
        assert list(csv.reader(f)) == [
            ["step", "reward", "correct", "elapsed_s"],
            ["1", "0.5", "0.5", "10.0"],
            ["2", "0.25", "0.25", "21.5"],
        ]
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_stage_folder_resumes_only_under_the_same_settings(tmp_path: Path) -> None:
    settings = GRPOSettings(steps=2, lora_rank=8)
    _check_same_stage(tmp_path, "qwen2.5-0.5b", settings, None, ("correct",), EXAMPLES)
    assert json.loads((tmp_path / "grpo_settings.json").read_text())["settings"]["lora_rank"] == 8
    (tmp_path / "checkpoints" / "checkpoint-2").mkdir(parents=True)  # a checkpoint: the stage has begun
    (tmp_path / "checkpoints" / "checkpoint-2" / "trainer_state.json").write_text("{}")
    more = settings.model_copy(update={"steps": 5})
    _check_same_stage(tmp_path, "qwen2.5-0.5b", more, None, ("correct",), EXAMPLES)
    with pytest.raises(ConfigError, match=r"trained with other model, lora_rank \(8 -> 16\); use another output"):
        _check_same_stage(tmp_path, "qwen2.5-1.5b", GRPOSettings(steps=2, lora_rank=16), None, ("correct",), EXAMPLES)
    with pytest.raises(ConfigError, match=r"trained with other examples; use another output folder"):
        _check_same_stage(tmp_path, "qwen2.5-0.5b", settings, None, ("correct",), EXAMPLES[:1])


def test_the_documented_table6_experiment_pairs_the_base_and_the_adapted_model(tmp_path: Path) -> None:
    from moot.runner.config_files import load_experiment
    from moot.runner.config_resolve import resolve

    doc = (Path(__file__).parent.parent / "docs" / "hf-backend.md").read_text()
    block = next(b for b in doc.split("```toml\n")[1:] if b.startswith("# table6.toml"))
    (tmp_path / "table6.toml").write_text(block.split("```")[0])
    config = load_experiment(tmp_path / "table6.toml")
    conditions = resolve(config)
    assert [c.name for c in conditions] == ["base", "trained"]
    base, trained = ({a.backend for a in c.agents} for c in conditions)
    assert base == {HFBackendConfig(model="qwen2.5-0.5b")}
    assert trained == {HFBackendConfig(model="qwen2.5-0.5b", adapter="train-confidence/perception/adapter")}
    assert all(len(c.agents) == 3 and c.agents[0].sampling.top_p == 0.9 for c in conditions)


def test_the_last_complete_checkpoint_is_resumed_and_fewer_steps_than_done_are_refused(tmp_path: Path) -> None:
    from moot.training.grpo import _last_checkpoint, train_grpo

    checkpoints = tmp_path / "checkpoints"
    for step in (2, 10, 11):
        (checkpoints / f"checkpoint-{step}").mkdir(parents=True)
    for step in (2, 10):  # checkpoint-11 was cut short by a kill: no trainer state
        (checkpoints / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    assert _last_checkpoint(checkpoints) == checkpoints / "checkpoint-10"
    assert _last_checkpoint(tmp_path / "none") is None
    with pytest.raises(ConfigError, match="trained for 10 steps, more than the 3 asked"):
        train_grpo(
            model="x", examples=EXAMPLES, rewards=[Contains()], settings=GRPOSettings(steps=3), output_dir=tmp_path
        )
