"""A hostile server (issue 42): no reply it sends aborts a run, hangs it, or blows its memory.

A poisoned reply (a lone surrogate, brackets nested 200,000 deep, a token count of 10**30, a NaN
log-probability, fewer log-probabilities than tokens) is a failed call, and after its retries a
BackendError that ends only its question; a server that trickles its reply a byte at a time fails within
``timeout_s``; a reply larger than ``max_reply_bytes`` fails while it is read, not after; a redirect is
refused by name, never followed. The servers are real HTTP on 127.0.0.1 (``Hostile`` below answers each
chat completion with a script; tests.integration.servers.FaultProxy is the well-behaved one).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from moot.backends.base import GenerationRequest, Message
from moot.backends.config import OpenAIBackendConfig
from moot.backends.openai_api import OpenAIBackend
from moot.errors import BackendError, ConfigError
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from moot.runner.store import RunStore
from tests.integration.servers import (
    CANNED_MODEL,
    Answer,
    FaultProxy,
    Handler,
    Hostile,
    canned_completion,
    completion,
    reply,
    trickle,
)

HELLO = GenerationRequest(messages=(Message("user", "What is 2+2?"),), max_tokens=8)
WITH_LOGPROBS = GenerationRequest(messages=HELLO.messages, max_tokens=8, logprobs=True)
MIB = 2**20


def poisoned(data: dict[str, Any]) -> Answer:
    return reply(json.dumps(data).encode())


def logprobs(*values: float, finish_reason: str = "length", completion_tokens: int = 3) -> Answer:
    tokens = [{"token": f"t{i}", "logprob": v, "top_logprobs": []} for i, v in enumerate(values)]
    data = completion(
        "".join(f"t{i}" for i in range(len(values))),
        usage={"completion_tokens": completion_tokens},
        logprobs={"content": tokens},
        finish_reason=finish_reason,
    )
    return poisoned(data)


def flood(server: Hostile, total: int, declared: bool, status: int = 200) -> Answer:
    """``total`` bytes of a JSON-looking body in 64 KiB pieces, its length declared or not (the end of the
    body is then the end of the connection); ``server.sent`` counts what got into the socket."""

    def answer(handler: Handler) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        if declared:
            handler.send_header("Content-Length", str(total))
        handler.end_headers()
        piece = b'{"choices": "' + b"x" * (64 * 1024 - 13)
        while server.sent < total:
            handler.wfile.write(piece)
            server.sent += len(piece)

    return answer


def redirect(to: str) -> Answer:
    def answer(handler: Handler) -> None:
        handler.send_response(307)
        handler.send_header("Location", to + handler.path.removeprefix("/v1"))
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return answer


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    server = Hostile()
    yield server
    server.close()


def backend(server: Hostile, **changes: Any) -> OpenAIBackend:
    config = OpenAIBackendConfig(base_url=server.url, model=CANNED_MODEL, max_retries=0)
    return OpenAIBackend(config.model_copy(update=changes))


async def failure(client: OpenAIBackend, request: GenerationRequest = HELLO, within: float = 10.0) -> str:
    """The BackendError a request ends in (within ``within`` seconds: a hang fails the test, not the suite)."""
    try:
        with pytest.raises(BackendError) as raised:
            await asyncio.wait_for(client.generate(request), within)
    finally:
        await client.aclose()
    message = str(raised.value)
    message.encode("utf-8")  # storable and printable: no lone surrogate
    return message


# -- poisoned replies -----------------------------------------------------------------------------------
async def test_a_lone_surrogate_is_stored_readable(hostile: Hostile) -> None:
    """json.loads turns "\\ud800" into a lone surrogate, which no store or terminal can write: each one,
    in the content or the reasoning, is read as U+FFFD."""
    hostile.answers = [poisoned(completion("a\ud800b", message={"reasoning_content": "think \udfff"}))]
    client = backend(hostile)
    sample = (await client.generate(HELLO)).samples[0]
    await client.aclose()
    assert sample.text == "a\ufffdb" and sample.reasoning == "think \ufffd"


async def test_an_error_message_with_a_lone_surrogate_is_readable(hostile: Hostile) -> None:
    hostile.answers = [reply(json.dumps({"error": {"message": "bad \ud800 key"}}).encode(), status=400)]
    assert (await failure(backend(hostile))).endswith("answered HTTP 400: bad \ufffd key")


POISONS: dict[str, tuple[Answer, str]] = {
    "nested": (reply(b"[" * 200_000), "returned a reply nested too deeply to read"),
    "long-number": (
        reply(
            json.dumps(completion(usage={"prompt_tokens": 0}))
            .replace('"prompt_tokens": 0', '"prompt_tokens": ' + "9" * 5000)
            .encode()
        ),
        "returned a reply that moot cannot read (Exceeds the limit (4300 digits)",
    ),
    "huge-usage": (
        poisoned(completion(usage={"prompt_tokens": 10**30})),
        "returned a malformed reply (usage.prompt_tokens: Input should be less than 9007199254740992)",
    ),
    "negative-usage": (
        poisoned(completion(usage={"completion_tokens": -3})),
        "returned a malformed reply (usage.completion_tokens: Input should be greater than or equal to 0)",
    ),
    "huge-reasoning-tokens": (
        poisoned(completion(usage={"completion_tokens_details": {"reasoning_tokens": 2**60}})),
        "returned a malformed reply (usage.completion_tokens_details.reasoning_tokens: Input should be less than",
    ),
}


@pytest.mark.parametrize("kind", POISONS)
async def test_a_poisoned_reply_is_a_failed_call(hostile: Hostile, kind: str) -> None:
    answer, reason = POISONS[kind]
    hostile.answers = [answer, answer]
    client = backend(hostile, max_retries=1)
    assert (await failure(client)).startswith(f"{hostile.url} {reason}")
    assert hostile.seen == 2  # a malformed reply: retried within the bound


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), float("-inf"), 0.5], ids=["nan", "infinity", "-infinity", "positive"]
)
async def test_a_log_probability_that_is_no_probability_is_a_failed_call(hostile: Hostile, value: float) -> None:
    hostile.answers = [logprobs(-0.1, value, -2.0)]
    message = await failure(backend(hostile), WITH_LOGPROBS)
    assert message.startswith(f"{hostile.url} returned a malformed reply (choices.0.logprobs.content.1.logprob: ")


async def test_fewer_log_probabilities_than_tokens_is_a_failed_call(hostile: Hostile) -> None:
    hostile.answers = [logprobs(-0.1, -0.2, completion_tokens=5)]
    message = await failure(backend(hostile), WITH_LOGPROBS)
    assert message == f"{hostile.url} returned 2 log-probabilities for 5 generated tokens"


@pytest.mark.parametrize(
    ("answer", "request_"),
    [
        (logprobs(-0.1, 0.0, 1e-9, completion_tokens=3), WITH_LOGPROBS),  # a rounding above 0 is a 0
        (logprobs(-0.1, -0.2, finish_reason="stop", completion_tokens=3), WITH_LOGPROBS),  # its end token unscored
        (logprobs(-0.1, completion_tokens=3), GenerationRequest(HELLO.messages, logprobs=True, stop=("\n\n",))),
    ],
    ids=["rounding", "end-token", "stop-string"],
)
async def test_what_real_servers_send_is_no_failure(
    hostile: Hostile, answer: Answer, request_: GenerationRequest
) -> None:
    """llama-server leaves out the tokens of a stop string, llama-cpp-python the end token's."""
    hostile.answers = [answer]
    client = backend(hostile)
    sample = (await client.generate(request_)).samples[0]
    await client.aclose()
    assert sample.logprobs is not None and sample.completion_tokens == 3


