"""How to reach a model: one frozen config per backend kind, a registry of the kinds, and ``BackendConfig``,
the type of a field that holds any registered kind's config.

A backend kind is a ``BackendSettings`` subclass with ``kind: Literal["name"] = "name"``, its options,
``build`` and ``model_name``, made known by ``@register_backend``. A config validates from a TOML or JSON
table: ``kind`` picks the registered class (a table without it is a local backend's, as files written
before backends had kinds of their own are), and a field typed ``BackendConfig`` dumps that class's own
options. The registry is its own, not a family of the debate components' (moot.debate.registry): a
backend config is no ``Component`` (it is built into a ``Backend`` once per distinct config, a table
without ``kind`` has a default, and its options were once shared by every kind), but it works the same
way: built-in kinds register where they are defined, a plug-in's kind registers from its own file
(``load_plugin``, an experiment's ``plugins``, ``moot --plugin``) or from an installed package's
``moot.backends`` entry point (loaded on the first lookup, ``backend_kinds``), and a stored run whose
kind is not loaded reads back as an ``UnregisteredBackend`` record (enough to report on, not to run).

Runs stored before this split dumped every option of every kind: an option of another kind that holds its
default is dropped, any other is an error naming the key. Configs are hashable (one backend is
built per distinct config) and hold no secret (an API key is read from ``api_key_env``); a base URL's
credentials, if any, are redacted from its JSON dump (what a store keeps) and from ``describe``.

Adding a backend kind: its module (the backend itself) and its config class, decorated with
``@register_backend``; nothing else lists the kinds (``moot run --backend``, ``moot backends`` and
experiment files read the registry).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from moot.errors import ConfigError
from moot.models import DEFAULT_MODEL
from moot.plugins import same_definition
from moot.redact import redact

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


BACKEND_KINDS: dict[str, type[BackendSettings]] = {}  # by kind, in registration order (built-ins first)
_B = TypeVar("_B", bound=type[BackendSettings])


def register_backend(cls: _B) -> _B:
    """Class decorator: make a backend kind known by its ``kind`` default (a kind registered again by
    another class is an error; the same class again, e.g. a plug-in file loaded twice, replaces it)."""
    kind = cls.__pydantic_fields__["kind"].default
    if not isinstance(kind, str) or not kind.strip() or kind != kind.strip():
        raise ConfigError(f"{cls.__name__} needs a default kind, e.g. kind: Literal['mine'] = 'mine'")
    known = BACKEND_KINDS.get(kind)
    # the same class (its module run again, or a copy of its file) replaces itself; another, even of the same name
    # in another plug-in file, is refused: it would silently replace the backend every run of that kind means
    if known is not None and not same_definition(known, cls):
        raise ConfigError(
            f"backend kind {kind!r} is already registered by {known.__module__}.{known.__qualname__}; "
            f"{cls.__module__}.{cls.__qualname__} cannot register it too"
        )
    BACKEND_KINDS[kind] = cls
    return cls


def backend_kinds() -> dict[str, type[BackendSettings]]:
    """Every registered backend kind, by name; the first call loads installed plug-ins (entry points
    ``moot.backends``), so ``moot --help`` loads none."""
    from moot.plugins import load_backends

    load_backends()
    return BACKEND_KINDS


def settings(kind: type[BackendSettings]) -> dict[str, Any]:
    """A kind's options and their defaults (what ``moot backends`` lists)."""
    return {name: field.default for name, field in kind.model_fields.items() if name != "kind"}


def _gguf(name: str) -> tuple[Any, str]:
    """The path of a registered model or GGUF file, and its identity ``gguf:<sha256>``."""
    from moot.models import REGISTRY, resolve_model_path, sha256_of

    path = resolve_model_path(name)
    digest = REGISTRY[name].sha256 if name in REGISTRY else sha256_of(path)
    return path, f"gguf:{digest}"


