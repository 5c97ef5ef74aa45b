"""How the ``openai`` backend (moot.backends.openai_api) sends a request: ``_Requests``, the base class of
``OpenAIBackend`` that holds its endpoints' rotation (least outstanding work, affinity, cool-downs, the queue of
requests waiting for an endpoint), its retries and their backoff, its pacing (``requests_per_minute``,
``tokens_per_minute``) and one attempt, read whole within its deadline, every way it can fail made a
``_Failure``. Its state is set by ``OpenAIBackend.__init__``."""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import time
from collections.abc import Callable, Collection
from typing import Any

from moot.backends.openai_replies import _Failure, _short
from moot.backends.openai_transport import Send, _connection_error, _Endpoint, _redirected, _retry_after
from moot.backends.openai_usage import _Cost
from moot.backends.routing import OVERLOAD_STATUSES, TokenBudget, affine
from moot.errors import BackendError

RETRY_STATUSES = frozenset({408, 409, 429})
INITIAL_RETRY_DELAY_S = 0.5
MAX_RETRY_DELAY_S = 8.0
MAX_RETRY_AFTER_S = 60.0
MAX_COOLDOWN_FACTOR = 10  # a cool-down doubles up to this many times cooldown_s
RECHECK_S = 1.0  # with several endpoints, a waiting request looks again at least this often


