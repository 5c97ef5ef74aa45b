"""Provider batch APIs (OpenAI's Files and Batches endpoints) for the ``openai`` backend's ``batch`` mode.

A batch costs half a live call on OpenAI's pricing and returns within its completion window (24 h). A
debate fits a batch when a round of every question in flight goes out together, so in batch mode the run
keeps every question in flight (the backend's ``parallel`` is a batch's size) and the ``Batcher`` collects
the requests that arrive together: each new request restarts a short gathering window (``GATHER_S``);
when it passes with no new request (every question has sent its round), the requests go out as one
batch, split at the provider's limits (``MAX_REQUESTS`` requests, ``MAX_BYTES`` of input file). So the
rounds go out in waves: round r of every question, then round r + 1 of those still running (an adaptive
protocol's stopped questions send nothing), a judge's or moderator's turn in a wave of its own.

Each request is one sample (n = 1, its own seed), its ``custom_id`` the hash of its body: the same request
has the same id in every process. The ledger (the run's store, ``RunStore.record_batch``) holds every
batch's id and its requests' ids before the first poll. A request whose id an open batch of the ledger
holds is not sent again: the batch is polled, so a run killed while its batches were pending and started
again waits for the same batches and pays no request twice. A batch is polled every ``poll_s``; once it
ends, its output and error files are read and each request's reply (a chat completion, read and
validated as a live reply is) or error resolves its caller. A batch that fails, expires or is cancelled,
or passes ``deadline_s`` (then moot cancels it), ends each of its requests without a reply as a failed
call: its question ends with status ``error``, and ``--retry-errors`` sends it in a new batch (the ledger
marks the old one closed). Identical requests in flight at once are sent once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from moot.errors import BackendError

# a batch's life, one line each: sent, polled again, ended (``moot run`` shows them)
logger = logging.getLogger(__name__)

GATHER_S = 1.0  # a wave is the requests that arrive with no pause this long between them
MAX_REQUESTS = 50_000  # OpenAI's limits per batch
MAX_BYTES = 190 * 2**20  # under OpenAI's 200 MB input file
ENDPOINT = "/v1/chat/completions"
ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
RETRIES = 3  # of each upload, batch creation, poll and download, by the SDK (backing off)
MAX_POLL_FAILURES = 10  # polls in a row that fail (the provider unreachable) before the batch's requests fail


class Ledger(Protocol):
    """Where batch ids are kept before polling (the run's store, ``moot.runner.store``)."""

    def record_batch(self, batch_id: str, model: str, custom_ids: Iterable[str]) -> None:
        """A batch just created, holding these requests."""
        ...

    def open_batch(self, custom_id: str) -> str | None:
        """The latest batch holding this request that has not failed it (it may have answered it)."""
        ...

    def batch_requests(self, batch_id: str) -> frozenset[str]: ...

    def close_batch(self, batch_id: str, status: str, failed: Iterable[str]) -> None:
        """A batch ended with ``status``; ``failed``: its requests it gave no reply (sent again if asked)."""
        ...


def custom_id(body: dict[str, Any]) -> str:
    """A request's id in a batch: the hash of its body, so the same request has the same id in any process."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "moot-" + hashlib.sha256(text.encode()).hexdigest()[:40]


@dataclass
class _Watch:
    """A batch being polled: the requests it holds."""

    batch_id: str
    ids: frozenset[str]
    task: asyncio.Task[None] | None = None
    started: float = field(default_factory=time.monotonic)


class Batcher:
    """Collects requests into provider batches, polls them, and gives each caller its reply body."""

    def __init__(
        self,
        client: Any,
        url: str,
        model: str,
        *,
        poll_s: float,
        deadline_s: float,
        window: str = "24h",
        max_requests: int = MAX_REQUESTS,
        max_bytes: int = MAX_BYTES,
    ):
        # openai.AsyncOpenAI; its own retries (a connection error, 408, 409, 429, 5xx) for the batch calls
        self._client = client.with_options(max_retries=RETRIES)
        self._url = url
        self._model = model
        self._poll_s = poll_s
        self._deadline_s = deadline_s
        self._window = window
        self.max_requests = max_requests
        self._max_bytes = max_bytes
        self.ledger: Ledger | None = None
        # by custom id: its callers' reply and the batch that gave it
        self._waiting: dict[str, asyncio.Future[tuple[dict[str, Any], str]]] = {}
        self._answered: dict[str, tuple[dict[str, Any], str]] = {}  # replies of ended batches not asked for yet
        self._gathered: dict[str, dict[str, Any]] = {}  # requests of the next batch, by custom id
        self._flush: asyncio.TimerHandle | None = None
        self._sending: set[asyncio.Task[None]] = set()  # held: the loop keeps only weak references to tasks
        self._watches: dict[str, _Watch] = {}

    async def submit(self, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The reply body (a chat completion) to ``body``, sent in a batch, and the batch's id; a BackendError
        if it has none."""
        key = custom_id(body)
        if key in self._answered:
            return self._answered.pop(key)
        future = self._waiting.get(key)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            self._waiting[key] = future
            open_batch = self.ledger.open_batch(key) if self.ledger is not None else None
            if open_batch is not None and self.ledger is not None:
                if open_batch not in self._watches:
                    logger.info("batch %s: sent by an earlier session; polling it again", open_batch)
                self._watch(open_batch, self.ledger.batch_requests(open_batch))
            else:
                self._gathered[key] = body
                self._restart_window()
        return await asyncio.shield(future)

    def _restart_window(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
        loop = asyncio.get_running_loop()
        self._flush = loop.call_later(GATHER_S, self._start_sending)

    def _start_sending(self) -> None:
        task = asyncio.get_running_loop().create_task(self._send_gathered())
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send_gathered(self) -> None:
        self._flush = None
        gathered, self._gathered = self._gathered, {}
        for chunk in self._chunks(gathered):
            try:
                batch_id = await self._create(chunk)
            except BackendError as exc:
                self._fail(chunk, str(exc))
                continue
            except Exception as exc:  # anything else the SDK or its HTTP client raises: its callers must not hang
                self._fail(chunk, f"{self._url} could not take a batch of {len(chunk)} requests: {_what(exc)}")
                continue
            logger.info(
                "batch %s: %d requests sent to %s; polling every %g s", batch_id, len(chunk), self._url, self._poll_s
            )
            self._watch(batch_id, frozenset(chunk))

    def _chunks(self, gathered: dict[str, dict[str, Any]]) -> list[dict[str, bytes]]:
        """The gathered requests as batch input lines, split at the provider's limits."""
        chunks: list[dict[str, bytes]] = [{}]
        size = 0
        for key, body in gathered.items():
            line = json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}).encode() + b"\n"
            if chunks[-1] and (len(chunks[-1]) >= self.max_requests or size + len(line) > self._max_bytes):
                chunks.append({})
                size = 0
            chunks[-1][key] = line
            size += len(line)
        return [c for c in chunks if c]

    async def _create(self, chunk: dict[str, bytes]) -> str:
        """Upload ``chunk`` and create its batch; its id, recorded in the ledger before any poll."""
        import openai

        data = b"".join(chunk.values())
        try:
            uploaded = await self._client.files.create(
                file=("moot-batch.jsonl", data, "application/jsonl"), purpose="batch"
            )
            batch = await self._client.batches.create(
                input_file_id=uploaded.id,
                endpoint=ENDPOINT,
                completion_window=self._window,
                metadata={"source": "moot"},
            )
        except openai.APIStatusError as exc:
            raise BackendError(
                f"{self._url} refused a batch of {len(chunk)} requests: HTTP {exc.status_code}: {_said(exc)}"
            ) from None
        except openai.APIError as exc:
            raise BackendError(f"{self._url} could not take a batch of {len(chunk)} requests: {exc}") from None
        if self.ledger is not None:
            self.ledger.record_batch(batch.id, self._model, chunk)
        return str(batch.id)

    def _watch(self, batch_id: str, ids: frozenset[str]) -> None:
        if batch_id in self._watches:
            return
        watch = _Watch(batch_id, ids)
        self._watches[batch_id] = watch
        watch.task = asyncio.get_running_loop().create_task(self._poll(watch))

    async def _poll(self, watch: _Watch) -> None:
        """Poll ``watch``'s batch until it ends (or passes the deadline, then cancel it), then hand out its
        replies and errors. Whatever else goes wrong ends its waiting requests (the batch left open in the
        ledger, for a rerun to poll again): no caller waits for a poll that has stopped."""
        try:
            await self._follow(watch)
        except Exception as exc:
            self._end(watch, None, f"batch {watch.batch_id} could not be followed: {_what(exc)}")

    async def _follow(self, watch: _Watch) -> None:
        import openai

        failures = 0
        while True:
            try:
                batch = await self._client.batches.retrieve(watch.batch_id)
                failures = 0
            except openai.APIStatusError as exc:
                if exc.status_code == 404:
                    self._end(watch, "missing", f"{self._url} does not know batch {watch.batch_id}")
                    return
                failures += 1
                batch = None
            except openai.APIError:
                failures += 1
                batch = None
            if failures >= MAX_POLL_FAILURES:
                self._end(watch, None, f"{self._url} did not answer {failures} polls of batch {watch.batch_id}")
                return
            if batch is not None and batch.status in ENDED:
                await self._collect(watch, batch)
                return
            if time.monotonic() - watch.started > self._deadline_s:
                with contextlib.suppress(openai.APIError):
                    await self._client.batches.cancel(watch.batch_id)
                self._end(watch, "cancelled", f"batch {watch.batch_id} did not finish within {self._deadline_s:g} s")
                return
            await asyncio.sleep(self._poll_s)

    async def _collect(self, watch: _Watch, batch: Any) -> None:
        """Hand out an ended batch's replies (its output file) and errors (its error file). A file the provider
        no longer has (OpenAI deletes them some days after) closes the batch as "files-gone", so that its
        requests are sent again when asked (``--retry-errors``); any other failure to read leaves it open."""
        import openai

        results: dict[str, dict[str, Any] | str] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                try:
                    content = await self._client.files.content(file_id)
                except openai.NotFoundError:
                    gone = f"{self._url} no longer has {file_id} of batch {watch.batch_id} (its files expired)"
                    self._end(watch, "files-gone", gone)
                    return
                except Exception as exc:  # left open in the ledger: a rerun reads it again
                    self._end(watch, None, f"cannot read {file_id} of batch {watch.batch_id}: {_what(exc)}")
                    return
                results |= _lines(content.content, watch.batch_id)
        answered = {key: r for key, r in results.items() if isinstance(r, dict) and key in watch.ids}
        for key, reply in answered.items():
            future = self._waiting.pop(key, None)
            if future is None:
                self._answered[key] = (reply, watch.batch_id)
            elif not future.done():
                future.set_result((reply, watch.batch_id))
        errors = getattr(batch, "errors", None)
        listed = "; ".join(f"{e.code}: {e.message}" for e in (errors.data or [])) if errors and errors.data else ""
        reason = (
            f"batch {watch.batch_id} ended {batch.status}" + (f" ({listed})" if listed else "") + " without its reply"
        )
        said = {k: r for k, r in results.items() if isinstance(r, str)}
        self._end(watch, batch.status, reason, said, frozenset(answered))

    def _end(
        self,
        watch: _Watch,
        status: str | None,
        reason: str,
        said: dict[str, str] | None = None,
        answered: frozenset[str] = frozenset(),
    ) -> None:
        """Close ``watch``'s batch (in the ledger, unless ``status`` is None: it may still be polled later) and
        fail its requests not ``answered`` that wait, each with what its error line ``said``, else ``reason``."""
        self._watches.pop(watch.batch_id, None)
        said = said or {}
        unanswered = [key for key in watch.ids if key not in answered]
        ended = f"ended {status}" if status is not None else "left open"
        without = f"; {len(unanswered)} without: {reason}" if unanswered else ""
        logger.info("batch %s %s: %d replies%s", watch.batch_id, ended, len(answered), without)
        if status is not None and self.ledger is not None:
            self.ledger.close_batch(watch.batch_id, status, unanswered)
        for key in unanswered:
            future = self._waiting.pop(key, None)
            if future is not None and not future.done():
                future.set_exception(BackendError(said.get(key, reason)))

    def _fail(self, chunk: dict[str, bytes], reason: str) -> None:
        for key in chunk:
            future = self._waiting.pop(key, None)
            if future is not None and not future.done():
                future.set_exception(BackendError(reason))

    async def aclose(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
        for watch in list(self._watches.values()):
            if watch.task is not None:
                watch.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watch.task


def _lines(data: bytes, batch_id: str) -> dict[str, dict[str, Any] | str]:
    """A batch output or error file: each request's reply body (HTTP 200), else what went wrong with it. A
    custom id on several lines that say different things is not answered: which of its lines is its reply cannot be told."""
    out: dict[str, dict[str, Any] | str] = {}
    doubled: set[str] = set()
    for raw in data.splitlines():
        try:
            line = json.loads(raw)
            key = line["custom_id"]
            response = line.get("response") or {}
            error = line.get("error")
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a line moot cannot attribute: its request ends without a reply
        if not isinstance(key, str):
            continue
        earlier = out.get(key)
        status, body = response.get("status_code"), response.get("body")
        if status == 200 and isinstance(body, dict) and not error:
            out[key] = body
        elif isinstance(error, dict):
            out[key] = f"batch {batch_id} did not answer it ({error.get('code')}: {_short(error.get('message'))})"
        else:
            inner = body.get("error") if isinstance(body, dict) else body
            said = inner.get("message", inner) if isinstance(inner, dict) else inner
            out[key] = f"batch {batch_id} answered it HTTP {status}: {_short(said)}"
        if earlier is not None and earlier != out[key]:
            doubled.add(key)
    for key in doubled:
        out[key] = f"batch {batch_id} answered it on several lines that differ"
    return out


def _short(text: Any, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _what(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {_short(exc)}"


def _said(exc: Any) -> str:
    return _short(getattr(exc, "message", None) or str(exc))
