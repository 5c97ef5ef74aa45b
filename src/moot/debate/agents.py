"""Agents: a name, a backend, sampling settings and an optional persona."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from moot.backends.base import Backend
from moot.backends.config import BackendConfig, default_backend


class Sampling(BaseModel):
    """Sampling settings of one agent."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(default=512, ge=1)


class AgentSpec(BaseModel):
    """The configuration of one agent. ``persona`` is its system prompt (overrides the task's);
    ``agreement`` (0-10) adds a sentence to its debate prompts asking it to agree with its peers
    about that many tenths of the time (DebateLLM's agreement-intensity knob)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    backend: BackendConfig = Field(default_factory=default_backend)
    sampling: Sampling = Sampling()
    persona: str | None = None
    agreement: int | None = Field(default=None, ge=0, le=10)


@dataclass(frozen=True)
class Agent:
    """An agent ready to speak: its spec and the backend instance serving it."""

    spec: AgentSpec
    backend: Backend

    @property
    def name(self) -> str:
        return self.spec.name
