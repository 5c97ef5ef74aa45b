"""How the openai backend paces requests: AIMD concurrency, a tokens-per-minute budget, prefix affinity
over several endpoints, caps read from a server's kind, and the run's --max-concurrency.

Units are checked against hand-computed values; the backend against real HTTP servers on 127.0.0.1
(tests.integration.servers.FaultProxy answering canned chat completions).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from moot.backends import routing
from moot.backends.base import GenerationRequest, Message
from moot.backends.config import OpenAIBackendConfig
from moot.backends.llama_server import LlamaServerBackend, ManagedServer
from moot.backends.openai_api import OpenAIBackend
from moot.backends.routing import PrefixMap, TokenBudget, Window, affine
from moot.runner.config_files import parse_experiment
from moot.runner.store_paths import default_output
from tests.integration.servers import CANNED_MODEL, FaultProxy

CANNED = "The answer is 4."  # FaultProxy's reply: 7 prompt and 4 completion tokens
REQUEST = GenerationRequest(messages=(Message("user", "What is 2+2?"),), max_tokens=8)


@pytest.fixture
def proxies() -> Iterator[list[FaultProxy]]:
    made: list[FaultProxy] = []
    yield made
    for server in made:
        server.close()


def serve(made: list[FaultProxy], **options: Any) -> FaultProxy:
    made.append(FaultProxy(None, **options))
    return made[-1]


def backend(*urls: str, **options: Any) -> OpenAIBackend:
    return OpenAIBackend(OpenAIBackendConfig(base_url=list(urls), model=CANNED_MODEL, **options))


# -- the window: additive increase, multiplicative decrease ------------------------------------------------
def test_an_overload_halves_the_window_once_per_burst() -> None:
    window = Window(8)
    assert window.limit == 8
    sent_at = window.halvings  # three requests sent together all answer 429
    for _ in range(3):
        window.overloaded(sent_at)
    assert window.limit == 4 and window.halvings == 1
    window.overloaded(window.halvings)  # one sent after the halving: halves again
    assert window.limit == 2
    for _ in range(5):
        window.overloaded(window.halvings)
    assert window.limit == 1  # never below one


def test_answers_grow_the_window_by_one_per_full_window() -> None:
    window = Window(8)
    window.overloaded(0)
    # 4 + 1/4 + 1/4.25 + 1/4.4853 + 1/4.7082 = 4.9206; + 1/4.9206 = 5.1239: the 5th answer makes it 5
    rose = [window.answered() for _ in range(5)]
    assert rose == [False, False, False, False, True] and window.limit == 5
    assert window.size == pytest.approx(5.12386, abs=1e-5)
    for _ in range(40):
        window.answered()
    assert window.limit == 8 and window.size == 8.0  # back to the cap, never above


def test_a_fixed_window_ignores_overloads() -> None:
    window = Window(8, adaptive=False)
    window.overloaded(0)
    assert window.limit == 8 and not window.answered()
    window.resize(3)
    assert window.limit == 3


# -- the tokens-per-minute budget --------------------------------------------------------------------------
def test_a_prompt_is_estimated_at_four_characters_a_token() -> None:
    messages = [Message("system", "abcd" * 3), Message("user", "x")]  # 13 characters
    assert TokenBudget.prompt_estimate(messages) == 4


async def test_the_budget_waits_for_the_minute_to_free_what_a_request_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(routing, "WINDOW_S", 0.6)
    budget = TokenBudget(100)
    start = time.monotonic()
    first = await budget.reserve(60)
    TokenBudget.settle(first, 30)  # the reply said it took 30
    await asyncio.sleep(0.2)
    await budget.reserve(60)  # 30 + 60 <= 100: at once
    assert time.monotonic() - start < 0.4 and budget.used() == 90
    await budget.reserve(20)  # 110 > 100: waits for the first (30) to leave the window, at 0.6 s
    assert 0.55 <= time.monotonic() - start < 0.75 and budget.used() == 80
    await budget.reserve(500)  # more than the whole budget: alone, once the last (at 0.6 s) has left
    assert time.monotonic() - start >= 1.15 and budget.used() == 500


# -- prefix affinity ---------------------------------------------------------------------------------------
def test_a_conversation_is_found_by_its_longest_remembered_start() -> None:
    owners: PrefixMap[str] = PrefixMap()
    system, question = Message("system", "Be careful."), Message("user", "What is 2+2?")
    owners.remember([system, question], "4", "a")
    turn1 = [system, question, Message("assistant", "4"), Message("user", "Others said 5.")]
    assert owners.find(turn1) == "a"
    assert owners.find([system, question, Message("assistant", "5"), Message("user", "Others said 5.")]) is None
    assert owners.find([system, question]) is None  # a first turn extends nothing remembered
    owners.remember(turn1, "Still 4.", "b")
    turn2 = [*turn1, Message("assistant", "Still 4."), Message("user", "Final?")]
    assert owners.find(turn2) == "b"  # the longest: where the whole history was last
    assert owners.find([*turn1, Message("assistant", "No, 5."), Message("user", "Final?")]) == "a"


def test_the_oldest_conversations_are_forgotten_past_the_memory() -> None:
    owners: PrefixMap[str] = PrefixMap(memory=2)
    asks = [[Message("user", f"question {i}")] for i in range(3)]
    for i, ask in enumerate(asks):
        owners.remember(ask, "4", f"e{i}")
    assert len(owners) == 2
    found = [owners.find([*ask, Message("assistant", "4"), Message("user", "again")]) for ask in asks]
    assert found == [None, "e1", "e2"]


def test_affinity_holds_up_to_the_factor() -> None:
    assert affine(0.5, 0.25, 2.0) and not affine(0.75, 0.25, 2.0) and affine(0.75, 0.25, 3.0)


def turns(agent: int, answered: int) -> tuple[Message, ...]:
    """Agent ``agent``'s request after ``answered`` turns of the canned reply."""
    messages = [Message("user", f"Agent {agent}: what is 2+2?")]
    for turn in range(answered):
        messages += [Message("assistant", CANNED), Message("user", f"Round {turn + 1}: update your answer.")]
    return tuple(messages)


