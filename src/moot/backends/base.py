"""The backend interface: one request in, one reply of n samples out.

``BackendConfig`` (how to reach a model: any registered kind's config) lives in moot.backends.config, above the
backends it builds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol, runtime_checkable

# The session of the call being made: one agent's conversation in one debate, stable over its rounds. A backend
# that can send it (the openai kind's ``session_header``) reads it here, so that a session-aware router behind one
# URL keeps the agent on one replica (whose prefix cache holds its history); it is never part of a request's key.
CALL_SESSION: ContextVar[str | None] = ContextVar("moot_call_session", default=None)


@contextlib.contextmanager
def call_session(session: str) -> Iterator[None]:
    """Calls made inside carry ``session`` (``CALL_SESSION``)."""
    token = CALL_SESSION.set(session)
    try:
        yield
    finally:
        CALL_SESSION.reset(token)


Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    """One chat message. Prompts are rendered into messages in one place (moot.debate.prompts)."""

    role: Role
    content: str

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class GenerationRequest:
    """What a caller asks of a model.

    ``seed`` seeds sample 0; sample i > 0 uses ``derive_seed(seed, i)`` on every
    backend, so n samples of one request equal n one-sample requests.
    """

    messages: tuple[Message, ...]
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 512
    seed: int | None = None
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    reasoning_effort: str | None = None  # a reasoning model's effort ("low", "medium", "high"), as servers take it
    thinking: bool | None = None  # a thinking model's thinking on or off (chat_template_kwargs.enable_thinking)

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        if not self.messages:
            raise ValueError("a request needs at least one message")

    def payload(self) -> dict[str, Any]:
        """The request as plain data: what its call key hashes and its store row holds. A reasoning setting
        left unset is left out, so that every request stored before moot had them keeps its key."""
        data = asdict(self)
        for name in _UNSET_WHEN_NONE:
            if data[name] is None:
                del data[name]
        return data


_UNSET_WHEN_NONE = ("reasoning_effort", "thinking")


@dataclass(frozen=True)
class TokenLogprob:
    """The log-probability of one generated (sampled) token."""

    token: str
    logprob: float


@dataclass(frozen=True)
class Sample:
    """One generated completion of a request.

    ``text`` is the reply's content; ``reasoning`` its reasoning, read apart (moot.backends.reasoning; None
    when it has none), and ``reasoning_tokens`` how many of ``completion_tokens`` the reasoning took (as the
    server reports it, else counted by its tokenizer; None when unknown). ``endpoint`` is the server that
    answered it (an ``openai`` backend's endpoint: its URL, credentials masked); None for the other backends
    and for samples stored before moot recorded it. ``batch`` is the provider batch that answered it (the
    ``openai`` backend's batch mode: priced at ``[prices]``' batch share); None for a live call.
    ``cached_tokens`` is how many of ``prompt_tokens`` the server had cached, as it reports them
    (``usage.prompt_tokens_details.cached_tokens``: OpenAI, vLLM, llama-server; priced at ``[prices]``'
    ``cached_prompt``); None where it reports none, and for samples stored before moot recorded it."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    logprobs: tuple[TokenLogprob, ...] | None = None
    endpoint: str | None = None
    reasoning: str | None = None
    reasoning_tokens: int | None = None
    batch: str | None = None
    cached_tokens: int | None = None


@dataclass(frozen=True)
class Reply:
    """All samples of one request, in sample-index order, plus the model that produced them."""

    samples: tuple[Sample, ...]
    model: str

    @property
    def prompt_tokens(self) -> int:
        return sum(s.prompt_tokens for s in self.samples)

    @property
    def completion_tokens(self) -> int:
        return sum(s.completion_tokens for s in self.samples)

    @property
    def reasoning_tokens(self) -> int:
        """Of ``completion_tokens``, those of reasoning (0 where none or unknown)."""
        return sum(s.reasoning_tokens or 0 for s in self.samples)


def served_model(model_id: str) -> str:
    """The model part of a backend's ``model_id``: an ``openai`` id names its servers too
    (``openai:URL:MODEL``), and a server may move (another port, a replica) while serving the same model."""
    return model_id.rsplit(":", 1)[-1] if model_id.startswith("openai:") else model_id


@runtime_checkable
class Backend(Protocol):
    """An async text generator. Implementations must be safe to call concurrently."""

    name: str

    @property
    def model_id(self) -> str:
        """Identity of the model (GGUF sha256, or the server's model name)."""
        ...

    @property
    def supports_logprobs(self) -> bool: ...

    @property
    def parallel(self) -> int:
        """How many calls it can usefully serve at once (sizes the runner's concurrency)."""
        ...

    async def check(self) -> None:
        """Fail now, with a clear BackendError, if the model cannot be loaded or the server reached."""
        ...

    async def generate(self, request: GenerationRequest) -> Reply: ...

    async def aclose(self) -> None: ...
