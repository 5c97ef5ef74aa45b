"""How to reach a model: one frozen config per backend kind, a registry of the kinds, and ``BackendConfig``,
the type of a field that holds any registered kind's config.

A backend kind is a ``BackendSettings`` subclass with ``kind: Literal["name"] = "name"``, its options,
``build`` and ``model_name``, made known by ``@register_backend``. A config validates from a TOML or JSON
table: ``kind`` picks the registered class (a table without it is a local backend's, as files written
before backends had kinds of their own are), and a field typed ``BackendConfig`` dumps that class's own
options. The kinds live in ``BACKEND_KINDS``, an instance of moot's one registry type (moot.registry), as
tasks and component rules do: built-in kinds register where they are defined, a plug-in's kind registers
from its own file (``load_plugin``, an experiment's ``plugins``, ``moot --plugin``) or from an installed
package's ``moot.backends`` entry point (loaded on the first read), and a stored run whose kind is not
loaded reads back as an ``UnregisteredBackend`` record (enough to report on, not to run).

Runs stored before this split dumped every option of every kind: an option of another kind that holds its
default is dropped, any other is an error naming the key. Configs are hashable (one backend is
built per distinct config) and hold no secret (an API key is read from ``api_key_env``); a base URL's
credentials, if any, are redacted from its JSON dump (what a store keeps) and from ``describe``.

Adding a backend kind: its module (the backend itself) and its config class, decorated with
``@register_backend``; nothing else lists the kinds (``moot run --backend``, ``moot backends`` and
experiment files read the registry).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    ConfigDict,
    Field,
    SerializeAsAny,
    TypeAdapter,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from moot.backends.settings import BACKEND_KINDS as BACKEND_KINDS
from moot.backends.settings import DEFAULT_KIND as DEFAULT_KIND
from moot.backends.settings import LATER_OPTIONS as LATER_OPTIONS
from moot.backends.settings import LATER_OPTIONS_OF as LATER_OPTIONS_OF
from moot.backends.settings import BackendSettings as BackendSettings
from moot.backends.settings import backend_kinds as backend_kinds
from moot.backends.settings import register_backend as register_backend
from moot.backends.settings import settings as settings
from moot.errors import ConfigError
from moot.models import DEFAULT_MODEL

if TYPE_CHECKING:
    from moot.backends.base import Backend


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
    gguf_model: ClassVar[bool] = True
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
    gguf_model: ClassVar[bool] = True
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


# the openai kind's config is defined beside its backend (moot.backends.openai_config); imported here, so that the
# built-in kinds register in this order: local, vllm, llama-cpp, openai, hf, scripted
from moot.backends.openai_config import OpenAIBackendConfig as OpenAIBackendConfig  # noqa: E402


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
