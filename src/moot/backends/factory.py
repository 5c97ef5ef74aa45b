"""Build a backend from its config."""

from __future__ import annotations

from moot.backends.base import Backend, BackendConfig
from moot.errors import ConfigError


def make_backend(config: BackendConfig) -> Backend:
    """A ready backend for ``config`` (models are resolved and verified here, before any call)."""
    if config.kind == "local":
        from moot.backends.local import LocalBackend
        from moot.models import DEFAULT_MODEL, REGISTRY, resolve_model_path, sha256_of

        name = config.model or DEFAULT_MODEL
        path = resolve_model_path(name)
        digest = REGISTRY[name].sha256 if name in REGISTRY else sha256_of(path)
        return LocalBackend(path, model_id=f"gguf:{digest}", n_ctx=config.n_ctx, n_threads=config.n_threads)
    if config.kind == "openai":
        from moot.backends.openai_api import OpenAIBackend

        return OpenAIBackend(config)
    raise ConfigError(f"backend kind {config.kind!r} cannot be built from a config (scripted is for tests)")
