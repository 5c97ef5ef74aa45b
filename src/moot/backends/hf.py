"""The ``hf`` backend: a causal LM through transformers, with an optional peft (LoRA) adapter.

This is how moot debates with a model trained by ``moot train`` (an adapter folder), or with any local
Hugging Face model. A transformers model is not safe to call from several threads, so one dedicated
generation thread owns it and serves a queue; async callers await futures (as the llama-cpp backend).

Sampling means what it means on OpenAI's API: temperature and top_p only (top_k, repetition penalty
off), temperature 0 is greedy. Sample i of a seeded request is seeded with ``sample_seed(seed, i)``
(torch's generator, reseeded per sample), so n samples equal n one-sample requests and a rerun
reproduces them on the same machine. Token counts are exact: the chat-templated prompt's tokens, and
every generated token including the end-of-turn token (as vLLM counts). Log-probabilities are those
of the sampled tokens under the model's own distribution (before temperature and top_p, as vLLM
returns them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from moot.backends.base import GenerationRequest, Reply, Sample, TokenLogprob
from moot.backends.engine_record import EngineRecord, package_version
from moot.backends.local import sample_seed
from moot.backends.model_thread import ModelThread
from moot.backends.reasoning import split_reasoning
from moot.errors import BackendError
from moot.hf import Dtype, LoadedModel, load_model

T = TypeVar("T")


class HFBackend:
    """transformers generation in one thread fed by a queue; the model is loaded on first use (or ``check``)."""

    name = "hf"

    def __init__(
        self,
        model: str,
        *,
        model_id: str,
        adapter: Path | None = None,
        dtype: Dtype = "auto",
        device: str | None = None,
        n_threads: int | None = None,
    ):
        self.model_name = model
        self.adapter = adapter
        self.dtype: Dtype = dtype
        self.device = device
        self.n_threads = n_threads
        self._model_id = model_id
        self._loaded: LoadedModel | None = None
        self._worker = ModelThread("moot-hf", "hf", on_exit=self._drop_model)

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
        """transformers, one call at a time, each sample reseeded: on a CPU reruns give equal replies; a GPU's
        kernels may sum in another order from run to run, so there it does not promise it."""
        import torch

        from moot.hf import pick_device

        device = pick_device(self.device)
        return EngineRecord(
            engine=f"transformers on {device}",
            version=package_version("transformers"),
            slots=1,
            threads=torch.get_num_threads() if device == "cpu" else None,
            deterministic=device == "cpu",
        )

    async def check(self) -> None:
        """Load the model (and adapter) now, so that one the libraries cannot load fails before any question."""
        await self._submit(self._load)

    async def generate(self, request: GenerationRequest) -> Reply:
        return await self._submit(lambda: self._generate(request))

    async def _submit(self, job: Callable[[], T]) -> T:
        return await self._worker.submit(job)

    async def aclose(self) -> None:
        await self._worker.close()

    def _drop_model(self) -> None:
        self._loaded = None

    def _load(self) -> LoadedModel:
        if self._loaded is None:
            if self.n_threads is not None:
                import torch

                torch.set_num_threads(self.n_threads)
            self._loaded = load_model(self.model_name, adapter=self.adapter, dtype=self.dtype, device=self.device)
        return self._loaded

    def _generate(self, request: GenerationRequest) -> Reply:
        loaded = self._load()
        prompt = prompt_ids(loaded.tokenizer, request)
        limit = getattr(loaded.model.config, "max_position_embeddings", None)
        if limit is not None and len(prompt) >= limit:
            raise BackendError(f"the prompt has {len(prompt)} tokens; the model's context is {limit}")
        samples = tuple(
            _sample(loaded, request, prompt, sample_seed(request.seed, index)) for index in range(request.n)
        )
        return Reply(samples=samples, model=self._model_id)


def prompt_ids(tokenizer: Any, request: GenerationRequest) -> list[int]:
    """The request's messages through the model's chat template, ready for the assistant's turn."""
    if not getattr(tokenizer, "chat_template", None):
        raise BackendError("the model's tokenizer has no chat template: the hf backend serves chat models")
    messages = [m.as_dict() for m in request.messages]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def end_token_ids(model: Any, tokenizer: Any) -> list[int]:
    """Every token that ends a turn: the model's declared eos ids (an end-of-turn token) and the tokenizer's."""
    declared = model.generation_config.eos_token_id
    ids = [] if declared is None else [declared] if isinstance(declared, int) else list(declared)
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    return ids


def _sample(loaded: LoadedModel, request: GenerationRequest, prompt: list[int], seed: int | None) -> Sample:
    import torch
    from transformers import GenerationConfig

    model, tokenizer = loaded.model, loaded.tokenizer
    ends = end_token_ids(model, tokenizer)
    sampling = request.temperature > 0
    # Every filter set to its neutral value: a value left unset is filled from the model's own defaults.
    neutral = {"top_k": 0, "min_p": 0.0, "typical_p": 1.0} if sampling else {}
    config = GenerationConfig(
        max_new_tokens=request.max_tokens,
        do_sample=sampling,
        temperature=request.temperature if sampling else 1.0,
        top_p=request.top_p if sampling else 1.0,
        repetition_penalty=1.0,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=ends,
        return_dict_in_generate=True,
        output_logits=request.logprobs,
        **neutral,
    )
    inputs = torch.tensor([prompt], device=loaded.device)
    stops = {"stop_strings": list(request.stop), "tokenizer": tokenizer} if request.stop else {}
    if seed is not None:
        torch.manual_seed(seed)
    start = time.perf_counter()
    try:
        with torch.inference_mode():
            out = model.generate(
                input_ids=inputs,
                attention_mask=torch.ones_like(inputs),
                generation_config=config,
                **stops,
            )
    except (RuntimeError, ValueError) as exc:
        raise BackendError(f"transformers could not generate: {' '.join(str(exc).split())[:300]}") from None
    latency = time.perf_counter() - start
    generated = out.sequences[0, len(prompt) :].tolist()
    ended = bool(generated) and generated[-1] in ends
    text = tokenizer.decode(generated[:-1] if ended else generated, skip_special_tokens=True)
    cut = _cut_at_stop(text, request.stop)
    finish = "stop" if ended or cut is not None else "length" if len(generated) >= request.max_tokens else "stop"
    logprobs = None
    if request.logprobs:
        logprobs = _logprobs(tokenizer, out.logits, generated)
    split = split_reasoning(text if cut is None else text[:cut])
    reasoning_tokens = None
    if split.reasoning is not None:
        reasoning_tokens = len(tokenizer.encode(split.reasoning, add_special_tokens=False))
    return Sample(
        text=split.content,
        finish_reason=finish,
        prompt_tokens=len(prompt),
        completion_tokens=len(generated),
        latency_s=latency,
        logprobs=logprobs,
        reasoning=split.reasoning,
        reasoning_tokens=reasoning_tokens,
    )


def _cut_at_stop(text: str, stop: tuple[str, ...]) -> int | None:
    """Where the earliest stop string begins in ``text`` (the reply ends before it, as on OpenAI's API)."""
    found = [i for s in stop if s and (i := text.find(s)) >= 0]
    return min(found) if found else None


def _logprobs(tokenizer: Any, logits: Any, generated: list[int]) -> tuple[TokenLogprob, ...]:
    """Each sampled token's log-probability under the model's raw next-token distribution."""
    import torch

    result = []
    for step, token in enumerate(generated):
        logprob = torch.log_softmax(logits[step][0].float(), dim=-1)[token].item()
        result.append(TokenLogprob(token=tokenizer.decode([token]), logprob=float(logprob)))
    return tuple(result)