def test_a_run_goes_on_past_every_poisoned_reply(hostile: Hostile, tmp_path: Path) -> None:
    """Each poisoned reply ends its own question with status error; a lone surrogate is answered, stored."""
    path = tmp_path / "run.sqlite"
    hostile.answers = [poisoned(completion("The answer is \ud800 4.")), *(answer for answer, _ in POISONS.values())]
    experiment = parse_experiment(
        {
            "name": "hostile",
            "concurrency": 1,
            "tasks": [{"name": "arithmetic", "count": len(POISONS) + 1}],
            "agent": {"backend": {"kind": "openai", "base_url": hostile.url, "model": CANNED_MODEL, "max_retries": 0}},
            "conditions": [{"name": "single", "protocol": "single"}],
        }
    )
    outcome = asyncio.run(run_experiment(experiment, path))
    assert outcome.ran == len(POISONS) + 1 and outcome.errors == len(POISONS)
    store = RunStore.open(path)
    try:
        status = {r["question_id"]: (r["status"], r["error"]) for r in store.rows("results")}
        texts = [t["text"] for t in store.rows("turns")]
    finally:
        store.close()
    assert status.pop("arithmetic-s0-0")[0] == "answered" and texts == ["The answer is \ufffd 4."]
    reasons = [reason for _, reason in POISONS.values()]
    for i, reason in enumerate(reasons, 1):
        state, error = status[f"arithmetic-s0-{i}"]
        assert state == "error" and (error or "").startswith(f"{hostile.url} {reason}")


