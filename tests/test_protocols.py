"""Protocol presets and their validation."""

import pytest

from moot.debate.protocol_presets import PRESETS, resolve_protocol
from moot.errors import ConfigError


def test_presets_defaults() -> None:
    assert (PRESETS["single"].agents, PRESETS["single"].rounds, PRESETS["single"].topology.kind) == (1, 1, "none")
    assert (PRESETS["vote"].agents, PRESETS["vote"].rounds, PRESETS["vote"].topology.kind) == (3, 1, "none")
    society = PRESETS["society"]
    assert (society.agents, society.rounds, society.topology.kind, society.history.kind) == (3, 2, "full", "chat")
    assert society.tie_rule == "first"


def test_overrides_apply_and_are_validated() -> None:
    spec = resolve_protocol("society", agents=5, rounds=4, tie_rule="random")
    assert (spec.agents, spec.rounds, spec.tie_rule) == (5, 4, "random")
    assert resolve_protocol("vote", agents=7).agents == 7
    with pytest.raises(ConfigError, match="unknown protocol 'debate'"):
        resolve_protocol("debate")
    with pytest.raises(ConfigError, match="agents must be a positive integer, got 0"):
        resolve_protocol("society", agents=0)
    with pytest.raises(ConfigError, match="rounds must be a positive integer, got -1"):
        resolve_protocol("society", rounds=-1)
    with pytest.raises(ConfigError, match="'vote' uses exactly 1 rounds"):
        resolve_protocol("vote", rounds=3)
    with pytest.raises(ConfigError, match="'single' uses exactly 1 agents"):
        resolve_protocol("single", agents=2)
    with pytest.raises(ConfigError, match="tie_rule"):
        resolve_protocol("society", tie_rule="coin")  # type: ignore[arg-type]
