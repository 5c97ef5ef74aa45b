"""The backend interface: one request in, one reply of n samples out.

``BackendConfig`` (how to reach a model: any registered kind's config) lives in moot.backends.config and is
re-exported here for the modules that import it from the interface.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from moot.backends.config import BackendConfig as BackendConfig

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

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        if not self.messages:
            raise ValueError("a request needs at least one message")


@dataclass(frozen=True)
class TokenLogprob:
    """The log-probability of one generated (sampled) token."""

    token: str
    logprob: float


@dataclass(frozen=True)
class Sample:
    """One generated completion of a request.

    ``endpoint`` is the server that answered it (an ``openai`` backend's endpoint: its URL, credentials
    masked); None for the other backends and for samples stored before moot recorded it."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    logprobs: tuple[TokenLogprob, ...] | None = None
    endpoint: str | None = None


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
