"""Protocols as data: named presets of the engine's settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from moot.debate.aggregation import TieRule
from moot.errors import ConfigError


class ProtocolSpec(BaseModel):
    """One protocol, fully resolved.

    ``rounds`` counts round 0 (the independent answers), as Du et al.'s code does:
    ``rounds=2`` is round 0 plus one debate round.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    agents: int = Field(ge=1)
    rounds: int = Field(ge=1)
    topology: Literal["none", "full"] = Field(
        description="who hears whom in rounds >= 1: none (each agent alone) or full (everyone hears everyone)"
    )
    history: Literal["chat"] = Field(default="chat", description="chat: each agent keeps its own chat history (Du)")
    aggregation: Literal["majority"] = "majority"
    tie_rule: TieRule = "first"
    reference: str = ""
    fixed_agents: bool = Field(default=False, exclude=True)
    fixed_rounds: bool = Field(default=False, exclude=True)


PRESETS: dict[str, ProtocolSpec] = {
    p.name: p
    for p in (
        ProtocolSpec(
            name="single",
            agents=1,
            rounds=1,
            topology="none",
            reference="one agent, one answer: the single-agent baseline",
            fixed_agents=True,
            fixed_rounds=True,
        ),
        ProtocolSpec(
            name="vote",
            agents=3,
            rounds=1,
            topology="none",
            reference="self-consistency (Wang et al. 2023): N independent answers, majority vote",
            fixed_rounds=True,
        ),
        ProtocolSpec(
            name="society",
            agents=3,
            rounds=2,
            topology="full",
            reference="Du et al. 2024, Society of Mind: every agent reads all peers' previous replies; majority",
        ),
    )
}


def resolve_protocol(
    name: str, *, agents: int | None = None, rounds: int | None = None, tie_rule: TieRule | None = None
) -> ProtocolSpec:
    """A preset with overrides applied and validated; errors name the setting and the problem."""
    if name not in PRESETS:
        raise ConfigError(f"unknown protocol {name!r}; known protocols: {', '.join(PRESETS)}")
    preset = PRESETS[name]
    for value, what, fixed in ((agents, "agents", preset.fixed_agents), (rounds, "rounds", preset.fixed_rounds)):
        if value is not None and value < 1:
            raise ConfigError(f"{what} must be a positive integer, got {value}")
        if value is not None and fixed and value != getattr(preset, what):
            raise ConfigError(f"protocol {name!r} uses exactly {getattr(preset, what)} {what}, got {value}")
    changes = {"agents": agents, "rounds": rounds, "tie_rule": tie_rule}
    try:
        return ProtocolSpec.model_validate(
            preset.model_dump() | {k: v for k, v in changes.items() if v is not None}
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"protocol setting {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
