"""The openai backend on several endpoints serving one model, and sized by its servers.

Requests go to the endpoint with the least outstanding work; one that fails (connection, timeout, 5xx)
is out of rotation for a cool-down, its request retried on another; every endpoint is checked before a
run; each sample records the endpoint that answered it; ``/props`` (llama-server's ``total_slots``)
sizes an endpoint unless ``max_concurrency`` is given. The servers are real HTTP on 127.0.0.1
(tests.integration.servers.FaultProxy without an upstream answers canned chat completions).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from moot.backends.base import GenerationRequest, Message
from moot.backends.config import OpenAIBackendConfig, parse_backend
from moot.backends.openai_api import OpenAIBackend
from moot.errors import BackendError, ConfigError
from moot.runner.cache import call_key
from moot.runner.config_files import parse_experiment
from moot.runner.config_resolve import fingerprint_hash, resolve, results_fingerprint
from moot.runner.experiment import run_experiment
from moot.runner.options import AgentOptions
from moot.runner.store import RunStore
from moot.runner.store_paths import default_output
from tests.integration.servers import CANNED_MODEL, FaultProxy, free_port, refused

REQUEST = GenerationRequest(messages=(Message("user", "What is 2+2?"),), max_tokens=8)
FIXTURES = Path(__file__).parent / "fixtures"
SAME_MODEL = "the endpoints of a backend must serve the same model"

Servers = Callable[..., FaultProxy]


@pytest.fixture
def servers() -> Iterator[Servers]:
    """Make fake servers (FaultProxy without an upstream); all are closed after the test."""
    made: list[FaultProxy] = []

    def make(**options: Any) -> FaultProxy:
        made.append(FaultProxy(None, **options))
        return made[-1]

    yield make
    for server in made:
        server.close()


def backend(*urls: str, **options: Any) -> OpenAIBackend:
    return OpenAIBackend(OpenAIBackendConfig(base_url=list(urls), model=CANNED_MODEL, **options))


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there


# -- spreading requests ------------------------------------------------------------------------------------
async def test_requests_spread_over_endpoints_by_least_outstanding_work(servers: Servers) -> None:
    a, b = servers(faults=["slow:0.3"] * 4), servers(faults=["slow:0.3"] * 4)
    client = backend(a.url, b.url, max_concurrency=8)
    replies = await asyncio.gather(*(client.generate(REQUEST) for _ in range(8)))
    await client.aclose()
    assert (a.seen, b.seen) == (4, 4) and (a.most_in_flight, b.most_in_flight) == (4, 4)
    endpoints = [r.samples[0].endpoint for r in replies]
    assert endpoints.count(a.url) == endpoints.count(b.url) == 4


async def test_a_slow_endpoint_takes_fewer_requests(servers: Servers) -> None:
    slow, fast = servers(faults=["slow:1.0"] * 20), servers()
    client = backend(slow.url, fast.url, max_concurrency=2)
    await asyncio.gather(*(client.generate(REQUEST) for _ in range(20)))
    await client.aclose()
    assert slow.seen + fast.seen == 20 and slow.seen <= 4 < fast.seen
    assert max(slow.most_in_flight, fast.most_in_flight) <= 2  # each endpoint's limit


async def test_the_order_of_the_urls_does_not_change_the_model_id_or_the_call_keys(servers: Servers) -> None:
    a, b = servers(), servers()
    ab, ba = backend(a.url, b.url), backend(b.url, a.url)
    assert ab.model_id == ba.model_id == f"openai:{','.join(sorted([a.url, b.url]))}:{CANNED_MODEL}"
    assert call_key(ab, REQUEST, "agent-1") == call_key(ba, REQUEST, "agent-1")
    assert backend(a.url).model_id == f"openai:{a.url}:{CANNED_MODEL}"  # one endpoint: as before
    for client in (ab, ba):
        await client.aclose()


# -- failing endpoints -------------------------------------------------------------------------------------
async def test_a_failing_endpoint_is_taken_out_then_tried_again_after_its_cooldown(servers: Servers) -> None:
    failing, healthy = servers(faults=[503]), servers()
    client = backend(failing.url, healthy.url, cooldown_s=0.6)
    start = time.monotonic()
    first = await client.generate(REQUEST)  # the first endpoint (a tie) answers 503: retried on the other
    assert time.monotonic() - start < 0.35  # at once, without the backoff of a retry on the same server
    assert first.samples[0].endpoint == healthy.url and (failing.seen, healthy.seen, client.retries) == (1, 1, 1)
    for _ in range(3):
        assert (await client.generate(REQUEST)).samples[0].endpoint == healthy.url  # out of rotation
    assert (failing.seen, healthy.seen) == (1, 4)
    await asyncio.sleep(0.7)
    again = await client.generate(REQUEST)  # back in rotation: tried again, and it answers now
    assert again.samples[0].endpoint == failing.url and failing.seen == 2
    await client.aclose()


async def test_a_cooldown_doubles_when_the_endpoint_fails_again(servers: Servers) -> None:
    failing, healthy = servers(faults=[503, 503]), servers()
    client = backend(failing.url, healthy.url, cooldown_s=0.4)
    await client.generate(REQUEST)
    await asyncio.sleep(0.5)
    assert (await client.generate(REQUEST)).samples[0].endpoint == healthy.url  # tried, failed again
    assert failing.seen == 2
    assert (await client.generate(REQUEST)).samples[0].endpoint == healthy.url and failing.seen == 2
    left = client._endpoints[0].down_until - time.monotonic()
    assert 0.5 < left <= 0.8  # out for twice the cool-down this time
    await client.aclose()


async def test_a_dead_endpoint_is_taken_out_and_requests_complete_on_the_others(servers: Servers) -> None:
    alive = servers()
    client = backend(dead_url(), alive.url)
    replies = await asyncio.gather(*(client.generate(REQUEST) for _ in range(6)))
    await client.aclose()
    assert {r.samples[0].endpoint for r in replies} == {alive.url} and alive.seen == 6
    assert client.retries >= 1 and client._endpoints[0].failures == 1  # one cool-down, not one per request


async def test_every_endpoint_dead_is_one_clear_backend_error() -> None:
    urls = [dead_url(), dead_url()]
    client = backend(*urls, cooldown_s=0.05)
    with pytest.raises(BackendError) as raised:
        await client.generate(REQUEST)
    await client.aclose()
    reasons = "; ".join(refused(url) for url in urls)
    assert str(raised.value) == f"every endpoint failed: {reasons}"
    assert client.retries == 2  # within the retry bound: it waited for the soonest to return, once


async def test_one_endpoint_is_never_taken_out_and_fails_as_before(servers: Servers) -> None:
    server = servers(faults=[503, 503, 503])
    client = backend(server.url, max_retries=1)
    with pytest.raises(BackendError) as raised:
        await client.generate(REQUEST)
    assert str(raised.value) == f"{server.url} answered HTTP 503: injected 503" and server.seen == 2
    assert (await client.generate(REQUEST)).samples[0].endpoint == server.url  # 503 once more, then answers
    await client.aclose()


def experiment(urls: str | list[str], count: int = 4, protocol: str = "vote") -> Any:
    return parse_experiment(
        {
            "name": "replicas",
            "tasks": [{"name": "arithmetic", "count": count}],
            "agent": {
                "backend": {"kind": "openai", "base_url": urls, "model": CANNED_MODEL},
                "sampling": {"temperature": 0.0, "max_tokens": 24},
            },
            "conditions": [{"name": protocol, "protocol": protocol}],
        }
    )


def test_a_run_completes_on_the_other_endpoints_and_stores_which_one_answered(servers: Servers, tmp_path: Path) -> None:
    failing, a, b = servers(faults=[503] * 50), servers(), servers()
    path = tmp_path / "run.sqlite"
    outcome = asyncio.run(run_experiment(experiment([failing.url, a.url, b.url]), path))
    assert outcome.errors == 0 and outcome.ran == 4 and failing.seen >= 1
    store = RunStore.read(path)
    try:
        assert {r["status"] for r in store.rows("results")} == {"answered"}
        replies = [json.loads(r["reply"]) for r in store.rows("calls")]
        assert {s["endpoint"] for reply in replies for s in reply["samples"]} == {a.url, b.url}
        (call, *_) = store.calls()
        reply = store.cached_reply(call.key)
        assert reply is not None and reply.samples[0].endpoint in (a.url, b.url)
        urls = ",".join(sorted([failing.url, a.url, b.url]))
        assert store.run_meta().models[CANNED_MODEL].model_id == f"openai:{urls}:{CANNED_MODEL}"
    finally:
        store.close()


def test_calls_stored_before_endpoints_were_recorded_read_back_without_one(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite"
    shutil.copy(FIXTURES / "store_v1.sqlite", path)
    store = RunStore.read(path)
    try:
        rows = list(store.rows("calls"))
        assert rows and all("endpoint" not in json.loads(r["reply"])["samples"][0] for r in rows)
        for row in rows:
            reply = store.cached_reply(row["key"])
            assert reply is not None and all(s.endpoint is None for s in reply.samples)
    finally:
        store.close()


# -- checking every endpoint -------------------------------------------------------------------------------
async def test_check_names_the_endpoint_that_cannot_be_reached(servers: Servers) -> None:
    alive, dead = servers(), dead_url()
    client = backend(alive.url, dead, max_retries=0)
    with pytest.raises(BackendError, match=f"^cannot reach {re.escape(dead)}: "):
        await client.check()
    await client.aclose()


async def test_check_names_the_endpoint_that_serves_another_model(servers: Servers) -> None:
    a, same, other = servers(), servers(), servers(models=("other",))

    async def check(urls: list[str], model: str | None) -> None:
        client = OpenAIBackend(OpenAIBackendConfig(base_url=urls, model=model))
        try:
            await client.check()
        finally:
            await client.aclose()

    expected = f"{other.url} does not serve {CANNED_MODEL} (it serves other; {a.url} does): {SAME_MODEL}"
    for model in (CANNED_MODEL, None):  # the configured model, or the first endpoint's only one
        with pytest.raises(ConfigError) as raised:
            await check([a.url, other.url], model)
        assert str(raised.value) == expected
        await check([a.url, same.url], model)
    # a name none of them lists (a server that answers to any name, as llama-server): they must list the same
    with pytest.raises(ConfigError) as raised:
        await check([a.url, other.url], "alias")
    assert str(raised.value) == f"{other.url} serves other, {a.url} serves {CANNED_MODEL}: {SAME_MODEL}"
    await check([a.url, same.url], "alias")


def test_the_cli_takes_several_base_urls(servers: Servers, tmp_path: Path) -> None:
    alive, dead = servers(), dead_url()
    result = subprocess.run(
        [sys.executable, "-m", "moot", "run", "--backend", "openai", "--base-url", alive.url, "--base-url", dead]
        + ["--model", CANNED_MODEL, "-q", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip() == f"moot: error: {refused(dead)}"
    assert list(tmp_path.iterdir()) == []  # caught before any store is made


# -- sized by the server -----------------------------------------------------------------------------------
async def test_an_endpoint_is_sized_by_its_servers_slots(servers: Servers) -> None:
    llama = servers(props={"total_slots": 3, "default_generation_settings": {"n_ctx": 4096}})
    client = OpenAIBackend(OpenAIBackendConfig(base_url=llama.url, model=CANNED_MODEL))
    assert client.parallel == 8  # until the server is asked
    await client.check()
    assert client.parallel == 3 and llama.props_asked == 1
    llama.faults = ["slow:0.3"] * 9
    await asyncio.gather(*(client.generate(REQUEST) for _ in range(9)))
    await client.aclose()
    assert llama.most_in_flight == 3


async def test_a_server_that_says_nothing_gets_8_and_a_given_limit_wins(servers: Servers) -> None:
    llama, vllm, silent = servers(props={"total_slots": 3}), servers(props=404), servers()
    several = backend(llama.url, vllm.url, silent.url)  # silent answers /props without total_slots
    await several.check()
    assert several.parallel == 3 + 8 + 8 and (llama.props_asked, vllm.props_asked) == (1, 1)
    given = backend(llama.url, max_concurrency=5)
    await given.check()
    assert given.parallel == 5 and llama.props_asked == 1  # not even asked
    for client in (several, given):
        await client.aclose()


# -- configuration -----------------------------------------------------------------------------------------
def test_a_url_and_a_list_of_one_are_the_same_config_and_fingerprint() -> None:
    one = OpenAIBackendConfig(base_url="http://h/v1", model="m")
    listed = parse_backend(kind="openai", base_url=["http://h/v1"], model="m")
    assert one == listed and hash(one) == hash(listed) and getattr(listed, "base_url", None) == "http://h/v1"
    # what a store keeps and the fingerprint hashes, as before endpoints (so older runs resume)
    assert one.model_dump(mode="json") == {
        "kind": "openai",
        "model": "m",
        "logprobs": True,
        "base_url": "http://h/v1",
        "api_key_env": "OPENAI_API_KEY",
        "timeout_s": 600.0,
        "max_retries": 2,
        "max_concurrency": 8,
        "requests_per_minute": None,
    }
    a, b = experiment("http://h/v1"), experiment(["http://h/v1"])
    assert fingerprint_hash(results_fingerprint(a, resolve(a))) == fingerprint_hash(results_fingerprint(b, resolve(b)))
    assert default_output(a) == default_output(b)


def test_several_urls_are_a_list_in_toml_a_tuple_in_the_config_and_redacted_in_dumps() -> None:
    table = tomllib.loads('kind = "openai"\nbase_url = ["http://u:pass-word-1@a:8000/v1", "http://b:8000/v1"]')
    config = parse_backend(**table)
    assert isinstance(config, OpenAIBackendConfig)
    assert config.base_url == config.base_urls == ("http://u:pass-word-1@a:8000/v1", "http://b:8000/v1")
    dumped = config.model_dump(mode="json")
    assert dumped["base_url"] == ["http://***@a:8000/v1", "http://b:8000/v1"] and "cooldown_s" not in dumped
    assert config.describe() == "server-default at http://***@a:8000/v1, http://b:8000/v1"
    assert OpenAIBackendConfig(base_url="http://h/v1", cooldown_s=5).model_dump(mode="json")["cooldown_s"] == 5
    client = OpenAIBackend(config)
    assert "pass-word-1" not in client.model_id and client.model_id.startswith("openai:http://***@a:8000/v1,")


@pytest.mark.parametrize(
    ("urls", "problem"),
    [
        ([], "an empty list of URLs: give one URL, or the URLs of the endpoints"),
        (["http://a/v1", "http://a/v1"], "the list names http://a/v1 twice"),
        (["http://a/v1", ""], "every URL of the list must be a non-empty string"),
    ],
)
def test_a_bad_list_of_urls_is_refused_by_name(urls: list[str], problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        experiment(urls)
    assert f"agent.backend.base_url: {problem}" in str(raised.value)


def test_repeated_base_url_options_make_a_list_and_one_makes_a_url() -> None:
    def url(given: list[str]) -> object:
        backend = AgentOptions.of(backend="openai", base_url=given).agent_template().backend
        return getattr(backend, "base_url", None)

    assert url(["http://a/v1", "http://b/v1"]) == ("http://a/v1", "http://b/v1")
    assert url(["http://a/v1"]) == "http://a/v1"
    with pytest.raises(ConfigError, match="option base_url: an empty list of URLs"):
        url([])


@pytest.mark.parametrize("url", ["file:///tmp/models/v1", "ftp://127.0.0.1/v1", "127.0.0.1:8080/v1"])
def test_a_base_url_that_is_not_http_is_refused_by_name(url: str) -> None:
    with pytest.raises(ConfigError) as refused_url:
        backend(url)
    assert str(refused_url.value) == f"base URL {url} is not an http:// or https:// URL"
