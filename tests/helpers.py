"""Shared test helpers: scripted agents for protocol-logic tests."""

from __future__ import annotations

from collections.abc import Sequence

from moot.backends.config import ScriptedBackendConfig
from moot.backends.scripted import ScriptedBackend
from moot.debate.agents import Agent, AgentSpec

SCRIPTED = ScriptedBackendConfig()


def scripted_agents(*replies: Sequence[str], persona: str | None = None) -> list[Agent]:
    """One agent per reply list; agent i answers its list in order, one reply per round."""
    return [
        Agent(AgentSpec(name=f"agent-{i}", backend=SCRIPTED, persona=persona), ScriptedBackend(list(r)))
        for i, r in enumerate(replies, 1)
    ]
