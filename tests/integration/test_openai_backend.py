"""The openai backend against a real llama-server on 127.0.0.1, over a real socket."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from moot.backends.base import GenerationRequest, Message
from moot.backends.config import OpenAIBackendConfig
from moot.backends.openai_api import OpenAIBackend
from moot.calls import Caller
from moot.debate import FinalStatus, Sampling, resolve_protocol, run_debate
from moot.errors import BackendError, ConfigError
from moot.runner.evaluate import build_agents, close_agents, uniform_agents
from moot.seeds import derive_seed
from moot.tasks import ParseStatus, get_task
from tests.integration.servers import SERVER_KEY, SERVER_KEY_ENV, FaultProxy, free_port

pytestmark = [pytest.mark.model, pytest.mark.server]

HELLO = (Message("user", "Say hello in one short sentence."),)


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(SERVER_KEY_ENV, SERVER_KEY)
    yield


def config(base_url: str, **changes: object) -> OpenAIBackendConfig:
    return OpenAIBackendConfig(base_url=base_url, api_key_env=SERVER_KEY_ENV).model_copy(update=changes)


async def test_real_two_agent_two_round_debate_over_http(llama_server: str, key: None) -> None:
    task = get_task("arithmetic")
    question = task.questions(1, seed=1)[0]
    agents = build_agents(uniform_agents(2, config(llama_server), Sampling(temperature=0.0, max_tokens=160)))
    caller = Caller()
    try:
        result = await run_debate(question, task, resolve_protocol("society", agents=2), agents, caller=caller)
    finally:
        await close_agents(agents)
    assert result.status in (FinalStatus.ANSWERED, FinalStatus.UNPARSED), result.error
    turns = [t for r in result.rounds for t in r.turns]
    assert len(turns) == 4 and caller.usage.calls == 4
    assert all(t.text and t.prompt_tokens > 0 and t.completion_tokens > 0 and t.latency_s > 0 for t in turns)
    # every turn carries the extractor's reading of its own text; a reply with no number is unparsed
    for t in turns:
        assert t.answer == task.extract(t.text).answer
        assert (t.parse_status is ParseStatus.PARSED) == (t.answer is not None)
    assert any(t.parse_status is ParseStatus.PARSED for t in turns)
    assert result.rounds[0].turns[1].text in result.rounds[1].turns[0].shown[-1].content
    assert caller.usage.by_model == {f"openai:{llama_server}:qwen-test": 4}  # the server's only model


async def test_samples_logprobs_and_seeds(llama_server: str, key: None) -> None:
    """What goes over the wire (recorded by a pass-through proxy): one n=1 request per sample, sample 0
    with the request's seed and sample 1 with the derived one; what comes back: a reply per sample with
    the log-probability of every generated token. (Whether two greedy requests give the same text
    depends on the server's batching and prompt cache, so it is not asserted here.)"""
    proxy = FaultProxy(llama_server)
    backend = OpenAIBackend(config(proxy.url, model="qwen-test"))
    try:
        reply = await backend.generate(
            GenerationRequest(messages=HELLO, n=2, max_tokens=24, temperature=0.0, seed=3, logprobs=True)
        )
        assert len(reply.samples) == 2
        for sample in reply.samples:
            assert sample.logprobs and all(lp.logprob <= 0.0 for lp in sample.logprobs)
            assert len(sample.logprobs) == sample.completion_tokens
            assert "".join(lp.token for lp in sample.logprobs) == sample.text
            assert sample.finish_reason in ("stop", "length")
        sent = sorted(proxy.bodies, key=lambda b: b["seed"] != 3)
        assert [b["seed"] for b in sent] == [3, derive_seed(3, 1)]
        assert all(b["n"] == 1 and b["logprobs"] is True and b["temperature"] == 0.0 for b in sent)
        assert all(b["messages"] == [{"role": "user", "content": HELLO[0].content}] for b in sent)
        plain = await backend.generate(GenerationRequest(messages=HELLO, max_tokens=24, temperature=0.0, seed=3))
        assert plain.samples[0].logprobs is None and plain.samples[0].text
        assert "logprobs" not in proxy.bodies[-1] and proxy.bodies[-1]["seed"] == 3
    finally:
        await backend.aclose()
        proxy.close()


async def test_a_repeated_prefix_is_reported_cached(llama_server: str, key: None) -> None:
    """llama-server reports the prompt tokens it had cached (usage.prompt_tokens_details.cached_tokens, its
    timings' cache_n): the same request again finds its prompt cached (but its last token); the sample keeps it."""
    backend = OpenAIBackend(config(llama_server, model="qwen-test"))
    long = (Message("system", "You are a careful assistant who checks every step. " * 12), *HELLO)
    request = GenerationRequest(messages=long, max_tokens=4, temperature=0.0, seed=5)
    try:
        first, second = [(await backend.generate(request)).samples[0] for _ in range(2)]
    finally:
        await backend.aclose()
    assert first.cached_tokens is not None and second.cached_tokens is not None
    assert first.prompt_tokens == second.prompt_tokens > 100
    assert first.cached_tokens < second.cached_tokens < second.prompt_tokens


async def test_the_api_key_comes_from_the_environment_only(llama_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SERVER_KEY_ENV, "wrong-key")
    cfg = config(llama_server, model="qwen-test")
    assert SERVER_KEY not in cfg.model_dump_json() and "wrong-key" not in cfg.model_dump_json()
    backend = OpenAIBackend(cfg)
    with pytest.raises(BackendError, match="answered HTTP 401"):
        await backend.generate(GenerationRequest(messages=HELLO, max_tokens=8))
    await backend.aclose()


async def test_server_errors_become_backend_errors(llama_server: str, key: None) -> None:
    backend = OpenAIBackend(config(llama_server, model="qwen-test"))
    too_long = (Message("user", "word " * 6000),)  # beyond a 4096-token slot
    with pytest.raises(BackendError, match=r"answered HTTP 4\d\d"):
        await backend.generate(GenerationRequest(messages=too_long, max_tokens=8))
    await backend.aclose()


async def test_unreachable_server_is_one_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    backend = OpenAIBackend(OpenAIBackendConfig(base_url=url, max_retries=0))
    with pytest.raises(BackendError, match=f"cannot reach {url}"):
        await backend.generate(GenerationRequest(messages=HELLO))
    await backend.aclose()
    with pytest.raises(ConfigError, match="needs a base URL"):
        OpenAIBackend(OpenAIBackendConfig())
