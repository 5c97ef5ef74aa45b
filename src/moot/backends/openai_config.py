"""The ``openai`` kind's config (``OpenAIBackendConfig``), registered here; its backend is
moot.backends.openai_api's ``OpenAIBackend``, imported only when ``build`` makes one. So this module imports
nothing of moot.backends but its settings when it loads, and moot.backends.config imports the config from here,
at the place that keeps the built-in kinds' registration order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_serializer, field_validator, model_validator
from pydantic_core import PydanticCustomError

from moot.backends.settings import BackendSettings, register_backend
from moot.redact import redact

if TYPE_CHECKING:
    from moot.backends.base import Backend


@register_backend
class OpenAIBackendConfig(BackendSettings):
    """Any OpenAI-compatible server (moot.backends.openai_api), or several serving one model.

    ``base_url`` is one URL, or a list of the endpoints' URLs (replicas of one model): a one-URL list is
    that URL (the same config, hash and fingerprint), an empty list is refused. ``max_concurrency`` is
    per endpoint; when it is not given, each endpoint's is read from the server where it says
    (llama-server's ``/props`` ``total_slots``), else 8 (its default, and what a dump shows)."""

    summary: ClassVar[str] = "any OpenAI-compatible server (OpenAI, vLLM, llama-server, Ollama)"
    kind: Literal["openai"] = "openai"
    model: str | None = Field(default=None, description="the served model name (default: the server's only model)")
    base_url: str | tuple[str, ...] | None = Field(
        default=None, description="the server's /v1 URL, or a list of the URLs of endpoints serving the same model"
    )
    api_key_env: str = Field(default="OPENAI_API_KEY", description="variable holding the key")
    timeout_s: float = Field(
        default=600.0, gt=0, description="the most one attempt may take, from the request to its reply's last byte"
    )
    max_retries: int = Field(default=2, ge=0, description="retries on transient errors")
    max_concurrency: int = Field(
        default=8,
        ge=1,
        description="requests in flight at once, per endpoint (default: the server's slots where it says, "
        "256 for vLLM and SGLang, else 8)",
    )
    adaptive_concurrency: bool = Field(
        default=True,
        description="halve an endpoint's concurrency on HTTP 429, 503 or 529 and climb back by one per full "
        "window of answers, up to max_concurrency (false: always max_concurrency)",
    )
    requests_per_minute: float | None = Field(
        default=None, gt=0, description="start at most this many (over all endpoints)"
    )
    tokens_per_minute: float | None = Field(
        default=None,
        gt=0,
        description="spend at most this many prompt and completion tokens in any minute (over all endpoints; a "
        "request counts its prompt's characters / 4 plus max_tokens until its reply says)",
    )
    session_header: str = Field(
        default="x-session-id",
        pattern=r"^$|^[A-Za-z0-9-]{1,64}$",
        description="a header carrying each agent's session id (one per agent, question and seed, the same over "
        "its rounds), so a session-aware router behind one URL (vLLM production-stack, Ray Serve, SGLang's "
        "router) keeps an agent on one replica; empty: none sent",
    )
    routing: Literal["affinity", "least-loaded"] = Field(
        default="affinity",
        description="with several endpoints: an agent's next turn goes to the endpoint that holds its history "
        "(affinity), unless that is affinity_factor times busier than the least loaded; or always to the "
        "least loaded",
    )
    affinity_factor: float = Field(
        default=2.0,
        ge=1.0,
        description="how much busier (requests in flight over its limit, this one included) an endpoint holding "
        "a conversation may be than the least loaded and still take its next turn",
    )
    cooldown_s: float = Field(
        default=30.0,
        ge=0,
        description="with several endpoints: how long one that fails (connection, timeout, 5xx) is out of "
        "rotation; doubled on each further failure up to 10 times this (0: never taken out)",
    )
    max_reply_bytes: int = Field(
        default=8 * 2**20, gt=0, description="the largest reply read (default 8 MiB); a larger one is a failed call"
    )
    batch: bool = Field(
        default=False,
        description="send each round of every question in flight as provider batches (the Batch API: half "
        "the price, replies within 24 h) instead of live calls (--batch turns it on for a run)",
    )
    batch_poll_s: float = Field(default=30.0, gt=0, description="with batch: how often a pending batch is polled")
    batch_deadline_s: float = Field(
        default=25 * 3600.0,
        gt=0,
        description="with batch: a batch not ended this long after it was sent is cancelled, and its "
        "requests are question errors (--retry-errors sends them again)",
    )

    @model_validator(mode="before")
    @classmethod
    def _no_determinism_promised(cls, data: Any) -> Any:
        """``deterministic`` is refused by name: a server moot does not run batches requests as it likes."""
        if isinstance(data, dict) and data.get("deterministic"):
            raise PydanticCustomError(
                "not_deterministic",
                "deterministic: an openai backend's server batches requests as it is set up to, so moot cannot "
                "promise that a rerun gives the same replies; use the local backend with deterministic = true",
            )
        return data

    @field_validator("base_url", mode="before")
    @classmethod
    def _one_or_several(cls, value: Any) -> Any:
        """A list of URLs as a tuple; a list of one as that URL; an empty or repeating list is refused."""
        if not isinstance(value, list | tuple):
            return value
        if not value:
            raise ValueError("an empty list of URLs: give one URL, or the URLs of the endpoints")
        if any(not isinstance(url, str) or not url.strip() for url in value):
            raise ValueError("every URL of the list must be a non-empty string")
        repeated = next((url for i, url in enumerate(value) if url in value[:i]), None)
        if repeated is not None:
            raise ValueError(f"the list names {redact(repeated)} twice")
        return value[0] if len(value) == 1 else tuple(value)

    @field_serializer("base_url", when_used="json")
    def _redacted_url(self, base_url: str | tuple[str, ...] | None) -> str | list[str] | None:
        """Stored (and fingerprinted) without the credentials it may carry (user:password@, ?api-key=)."""
        if isinstance(base_url, tuple):
            return [redact(url) for url in base_url]
        return None if base_url is None else redact(base_url)

    @property
    def base_urls(self) -> tuple[str, ...]:
        """Every endpoint's URL, in the order given (none when no URL is given)."""
        if isinstance(self.base_url, tuple):
            return self.base_url
        return () if self.base_url is None else (self.base_url,)

    def build(self) -> Backend:
        from moot.backends.openai_api import OpenAIBackend

        return OpenAIBackend(self)

    def model_name(self) -> str:
        return self.model or "server-default"

    def describe(self) -> str:
        return f"{self.model_name()} at {', '.join(redact(url) for url in self.base_urls) or None}"
