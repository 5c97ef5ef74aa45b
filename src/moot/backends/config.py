"""How to reach a model: one frozen config per backend kind, and ``BackendConfig``, their union on ``kind``.

A config validates from a TOML or JSON table. ``kind`` picks the variant; a table without it is a
local backend's (files written before backends had kinds of their own still load). Runs stored
before this split dumped every option of every kind: an option of another kind that holds its
default is dropped, any other is an error naming the key. Configs are hashable (one backend is
built per distinct config) and hold no secret (an API key is read from ``api_key_env``); a base URL's
credentials, if any, are redacted from its JSON dump (what a store keeps) and from ``describe``.

Adding a backend kind: its module (the backend itself) and its config class here, with ``build``,
listed in ``BACKEND_KINDS`` and ``BackendConfig``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_serializer,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from moot.errors import ConfigError
from moot.models import DEFAULT_MODEL
from moot.redact import redact

if TYPE_CHECKING:
    from moot.backends.base import Backend

DEFAULT_KIND = "local"


class BackendSettings(BaseModel):
    """What every backend config has. Subclasses give ``kind`` (a one-value Literal with that value as
    default), their own options, ``build`` and ``model_name``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    model: str | None = None
    logprobs: bool = Field(
        default=True, description="the backend returns log-probabilities (set false for servers that cannot)"
    )

    @model_validator(mode="before")
    @classmethod
    def _own_options(cls, data: Any) -> Any:
        """Record ``kind`` as given (so a dump of the set fields keeps it), drop options of other kinds
        that hold their default (old dumps carry them all), and refuse the others by name."""
        if not isinstance(data, dict):
            return data
        kind = cls.model_fields["kind"].default
        kept: dict[str, Any] = {"kind": kind}
        errors: list[InitErrorDetails] = []
        for key, value in data.items():
            owners = [] if key in cls.model_fields else [c for c in BACKEND_KINDS.values() if key in c.model_fields]
            if not owners:  # an own option, or unknown to every kind (then refused as an unknown key)
                kept[key] = value
            elif all(value != c.model_fields[key].default for c in owners):
                kinds = " or ".join(c.model_fields["kind"].default for c in owners)
                message = "an option of the {owner} backend, not of the {kind} one"
                error = PydanticCustomError("backend_option", message, {"owner": kinds, "kind": kind})
                errors.append(InitErrorDetails(type=error, loc=(key,), input=value))
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return kept

    def build(self) -> Backend:
        """A ready backend (models are resolved and verified here, before any call)."""
        raise NotImplementedError

    def model_name(self) -> str:
        """The configured name of the model (what prices are keyed by)."""
        raise NotImplementedError

    def describe(self) -> str:
        """The model, and where it is served when that is not here."""
        return self.model_name()


class LocalBackendConfig(BackendSettings):
    """llama.cpp in-process with a GGUF model (moot.backends.local)."""

    kind: Literal["local"] = "local"
    model: str | None = Field(
        default=None, description=f"a registered model name or a GGUF path (default {DEFAULT_MODEL})"
    )
    n_ctx: int = Field(default=8192, ge=256, description="context window in tokens")
    n_threads: int | None = Field(default=None, ge=1, description="threads (default: all cores)")

    def build(self) -> Backend:
        from moot.backends.local import LocalBackend
        from moot.models import REGISTRY, resolve_model_path, sha256_of

        name = self.model_name()
        path = resolve_model_path(name)
        digest = REGISTRY[name].sha256 if name in REGISTRY else sha256_of(path)
        return LocalBackend(path, model_id=f"gguf:{digest}", n_ctx=self.n_ctx, n_threads=self.n_threads)

    def model_name(self) -> str:
        return self.model or DEFAULT_MODEL


class OpenAIBackendConfig(BackendSettings):
    """Any OpenAI-compatible server (moot.backends.openai_api)."""

    kind: Literal["openai"] = "openai"
    model: str | None = Field(default=None, description="the served model name (default: the server's only model)")
    base_url: str | None = Field(default=None, description="the server's /v1 URL")
    api_key_env: str = Field(default="OPENAI_API_KEY", description="variable holding the key")
    timeout_s: float = Field(default=600.0, gt=0, description="per-request timeout")
    max_retries: int = Field(default=2, ge=0, description="retries on transient errors")
    max_concurrency: int = Field(default=8, ge=1, description="requests in flight at once")
    requests_per_minute: float | None = Field(default=None, gt=0, description="start at most this many")

    @field_serializer("base_url", when_used="json")
    def _redacted_url(self, base_url: str | None) -> str | None:
        """Stored (and fingerprinted) without the credentials it may carry (user:password@, ?api-key=)."""
        return None if base_url is None else redact(base_url)

    def build(self) -> Backend:
        from moot.backends.openai_api import OpenAIBackend

        return OpenAIBackend(self)

    def model_name(self) -> str:
        return self.model or "server-default"

    def describe(self) -> str:
        return f"{self.model_name()} at {redact(str(self.base_url))}"


class ScriptedBackendConfig(BackendSettings):
    """Scripted replies, for tests and benchmarks of the runner (moot.backends.scripted)."""

    kind: Literal["scripted"] = "scripted"
    model: str | None = Field(default=None, description="a scripted model (default: numbers)")
    delay_s: float = Field(default=0.0, ge=0, description="seconds each reply takes")

    def build(self) -> Backend:
        from moot.backends.scripted import SCRIPTED_MODELS, ScriptedBackend

        name = self.model or "numbers"
        responder = SCRIPTED_MODELS.get(name)
        if responder is None:
            raise ConfigError(f"unknown scripted model {self.model!r}; known: {', '.join(SCRIPTED_MODELS)}")
        return ScriptedBackend(responder, model=f"scripted:{name}", delay_s=self.delay_s, record=False)

    def model_name(self) -> str:
        return self.model or "server-default"


BACKEND_KINDS: dict[str, type[BackendSettings]] = {
    "local": LocalBackendConfig,
    "openai": OpenAIBackendConfig,
    "scripted": ScriptedBackendConfig,
}


def _by_kind(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A table validates as the config of its ``kind`` (default local), with errors located at its keys."""
    if not isinstance(value, dict):
        return handler(value)
    kind = value.get("kind", DEFAULT_KIND)
    if kind not in BACKEND_KINDS:
        context = {"kind": kind, "kinds": ", ".join(BACKEND_KINDS)}
        raise PydanticCustomError("backend_kind", "unknown backend kind {kind}; kinds: {kinds}", context)
    return BACKEND_KINDS[kind].model_validate(value)


BackendConfig = Annotated[
    LocalBackendConfig | OpenAIBackendConfig | ScriptedBackendConfig,
    Field(discriminator="kind"),
    WrapValidator(_by_kind),
]

_ADAPTER: TypeAdapter[BackendConfig] = TypeAdapter(BackendConfig)


def parse_backend(**options: Any) -> BackendConfig:
    """The config these options describe (``kind`` picks the variant; default local)."""
    return _ADAPTER.validate_python(options)


def default_backend() -> BackendConfig:
    """The backend of an agent that names none: the default local model."""
    return LocalBackendConfig()
