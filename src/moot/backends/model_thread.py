"""One dedicated thread that owns an in-process model and runs its jobs in order.

In-process engines (llama-cpp-python, transformers) are not safe to call from several threads, and an
idle pool of them costs speed, so each in-process backend gives its model one thread fed by a queue;
async callers await the job's future.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from moot.errors import BackendError

T = TypeVar("T")


class ModelThread:
    """Runs submitted jobs one at a time on its own thread; ``on_exit`` runs there when it closes
    (to drop the model on the thread that owns it)."""

    def __init__(self, name: str, backend: str, on_exit: Callable[[], None] = lambda: None):
        self.backend = backend
        self._on_exit = on_exit
        self._jobs: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    async def submit(self, job: Callable[[], T]) -> T:
        if not self._thread.is_alive():
            raise BackendError(f"the {self.backend} backend is closed")
        future: Future[T] = Future()
        self._jobs.put((job, future))
        return await asyncio.wrap_future(future)

    async def close(self) -> None:
        self._jobs.put(None)
        await asyncio.to_thread(self._thread.join)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            work, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(work())
            except BaseException as exc:  # handed to the awaiting caller
                future.set_exception(exc if isinstance(exc, Exception) else BackendError(repr(exc)))
        self._on_exit()
