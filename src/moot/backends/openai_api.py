"""The ``openai`` backend: any OpenAI-compatible server through the official SDK.

Works with OpenAI, vLLM, llama.cpp's llama-server and Ollama. Each sample is
its own request (n=1) with its own seed, sent concurrently: every sample then
has exact token counts and latency, servers that ignore ``n`` behave like
those that honour it, and the samples equal those of the ``local`` backend's
seed convention. The API key is read from an environment variable at
construction and kept only inside the SDK client; it is never stored or logged.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from typing import Any

from moot.backends.base import GenerationRequest, Reply, Sample, TokenLogprob
from moot.backends.config import OpenAIBackendConfig
from moot.backends.local import sample_seed
from moot.errors import BackendError, ConfigError

# Local servers accept any key; the SDK refuses to start without one.
PLACEHOLDER_KEY = "no-key"


class OpenAIBackend:
    """An OpenAI-compatible chat-completions server."""

    name = "openai"

    def __init__(self, config: OpenAIBackendConfig):
        import openai

        if not config.base_url:
            raise ConfigError("the openai backend needs a base URL (--base-url, e.g. http://127.0.0.1:8080/v1)")
        self.base_url = config.base_url
        self._model = config.model
        self._client = openai.AsyncOpenAI(
            base_url=config.base_url,
            api_key=os.environ.get(config.api_key_env) or PLACEHOLDER_KEY,
            timeout=config.timeout_s,
            max_retries=config.max_retries,
        )
        self._parallel = config.max_concurrency
        self._interval = 60.0 / config.requests_per_minute if config.requests_per_minute else 0.0
        self._next_start = 0.0
        self._pace = asyncio.Lock()
        self._limit = asyncio.Semaphore(config.max_concurrency)
        self._model_lock = asyncio.Lock()

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
                models = [m.id async for m in await self._call(self._client.models.list)]
                if len(models) != 1:
                    raise ConfigError(
                        f"{self.base_url} serves {len(models)} models ({', '.join(models) or 'none'}); "
                        "choose one with --model"
                    )
                self._model = models[0]
        return self._model

    async def check(self) -> None:
        await self.resolve_model()

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
        async with self._limit:
            await self._wait_for_rate()
            start = time.perf_counter()
            response = await self._call(self._client.chat.completions.create, **params)
            latency = time.perf_counter() - start
        if not response.choices:
            raise BackendError(f"{self.base_url} returned no choices")
        choice = response.choices[0]
        usage = response.usage
        logprobs = None
        if request.logprobs:
            content = choice.logprobs.content if choice.logprobs else None
            if content is None:
                raise BackendError(f"{self.base_url} returned no log-probabilities although they were asked for")
            logprobs = tuple(TokenLogprob(token=t.token, logprob=float(t.logprob)) for t in content)
        return Sample(
            text=choice.message.content or "",
            finish_reason=choice.finish_reason or "unknown",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            latency_s=latency,
            logprobs=logprobs,
        )

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

    async def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        import openai

        try:
            return await fn(*args, **kwargs)
        except openai.APIConnectionError as exc:
            raise BackendError(f"cannot reach {self.base_url}: {exc}") from None
        except openai.APIStatusError as exc:
            message = re.sub(r"^Error code: \d+ - ", "", str(exc.message))
            raise BackendError(f"{self.base_url} answered HTTP {exc.status_code}: {_short(message)}") from None

    async def aclose(self) -> None:
        await self._client.close()


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
