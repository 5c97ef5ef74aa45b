"""The ``openai`` backend: any OpenAI-compatible server through the official SDK.

Works with OpenAI, vLLM, llama.cpp's llama-server and Ollama. Each sample is
its own request (n=1) with its own seed, sent concurrently: every sample then
has exact token counts and latency, servers that ignore ``n`` behave like
those that honour it, and the samples equal those of the ``local`` backend's
seed convention. The API key is read from an environment variable at
construction and kept only inside the SDK client; it is never stored or logged
(moot.redact masks it, and a base URL's credentials, in every message).

The SDK is the transport; the reply is read and validated here. A reply that is not a chat
completion (a truncated or non-UTF-8 body, an HTML page, a field of the wrong type, a null message
content) is a failed call, as a 5xx is: it is retried, and after ``max_retries`` retries it is a
BackendError naming what was wrong, which ends its question with status ``error`` and lets the run
go on. Retries (of connection errors, timeouts, 408, 409, 429, 5xx and malformed replies, never of
other client errors) back off as the SDK's own do: 0.5 s doubling up to 8 s, less up to 25 %
jitter, or the server's Retry-After when it asks for at most a minute.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import re
import time
from collections.abc import Collection
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from moot.backends.base import GenerationRequest, Reply, Sample, TokenLogprob
from moot.backends.config import OpenAIBackendConfig
from moot.backends.local import sample_seed
from moot.errors import BackendError, ConfigError
from moot.redact import redact, redact_secrets, register_secret, register_url_secrets

# Local servers accept any key; the SDK refuses to start without one.
PLACEHOLDER_KEY = "no-key"
RETRY_STATUSES = frozenset({408, 409, 429})
INITIAL_RETRY_DELAY_S = 0.5
MAX_RETRY_DELAY_S = 8.0
MAX_RETRY_AFTER_S = 60.0


# -- what a reply must be (extra fields are ignored; types are strict: "12" is not a token count) --------
class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class _Token(_Strict):
    token: str
    logprob: float


class _Logprobs(_Strict):
    content: list[_Token] | None = None


class _Message(_Strict):
    content: str | None = None


class _Choice(_Strict):
    message: _Message
    finish_reason: str | None = None
    logprobs: _Logprobs | None = None


class _Usage(_Strict):
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)


class _Completion(_Strict):
    choices: list[_Choice] = Field(min_length=1)
    usage: _Usage | None = None


class _ModelEntry(_Strict):
    id: str


class _ModelList(_Strict):
    data: list[_ModelEntry]


class _Failure(Exception):
    """A failed attempt: what to report, whether to try again, and the server's Retry-After."""

    def __init__(self, message: str, retry: bool, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.retry = retry
        self.retry_after = retry_after
        self.status = status


class OpenAIBackend:
    """An OpenAI-compatible chat-completions server."""

    name = "openai"

    def __init__(self, config: OpenAIBackendConfig):
        import openai

        if not config.base_url:
            raise ConfigError("the openai backend needs a base URL (--base-url, e.g. http://127.0.0.1:8080/v1)")
        key = os.environ.get(config.api_key_env)
        register_secret(key)
        register_url_secrets(config.base_url)
        self.base_url = redact(config.base_url)  # what messages and the model id show
        self._model = config.model
        # the SDK appends paths to a base URL's query; its parameters go with every request instead
        parts = urlsplit(config.base_url)
        self._client = openai.AsyncOpenAI(
            base_url=urlunsplit(parts._replace(query="", fragment="")),
            default_query=dict(parse_qsl(parts.query)) or None,
            api_key=key or PLACEHOLDER_KEY,
            timeout=config.timeout_s,
            max_retries=0,  # retried here, malformed replies too, within one bound
        )
        self._max_retries = config.max_retries
        self.retries = 0  # attempts made again, over the backend's life
        self._parallel = config.max_concurrency
        self._interval = 60.0 / config.requests_per_minute if config.requests_per_minute else 0.0
        self._next_start = 0.0
        self._pace = asyncio.Lock()
        self._limit = asyncio.Semaphore(config.max_concurrency)
        self._model_lock = asyncio.Lock()
        self._checked = False

    @property
    def model_id(self) -> str:
        return f"openai:{self.base_url}:{self._model or '?'}"

    @property
    def supports_logprobs(self) -> bool:
        return True

    @property
    def parallel(self) -> int:
        return self._parallel

    async def resolve_model(self) -> str:
        """The configured model, else the server's only model (asked once)."""
        async with self._model_lock:
            if self._model is None:
                models = await self._server_models()
                if len(models) != 1:
                    raise ConfigError(
                        f"{self.base_url} serves {len(models)} models ({', '.join(models) or 'none'}); "
                        "choose one with --model"
                    )
                self._model = models[0]
        return self._model

    async def check(self) -> None:
        """Reach the server (its model list) even when the model is given: a dead server or a refused key
        is one clear error before any store is made. When the model is given, a server without a model
        list (HTTP 404 or 405) is reachable, and any list it serves is fine."""
        if self._model is None:
            await self.resolve_model()
        else:
            await self._attempts(self._client.models.with_raw_response.list, lambda raw: None, tolerate={404, 405})

    async def _server_models(self) -> list[str]:
        def read(raw: Any) -> list[str]:
            return [m.id for m in self._validated(raw, _ModelList).data]

        models: list[str] = await self._attempts(self._client.models.with_raw_response.list, read)
        return models

    async def generate(self, request: GenerationRequest) -> Reply:
        model = await self.resolve_model()
        samples = await asyncio.gather(*(self._sample(model, request, i) for i in range(request.n)))
        return Reply(samples=tuple(samples), model=self.model_id)

    async def _sample(self, model: str, request: GenerationRequest, index: int) -> Sample:
        params: dict[str, Any] = {
            "model": model,
            "messages": [m.as_dict() for m in request.messages],
            "n": 1,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
        }
        seed = sample_seed(request.seed, index)
        if seed is not None:
            params["seed"] = seed
        if request.stop:
            params["stop"] = list(request.stop)
        if request.logprobs:
            params["logprobs"] = True

        def read(raw: Any) -> tuple[_Choice, _Usage | None]:
            completion = self._validated(raw, _Completion)
            choice = completion.choices[0]
            if choice.message.content is None:
                raise _Failure(f"{self.base_url} returned a reply without message content (null)", retry=True)
            if request.logprobs and (choice.logprobs is None or choice.logprobs.content is None):
                raise _Failure(
                    f"{self.base_url} returned no log-probabilities although they were asked for", retry=False
                )
            return choice, completion.usage

        async with self._limit:
            start = time.perf_counter()
            choice, usage = await self._attempts(self._client.chat.completions.with_raw_response.create, read, **params)
            latency = time.perf_counter() - start
        logprobs = None
        if request.logprobs:
            assert choice.logprobs is not None and choice.logprobs.content is not None
            logprobs = tuple(TokenLogprob(token=t.token, logprob=float(t.logprob)) for t in choice.logprobs.content)
        assert choice.message.content is not None
        return Sample(
            text=redact_secrets(choice.message.content),
            finish_reason=choice.finish_reason or "unknown",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            latency_s=latency,
            logprobs=logprobs,
        )

    async def _attempts(self, send: Any, read: Any, tolerate: Collection[int] = (), **kwargs: Any) -> Any:
        """``read(send(**kwargs))``, tried again after a retryable failure, at most ``max_retries`` times;
        None after an HTTP status in ``tolerate``."""
        attempt = 0
        while True:
            await self._wait_for_rate()
            try:
                return read(await self._send(send, **kwargs))
            except _Failure as failure:
                if failure.status in tolerate:
                    return None
                if not failure.retry or attempt >= self._max_retries:
                    raise BackendError(failure.message) from None
                delay = failure.retry_after
                if delay is None:
                    delay = min(INITIAL_RETRY_DELAY_S * 2.0**attempt, MAX_RETRY_DELAY_S) * (1 - 0.25 * random.random())
                attempt += 1
                self.retries += 1
                await asyncio.sleep(delay)

    async def _send(self, send: Any, **kwargs: Any) -> Any:
        """One request; every way it can fail becomes a _Failure."""
        import openai

        try:
            return await send(**kwargs)
        except openai.APIConnectionError as exc:  # timeouts too
            raise _Failure(f"cannot reach {self.base_url}: {exc}", retry=True) from None
        except openai.APIStatusError as exc:
            message = re.sub(r"^Error code: \d+ - ", "", str(exc.message))
            headers = exc.response.headers
            retry = exc.status_code in RETRY_STATUSES or exc.status_code >= 500
            retry = {"true": True, "false": False}.get(headers.get("x-should-retry", ""), retry)
            retry_after = _retry_after(headers)
            if retry_after is not None and retry_after > MAX_RETRY_AFTER_S:
                retry, retry_after = False, None
            text = f"{self.base_url} answered HTTP {exc.status_code}: {_short(message)}"
            raise _Failure(text, retry, retry_after, exc.status_code) from None
        except openai.OpenAIError as exc:
            raise _Failure(f"{self.base_url}: {type(exc).__name__}: {_short(str(exc))}", retry=True) from None

    def _validated(self, raw: Any, shape: type[_Strict]) -> Any:
        """The reply's JSON body as ``shape``, or a retryable _Failure saying what is wrong with it."""
        content_type = str(raw.headers.get("content-type", ""))
        body: bytes = raw.content
        if "json" not in content_type.lower():
            excerpt = _short(body.decode("utf-8", "replace"), 80)
            shown = content_type or "no content type"
            raise _Failure(f"{self.base_url} returned {shown}, not JSON (HTTP {raw.status_code}): {excerpt}", True)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Failure(
                f"{self.base_url} returned a reply that is not valid UTF-8 ({exc.reason} at byte {exc.start})", True
            ) from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            where = f"{exc.msg}, character {exc.pos} of {len(text)}"
            raise _Failure(
                f"{self.base_url} returned a reply that is not valid JSON, truncated? ({where})", True
            ) from None
        if isinstance(data, dict) and "error" in data and "choices" not in data and "data" not in data:
            error = data["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise _Failure(f"{self.base_url} returned an error: {_short(str(message))}", True)
        try:
            return shape.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "the reply"
            raise _Failure(f"{self.base_url} returned a malformed reply ({where}: {first['msg']})", True) from None

    async def _wait_for_rate(self) -> None:
        """Space request starts by 60 / requests_per_minute seconds."""
        if not self._interval:
            return
        async with self._pace:
            now = time.monotonic()
            delay = self._next_start - now
            self._next_start = max(now, self._next_start) + self._interval
        if delay > 0:
            await asyncio.sleep(delay)

    async def aclose(self) -> None:
        await self._client.close()


def _retry_after(headers: Any) -> float | None:
    """The server's wait in seconds (retry-after-ms, then retry-after), if it gives a positive one."""
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            delay = float(value) / divisor
        except ValueError:
            continue
        return delay if math.isfinite(delay) and delay > 0 else None
    return None


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