# -- no hang, no flood ----------------------------------------------------------------------------------
@pytest.mark.parametrize("part", ["headers", "body"])
async def test_a_trickled_reply_fails_within_the_timeout(hostile: Hostile, part: str) -> None:
    """``timeout_s`` bounds the whole attempt, not each read: a byte every 0.2 s does not hold it open."""
    hostile.answers = [trickle(part)]
    start = time.monotonic()
    message = await failure(backend(hostile, timeout_s=1.0))
    assert message == f"{hostile.url} gave no complete reply within 1 s (the backend's timeout_s)"
    assert time.monotonic() - start < 5


@pytest.mark.parametrize(
    ("declared", "status"), [(False, 200), (True, 200), (False, 500)], ids=["streamed", "declared", "error-page"]
)
async def test_a_reply_larger_than_the_bound_fails_while_it_is_read(
    hostile: Hostile, declared: bool, status: int
) -> None:
    """Whatever its status: the SDK reads an error's body whole too."""
    hostile.answers = [flood(hostile, 64 * MIB, declared, status)]
    client = backend(hostile, max_retries=2)
    assert await failure(client, within=30.0) == f"{hostile.url} sent a reply larger than 8 MiB"
    assert hostile.seen == 1  # not retried: it would be as large again
    assert hostile.sent < 32 * MIB  # the read stopped near the bound


async def test_the_reply_bound_is_configurable(hostile: Hostile) -> None:
    assert OpenAIBackendConfig().max_reply_bytes == 8 * MIB
    assert "max_reply_bytes" not in OpenAIBackendConfig().model_dump(mode="json")  # stored runs resume
    assert OpenAIBackendConfig(max_reply_bytes=1000).model_dump(mode="json")["max_reply_bytes"] == 1000
    with pytest.raises(ValueError, match="greater than 0"):
        OpenAIBackendConfig(max_reply_bytes=0)
    hostile.answers = [poisoned(completion("x" * 2000))]
    assert (
        await failure(backend(hostile, max_reply_bytes=1000)) == f"{hostile.url} sent a reply larger than 1,000 bytes"
    )


async def test_a_compressed_reply_is_refused(hostile: Hostile) -> None:
    """moot asks for replies as they are; a compressed one could hold a reply far larger than the bound."""
    packed = gzip.compress(canned_completion("4"))
    hostile.answers = [reply(packed, headers={"Content-Encoding": "gzip"})]
    message = await failure(backend(hostile))
    assert hostile.headers[-1]["accept-encoding"] == "identity"
    assert message == f"{hostile.url} sent a gzip-encoded reply, though moot asks for replies uncompressed"


# -- redirects ------------------------------------------------------------------------------------------
REFUSED = "moot does not follow redirects: give the final URL as base_url"


async def test_a_redirect_is_refused_not_followed(hostile: Hostile) -> None:
    other = FaultProxy(None)
    try:
        hostile.answers = [redirect(other.url)]
        message = await failure(backend(hostile, max_retries=2))
        target = f"{other.url}/chat/completions"
        assert message == f"{hostile.url} answered HTTP 307 (a redirect to {target}); {REFUSED}"
        assert hostile.seen == 1 and other.seen == 0
    finally:
        other.close()


@pytest.mark.parametrize("model", [CANNED_MODEL, None], ids=["model-given", "server-default"])
async def test_a_redirected_model_list_fails_the_check(hostile: Hostile, model: str | None) -> None:
    other = FaultProxy(None)
    try:
        hostile.model_answers = [redirect(other.url)]
        client = OpenAIBackend(OpenAIBackendConfig(base_url=hostile.url, model=model))
        with pytest.raises(BackendError) as raised:
            await client.check()
        await client.aclose()
        assert str(raised.value) == f"{hostile.url} answered HTTP 307 (a redirect to {other.url}/models); {REFUSED}"
    finally:
        other.close()


def test_a_base_url_the_http_library_cannot_parse_is_a_clear_error_with_the_password_masked() -> None:
    """A "/" in a password that is not percent-encoded ends the authority early: "Invalid port" deep in the
    HTTP library was a traceback naming part of the password."""
    url = "http://user:pass0123456789/word@127.0.0.1:9/v1"
    with pytest.raises(ConfigError, match=r"is not a valid URL; percent-encode") as raised:
        OpenAIBackend(OpenAIBackendConfig(base_url=url, model=CANNED_MODEL))
    assert "pass0123456789" not in str(raised.value)
