"""A backend kind and a scripted model, registered on import (entry point group ``moot.backends``).

- ``echo``: no model, replies with the last line of the last user message (its ``prefix`` first): enough
  to try an experiment's plumbing end to end with a backend that is not built into moot;
- ``paris``: a scripted model (``backend = { kind = "scripted", model = "paris" }``) that always answers Paris.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from moot.backends.base import Backend, GenerationRequest, Reply, Sample
from moot.backends.config import BackendSettings, register_backend
from moot.backends.scripted import register_scripted_model


class EchoBackend:
    """The backend itself: moot's async interface (moot.backends.base.Backend)."""

    name = "echo"

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    @property
    def model_id(self) -> str:
        return f"echo:{self.prefix}"

    @property
    def supports_logprobs(self) -> bool:
        return False

    @property
    def parallel(self) -> int:
        return 16

    async def check(self) -> None:
        return None

    async def generate(self, request: GenerationRequest) -> Reply:
        last = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        text = self.prefix + (last.strip().splitlines() or [""])[-1]
        prompt_tokens = sum(len(m.content.split()) for m in request.messages)
        sample = Sample(text, "stop", prompt_tokens, len(text.split()), 0.0)
        return Reply(samples=(sample,) * request.n, model=self.model_id)

    async def aclose(self) -> None:
        return None


@register_backend
class EchoBackendConfig(BackendSettings):
    """Its config: what an experiment file's ``backend = { kind = "echo", prefix = "..." }`` validates as."""

    summary = "replies with the last line of the last user message (an example plug-in; no model)"
    kind: Literal["echo"] = "echo"
    prefix: str = Field(default="", description="text put before the echoed line")
    logprobs: bool = Field(default=False, description="echo gives no log-probabilities")

    def build(self) -> Backend:
        return EchoBackend(self.prefix)

    def model_name(self) -> str:
        return "echo"


register_scripted_model("paris", lambda request, index: "The capital is\nParis")