class _Requests:
    """Requests to one or several endpoints serving the same model: each attempt's endpoint, its retries, its pace."""

    # set by OpenAIBackend.__init__
    _endpoints: list[_Endpoint]
    _timeout_s: float
    _max_retries: int
    _cooldown_s: float
    retries: int
    _interval: float
    _tokens: TokenBudget | None
    _affinity_factor: float
    _next_start: float
    _pace: asyncio.Lock
    _waiters: list[tuple[asyncio.Future[None], _Endpoint | None]]

    async def _attempts(
        self,
        send: Send,
        read: Callable[[Any, _Endpoint], Any],
        tolerate: Collection[int] = (),
        endpoint: _Endpoint | None = None,
        prefer: _Endpoint | None = None,
        cost: _Cost | None = None,
    ) -> tuple[Any, float]:
        """``read(send(client), endpoint)`` and when its first attempt started (``time.perf_counter``).

        Each attempt goes to the endpoint with the least outstanding work, or to ``prefer`` when it is not
        much busier (``_pick``; ``endpoint``: always that one, outside the rotation and its limits); a
        retryable failure is tried again, at most ``max_retries`` times: at once on another endpoint when
        its own was taken out of rotation, else after a backoff. ``cost`` is what a sample may spend, for
        ``tokens_per_minute``. The value is None after an HTTP status in ``tolerate``."""
        attempt = 0
        started: float | None = None
        errors: dict[_Endpoint, str] = {}  # the endpoints that failed this request, and how
        while True:
            chosen = endpoint if endpoint is not None else await self._acquire(prefer)
            epoch, halvings = chosen.epoch, chosen.window.halvings
            if started is None:
                started = time.perf_counter()
            reservation = None
            try:
                await self._wait_for_rate()
                if cost is not None and self._tokens is not None:
                    reservation = await self._tokens.reserve(cost.prompt + cost.max_tokens)
                value = read(await self._send(send, chosen), chosen)
                if reservation is not None and cost is not None:
                    spent = cost.spent(value)
                    TokenBudget.settle(reservation, cost.prompt + cost.max_tokens if spent is None else spent)
                if endpoint is None:
                    self._answered(chosen, epoch)
                return value, started
            except _Failure as failure:
                if failure.status in tolerate:
                    return None, started
                if reservation is not None and cost is not None:
                    TokenBudget.settle(reservation, cost.prompt)  # what a provider counts of a refused request
                if endpoint is None and failure.status in OVERLOAD_STATUSES:
                    chosen.window.overloaded(halvings)
                out = endpoint is None and failure.down and self._take_out(chosen, epoch, failure)
                if failure.down:
                    errors[chosen] = failure.message
                if not failure.retry or attempt >= self._max_retries:
                    raise BackendError(
                        failure.message if endpoint is not None else self._final_error(failure, errors)
                    ) from None
                delay = failure.retry_after
                if out:
                    delay = 0.0  # another endpoint takes it now, or it waits for the soonest to return
                elif delay is None:
                    delay = min(INITIAL_RETRY_DELAY_S * 2.0**attempt, MAX_RETRY_DELAY_S) * (1 - 0.25 * random.random())
            finally:
                if endpoint is None:
                    self._release(chosen)
            attempt += 1
            self.retries += 1
            if delay:
                await asyncio.sleep(delay)

    # -- the rotation: least outstanding work, cool-downs -------------------------------------------------
    def _pick(self, prefer: _Endpoint | None = None) -> _Endpoint | None:
        """The endpoint in rotation with room and the least load (in flight over limit), ties to the first;
        or ``prefer`` when it is in rotation with room and, with this request, at most ``affinity_factor``
        times as loaded as the least loaded would be."""
        now = time.monotonic()
        ready = [e for e in self._endpoints if e.down_until <= now and e.in_flight < e.window.limit]
        if not ready:
            return None
        least = min(ready, key=_Endpoint.load)
        if (
            prefer is not None
            and prefer in ready
            and affine(prefer.load_with_one_more(), least.load_with_one_more(), self._affinity_factor)
        ):
            return prefer
        return least

    async def _acquire(self, prefer: _Endpoint | None = None) -> _Endpoint:
        """An endpoint for one attempt, waiting (first come, first served, but that a freed endpoint goes
        first to a request that prefers it) while every one is full or out of rotation."""
        turn = not self._waiters
        while True:
            if turn:
                chosen = self._pick(prefer)
                if chosen is not None:
                    chosen.in_flight += 1
                    if self._waiters and self._pick() is not None:
                        self._wake()  # room is left (an endpoint back in rotation): the next one takes it
                    return chosen
            now = time.monotonic()
            # until a release, or an endpoint's return to rotation; with several endpoints, look again every
            # RECHECK_S at least, so that a turn missed in their comings and goings costs a second at most
            returning = [e.down_until - now for e in self._endpoints if e.down_until > now]
            if len(self._endpoints) > 1:
                returning.append(RECHECK_S)
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append((waiter, prefer))
            try:
                await asyncio.wait((waiter,), timeout=min(returning) if returning else None)
            except BaseException:
                if waiter.done():
                    self._wake()  # pass on the turn this request will not take
                raise
            finally:
                with contextlib.suppress(ValueError):
                    self._waiters.remove((waiter, prefer))
            turn = True  # woken, or an endpoint is back in rotation

    def _wake(self, freed: _Endpoint | None = None) -> None:
        """Give a waiting request its turn to take an endpoint: the first that prefers ``freed`` (an endpoint
        that has just made room: the request finds its history there), else the first."""
        waiting = [(waiter, prefer) for waiter, prefer in self._waiters if not waiter.done()]
        chosen = next((w for w, prefer in waiting if freed is not None and prefer is freed), None)
        if chosen is None and waiting:
            chosen = waiting[0][0]
        if chosen is not None:
            chosen.set_result(None)

    def _release(self, endpoint: _Endpoint) -> None:
        endpoint.in_flight -= 1
        self._wake(endpoint)

    def _answered(self, endpoint: _Endpoint, epoch: int) -> None:
        """An answer from ``endpoint``: sent since its last cool-down, it ends their doubling; its window
        grows (a waiting request takes the room it makes)."""
        if epoch == endpoint.epoch:
            endpoint.failures = 0
        if endpoint.window.answered():
            self._wake()

    def _take_out(self, endpoint: _Endpoint, epoch: int, failure: _Failure) -> bool:
        """Take a failing endpoint out of rotation; whether it is out (now, or already by an earlier failure).

        A failure of an attempt sent before its latest cool-down neither starts nor extends one."""
        if self._cooldown_s <= 0:
            return False
        now = time.monotonic()
        if epoch == endpoint.epoch:
            endpoint.failures += 1
            endpoint.epoch += 1
            cooldown = min(self._cooldown_s * 2.0 ** (endpoint.failures - 1), self._cooldown_s * MAX_COOLDOWN_FACTOR)
            endpoint.down_until = now + max(cooldown, failure.retry_after or 0.0)
            endpoint.last_error = failure.message
        return endpoint.down_until > now

    def _final_error(self, failure: _Failure, errors: dict[_Endpoint, str]) -> str:
        """What a request that gives up says: its last failure; when every endpoint has failed it or is
        out of rotation, each one's failure."""
        now = time.monotonic()
        if self._cooldown_s > 0 and all(e in errors or e.down_until > now for e in self._endpoints):
            return "every endpoint failed: " + "; ".join(errors.get(e) or e.last_error for e in self._endpoints)
        return failure.message

    # -- one request --------------------------------------------------------------------------------------
    async def _send(self, send: Send, endpoint: _Endpoint, deadline: float | None = None) -> Any:
        """One request to ``endpoint``, its reply read whole within ``deadline`` seconds (``timeout_s``: the
        SDK's timeout bounds each read, not the call); every way it can fail becomes a _Failure."""
        import openai

        url = endpoint.url
        setting = " (the backend's timeout_s)" if deadline is None else ""
        deadline = self._timeout_s if deadline is None else deadline
        try:
            async with asyncio.timeout(deadline):
                return await send(endpoint.client)
        except _Failure:  # a reply refused while it was read (_http_client)
            raise
        except TimeoutError:
            raise _Failure(
                f"{url} gave no complete reply within {deadline:g} s{setting}", retry=True, down=True
            ) from None
        except openai.APIConnectionError as exc:  # timeouts too
            raise _Failure(f"cannot reach {url}: {_connection_error(exc)}", retry=True, down=True) from None
        except openai.APIStatusError as exc:
            if 300 <= exc.status_code < 400:
                raise _Failure(_redirected(url, exc.response), retry=False, status=exc.status_code) from None
            message = re.sub(r"^Error code: \d+ - ", "", str(exc.message))
            headers = exc.response.headers
            retry = exc.status_code in RETRY_STATUSES or exc.status_code >= 500
            retry = {"true": True, "false": False}.get(headers.get("x-should-retry", ""), retry)
            retry_after = _retry_after(headers)
            if retry_after is not None and retry_after > MAX_RETRY_AFTER_S:
                retry, retry_after = False, None
            text = f"{url} answered HTTP {exc.status_code}: {_short(message)}"
            raise _Failure(text, retry, retry_after, exc.status_code, down=exc.status_code >= 500) from None
        except Exception as exc:  # the SDK's other errors, and its HTTP library's on a reply it cannot take
            raise _Failure(f"{url}: {type(exc).__name__}: {_short(str(exc))}", retry=True) from None

    async def _wait_for_rate(self) -> None:
        """Space request starts by 60 / requests_per_minute seconds (over all endpoints)."""
        if not self._interval:
            return
        async with self._pace:
            now = time.monotonic()
            delay = self._next_start - now
            self._next_start = max(now, self._next_start) + self._interval
        if delay > 0:
            await asyncio.sleep(delay)