@register_backend
class LocalBackendConfig(BackendSettings):
    """A GGUF model behind llama.cpp's server, started and stopped by moot (moot.backends.llama_server)."""

    summary: ClassVar[str] = "llama.cpp's server, started and stopped by moot (the default)"
    kind: Literal["local"] = "local"
    model: str | None = Field(
        default=None, description=f"a registered model name or a GGUF path (default {DEFAULT_MODEL})"
    )
    n_ctx: int = Field(default=8192, ge=256, description="context window in tokens, per slot")
    n_threads: int | None = Field(default=None, ge=1, description="threads (default: all cores)")
    slots: int | None = Field(
        default=None,
        ge=1,
        description="parallel slots (default: the agents of 2 questions, so 2 questions run at once)",
    )
    port: int | None = Field(default=None, ge=1, le=65535, description="port on 127.0.0.1 (default: a free one)")
    speculative: Literal["none", "ngram"] = Field(
        default="none",
        description='speculative decoding: "ngram" drafts from n-grams already in the conversation (debaters '
        "quote each other) and the model verifies them; it changes speed, never what is sampled",
    )
    timeout_s: float = Field(
        default=600.0,
        gt=0,
        description="the most one attempt may take, from the request to its reply's last byte (raise it for long "
        "replies on a slow or busy machine: an attempt cut off is retried from the start)",
    )
    deterministic: bool = Field(
        default=False,
        description="one slot and fixed batch sizes, so that a rerun without the store gives the same replies "
        "(parallel slots batch requests together, which changes a seeded reply now and then); slower: one "
        "request at a time",
    )

    @model_validator(mode="after")
    def _one_slot_when_deterministic(self) -> LocalBackendConfig:
        if self.deterministic and self.slots not in (None, 1):
            raise ValueError(f"deterministic = true runs one slot: leave slots out (it is {self.slots})")
        return self

    def build(self) -> Backend:
        import os

        from moot.backends.llama_server import LlamaServerBackend, ManagedServer, speculation_args

        path, model_id = _gguf(self.model_name())
        server = ManagedServer(
            path,
            slots=1 if self.deterministic else self.slots or 0,  # 0: sized by the runner (LlamaServerBackend.plan)
            n_ctx=self.n_ctx,
            n_threads=self.n_threads or os.cpu_count() or 1,
            port=self.port,
            extra_args=speculation_args(self.speculative),
            deterministic=self.deterministic,
        )
        return LlamaServerBackend(server, model_id=model_id, timeout_s=self.timeout_s)

    def model_name(self) -> str:
        return self.model or DEFAULT_MODEL