async def debate_endpoints(client: OpenAIBackend, agents: int = 4, rounds: int = 3) -> list[list[str | None]]:
    """Each agent's endpoint per round; the agents come in a different order each round."""
    endpoints: list[list[str | None]] = [[] for _ in range(agents)]
    for r in range(rounds):
        order = list(range(agents)) if r % 2 == 0 else list(reversed(range(agents)))
        replies = await asyncio.gather(
            *(client.generate(GenerationRequest(messages=turns(a, r), max_tokens=8)) for a in order)
        )
        for agent, reply in zip(order, replies, strict=True):
            endpoints[agent].append(reply.samples[0].endpoint)
    await client.aclose()
    return endpoints


async def test_an_agents_turns_stay_on_the_endpoint_that_holds_its_history(proxies: list[FaultProxy]) -> None:
    a, b = serve(proxies, faults=["slow:0.1"] * 24), serve(proxies, faults=["slow:0.1"] * 24)
    kept = await debate_endpoints(backend(a.url, b.url, max_concurrency=4))
    assert all(len(set(rounds)) == 1 for rounds in kept)  # every agent stayed where it started
    assert sorted(rounds[0] for rounds in kept) == sorted([a.url, a.url, b.url, b.url])  # the load spread
    moved = await debate_endpoints(backend(a.url, b.url, max_concurrency=4, routing="least-loaded"))
    assert sum(len(set(rounds)) > 1 for rounds in moved) >= 2  # least-loaded sends reordered agents elsewhere


