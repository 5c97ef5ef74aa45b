"""The one place every model call goes through: it counts calls, samples, tokens and latency."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field

from moot.backends.base import Backend, GenerationRequest, Reply, call_session


def session_id(*parts: object) -> str:
    """A stable, opaque session id of ``parts`` (16 hex digits): what the header carries, no question text."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:16]


@dataclass
class Usage:
    """Running totals of model calls (mutable on purpose: it is a counter)."""

    calls: int = 0
    samples: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0  # of completion_tokens, where known
    latency_s: float = 0.0
    errors: int = 0
    by_model: dict[str, int] = field(default_factory=dict)

    def add(self, reply: Reply) -> None:
        self.calls += 1
        self.samples += len(reply.samples)
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.reasoning_tokens += reply.reasoning_tokens
        self.latency_s += sum(s.latency_s for s in reply.samples)
        self.by_model[reply.model] = self.by_model.get(reply.model, 0) + 1


class Caller:
    """Sends requests to backends and keeps the count. Failed calls are counted as errors.

    ``agent`` and ``round`` name the call's place in a debate; a recording caller
    (moot.runner.cache) uses them to key, cache and store the call.
    """

    def __init__(self) -> None:
        self.usage = Usage()
        self._session_scope = uuid.uuid4().hex  # one debate: its agents' sessions are its own

    def session(self, agent: str) -> str:
        """The session id of ``agent``'s calls in this caller's debate (``CALL_SESSION``)."""
        return session_id(self._session_scope, agent)

    async def call(self, backend: Backend, request: GenerationRequest, *, agent: str, round: int) -> Reply:
        try:
            with call_session(self.session(agent)):
                reply = await backend.generate(request)
        except Exception:
            self.usage.errors += 1
            raise
        self.usage.add(reply)
        return reply