@register_backend
class VLLMBackendConfig(BackendSettings):
    """A model behind vLLM's OpenAI server, started and stopped by moot as the local backend's llama-server is
    (moot.backends.vllm_server): GPU users' engine; here the CPU build (``make setup-vllm``) runs it."""

    summary: ClassVar[str] = "vLLM's OpenAI server, started and stopped by moot"
    kind: Literal["vllm"] = "vllm"
    model: str | None = Field(
        default=None,
        description="a registered model or GGUF file (converted once to a Hugging Face folder in the model cache), "
        f"a Hugging Face model folder or hub id (default {DEFAULT_MODEL})",
    )
    python: str | None = Field(
        default=None,
        description="the Python whose environment has vLLM, e.g. .venv-vllm/bin/python (default: $MOOT_VLLM_PYTHON, "
        "else moot's own)",
    )
    n_ctx: int = Field(default=8192, ge=256, description="context window in tokens (vLLM's --max-model-len)")
    slots: int | None = Field(
        default=None,
        ge=1,
        description="sequences batched at once (vLLM's --max-num-seqs; default: the agents of 2 questions)",
    )
    port: int | None = Field(default=None, ge=1, le=65535, description="port on 127.0.0.1 (default: a free one)")
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
        default="auto", description="the weights' dtype in vLLM (--dtype)"
    )
    tensor_parallel_size: int = Field(default=1, ge=1, description="GPUs one model is split over")
    gpu_memory_utilization: float = Field(
        default=0.9, gt=0, le=1, description="share of each GPU's memory vLLM may take (weights and KV cache)"
    )
    cpu_kv_cache_gib: float | None = Field(
        default=None, gt=0, description="the CPU build's KV cache in GiB (VLLM_CPU_KVCACHE_SPACE; default vLLM's)"
    )
    n_threads: int | None = Field(default=None, ge=1, description="the CPU build's threads (OMP_NUM_THREADS)")
    extra_args: tuple[str, ...] = Field(default=(), description='more options of vllm serve, e.g. ["--enforce-eager"]')
    timeout_s: float = Field(default=600.0, gt=0, description="the most one attempt at a reply may take")
    start_timeout_s: float = Field(
        default=900.0, gt=0, description="the most the server may take to start (a first start compiles)"
    )

    def build(self) -> Backend:
        from moot.backends.vllm_server import VLLMBackend, VLLMServer
        from moot.hf import resolve_source

        server = VLLMServer(
            self.model_name(),
            python=self.python,
            slots=self.slots or 0,  # 0: sized by the runner (ManagedBackend.plan)
            n_ctx=self.n_ctx,
            dtype=self.dtype,
            tensor_parallel_size=self.tensor_parallel_size,
            gpu_memory_utilization=self.gpu_memory_utilization,
            cpu_kv_cache_gib=self.cpu_kv_cache_gib,
            n_threads=self.n_threads,
            port=self.port,
            extra_args=self.extra_args,
            start_timeout_s=self.start_timeout_s,
        )
        return VLLMBackend(server, model_id=resolve_source(self.model_name()).identity, timeout_s=self.timeout_s)

    def model_name(self) -> str:
        return self.model or DEFAULT_MODEL


@register_backend
class LlamaCppBackendConfig(BackendSettings):
    """llama.cpp in-process through llama-cpp-python, one call at a time (moot.backends.local): slower than
    the server, but a seeded sample at temperature > 0 reproduces exactly, whatever else runs."""

    summary: ClassVar[str] = "llama.cpp in-process (llama-cpp-python), one call at a time"
    kind: Literal["llama-cpp"] = "llama-cpp"
    model: str | None = Field(
        default=None, description=f"a registered model name or a GGUF path (default {DEFAULT_MODEL})"
    )
    n_ctx: int = Field(default=8192, ge=256, description="context window in tokens")
    n_threads: int | None = Field(default=None, ge=1, description="threads (default: all cores)")

    def build(self) -> Backend:
        from moot.backends.local import LocalBackend

        path, model_id = _gguf(self.model_name())
        return LocalBackend(path, model_id=model_id, n_ctx=self.n_ctx, n_threads=self.n_threads)

    def model_name(self) -> str:
        return self.model or DEFAULT_MODEL


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


