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
    from moot.backends.scripted import SCRIPTED_MODELS, ScriptedBackend

    responder = SCRIPTED_MODELS.get(config.model or "numbers")
    if responder is None:
        raise ConfigError(f"unknown scripted model {config.model!r}; known: {', '.join(SCRIPTED_MODELS)}")
    return ScriptedBackend(responder, model=f"scripted:{config.model or 'numbers'}", delay_s=config.delay_s, record=False)
