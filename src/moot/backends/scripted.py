"""The ``scripted`` backend: replays scripted replies, for unit tests of protocol logic only.

A scripted model (``backend = { kind = "scripted", model = "NAME" }``) is a responder, a function of
(request, sample index) returning the reply, made known by ``register_scripted_model`` where it is
defined; a plug-in (a file, or an installed package's ``moot.backends`` entry point) adds its own."""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from moot.backends.base import GenerationRequest, Reply, Sample, TokenLogprob
from moot.backends.reasoning import split_reasoning
from moot.errors import BackendError
from moot.plugins import load_backends
from moot.registry import Registry


@dataclass(frozen=True)
class ScriptedReply:
    """A scripted reply with its finish reason: ``ScriptedReply(text, "length")`` plays a reply cut off
    by the token limit, as the OpenAI API and llama.cpp report it."""

    text: str
    finish_reason: str = "stop"


Script = str | ScriptedReply
Responder = Callable[[GenerationRequest, int], Script]


class ScriptedBackend:
    """Answers from a list of replies (consumed in order) or a function of (request, sample index).

    Every request is recorded in ``requests`` (unless ``record`` is off) so tests can check what
    each caller was shown.
    Token counts are whitespace word counts; log-probabilities, when asked, are one per word,
    -0.1 x its length in characters (so longer words read as less certain). A reply is a string
    (finish reason "stop") or a ``ScriptedReply`` with its own finish reason; a reply longer than the
    request's ``max_tokens`` words is cut to that many words with finish reason "length", as a model's would be.
    """

    name = "scripted"

    def __init__(
        self, replies: Iterable[Script] | Responder, model: str = "scripted", delay_s: float = 0.0, record: bool = True
    ):
        self._delay_s = delay_s
        self._record = record
        self._responder = replies if callable(replies) else None
        self._queue = [] if callable(replies) else list(replies)
        self._model = model
        self.requests: list[GenerationRequest] = []

    @property
    def model_id(self) -> str:
        return self._model

    @property
    def supports_logprobs(self) -> bool:
        return True

    @property
    def parallel(self) -> int:
        return 64

    async def check(self) -> None:
        return None

    async def generate(self, request: GenerationRequest) -> Reply:
        if self._record:
            self.requests.append(request)
        if self._delay_s:
            await asyncio.sleep(self._delay_s)
        samples = []
        for index in range(request.n):
            scripted = self._next(request, index)
            text, finish = (scripted, "stop") if isinstance(scripted, str) else (scripted.text, scripted.finish_reason)
            words = text.split()
            if len(words) > request.max_tokens:
                last = list(re.finditer(r"\S+", text))[request.max_tokens - 1]
                text, words, finish = text[: last.end()], words[: request.max_tokens], "length"
            prompt_tokens = sum(len(m.content.split()) for m in request.messages)
            logprobs = tuple(TokenLogprob(w, -0.1 * len(w)) for w in words) if request.logprobs else None
            split = split_reasoning(text)  # a scripted reply may think, as a reasoning model's does
            reasoning_tokens = len(split.reasoning.split()) if split.reasoning is not None else None
            samples.append(
                Sample(
                    split.content,
                    finish,
                    prompt_tokens,
                    len(words),
                    0.0,
                    logprobs,
                    None,
                    split.reasoning,
                    reasoning_tokens,
                )
            )
        return Reply(samples=tuple(samples), model=self._model)

    def _next(self, request: GenerationRequest, index: int) -> Script:
        if self._responder is not None:
            return self._responder(request, index)
        if not self._queue:
            raise BackendError("scripted backend ran out of replies")
        return self._queue.pop(0)

    async def aclose(self) -> None:
        return None


def _scripted_name(name: str) -> str | None:
    if not name or name != name.strip() or any(c.isspace() for c in name):
        return f"a scripted model's name is one word, got {name!r}"
    return None


# by name, in registration order; reading it loads installed plug-ins (``moot.backends``) first
SCRIPTED_MODELS: Registry[Responder] = Registry("scripted model", check_name=_scripted_name, load=load_backends)


def register_scripted_model(name: str, responder: Responder) -> Responder:
    """Make ``responder`` the scripted model ``name`` (the same function again changes nothing; another
    function under a taken name is an error). Returns it, so it can decorate:
    ``register_scripted_model("mine", mine)`` or ``@functools.partial(register_scripted_model, "mine")``."""
    return SCRIPTED_MODELS.register(name, responder)


def scripted_models() -> Registry[Responder]:
    """Every registered scripted model, by name; installed plug-ins (``moot.backends``) load on the first read."""
    return SCRIPTED_MODELS


def seeded_numbers(request: GenerationRequest, index: int) -> str:
    """A deterministic reply: a number in [0, 50) fixed by the request's messages, seed and sample index.

    Lets the runner be exercised end to end (benchmarks, kill-and-resume tests) without a model.
    """
    text = repr((request.seed, index, [m.content for m in request.messages]))
    number = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") % 50
    return f"Working through it step by step, the answer is {number}."


register_scripted_model("numbers", seeded_numbers)