async def test_a_busy_endpoint_gives_up_a_conversation_beyond_the_factor(proxies: list[FaultProxy]) -> None:
    a, b = serve(proxies), serve(proxies)
    for factor, expected in ((2.0, b.url), (4.0, a.url)):
        client = backend(a.url, b.url, max_concurrency=4, affinity_factor=factor)
        first = await client.generate(GenerationRequest(messages=turns(0, 0), max_tokens=8))
        assert first.samples[0].endpoint == a.url  # a tie: the first listed
        a.faults = ["slow:0.8"] * 2  # two other conversations keep a busy; b answers its two at once
        busy = [asyncio.create_task(client.generate(REQUEST)) for _ in range(4)]  # a, b, a, b
        await asyncio.sleep(0.3)
        # with this request a would hold 3 of 4 (0.75) and b 1 of 4 (0.25): 0.75 > 2 x 0.25, <= 4 x 0.25
        nxt = await client.generate(GenerationRequest(messages=turns(0, 1), max_tokens=8))
        await asyncio.gather(*busy)
        await client.aclose()
        assert nxt.samples[0].endpoint == expected, factor


async def test_affinity_moves_a_conversation_from_a_full_endpoint(proxies: list[FaultProxy]) -> None:
    a, b = serve(proxies), serve(proxies)
    client = backend(a.url, b.url, max_concurrency=2)
    await client.generate(GenerationRequest(messages=turns(0, 0), max_tokens=8))  # on a
    a.faults, b.faults = ["slow:0.8"] * 2, ["slow:0.8"]
    busy = [asyncio.create_task(client.generate(REQUEST)) for _ in range(3)]  # a, b, a: a is full
    await asyncio.sleep(0.3)
    nxt = await client.generate(GenerationRequest(messages=turns(0, 1), max_tokens=8))
    await asyncio.gather(*busy)
    await client.aclose()
    assert nxt.samples[0].endpoint == b.url  # its own endpoint has no room: the other takes it


async def test_a_freed_endpoint_goes_first_to_a_waiting_turn_that_prefers_it(proxies: list[FaultProxy]) -> None:
    a, b = serve(proxies), serve(proxies)
    client = backend(a.url, b.url, max_concurrency=1)
    first = await asyncio.gather(*(client.generate(GenerationRequest(messages=turns(i, 0))) for i in (0, 1)))
    assert [r.samples[0].endpoint for r in first] == [a.url, b.url]
    a.faults, b.faults = ["slow:0.8"], ["slow:0.3", "slow:1.0"]  # b's second request holds it past 0.8 s
    busy = [asyncio.create_task(client.generate(REQUEST)) for _ in range(2)]  # both full; b frees first
    await asyncio.sleep(0.1)
    head = asyncio.create_task(client.generate(GenerationRequest(messages=turns(0, 1))))  # waits first, for a
    await asyncio.sleep(0.05)
    second = asyncio.create_task(client.generate(GenerationRequest(messages=turns(1, 1))))  # waits, for b
    replies = await asyncio.gather(head, second, *busy)
    await client.aclose()
    assert [r.samples[0].endpoint for r in replies[:2]] == [a.url, b.url]  # first come, first served would swap


# -- concurrency that backs off and climbs back ------------------------------------------------------------
async def test_a_429_halves_what_is_sent_at_once_and_answers_bring_it_back(proxies: list[FaultProxy]) -> None:
    server = serve(proxies, faults=[429])
    client = backend(server.url, max_concurrency=8)
    await client.generate(REQUEST)  # 429, retried: the window is 4, then 4.25
    server.faults, server.most_in_flight = ["slow:1.0"] * 8, 0
    await asyncio.gather(*(client.generate(REQUEST) for _ in range(8)))
    assert server.most_in_flight == 4
    for _ in range(30):  # 4 + 5 + 6 + 7 = 22 answers climb back to 8
        await client.generate(REQUEST)
    server.faults, server.most_in_flight = ["slow:1.0"] * 8, 0
    await asyncio.gather(*(client.generate(REQUEST) for _ in range(8)))
    await client.aclose()
    assert server.most_in_flight == 8


