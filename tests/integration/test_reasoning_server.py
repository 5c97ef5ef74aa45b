"""Reasoning and content arriving apart from a real llama-server (``--reasoning-format deepseek``).

No reasoning model installs from the package registries, so the embedded 0.5B model is served with a chat
template of Qwen3's form (tests/fixtures/thinking_template.jinja): the generation prompt opens a <think>
block, llama-server recognises the form and returns what the model writes before </think> as
``reasoning_content``, as it does for Qwen3, QwQ and the DeepSeek-R1 distills."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from moot.backends.base import GenerationRequest, Message
from moot.backends.config import OpenAIBackendConfig
from moot.backends.openai_api import OpenAIBackend
from moot.calls import Caller
from moot.debate import Sampling, resolve_protocol, run_debate
from moot.runner.evaluate import build_agents, close_agents, uniform_agents
from moot.tasks import ParseStatus, get_task
from tests.integration.servers import SERVER_KEY, SERVER_KEY_ENV, start_llama_server, stop_server

pytestmark = [pytest.mark.model, pytest.mark.server]

FIXTURES = Path(__file__).parent.parent / "fixtures"

THINK_THEN_BOX = (
    Message(
        "user",
        "What is 12+30? Think briefly, end your thinking with </think>, and then write the final answer as \\boxed{N}.",
    ),
)


@pytest.fixture(scope="module")
def thinking_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("thinking") / "llama-server.log"
    template = FIXTURES / "thinking_template.jinja"
    extra = ("--reasoning-format", "deepseek", "--chat-template-file", str(template))
    proc, url = start_llama_server(tiny_model, log, threads=os.cpu_count() or 2, extra=extra)
    try:
        yield url
    finally:
        stop_server(proc)


def backend(url: str) -> OpenAIBackend:
    return OpenAIBackend(OpenAIBackendConfig(base_url=url, api_key_env=SERVER_KEY_ENV, max_retries=0))


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SERVER_KEY_ENV, SERVER_KEY)


async def test_reasoning_and_content_arrive_apart_and_the_reasoning_is_counted(thinking_server: str, key: None) -> None:
    server = backend(thinking_server)
    try:
        sample = (await server.generate(GenerationRequest(THINK_THEN_BOX, temperature=0.0, max_tokens=96))).samples[0]
        expected = await server.count_tokens(sample.reasoning or "")
    finally:
        await server.aclose()
    assert sample.reasoning, sample  # the server's reasoning_content
    assert "<think>" not in sample.text + sample.reasoning and "</think>" not in sample.text + sample.reasoning
    assert "\\boxed" in sample.text and "\\boxed" not in sample.reasoning
    # llama-server reports no reasoning_tokens: its /tokenize counts them, a part of the completion's
    assert sample.reasoning_tokens == expected and expected is not None and 0 < expected < sample.completion_tokens


async def test_thinking_off_and_a_limit_inside_the_reasoning(thinking_server: str, key: None) -> None:
    server = backend(thinking_server)
    essay = (Message("user", "Write a long essay about the number 42."),)
    try:
        off = await server.generate(GenerationRequest(THINK_THEN_BOX, temperature=0.0, max_tokens=64, thinking=False))
        cut = (await server.generate(GenerationRequest(essay, temperature=0.0, max_tokens=12))).samples[0]
    finally:
        await server.aclose()
    assert off.samples[0].reasoning is None  # the template closed the block: no reasoning
    assert (cut.finish_reason, cut.text) == ("length", "") and cut.reasoning


async def test_a_debate_reads_answers_from_the_content_and_shows_peers_the_view(
    thinking_server: str, key: None
) -> None:
    task = get_task("arithmetic")
    question = task.questions(1, seed=1)[0]
    config = OpenAIBackendConfig(base_url=thinking_server, api_key_env=SERVER_KEY_ENV)
    agents = build_agents(uniform_agents(2, config, Sampling(temperature=0.0, max_tokens=160)))
    protocol = resolve_protocol("society", agents=2, components={"peer_view": "reasoning:8"})
    try:
        result = await run_debate(question, task, protocol, agents, caller=Caller())
    finally:
        await close_agents(agents)
    assert result.error is None, result.error
    turns = [t for r in result.rounds for t in r.turns]
    assert any(t.reasoning for t in turns)
    for t in turns:
        assert t.answer == task.extract(t.text).answer  # the content alone is read
        assert (t.parse_status is ParseStatus.UNPARSED) == (t.answer is None)
        if t.reasoning_only:
            assert t.parse_status is ParseStatus.UNPARSED
    first = result.rounds[0].turns[0]
    heard = result.rounds[1].turns[1].shown[-1].content  # agent 2 hears agent 1's round-0 reply
    assert first.peer_text in heard
    if first.reasoning is not None:
        assert first.seen is not None and first.seen.startswith("<think>\n")
