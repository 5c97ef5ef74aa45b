"""Reasoning models: a reply's reasoning read apart from its content by every backend, answers read from the
content only, what peers see of it (``peer_view``), reasoning settings sent per agent, reasoning tokens
counted, and the store, report and fingerprints that record it. The openai backend is tested against a real
HTTP server on 127.0.0.1 that answers as vLLM does (tests/integration/test_reasoning_server.py runs a real
llama-server)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from moot.analysis import build_report
from moot.analysis.render import report_markdown
from moot.backends.base import GenerationRequest, Message
from moot.backends.config import OpenAIBackendConfig
from moot.backends.openai_api import OpenAIBackend
from moot.backends.reasoning import Split, split_reasoning
from moot.backends.scripted import ScriptedBackend, ScriptedReply, register_scripted_model, seeded_numbers
from moot.calls import Caller
from moot.debate import FinalStatus, resolve_protocol, run_debate
from moot.debate.agents import Sampling
from moot.errors import ConfigError
from moot.runner.cache import call_key
from moot.runner.config_files import parse_experiment
from moot.runner.config_resolve import resolve, results_fingerprint
from moot.runner.experiment import run_experiment
from moot.runner.session import RunOptions
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import ParseStatus, Question
from tests.helpers import query, scripted_agents
from tests.integration.servers import JSONHandler, Served

TASK = ArithmeticTask()
QUESTION = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")


# -- reading a reply ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "field", "expected"),
    [
        ("The answer is 4.", None, Split("The answer is 4.", None)),  # no reasoning: the reply as it is
        ("  The answer is 4.\n", None, Split("  The answer is 4.\n", None)),  # untouched, spaces too
        ("<think>2+2 is 4</think>The answer is 4.", None, Split("The answer is 4.", "2+2 is 4")),
        ("\n<think>\n2+2 is 4\n</think>\n\nThe answer is 4.", None, Split("The answer is 4.", "2+2 is 4")),
        # the template opened the block in the prompt (DeepSeek-R1, QwQ): only the closing tag is written
        ("2+2 is 4\n</think>\n\nThe answer is 4.", None, Split("The answer is 4.", "2+2 is 4")),
        # a block that never closes: all reasoning, no content (the token limit hit inside it)
        ("<think>2+2 is 4, so the answer is", None, Split("", "2+2 is 4, so the answer is")),
        # the server's field (vLLM, SGLang, llama-server): the content holds the answer alone
        ("The answer is 4.", "2+2 is 4", Split("The answer is 4.", "2+2 is 4")),
        # llama-server's deepseek-legacy: the field and the same text in tags in the content; kept once
        ("<think>2+2 is 4</think>The answer is 4.", "2+2 is 4", Split("The answer is 4.", "2+2 is 4")),
        ("", "the answer must be 4", Split("", "the answer must be 4")),  # reasoning, then nothing
        # a <think> that is not at the start is the content's own text
        ("I write <think> tags.", None, Split("I write <think> tags.", None)),
        ("", "", Split("", None)),  # an empty field is no reasoning
    ],
)
def test_split_reasoning(content: str, field: str | None, expected: Split) -> None:
    assert split_reasoning(content, field) == expected


@pytest.mark.parametrize(
    ("content", "field", "expected"),
    [
        # a block inside a block: the whole outer block is reasoning, the inner tags kept in it as written
        (
            "<think>a <think>b</think> c</think>The answer is 7.",
            None,
            Split("The answer is 7.", "a <think>b</think> c"),
        ),
        # the same, its outer block opened by the template
        ("a <think>b</think> c</think>The answer is 7.", None, Split("The answer is 7.", "a <think>b</think> c")),
        # a nested block that never closes: all reasoning
        ("<think>a <think>b</think> c", None, Split("", "a <think>b</think> c")),
        # a block after a first sentence: split out, the text before and after it kept as content
        (
            "Let me think. <think>2+2 is 4, not 5</think> The answer is 4.",
            None,
            Split("Let me think.\n\nThe answer is 4.", "2+2 is 4, not 5"),
        ),
        # two blocks: both reasoning, in order; the text between and after them content
        (
            "<think>one</think>Mid. <think>two</think>The answer is 3.",
            None,
            Split("Mid.\n\nThe answer is 3.", "one\n\ntwo"),
        ),
        # an opening tag after the start that never closes is the content's own text, as is a lone one
        ("The answer is 4. <think>hmm", None, Split("The answer is 4. <think>hmm", None)),
        # the server's field and a block of other text in the content: both kept, the field first
        ("<think>2 + 2 = 4</think>The answer is 4.", "2+2 is 4", Split("The answer is 4.", "2+2 is 4\n\n2 + 2 = 4")),
        ("First. <think>b</think> The answer is 4.", "a", Split("First.\n\nThe answer is 4.", "a\n\nb")),
    ],
)
def test_split_reasoning_of_nested_later_and_doubled_blocks(content: str, field: str | None, expected: Split) -> None:
    assert split_reasoning(content, field) == expected


def test_openai_backend_keeps_a_block_beside_the_reasoning_field(vllm_like: Any) -> None:
    """A server that sends ``reasoning_content`` and leaves a <think> block of other text in the content: both
    are the reply's reasoning; the content peers see holds neither."""
    server = vllm_like(("<think>b</think> The answer is 4.", "a", "stop", 3))
    sample = asyncio.run(_generate(server.url, GenerationRequest(ASK))).samples[0]
    assert (sample.text, sample.reasoning) == ("The answer is 4.", "a\n\nb")


