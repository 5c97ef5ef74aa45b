"""The in-process llama-cpp backend with the real 0.5B model: a real debate, exact seeds, log-probabilities."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator

import pytest

from moot.backends.base import GenerationRequest, Message
from moot.backends.config import LlamaCppBackendConfig
from moot.backends.factory import make_backend
from moot.backends.local import LocalBackend
from moot.calls import Caller
from moot.debate import FinalStatus, Sampling, resolve_protocol, run_debate
from moot.debate.components.aggregation import majority_vote
from moot.models import TEST_MODEL
from moot.runner.evaluate import build_agents, close_agents, uniform_agents
from moot.tasks import ParseStatus, get_task

pytestmark = pytest.mark.model

POEM = (Message("user", "Write one short sentence about the sea."),)


@pytest.fixture(scope="module")
def backend(tiny_model) -> Iterator[LocalBackend]:  # type: ignore[no-untyped-def]
    """One loaded model for the module; its generation thread serves every test's event loop."""
    local = make_backend(LlamaCppBackendConfig(model=TEST_MODEL, n_ctx=4096))
    assert isinstance(local, LocalBackend)
    yield local
    asyncio.run(local.aclose())


async def test_real_two_agent_two_round_debate(tiny_model) -> None:  # type: ignore[no-untyped-def]
    task = get_task("arithmetic")
    question = task.questions(1, seed=0)[0]
    specs = uniform_agents(2, LlamaCppBackendConfig(model=TEST_MODEL, n_ctx=4096), Sampling(max_tokens=160))
    agents = build_agents(specs)
    assert agents[0].backend is agents[1].backend  # one model instance serves both agents
    caller = Caller()
    try:
        result = await run_debate(question, task, resolve_protocol("society", agents=2), agents, caller=caller)
    finally:
        await close_agents(agents)

    assert result.status in (FinalStatus.ANSWERED, FinalStatus.UNPARSED)
    assert [r.index for r in result.rounds] == [0, 1]
    turns = [t for r in result.rounds for t in r.turns]
    assert len(turns) == 4
    assert all(t.text and t.completion_tokens > 0 and t.prompt_tokens > 0 and t.latency_s > 0 for t in turns)
    # every turn carries the extractor's reading of its own text; a reply with no number is unparsed
    for t in turns:
        assert t.answer == task.extract(t.text).answer
        assert (t.parse_status is ParseStatus.PARSED) == (t.answer is not None)
    assert any(t.parse_status is ParseStatus.PARSED for t in turns)
    for record in result.rounds:
        assert record.vote.counts == majority_vote([t.answer for t in record.turns]).counts
    assert result.final_answer == result.rounds[-1].vote.winner
    # round 1 prompts hold the question, the agent's own reply and its peer's reply
    for own, peer, later in ((0, 1, 0), (1, 0, 1)):
        shown = result.rounds[1].turns[later].shown
        assert shown[-2].content == result.rounds[0].turns[own].text
        assert result.rounds[0].turns[peer].text in shown[-1].content
        assert result.rounds[1].turns[later].prompt_tokens > result.rounds[0].turns[own].prompt_tokens
    assert caller.usage.calls == 4
    assert caller.usage.completion_tokens == sum(t.completion_tokens for t in turns)
    assert caller.usage.by_model == {agents[0].backend.model_id: 4}
    assert agents[0].backend.model_id.startswith("gguf:1d9614638d18")


async def test_seeded_sampling_is_reproducible(backend: LocalBackend) -> None:
    request = GenerationRequest(messages=POEM, temperature=1.0, max_tokens=40, seed=1234)
    first = await backend.generate(request)
    again = await backend.generate(request)
    assert first.samples[0].text == again.samples[0].text
    two = await backend.generate(GenerationRequest(messages=POEM, n=2, temperature=1.0, max_tokens=40, seed=1234))
    assert len(two.samples) == 2
    assert two.samples[0].text == first.samples[0].text  # sample 0 uses the request seed
    others = {
        (await backend.generate(GenerationRequest(messages=POEM, temperature=1.0, max_tokens=40, seed=s)))
        .samples[0]
        .text
        for s in (1, 2, 3)
    }
    assert len(others | {first.samples[0].text}) > 1


async def test_logprobs_of_the_generated_tokens(backend: LocalBackend) -> None:
    plain = await backend.generate(GenerationRequest(messages=POEM, max_tokens=24, seed=5, temperature=0.0))
    assert plain.samples[0].logprobs is None
    reply = await backend.generate(
        GenerationRequest(messages=POEM, max_tokens=24, seed=5, temperature=0.0, logprobs=True)
    )
    sample = reply.samples[0]
    assert sample.logprobs is not None and len(sample.logprobs) > 0
    assert all(lp.logprob <= 0.0 and math.isfinite(lp.logprob) for lp in sample.logprobs)
    assert len(sample.logprobs) in (sample.completion_tokens, sample.completion_tokens - 1)
    assert "".join(lp.token for lp in sample.logprobs).strip().startswith(sample.text.strip()[:10])
    # greedy decoding: the same text with or without logits for every token
    assert sample.text == plain.samples[0].text