async def test_a_fixed_concurrency_does_not_back_off(proxies: list[FaultProxy]) -> None:
    server = serve(proxies, faults=[429])
    client = backend(server.url, max_concurrency=8, adaptive_concurrency=False)
    await client.generate(REQUEST)
    server.faults, server.most_in_flight = ["slow:1.0"] * 8, 0
    await asyncio.gather(*(client.generate(REQUEST) for _ in range(8)))
    await client.aclose()
    assert server.most_in_flight == 8


@pytest.mark.parametrize(("owner", "cap"), [("vllm", 256), ("sglang", 256), ("llamacpp", 8), (None, 8)])
async def test_a_server_that_names_its_kind_is_sized_by_it(proxies: list[FaultProxy], owner: str, cap: int) -> None:
    server = serve(proxies, owner=owner, props=404)
    client = backend(server.url)
    await client.check()
    assert client.parallel == cap
    await client.aclose()
    given = backend(server.url, max_concurrency=16)
    await given.check()
    assert given.parallel == 16  # a given cap wins
    await given.aclose()


async def test_tokens_per_minute_spaces_requests_by_what_they_spend(
    proxies: list[FaultProxy], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routing, "WINDOW_S", 1.0)
    server = serve(proxies)
    free = backend(server.url)
    start = time.monotonic()
    for _ in range(8):
        await free.generate(REQUEST)
    assert time.monotonic() - start < 0.8
    await free.aclose()
    # each request reserves 3 + 8 = 11 (its prompt's 12 characters / 4, plus max_tokens), then spends 11
    # (7 prompt and 4 completion tokens): four fit in 50, the fifth waits for the first to leave the minute
    paced = backend(server.url, tokens_per_minute=50)
    start = time.monotonic()
    for _ in range(8):
        await paced.generate(REQUEST)
    assert 0.95 <= time.monotonic() - start < 1.8
    assert paced._tokens is not None and paced._tokens.used() <= 50
    await paced.aclose()


# -- the run's --max-concurrency ---------------------------------------------------------------------------
def test_max_concurrency_caps_every_server_and_is_not_part_of_the_results(
    proxies: list[FaultProxy], tmp_path: Path
) -> None:
    server = serve(proxies, faults=["slow:0.2"] * 100)
    command = [sys.executable, "-m", "moot", "run", "--backend", "openai", "--base-url", server.url]
    command += ["--model", CANNED_MODEL, "-p", "vote", "-q", "4", "--max-concurrency", "2"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert server.seen == 12 and server.most_in_flight == 2
    stores = list((tmp_path / "runs").glob("*.sqlite"))
    data = {
        "name": "cap",
        "tasks": [{"name": "arithmetic", "count": 4}],
        "agent": {"backend": {"kind": "openai", "base_url": server.url, "model": CANNED_MODEL}},
        "conditions": [{"name": "vote", "protocol": "vote"}],
    }
    assert default_output(parse_experiment(data)) == default_output(parse_experiment(data | {"max_concurrency": 2}))
    assert len(stores) == 1
    bad = subprocess.run([*command[:-1], "0"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "moot: error: option --max-concurrency: must be a positive integer, got 0"


def test_max_concurrency_caps_the_local_servers_slots(tmp_path: Path) -> None:
    def sized(slots: int, cap: int | None, width: int) -> int:
        server = ManagedServer(tmp_path / "model.gguf", slots=slots, n_ctx=2048, n_threads=1)
        local = LlamaServerBackend(server, model_id="gguf:test")
        if cap is not None:
            local.cap_concurrency(cap)
        local.plan(width)
        return server.slots

    assert sized(0, None, 3) == 6  # agents x questions in flight
    assert sized(0, 2, 3) == 2 and sized(0, 8, 3) == 6  # a cap, not a size
    assert sized(4, 2, 3) == 2 and sized(4, None, 3) == 4  # a given slots option is capped too
