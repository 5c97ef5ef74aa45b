"""Experiment files: validation errors name the key and the problem; resolution fills every agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from moot.errors import ConfigError
from moot.runner.config_files import load_experiment, parse_experiment
from moot.runner.config_resolve import resolve

MINIMAL = {
    "tasks": [{"name": "arithmetic", "count": 3}],
    "conditions": [{"name": "society", "protocol": "society"}],
}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name = ", "malformed TOML"),
        (
            '[[tasks]]\nname = "arithmetic"\ncount = 2\n[[conditions]]\nname = "a"\nprotocol = "vote"\nroundz = 2',
            "conditions.0.roundz: unknown key",
        ),
        (
            '[[tasks]]\nname = "arithmetic"\ncount = "ten"\n[[conditions]]\nname = "a"\nprotocol = "vote"',
            "tasks.0.count: Input should be a valid integer",
        ),
        (
            '[[tasks]]\nname = "arithmetic"\ncount = 2\n[[conditions]]\nname = "a"\nprotocol = "vote"\n'
            '[[conditions]]\nname = "a"\nprotocol = "single"',
            "conditions: duplicate condition name 'a'",
        ),
        ('[[conditions]]\nname = "a"\nprotocol = "vote"', "tasks: required key is missing"),
        (
            '[[tasks]]\nname = "arithmetic"\n[[conditions]]\nname = "a"\nprotocol = "vote"',
            "tasks.0: give count or ids (a data file task, with format, takes every row without them)",
        ),
        (
            'seeds = [1, 1]\n[[tasks]]\nname = "arithmetic"\ncount = 2\n[[conditions]]\nname = "a"\nprotocol = "vote"',
            "seeds: seeds must be a non-empty list of distinct integers",
        ),
        (
            '[agent]\nbackend = { kind = "local", n_ctx = 1 }\n[[tasks]]\nname = "arithmetic"\ncount = 2\n'
            '[[conditions]]\nname = "a"\nprotocol = "vote"',
            "agent.backend.n_ctx: Input should be greater than or equal",
        ),
    ],
)
def test_bad_files_name_the_key_and_problem(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=None) as info:
        load_experiment(path)
    assert str(info.value).startswith(str(path))
    assert message in str(info.value)


def test_unknown_protocol_and_task_are_named_by_key() -> None:
    config = parse_experiment({**MINIMAL, "conditions": [{"name": "x", "protocol": "debate"}]})
    with pytest.raises(ConfigError, match=r"conditions.0: unknown protocol 'debate'"):
        resolve(config)
    config = parse_experiment({**MINIMAL, "tasks": [{"name": "no-such-task", "count": 1}]})
    with pytest.raises(ConfigError, match=r"tasks.0: unknown task 'no-such-task'"):
        resolve(config)
    config = parse_experiment({**MINIMAL, "conditions": [{"name": "x", "protocol": "society", "agents": 0}]})
    with pytest.raises(ConfigError, match=r"conditions.0: agents must be a positive integer, got 0"):
        resolve(config)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_experiment(tmp_path / "nope.toml")


def test_heterogeneous_agents_fall_back_to_the_experiment_defaults() -> None:
    config = parse_experiment(
        {
            **MINIMAL,
            "agent": {"backend": {"kind": "local", "model": "qwen2.5-0.5b"}, "sampling": {"temperature": 0.3}},
            "conditions": [
                {
                    "name": "mixed",
                    "protocol": "society",
                    "agents": [
                        {},
                        {"name": "skeptic", "persona": "Doubt everything."},
                        {"backend": {"kind": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m"}},
                    ],
                }
            ],
        }
    )
    (mixed,) = resolve(config)
    assert mixed.protocol.agents == 3
    first, skeptic, remote = mixed.agents
    assert (first.name, skeptic.name, remote.name) == ("agent-1", "skeptic", "agent-3")
    assert first.backend.model == "qwen2.5-0.5b" and first.sampling.temperature == 0.3
    assert skeptic.persona == "Doubt everything." and skeptic.backend == first.backend
    assert remote.backend.kind == "openai" and remote.sampling.temperature == 0.3


def test_examples_are_valid() -> None:
    folder = Path(__file__).parent.parent.joinpath("examples")
    examples = sorted([*folder.glob("*.toml"), *folder.glob("replicate/*.toml")])
    assert len(examples) >= 10
    for path in examples:
        resolve(load_experiment(path))
