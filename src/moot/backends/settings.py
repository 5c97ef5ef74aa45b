"""The base of every backend kind's config (``BackendSettings``) and the registry of kinds (``register_backend``,
``backend_kinds``): the bottom of moot.backends, which every kind's module imports to define and register its own
config where the backend is defined (the openai kind's in moot.backends.openai_config). moot.backends.config holds
the rest: the built-in kinds' configs, ``BackendConfig`` (a field holding any kind's config) and the defaults."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from moot.errors import ConfigError
from moot.plugins import load_backends
from moot.registry import Registry

if TYPE_CHECKING:
    from moot.backends.base import Backend

DEFAULT_KIND = "local"
# Options that runs stored before them do not have in their configs (see _without_new_defaults).
LATER_OPTIONS = frozenset(
    {
        "slots",
        "port",
        "speculative",
        "cooldown_s",
        "max_reply_bytes",
        "adaptive_concurrency",
        "tokens_per_minute",
        "routing",
        "affinity_factor",
        "batch",
        "batch_poll_s",
        "batch_deadline_s",
        "session_header",
        "deterministic",
    }
)
# Per kind: options that kind gained after its stores were first written, though another kind had them from the
# start (the openai kind's timeout_s is in every openai dump; a local dump has none before this option).
LATER_OPTIONS_OF: dict[str, frozenset[str]] = {"local": frozenset({"timeout_s"})}


class BackendSettings(BaseModel):
    """What every backend config has. Subclasses give ``kind`` (a one-value Literal with that value as
    default), their own options, ``build`` and ``model_name``, and a one-line ``summary`` (what
    ``moot backends`` shows); ``@register_backend`` makes them known."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    summary: ClassVar[str] = ""
    # its ``model`` is a registered model name or a GGUF file: `moot run --model` checks the name before building
    gguf_model: ClassVar[bool] = False
    kind: str
    model: str | None = None
    logprobs: bool = Field(
        default=True, description="the backend returns log-probabilities (set false for servers that cannot)"
    )

    @model_serializer(mode="wrap")
    def _without_new_defaults(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        """Options added after stores were first written (``LATER_OPTIONS``) are left out of a dump while
        they hold their default, so a stored run's fingerprint is what it was and the run resumes."""
        data = handler(self)
        if isinstance(data, dict):
            later = LATER_OPTIONS | LATER_OPTIONS_OF.get(self.kind, frozenset())
            for key in later & data.keys() & type(self).model_fields.keys():
                if getattr(self, key) == type(self).model_fields[key].default:
                    del data[key]
        return data

    @model_validator(mode="before")
    @classmethod
    def _own_options(cls, data: Any) -> Any:
        """Record ``kind`` as given (so a dump of the set fields keeps it), drop options of other kinds
        that hold their default (old dumps carry them all), and refuse the others by name."""
        if not isinstance(data, dict) or cls.model_fields["kind"].is_required():  # not a registered kind's class
            return data
        kind = cls.model_fields["kind"].default
        kept: dict[str, Any] = {"kind": kind}
        errors: list[InitErrorDetails] = []
        for key, value in data.items():  # the kinds registered so far (a table's kind was looked up: plug-ins are in)
            owners = [] if key in cls.model_fields else [c for c in BACKEND_KINDS.values() if key in c.model_fields]
            if not owners:  # an own option, or unknown to every kind (then refused as an unknown key)
                kept[key] = value
            elif all(value != c.model_fields[key].default for c in owners):
                owner = " or ".join(c.model_fields["kind"].default for c in owners)
                message = "an option of the {owner} backend, not of the {kind} one"
                error = PydanticCustomError("backend_option", message, {"owner": owner, "kind": kind})
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


# by kind, in registration order (built-ins first); reading it loads installed plug-ins first, so `moot --help` loads none
BACKEND_KINDS: Registry[type[BackendSettings]] = Registry("backend kind", load=load_backends)
_B = TypeVar("_B", bound=type[BackendSettings])


def register_backend(cls: _B) -> _B:
    """Class decorator: make a backend kind known by its ``kind`` default (a kind registered again by
    another class is an error; the same class again, e.g. a plug-in file loaded twice, replaces it)."""
    kind = cls.__pydantic_fields__["kind"].default
    if not isinstance(kind, str) or not kind.strip() or kind != kind.strip():
        raise ConfigError(f"{cls.__name__} needs a default kind, e.g. kind: Literal['mine'] = 'mine'")
    BACKEND_KINDS.register(kind, cls)
    return cls


def backend_kinds() -> Registry[type[BackendSettings]]:
    """Every registered backend kind, by name (installed plug-ins load on the first read)."""
    return BACKEND_KINDS


def settings(kind: type[BackendSettings]) -> dict[str, Any]:
    """A kind's options and their defaults (what ``moot backends`` lists)."""
    return {name: field.default for name, field in kind.model_fields.items() if name != "kind"}
