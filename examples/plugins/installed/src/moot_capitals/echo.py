"""A backend kind written outside moot: ``echo`` calls no model and replies with the last line of the last user
message (its ``prefix`` first), enough to try an experiment's plumbing end to end with a backend moot does not
ship. Use it from an experiment file with ``plugins = ["echo.py"]`` (a path relative to that file) and an
agent's ``backend = { kind = "echo" }``; installed, it is the entry point ``echo`` of the group ``moot.backends``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from moot.backends.base import Backend, GenerationRequest, Reply, Sample
from moot.backends.config import BackendSettings, register_backend


class EchoBackend:
    """The backend: moot's async interface (moot.backends.base.Backend)."""

    name = "echo"
    supports_logprobs = False
    parallel = 16  # requests it serves at once

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.model_id = f"echo:{prefix}"  # the model's identity: stored calls replay only for the same one

    async def check(self) -> None:  # fail here, with a BackendError, if the model cannot be reached
        return None

    async def generate(self, request: GenerationRequest) -> Reply:
        last = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        text = self.prefix + (last.strip().splitlines() or [""])[-1]
        prompt_tokens = sum(len(m.content.split()) for m in request.messages)
        sample = Sample(text, "stop", prompt_tokens, len(text.split()), latency_s=0.0)
        return Reply(samples=(sample,) * request.n, model=self.model_id)

    async def aclose(self) -> None:
        return None


@register_backend
class EchoConfig(BackendSettings):
    """Its settings: what an agent's ``backend = { kind = "echo", prefix = "..." }`` validates as."""

    summary = "replies with the last line of the last user message (an example plug-in; no model)"
    kind: Literal["echo"] = "echo"
    prefix: str = Field(default="", description="text put before the echoed line")
    logprobs: bool = Field(default=False, description="echo gives no log-probabilities")

    def build(self) -> Backend:
        return EchoBackend(self.prefix)

    def model_name(self) -> str:
        return "echo"
