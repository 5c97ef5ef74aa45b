"""The ``llama-cpp`` backend: llama.cpp in-process through llama-cpp-python (the default engine of moot
0.1 and 0.2; the ``local`` backend now runs llama.cpp's server, moot.backends.llama_server).

A ``Llama`` object is not thread-safe and an idle thread pool costs speed, so
one dedicated generation thread owns the model and serves a queue; async
callers await futures. Sampling is neutral (top_k, min_p and repeat penalty
off) so that temperature and top_p mean what they mean on OpenAI's API.
Seeded requests reset the model first: llama.cpp reproduces a seeded sample
only from a clean state. The model is loaded with ``logits_all`` (needed for
log-probabilities, slower and larger) only once a request asks for them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from moot.backends.base import GenerationRequest, Reply, Sample, TokenLogprob
from moot.backends.engine_record import EngineRecord, package_version
from moot.backends.model_thread import ModelThread
from moot.backends.reasoning import split_reasoning
from moot.errors import BackendError, ConfigError
from moot.seeds import derive_seed

T = TypeVar("T")

NEUTRAL_SAMPLING: dict[str, Any] = {"top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0}


def sample_seed(seed: int | None, index: int) -> int | None:
    """Seed of sample ``index`` of a request: the request seed for sample 0, derived after."""
    if seed is None or index == 0:
        return seed
    return derive_seed(seed, index)


class LocalBackend:
    """llama.cpp in-process; one generation thread fed by a queue."""

    name = "llama-cpp"

    def __init__(self, model_path: Path, *, model_id: str, n_ctx: int = 8192, n_threads: int | None = None):
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            raise ConfigError("the llama-cpp backend needs llama-cpp-python: pip install 'moot[llama-cpp]'") from None
        self.model_path = Path(model_path)
        self._model_id = model_id
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 1
        self._llm: Any = None
        self._logits_all = False
        self._worker = ModelThread("moot-llama", "llama-cpp", on_exit=self._drop_model)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def supports_logprobs(self) -> bool:
        return True

    @property
    def parallel(self) -> int:
        return 1  # one generation thread

    async def engine_record(self) -> EngineRecord:
        """llama-cpp-python, one call at a time, a seeded request from a clean state: reruns give equal replies."""
        return EngineRecord(
            engine="llama-cpp-python",
            version=package_version("llama_cpp_python"),
            slots=1,
            threads=self.n_threads,
            context=self.n_ctx,
            deterministic=True,
        )

    async def check(self) -> None:
        """Load the model now, so that a file llama.cpp cannot read fails before any question starts."""
        await self._submit(lambda: self._load(logits_all=False))

    async def generate(self, request: GenerationRequest) -> Reply:
        return await self._submit(lambda: self._generate(request))

    async def _submit(self, job: Callable[[], T]) -> T:
        return await self._worker.submit(job)

    async def aclose(self) -> None:
        await self._worker.close()

    def _drop_model(self) -> None:
        self._llm = None

    def _load(self, logits_all: bool) -> Any:
        if self._llm is not None and (self._logits_all or not logits_all):
            return self._llm
        from llama_cpp import Llama

        self._llm = None
        try:
            self._llm = Llama(
                model_path=str(self.model_path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                logits_all=logits_all,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            reason = " ".join(str(exc).split())
            raise BackendError(f"llama.cpp could not load {self.model_path}: {reason}") from None
        self._logits_all = logits_all
        return self._llm

    def _generate(self, request: GenerationRequest) -> Reply:
        llm = self._load(request.logprobs)
        messages = [m.as_dict() for m in request.messages]
        samples = []
        for index in range(request.n):
            seed = sample_seed(request.seed, index)
            if seed is not None:
                llm.reset()
            start = time.perf_counter()
            try:
                out = llm.create_chat_completion(
                    messages=messages,
                    temperature=request.temperature,
                    top_p=request.top_p,
                    max_tokens=request.max_tokens,
                    seed=seed,
                    stop=list(request.stop) or None,
                    logprobs=request.logprobs,
                    top_logprobs=0 if request.logprobs else None,
                    **NEUTRAL_SAMPLING,
                )
            except ValueError as exc:  # e.g. the prompt exceeds the context window
                raise BackendError(f"llama.cpp rejected the request: {exc}") from None
            latency = time.perf_counter() - start
            choice = out["choices"][0]
            split = split_reasoning(choice["message"]["content"] or "")
            reasoning_tokens = None
            if split.reasoning is not None:
                reasoning_tokens = len(llm.tokenize(split.reasoning.encode(), add_bos=False, special=False))
            samples.append(
                Sample(
                    text=split.content,
                    finish_reason=choice.get("finish_reason") or "unknown",
                    prompt_tokens=out["usage"]["prompt_tokens"],
                    completion_tokens=out["usage"]["completion_tokens"],
                    latency_s=latency,
                    logprobs=_logprobs(choice) if request.logprobs else None,
                    reasoning=split.reasoning,
                    reasoning_tokens=reasoning_tokens,
                )
            )
        return Reply(samples=tuple(samples), model=self._model_id)


def _logprobs(choice: dict[str, Any]) -> tuple[TokenLogprob, ...]:
    content = (choice.get("logprobs") or {}).get("content") or []
    return tuple(TokenLogprob(token=t["token"], logprob=float(t["logprob"])) for t in content)
