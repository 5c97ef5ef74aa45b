"""Build a backend from its config."""

from __future__ import annotations

from moot.backends.base import Backend
from moot.backends.config import BackendConfig


def make_backend(config: BackendConfig) -> Backend:
    """A ready backend for ``config`` (models are resolved and verified here, before any call)."""
    return config.build()
