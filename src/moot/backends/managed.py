"""A model server that moot starts, health-checks and stops as a child process, and the backend that talks
to it through the openai backend: what the ``local`` backend (llama-server, moot.backends.llama_server) and
the ``vllm`` backend (vLLM's OpenAI server, moot.backends.vllm_server) share.

A server binds 127.0.0.1 only, on a free port unless one is given (a port taken between choosing and
binding is chosen again, twice). Its output goes to a temporary log whose error lines make the one-line
message of a failed start; it gets SIGTERM when moot's process ends, however that ends (Linux), and it is
stopped (SIGTERM, then SIGKILL after 15 s) when the run closes its backend.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, ClassVar

from moot.backends.base import GenerationRequest, Reply, Sample
from moot.backends.engine_record import EngineRecord
from moot.backends.openai_api import OpenAIBackend
from moot.backends.openai_config import OpenAIBackendConfig
from moot.errors import BackendError, ConfigError

ALIAS = "moot-local"  # the model's name on a server moot runs
# Questions whose requests a server sized by moot serves at once: slots = agents x this (measured with
# benchmarks/engine.py on 2 cores).
QUESTIONS_IN_FLIGHT = 2
PORT_IN_USE = re.compile(r"couldn't bind|address already in use|failed to bind", re.IGNORECASE)


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_in_use(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the server gets SIGTERM when moot's process ends, however it ends."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def terminate(proc: subprocess.Popen[bytes]) -> None:
    """End a process this one started: SIGTERM, then SIGKILL if it has not ended within 15 s."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def healthy(port: int) -> bool:
    """The server on ``port`` answers /health with 200 (llama-server answers 503 while the model loads; vLLM
    answers nothing until its engine is up)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


class PortTaken(Exception):
    """The server exited because its port was taken between choosing it and binding it."""


# llama-server's "0.01.234.567 E name: " and vLLM's "(EngineCore pid=12) ERROR 12-07 09:56:45 [file.py:12] "
_LOG_PREFIX = re.compile(
    r"^(?:\d+\.\d+\.\d+\.\d+ (?P<level>[A-Z]) \w+\s+(?:\w+: )?"
    r"|(?:\(\w+ pid=\d+\) )?(?P<vlevel>DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d [\d:]+ \[[^\]]*\] )"
)


def server_reason(log: str) -> str:
    """The lines of a server log that say why it stopped (its error lines, else its last lines), on one
    line without their timestamps and sources."""
    lines = []
    for raw in log.splitlines():
        match = _LOG_PREFIX.match(raw.strip())
        text = raw.strip()[match.end() :] if match else raw.strip()
        level = (match["level"] or (match["vlevel"] or "")[:1]) if match else ""
        if text:
            lines.append((level, text))
    errors = [t for level, t in lines if level == "E" or re.search(r"error|failed|invalid|unable|cannot", t, re.I)]
    shown = list(dict.fromkeys(errors or [t for _, t in lines]))[-3:]
    return "; ".join(shown) or "it exited without a message"


class ServerProcess:
    """One server process: started, health-checked, asked what it is, stopped. A subclass gives ``engine``
    (its name in messages), ``command``, and optionally ``environment``, ``check_startable`` (what must
    hold before it starts) and ``start_failure`` (a message for a failure its log shows)."""

    engine: ClassVar[str] = "server"

    def __init__(self, *, slots: int, port: int | None, start_timeout_s: float):
        self.slots = slots
        self.requested_port = port
        self.start_timeout_s = start_timeout_s
        self.port: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None

    def command(self, port: int) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str] | None:
        """The child's environment (None: moot's own)."""
        return None

    def check_startable(self) -> None:
        """A ConfigError for what stops the server before it is started (a missing model file); run in a
        worker thread, so it may take its time (a model converted once)."""

    def start_failure(self, log: str) -> BackendError | None:
        """A clearer error for a failed start that ``log`` explains; None: the log's error lines."""
        return None

    def record(self) -> EngineRecord:
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the server has not started")
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> None:
        """Start the server and wait until it answers /health; one BackendError or ConfigError says why not."""
        if self.proc is not None and self.proc.poll() is None:
            return
        await asyncio.to_thread(self.check_startable)
        if self.requested_port is not None and port_in_use(self.requested_port):
            raise ConfigError(f"port {self.requested_port} on 127.0.0.1 is in use; choose another (or none)")
        for attempt in range(3):
            port = self.requested_port or free_port()
            try:
                await self._launch(port)
                return
            except PortTaken:
                if self.requested_port is not None or attempt == 2:
                    raise BackendError(f"{self.engine} could not bind 127.0.0.1:{port}: the port is in use") from None

    async def _launch(self, port: int) -> None:
        handle, name = tempfile.mkstemp(prefix=f"moot-{self.engine}-", suffix=".log")
        self.log_path = Path(name)
        with os.fdopen(handle, "wb") as log:
            self.proc = subprocess.Popen(
                self.command(port),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.environment(),
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            if self.proc.poll() is not None:
                tail = self.log_tail()
                self.proc = None
                if PORT_IN_USE.search(tail):
                    raise PortTaken
                raise self.start_failure(tail) or BackendError(f"{self.engine} could not start: {server_reason(tail)}")
            if await asyncio.to_thread(healthy, port):
                self.port = port
                return
            if time.monotonic() > deadline:
                self.stop()
                raise BackendError(f"{self.engine} did not become healthy within {self.start_timeout_s:.0f} s")
            await asyncio.sleep(0.1)

    def exited(self) -> int | None:
        """The exit code if the server has died, else None."""
        return None if self.proc is None else self.proc.poll()

    def log_tail(self, limit: int = 4000) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_bytes()[-limit:].decode("utf-8", "replace")

    def stop(self) -> None:
        """Terminate the server (killed if it has not ended within 15 s) and remove its log."""
        proc, self.proc = self.proc, None
        if proc is not None:
            terminate(proc)
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None


class ManagedBackend(OpenAIBackend):
    """A model behind a ``ServerProcess`` that this backend starts in ``check`` (or its first request) and
    stops in ``aclose``, reached through the openai backend. Unless the config gives its slots, the server
    is sized by the runner before it starts (``plan``: the agents of ``QUESTIONS_IN_FLIGHT`` questions),
    and never above the run's ``max_concurrency`` (``cap_concurrency``)."""

    name = "managed"

    def __init__(self, server: ServerProcess, *, model_id: str, timeout_s: float = 600.0):
        self.server = server
        self._managed_id = model_id
        self._timeout_s = timeout_s
        self._started = False
        self._start_lock = asyncio.Lock()
        self._cap: int | None = None  # the run's max_concurrency: slots at most
        self._batcher = None  # never: a managed server has no batch API (``use_batches`` refuses)

    @property
    def model_id(self) -> str:
        return self._managed_id

    @property
    def parallel(self) -> int:
        return self.server.slots

    async def engine_record(self) -> EngineRecord:
        """What serves the model, and how (moot.backends.engine_record)."""
        return await asyncio.to_thread(self.server.record)

    def plan(self, width: int) -> None:
        """Size the server before it starts: ``width`` requests of one question come at once."""
        if not self._started and self.server.slots <= 0:
            self.server.slots = width * QUESTIONS_IN_FLIGHT
        self._limit_slots()

    def use_batches(self) -> None:
        raise ConfigError(f"the {self.name} backend's server has no batch API: batch mode needs an openai backend")

    def cap_concurrency(self, limit: int) -> None:
        """At most ``limit`` slots (the run's ``max_concurrency``), however the server would be sized."""
        self._cap = limit
        self._limit_slots()

    def _limit_slots(self) -> None:
        if not self._started:
            if self._cap is not None and self.server.slots > self._cap:
                self.server.slots = self._cap
            self._resized()

    def _resized(self) -> None:
        """The server's slots were set (before it starts)."""

    async def check(self) -> None:
        await self._ensure_started()

    async def _ensure_started(self) -> None:
        async with self._start_lock:
            if self._started:
                return
            if self.server.slots <= 0:
                self.plan(1)
            await self.server.start()
            config = OpenAIBackendConfig(
                base_url=self.server.base_url,
                model=ALIAS,
                max_concurrency=self.server.slots,
                timeout_s=self._timeout_s,
                max_retries=2,
            )
            super().__init__(config)
            self._resized()
            self._started = True

    async def generate(self, request: GenerationRequest) -> Reply:
        await self._ensure_started()
        return await super().generate(request)

    async def _sample(
        self,
        model: str,
        request: GenerationRequest,
        index: int,
        extra: dict[str, Any] | None = None,
        record: dict[str, Any] | None = None,
    ) -> Sample:
        """One sample from the server; a server that has died is named with its log's reason."""
        engine = self.server.engine
        if (code := self.server.exited()) is not None:
            raise BackendError(f"{engine} exited with code {code}: {server_reason(self.server.log_tail())}")
        try:
            return await super()._sample(model, request, index, extra, record)
        except BackendError as exc:
            if (code := self.server.exited()) is not None:
                reason = server_reason(self.server.log_tail())
                raise BackendError(f"{engine} exited with code {code} during the run: {reason}") from exc
            raise

    async def aclose(self) -> None:
        if self._started:
            await super().aclose()
        self.server.stop()
