"""How an ``openai`` backend paces its requests: adaptive concurrency, a tokens-per-minute budget and
prefix affinity over several endpoints.

- ``Window``: an endpoint's concurrency, additive increase and multiplicative decrease (AIMD, as TCP's
  congestion window) within its cap. It starts at the cap; an overload answer (HTTP 429, 503 or 529)
  halves it (to 1 at least), once per burst: a failure of a request sent before the latest halving does
  not halve it again. Each answer adds 1 / window, so a full window of answers adds one request, back up
  to the cap.
- ``TokenBudget``: at most ``tokens_per_minute`` tokens in any 60 s. A request reserves its estimate
  before it is sent (its prompt's characters / 4, plus ``max_tokens``, as providers count a request against
  the limit), and the reservation is set to what the reply reports once it returns (its prompt and
  completion tokens; a failed attempt keeps its prompt's estimate). A request larger than the whole budget
  goes alone, once the last minute is empty.
- ``PrefixMap``: which endpoint last continued a conversation. After a reply, the conversation it extends
  (the request's messages and the reply as the assistant's) is remembered with the endpoint that answered;
  a later request whose messages start with a remembered conversation (an agent's next turn, its history
  grown by a reply and a new message) prefers that endpoint, whose server holds the history in its cache.
  Conversations are keyed by a chain of hashes, one per message, and the oldest are forgotten past
  ``PREFIX_MEMORY`` of them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from moot.backends.base import Message

OVERLOAD_STATUSES = frozenset({429, 503, 529})  # too many requests; overloaded (vLLM, OpenAI's 503; 529)
CHARS_PER_TOKEN = 4  # a prompt's estimated tokens before its reply says
WINDOW_S = 60.0
PREFIX_MEMORY = 65_536  # conversations remembered for affinity (about 100 bytes each)

E = TypeVar("E")


@dataclass
class Window:
    """An endpoint's concurrency under AIMD: at most ``cap`` requests, fewer while it answers 'overloaded'."""

    cap: int
    adaptive: bool = True
    size: float = field(default=0.0)
    halvings: int = 0  # so far: an attempt sent before the latest halving does not halve it again

    def __post_init__(self) -> None:
        self.size = float(self.cap)

    @property
    def limit(self) -> int:
        """Requests in flight allowed now."""
        return max(1, math.floor(self.size)) if self.adaptive else self.cap

    def resize(self, cap: int) -> None:
        """A new cap (read from the server, or given): the window starts there again."""
        self.cap = cap
        self.size = float(cap)

    def answered(self) -> bool:
        """One answer: grow by 1 / window up to the cap; whether the limit rose."""
        if not self.adaptive or self.size >= self.cap:
            return False
        before = self.limit
        self.size = min(float(self.cap), self.size + 1.0 / self.size)
        return self.limit > before

    def overloaded(self, halvings_at_send: int) -> None:
        """An overload answer to an attempt sent when ``halvings`` was ``halvings_at_send``: halve once."""
        if self.adaptive and halvings_at_send == self.halvings:
            self.size = max(1.0, self.size / 2.0)
            self.halvings += 1


@dataclass
class _Reservation:
    at: float
    tokens: int


class TokenBudget:
    """At most ``per_minute`` tokens reserved in any 60 s window (see the module's docstring)."""

    def __init__(self, per_minute: float):
        self.per_minute = per_minute
        self._spent: deque[_Reservation] = deque()
        self._lock = asyncio.Lock()

    @staticmethod
    def prompt_estimate(messages: Sequence[Message]) -> int:
        """A prompt's tokens before its reply says: its characters / 4."""
        return math.ceil(sum(len(m.content) for m in messages) / CHARS_PER_TOKEN)

    def used(self) -> int:
        """Tokens reserved in the last 60 s."""
        self._expire()
        return sum(r.tokens for r in self._spent)

    async def reserve(self, tokens: int) -> _Reservation:
        """Wait until ``tokens`` fit in the last minute's budget (first come, first served), then take them."""
        async with self._lock:
            while True:
                self._expire()
                used = sum(r.tokens for r in self._spent)
                if used + tokens <= self.per_minute or not self._spent:
                    reservation = _Reservation(time.monotonic(), tokens)
                    self._spent.append(reservation)
                    return reservation
                # the soonest expiry that frees enough, else the oldest (then look again)
                need = used + tokens - self.per_minute
                freed, wait_until = 0, self._spent[0].at + WINDOW_S
                for r in self._spent:
                    freed += r.tokens
                    wait_until = r.at + WINDOW_S
                    if freed >= need:
                        break
                await asyncio.sleep(max(0.0, wait_until - time.monotonic()))

    @staticmethod
    def settle(reservation: _Reservation, tokens: int) -> None:
        """What the request really took (its reply's reported tokens)."""
        reservation.tokens = max(0, tokens)

    def _expire(self) -> None:
        now = time.monotonic()
        while self._spent and self._spent[0].at + WINDOW_S <= now:
            self._spent.popleft()


class PrefixMap(Generic[E]):
    """The endpoint that last continued each remembered conversation (see the module's docstring)."""

    def __init__(self, memory: int = PREFIX_MEMORY):
        self._memory = memory
        self._owners: OrderedDict[bytes, E] = OrderedDict()

    def find(self, messages: Sequence[Message]) -> E | None:
        """The endpoint of the longest remembered conversation that ``messages`` extends (shorter than it)."""
        chain = _chain(messages)
        for key in reversed(chain[:-1]):
            owner = self._owners.get(key)
            if owner is not None:
                self._owners.move_to_end(key)
                return owner
        return None

    def remember(self, messages: Sequence[Message], reply: str, endpoint: E) -> None:
        """``endpoint`` answered ``messages`` with ``reply``: the conversation they make is now there."""
        key = _chain([*messages, Message("assistant", reply)])[-1]
        self._owners[key] = endpoint
        self._owners.move_to_end(key)
        while len(self._owners) > self._memory:
            self._owners.popitem(last=False)

    def __len__(self) -> int:
        return len(self._owners)


def _chain(messages: Sequence[Message]) -> list[bytes]:
    """One key per prefix of ``messages``: key i hashes key i - 1 with message i."""
    keys: list[bytes] = []
    previous = b""
    for message in messages:
        digest = hashlib.blake2b(previous, digest_size=16)
        digest.update(json.dumps([message.role, message.content]).encode())
        previous = digest.digest()
        keys.append(previous)
    return keys


def affine(load: float, least: float, factor: float) -> bool:
    """Whether an endpoint whose load would be ``load`` with this request may take it, when the least
    loaded endpoint's would be ``least``: at most ``factor`` times as loaded."""
    return load <= factor * least