@register_backend
class HFBackendConfig(BackendSettings):
    """A causal LM through transformers in-process, with an optional peft (LoRA) adapter (moot.backends.hf):
    how moot debates with a model trained by `moot train`. One call at a time; needs ``moot[hf]``."""

    summary: ClassVar[str] = "transformers in-process, with an optional peft adapter"
    kind: Literal["hf"] = "hf"
    model: str | None = Field(
        default=None,
        description="a registered model name or GGUF file (dequantised), a Hugging Face model folder or hub id "
        f"(default {DEFAULT_MODEL})",
    )
    adapter: str | None = Field(default=None, description="a peft adapter folder (e.g. `moot train`'s adapter)")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        default="auto", description="weights' dtype (auto: float32 on CPU, bfloat16 on a GPU that has it)"
    )
    device: str | None = Field(default=None, description="torch device, e.g. cpu or cuda:0 (default: cuda if any)")
    n_threads: int | None = Field(default=None, ge=1, description="CPU threads of torch (default: torch's)")

    @field_validator("adapter")
    @classmethod
    def _adapter_named(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("an empty adapter path: give the adapter's folder, or leave adapter out")
        return value

    def build(self) -> Backend:
        from pathlib import Path

        from moot.backends.hf import HFBackend
        from moot.hf import check_adapter, model_identity, require_libraries, resolve_source

        require_libraries("torch", "transformers", *(("peft",) if self.adapter else ()))
        adapter = None if self.adapter is None else check_adapter(self.adapter)
        source = resolve_source(self.model_name())
        return HFBackend(
            self.model_name(),
            model_id=model_identity(source, adapter),
            adapter=None if adapter is None else Path(adapter),
            dtype=self.dtype,
            device=self.device,
            n_threads=self.n_threads,
        )

    def model_name(self) -> str:
        return self.model or DEFAULT_MODEL

    def describe(self) -> str:
        return self.model_name() + (f" + adapter {self.adapter}" if self.adapter else "")


@register_backend
class ScriptedBackendConfig(BackendSettings):
    """Scripted replies, for tests and benchmarks of the runner (moot.backends.scripted)."""

    summary: ClassVar[str] = "scripted replies, for tests (no model)"
    kind: Literal["scripted"] = "scripted"
    model: str | None = Field(default=None, description="a scripted model (default: numbers)")
    delay_s: float = Field(default=0.0, ge=0, description="seconds each reply takes")

    def build(self) -> Backend:
        from moot.backends.scripted import ScriptedBackend, scripted_models

        name = self.model or "numbers"
        known = scripted_models()
        responder = known.get(name)
        if responder is None:
            raise ConfigError(f"unknown scripted model {self.model!r}; known: {', '.join(known)}")
        return ScriptedBackend(responder, model=f"scripted:{name}", delay_s=self.delay_s, record=False)

    def model_name(self) -> str:
        return self.model or "server-default"


class UnregisteredBackend(BackendSettings):
    """A backend read from a stored run whose kind is not registered (its plug-in is not loaded): its kind
    and options as stored, so the run still reports and keeps its fingerprint; building it is an error."""

    model_config = ConfigDict(frozen=True, extra="allow")

    def build(self) -> Backend:
        raise ConfigError(
            f"backend kind {self.kind!r} is not registered: load the plug-in that defines it "
            f"(installed, or named in plugins = [...] or moot --plugin); kinds: {', '.join(backend_kinds())}"
        )

    def model_name(self) -> str:
        return self.model or self.kind


def _by_kind(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    """A table validates as the config of its registered ``kind`` (default local), with errors located at
    its keys; in a stored run (context ``STORED``) an unknown kind is kept as an ``UnregisteredBackend``."""
    if not isinstance(value, dict):
        return handler(value)
    kind = value.get("kind", DEFAULT_KIND)
    kinds = backend_kinds()
    if kind not in kinds and isinstance(kind, str) and (info.context or {}).get("stored"):
        return UnregisteredBackend.model_validate(value)
    if kind not in kinds:
        context = {"kind": kind, "kinds": ", ".join(kinds)}
        raise PydanticCustomError("backend_kind", "unknown backend kind {kind}; kinds: {kinds}", context)
    return kinds[kind].model_validate(value)


# A field holding any registered kind's config: parsed by ``kind`` through the registry, dumped as its own class.
BackendConfig = Annotated[SerializeAsAny[BackendSettings], WrapValidator(_by_kind)]

_ADAPTER: TypeAdapter[BackendConfig] = TypeAdapter(BackendConfig)


def parse_backend(**options: Any) -> BackendConfig:
    """The config these options describe (``kind`` picks the registered class; default local)."""
    return _ADAPTER.validate_python(options)


def default_backend() -> BackendConfig:
    """The backend of an agent that names none: the default local model."""
    return LocalBackendConfig()
