"""Agents: a name, a backend, sampling settings and an optional persona."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from moot.backends.base import Backend
from moot.backends.config import BackendConfig, default_backend


class Sampling(BaseModel):
    """Sampling settings of one agent. ``max_tokens`` bounds a reply whole: a thinking model's reasoning and
    its answer together. ``reasoning_effort`` and ``thinking`` are sent only when set (to servers that take
    them: OpenAI's and vLLM's ``reasoning_effort``; ``thinking`` as ``chat_template_kwargs.enable_thinking``,
    which Qwen3's template reads on vLLM, SGLang and llama-server)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(default=512, ge=1)
    reasoning_effort: str | None = Field(
        default=None, min_length=1, description='a reasoning model\'s effort, as its server names it ("low", "high")'
    )
    thinking: bool | None = Field(default=None, description="a thinking model's thinking on (true) or off (false)")

    @model_serializer(mode="wrap")
    def _reasoning_when_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Reasoning settings are dumped only when set, so that every condition stored before they existed
        keeps its JSON and fingerprint (and resumes)."""
        data = handler(self)
        if isinstance(data, dict):
            for name in ("reasoning_effort", "thinking"):
                if data.get(name) is None:
                    data.pop(name, None)
        return data


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
