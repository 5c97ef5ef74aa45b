"""The hf backend with the real 0.5B model (its GGUF dequantised by transformers): seeds, n samples, token
counts, finish reasons, log-probabilities, and the clear errors of a missing adapter or an unknown model."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from moot.backends.base import GenerationRequest, Message
from moot.backends.config import HFBackendConfig
from moot.backends.factory import make_backend
from moot.backends.hf import HFBackend
from moot.backends.local import sample_seed
from moot.errors import ConfigError
from moot.models import REGISTRY, TEST_MODEL

pytestmark = [pytest.mark.model, pytest.mark.hf]

POEM = (Message("user", "Write one short sentence about the sea."),)
YES = (Message("user", "Reply with the single word yes, and nothing else."),)


@pytest.fixture(scope="module")
def backend(tiny_model: Path) -> Iterator[HFBackend]:
    """One loaded model for the module; its generation thread serves every test's event loop."""
    hf = make_backend(HFBackendConfig(model=TEST_MODEL, n_threads=2))
    assert isinstance(hf, HFBackend)
    asyncio.run(hf.check())
    yield hf
    asyncio.run(hf.aclose())


def _tokenizer(backend: HFBackend) -> object:
    assert backend._loaded is not None
    return backend._loaded.tokenizer


async def test_a_seeded_reply_reproduces_and_its_samples_are_one_sample_requests(backend: HFBackend) -> None:
    request = GenerationRequest(POEM, n=2, temperature=0.9, max_tokens=20, seed=7)
    first, again = await backend.generate(request), await backend.generate(request)
    assert [s.text for s in first.samples] == [s.text for s in again.samples]
    assert len(first.samples) == 2 and first.samples[0].text != first.samples[1].text
    alone = await backend.generate(GenerationRequest(POEM, temperature=0.9, max_tokens=20, seed=sample_seed(7, 1)))
    assert alone.samples[0].text == first.samples[1].text
    assert first.model == backend.model_id == f"gguf:{REGISTRY[TEST_MODEL].sha256}"


async def test_max_tokens_ends_the_reply_with_length_and_counts_are_the_tokenizers(backend: HFBackend) -> None:
    tokenizer = _tokenizer(backend)
    reply = await backend.generate(GenerationRequest(POEM, temperature=0.0, max_tokens=6, logprobs=True))
    sample = reply.samples[0]
    prompt = tokenizer.apply_chat_template([m.as_dict() for m in POEM], add_generation_prompt=True)["input_ids"]  # type: ignore[attr-defined]
    assert (sample.finish_reason, sample.prompt_tokens, sample.completion_tokens) == ("length", len(prompt), 6)
    assert len(tokenizer(sample.text, add_special_tokens=False)["input_ids"]) == 6  # type: ignore[operator]
    assert sample.logprobs is not None and len(sample.logprobs) == 6
    assert "".join(t.token for t in sample.logprobs) == sample.text
    assert all(t.logprob <= 0 and math.isfinite(t.logprob) for t in sample.logprobs)


async def test_an_end_of_turn_stops_the_reply_and_is_counted(backend: HFBackend) -> None:
    tokenizer = _tokenizer(backend)
    sample = (await backend.generate(GenerationRequest(YES, temperature=0.0, max_tokens=20))).samples[0]
    assert sample.finish_reason == "stop" and sample.text.strip().lower().startswith("yes")
    assert sample.completion_tokens == len(tokenizer(sample.text, add_special_tokens=False)["input_ids"]) + 1  # type: ignore[operator]


async def test_a_stop_string_ends_the_reply_before_it(backend: HFBackend) -> None:
    whole = (await backend.generate(GenerationRequest(POEM, temperature=0.0, max_tokens=12))).samples[0]
    word = whole.text.split()[2]
    cut = (await backend.generate(GenerationRequest(POEM, temperature=0.0, max_tokens=12, stop=(word,)))).samples[0]
    assert cut.finish_reason == "stop" and cut.text == whole.text[: whole.text.index(word)]


def test_a_missing_adapter_and_an_unknown_model_are_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"adapter '.*nowhere' not found: give the folder of a peft adapter"):
        make_backend(HFBackendConfig(model=TEST_MODEL, adapter=str(tmp_path / "nowhere")))
    with pytest.raises(ConfigError, match="unknown model 'qwen2.5-05b'.*did you mean qwen2.5-0.5b"):
        make_backend(HFBackendConfig(model="qwen2.5-05b"))