# -- a real HTTP server that answers as vLLM does ---------------------------------------------------------
class VLLMLike(Served):
    """A chat-completions server on 127.0.0.1 answering with ``reasoning_content`` apart from ``content``, as
    vLLM's reasoning parsers do; ``/tokenize`` answers token ids (vLLM's form), one per word. ``replies`` are
    (content or None, reasoning, finish reason, reasoning tokens in usage or None), consumed in order;
    ``bodies`` holds every chat request's body as sent."""

    def __init__(self, replies: list[tuple[str | None, str, str, int | None]], tokenize: bool = True):
        self.replies = list(replies)
        self.bodies: list[dict[str, Any]] = []
        self.tokenized: list[str] = []
        server = self

        class Handler(JSONHandler):
            models = ("r1-distill",)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/tokenize":
                    if not tokenize:
                        self._json(404, {"error": "not found"})
                        return
                    server.tokenized.append(body["prompt"])
                    self._json(200, {"tokens": list(range(len(body["prompt"].split()))), "count": 0})
                    return
                server.bodies.append(body)
                content, reasoning, finish, counted = server.replies.pop(0)
                usage: dict[str, Any] = {"prompt_tokens": 11, "completion_tokens": 40}
                if counted is not None:
                    usage["completion_tokens_details"] = {"reasoning_tokens": counted}
                message = {"role": "assistant", "content": content, "reasoning_content": reasoning}
                self._json(
                    200, {"choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}
                )

        self.serve(Handler)


@pytest.fixture
def vllm_like() -> Iterator[Any]:
    made: list[VLLMLike] = []

    def make(*replies: tuple[str | None, str, str, int | None], tokenize: bool = True) -> VLLMLike:
        made.append(VLLMLike(list(replies), tokenize))
        return made[-1]

    yield make
    for server in made:
        server.close()


ASK = (Message("user", "What is 2+2?"),)


async def _generate(url: str, request: GenerationRequest) -> Any:
    backend = OpenAIBackend(OpenAIBackendConfig(base_url=url, model="r1-distill", max_retries=0))
    try:
        return await backend.generate(request)
    finally:
        await backend.aclose()


def test_openai_backend_reads_reasoning_apart_and_counts_its_tokens(vllm_like: Any) -> None:
    server = vllm_like(
        ("The answer is 4.", "two and two make four", "stop", 17),  # the server counts them
        ("The answer is 4.", "two and two make four", "stop", None),  # it does not: /tokenize counts them
    )
    counted = asyncio.run(_generate(server.url, GenerationRequest(ASK))).samples[0]
    assert (counted.text, counted.reasoning, counted.reasoning_tokens) == (
        "The answer is 4.",
        "two and two make four",
        17,
    )
    tokenized = asyncio.run(_generate(server.url, GenerationRequest(ASK))).samples[0]
    assert (tokenized.reasoning, tokenized.reasoning_tokens) == ("two and two make four", 5)
    assert server.tokenized == ["two and two make four"]
    assert tokenized.completion_tokens == 40  # the reasoning is part of the completion, as servers bill it


def test_a_reply_cut_inside_its_reasoning_has_no_content_and_is_not_an_error(vllm_like: Any) -> None:
    """vLLM answers ``content: null`` when the token limit falls inside the reasoning: an empty content and
    finish reason "length", never a failed call (a null content without reasoning is still one)."""
    server = vllm_like((None, "two and two make", "length", None), tokenize=False)
    sample = asyncio.run(_generate(server.url, GenerationRequest(ASK))).samples[0]
    assert (sample.text, sample.reasoning, sample.finish_reason) == ("", "two and two make", "length")
    assert sample.reasoning_tokens is None  # no /tokenize: unknown, not guessed


def test_reasoning_settings_are_sent_only_when_set_and_keep_old_call_keys(vllm_like: Any) -> None:
    server = vllm_like(("4", "r", "stop", 1), ("4", "r", "stop", 1))
    asyncio.run(_generate(server.url, GenerationRequest(ASK)))
    asyncio.run(_generate(server.url, GenerationRequest(ASK, reasoning_effort="high", thinking=False)))
    plain, set_ = server.bodies
    assert "reasoning_effort" not in plain and "chat_template_kwargs" not in plain
    assert set_["reasoning_effort"] == "high"
    assert set_["chat_template_kwargs"] == {"enable_thinking": False}
    # a request without reasoning settings keys as before they existed (stored calls still replay)
    backend = ScriptedBackend(["x"])
    assert GenerationRequest(ASK).payload() == {
        "messages": ({"role": "user", "content": "What is 2+2?"},),
        "n": 1,
        "temperature": 1.0,
        "top_p": 1.0,
        "max_tokens": 512,
        "seed": None,
        "stop": (),
        "logprobs": False,
    }
    assert call_key(backend, GenerationRequest(ASK), "a") != call_key(
        backend, GenerationRequest(ASK, thinking=True), "a"
    )


def test_sampling_dumps_reasoning_settings_only_when_set() -> None:
    assert Sampling().model_dump() == {"temperature": 0.7, "top_p": 1.0, "max_tokens": 512}
    assert Sampling(reasoning_effort="low", thinking=True).model_dump()["reasoning_effort"] == "low"
    with pytest.raises(ValueError, match="reasoning_effort"):
        Sampling(reasoning_effort="")


# -- a debate with reasoning replies ----------------------------------------------------------------------
THOUGHT = "<think>1+6+4-30 is -19, or is it 7?</think>"


def _agents() -> list[Any]:
    return scripted_agents(
        [f"{THOUGHT} The answer is -19.", "<think>still -19</think> The answer is -19."],
        ["<think>the answer is 7</think> The answer is -19.", "The answer is -19."],
        [ScriptedReply("<think>my answer is -19 because", "length"), "The answer is 7."],
    )


def _requests(agent: Any) -> list[GenerationRequest]:
    return cast(ScriptedBackend, agent.backend).requests


def test_answers_come_from_the_content_and_a_reply_without_content_is_unparsed() -> None:
    agents = _agents()
    result = asyncio.run(
        run_debate(QUESTION, TASK, resolve_protocol("society", agents=3, rounds=2), agents, caller=Caller())
    )
    first = result.rounds[0].turns
    # agent 2's reasoning says 7, its content -19: the content is read
    assert [t.answer for t in first] == ["-19", "-19", None]
    assert first[1].reasoning == "the answer is 7"
    # agent 3 was cut off inside its reasoning (it names -19 there): unparsed and truncated, not -19
    assert (first[2].parse_status, first[2].truncated, first[2].reasoning_only) == (ParseStatus.UNPARSED, True, True)
    assert first[2].text == "" and first[2].reasoning == "my answer is -19 because"
    assert result.rounds[0].vote.unparsed == 1
    assert result.final_answer == "-19" and result.status is FinalStatus.ANSWERED
    assert first[0].reasoning_tokens == 7  # the scripted backend counts words


@pytest.mark.parametrize(
    ("view", "own", "peer"),
    [
        ("content", "The answer is -19.", "The answer is -19."),
        ("full", f"<think>\n{THOUGHT[7:-8]}\n</think>\n\nThe answer is -19.", None),
        ("reasoning:3", "<think>\n1+6+4-30 is -19, ...\n</think>\n\nThe answer is -19.", None),
    ],
)
def test_peer_view_sets_what_peers_and_the_agent_itself_see_again(view: str, own: str, peer: str | None) -> None:
    agents = _agents()
    protocol = resolve_protocol("society", agents=3, rounds=2, components={"peer_view": view})
    result = asyncio.run(run_debate(QUESTION, TASK, protocol, agents, caller=Caller()))
    second = _requests(agents[0])[1].messages
    assert second[2] == Message("assistant", own)  # agent 1's own reply, as its next prompt holds it
    debate = _requests(agents[1])[1].messages[-1].content  # agent 2 hears agent 1
    assert f"```{own}```" in debate
    if peer is not None:
        assert "<think>" not in debate and "1+6+4-30" not in debate
    turn = result.rounds[0].turns[0]
    assert turn.peer_text == own and (turn.seen is None) == (view == "content")


def test_peer_view_is_checked_and_recorded_only_when_not_the_default() -> None:
    with pytest.raises(ConfigError, match="peer_view"):
        resolve_protocol("society", components={"peer_view": "reasoning:0"})
    with pytest.raises(ConfigError, match="peer_view"):
        resolve_protocol("society", components={"peer_view": "all"})
    default = resolve_protocol("society")
    assert "peer_view" not in default.model_dump()  # stored conditions keep their JSON and fingerprint
    assert resolve_protocol("society", components={"peer_view": "full"}).model_dump()["peer_view"] == "full"
    assert "content" in default.describe()["peer view"]


def thinking_numbers(request: GenerationRequest, index: int) -> str:
    """A scripted thinking model: seeded_numbers' answer after a <think> block of two words."""
    answer = seeded_numbers(request, index)
    return f"<think>perhaps {len(answer)} or so</think> {answer}"


register_scripted_model("thinking-numbers", thinking_numbers)


def _experiment(view: str = "content") -> Any:
    return parse_experiment(
        {
            "name": "reasoning",
            "tasks": [{"name": "arithmetic", "count": 2, "seed": 0}],
            "agent": {"backend": {"kind": "scripted", "model": "thinking-numbers"}, "sampling": {"thinking": True}},
            "conditions": [{"name": "society", "protocol": "society", "peer_view": view}],
        }
    )


def test_the_view_and_reasoning_settings_are_recorded_and_change_the_fingerprint() -> None:
    full, content = _experiment("full"), _experiment()
    assert results_fingerprint(full, resolve(full)) != results_fingerprint(content, resolve(content))
    condition = resolve(full)[0]
    assert condition.protocol.peer_view == "full" and condition.agents[0].sampling.thinking is True


def test_a_run_stores_reasoning_apart_and_the_report_counts_it(tmp_path: Path) -> None:
    """The turns table holds each reply's content, reasoning, reasoning tokens and what peers saw; the
    report's replies table counts the replies that reasoned and their tokens."""
    path = tmp_path / "run.sqlite"
    asyncio.run(run_experiment(_experiment("full"), path, RunOptions()))
    rows = query(path, "SELECT text, reasoning, reasoning_tokens, seen, answer FROM turns ORDER BY rowid")
    assert len(rows) == 12
    for text, reasoning, tokens, seen, answer in rows:
        assert "<think>" not in text and reasoning.startswith("perhaps ") and tokens == len(reasoning.split())
        assert seen == f"<think>\n{reasoning}\n</think>\n\n{text}"
        assert answer is not None and answer in text
    report = report_markdown(build_report(path, resamples=200))
    assert "| with reasoning | reasoning tokens | no content after reasoning |" in report.replace("\n", " ")
    assert "| society | 12 | 0 | 0 | — | — | 12 | 48 | 0 |" in report  # 12 replies, 4 words of reasoning each
