"""Call keys, the store-backed call cache, and the caller that records every call of a question.

A call is keyed by (backend, model identity, rendered messages, sampling parameters,
seed, agent id, sample indices 0..n-1), plus the condition when round-0 sharing is off.
Agents sampling at temperature > 0 therefore stay independent (their seeds and ids
differ), identical requests are made once, and a rerun replays every call it has.
Because a key names the request whole, another run's store can answer it too
(``calls_from``): a call found there is the very call this run would make.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from moot.backends.base import Backend, GenerationRequest, Reply
from moot.calls import Caller, Usage, call_session, session_id
from moot.errors import MootError
from moot.runner.config import Price
from moot.runner.spend import Spent
from moot.runner.store import RunStore
from moot.trace import Trace


class NotStored(MootError):
    """A call that neither this run's store nor a ``calls_from`` store holds, in a session that makes no call
    (``--replay-only``): its question is left for a later run."""


def call_key(backend: Backend, request: GenerationRequest, agent: str, scope: str | None = None) -> str:
    payload = {
        "backend": backend.name,
        "model": backend.model_id,
        "request": request.payload(),
        "agent": agent,
        "samples": list(range(request.n)),
        "scope": scope,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


@dataclass
class CallCache:
    """Shared by every question of a run: store look-ups, in-flight de-duplication, counts.

    ``usage`` counts calls actually made; ``replayed`` counts calls answered from the
    store, from another run's store (``sources``: the call is copied into this run's store, so
    that the store stays whole without them) or from an identical call in flight. Without
    ``use_cache`` (``--no-cache``) no other run's store is asked and calls stored by earlier
    sessions are not replayed: each is made afresh, once in this session
    (identical calls in flight, or made earlier in the session, share it, as round 0 is shared),
    and stored beside the earlier call, which stays as it was for the turns that used it.

    ``spent`` is the run's total spend, for its ``[budget]`` caps (moot.runner.spend): it starts at what the
    store holds (``stored_spend``) and every call made adds to it, priced at ``prices`` by model name.
    """

    store: RunStore
    use_cache: bool = True
    share: bool = True
    sources: tuple[RunStore, ...] = ()  # other runs' stores, read-only (``calls_from``)
    replay_only: bool = False  # ``--replay-only``: a call not stored is not made (``NotStored``)
    usage: Usage = field(default_factory=Usage)
    replayed: int = 0
    copied: int = 0  # of ``replayed``: calls found in ``sources``, copied into ``store``
    trace: Trace | None = None  # ``--trace``: every call made is timed into it
    prices: Mapping[str, Price] = field(default_factory=dict)
    spent: Spent = field(default_factory=Spent)
    _inflight: dict[str, asyncio.Future[tuple[str, Reply]]] = field(default_factory=dict)

    async def call(self, backend: Backend, request: GenerationRequest, place: dict[str, object]) -> tuple[str, Reply]:
        """The reply to ``request`` and the key its call is stored under (what a turn points to)."""
        key = call_key(backend, request, str(place["agent"]), None if self.share else str(place["condition"]))
        if key in self._inflight:
            stored_key, reply = await asyncio.shield(self._inflight[key])
            self.replayed += 1
            return stored_key, reply
        if (stored := self.store.cached_call(key, None if self.use_cache else self.store.session)) is not None:
            self.replayed += 1
            return stored
        if self.use_cache and (found := self._from_sources(key)) is not None:
            self.replayed += 1
            self.copied += 1
            return self.store.add_call(key, place, request, found), found
        if self.replay_only:
            raise NotStored(f"no stored call answers {place.get('condition')} {place.get('question_id')}")
        future: asyncio.Future[tuple[str, Reply]] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            try:
                with self.trace.call(place) if self.trace is not None else contextlib.nullcontext():
                    reply = await backend.generate(request)
            except Exception as exc:
                self.usage.errors += 1
                self.store.add_call_error(key, place, f"{type(exc).__name__}: {exc}")
                raise
            stored_key = self.store.add_call(key, place, request, reply)
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        except BaseException:
            future.cancel()  # cancelled: the waiters are cancelled with it
            raise
        finally:
            del self._inflight[key]
        self.usage.add(reply)
        model = str(place.get("model_name", ""))
        self.spent.add_reply(model, self.prices.get(model), reply)
        future.set_result((stored_key, reply))
        return stored_key, reply

    def _from_sources(self, key: str) -> Reply | None:
        """The reply stored under ``key`` in the first source that has one (its latest)."""
        for source in self.sources:
            if (reply := source.cached_reply(key)) is not None:
                return reply
        return None


class RecordingCaller(Caller):
    """The caller of one question under one condition: every call goes through the run's cache."""

    def __init__(self, cache: CallCache, place: dict[str, object], model_names: dict[str, str]):
        super().__init__()
        self._cache = cache
        self._place = place
        self._model_names = model_names
        self.keys: dict[tuple[int, str], str] = {}

    async def call(self, backend: Backend, request: GenerationRequest, *, agent: str, round: int) -> Reply:
        place = self._place | {
            "agent": agent,
            "round": round,
            "backend": backend.name,
            "model_name": self._model_name(agent),
        }
        with call_session(self.session(agent)):
            key, reply = await self._cache.call(backend, request, place)
        self.keys[(round, agent)] = key
        self.usage.add(reply)
        return reply

    def session(self, agent: str) -> str:
        """The question's agent, whatever the condition: conditions that share round 0 share its history, so
        their later turns are best served where round 0 was."""
        return session_id(self._place["task"], self._place["question_id"], self._place["seed"], agent)

    def _model_name(self, agent: str) -> str:
        """The speaker's model; a scorer's calls ("judge/agent-1:fact-0") belong to the judge's."""
        return self._model_names.get(agent) or self._model_names[agent.split("/")[0]]
