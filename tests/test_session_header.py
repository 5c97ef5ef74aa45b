"""Each agent's requests carry a stable session header, so that a session-aware router behind one URL (vLLM
production-stack, Ray Serve, SGLang's router) keeps the agent on one replica: checked on a real HTTP server on
127.0.0.1 that records every request's headers."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from moot.backends.base import GenerationRequest, Message
from moot.backends.config import OpenAIBackendConfig
from moot.backends.openai_api import OpenAIBackend
from moot.calls import Caller, session_id
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from tests.integration.servers import CANNED_MODEL, FaultProxy


@pytest.fixture
def server() -> Iterator[FaultProxy]:
    fake = FaultProxy(None)
    yield fake
    fake.close()


def experiment(server: FaultProxy, **backend: Any) -> Any:
    return parse_experiment(
        {
            "name": "sessions",
            "tasks": [{"name": "arithmetic", "count": 2}],
            "agent": {"backend": {"kind": "openai", "base_url": server.url, "model": CANNED_MODEL} | backend},
            "conditions": [
                {"name": "society", "protocol": "society", "agents": 3, "rounds": 2},
                {"name": "vote", "protocol": "vote", "agents": 3},
            ],
        }
    )


def test_an_agent_keeps_one_session_over_its_rounds_and_agents_differ(server: FaultProxy, tmp_path: Path) -> None:
    asyncio.run(run_experiment(experiment(server), tmp_path / "run.sqlite"))
    # 2 questions x 3 agents x 2 rounds; vote's round 0 is society's (shared), so it sends nothing of its own
    assert server.seen == 12
    sessions = Counter(h.get("x-session-id") for h in server.headers)
    expected = {
        session_id("arithmetic", f"arithmetic-s0-{q}", 0, f"agent-{a}"): 2 for q in range(2) for a in range(1, 4)
    }
    assert sessions == expected  # each (question, agent) once per round, the same id in both rounds


def test_the_header_can_be_renamed_or_left_out(server: FaultProxy, tmp_path: Path) -> None:
    asyncio.run(run_experiment(experiment(server, session_header="x-affinity-key"), tmp_path / "a.sqlite"))
    assert all("x-affinity-key" in h and "x-session-id" not in h for h in server.headers)
    server.headers.clear()
    asyncio.run(run_experiment(experiment(server, session_header=""), tmp_path / "b.sqlite"))
    assert server.headers and not any("x-session-id" in h or "x-affinity-key" in h for h in server.headers)
    with pytest.raises(ValidationError, match="session_header"):
        OpenAIBackendConfig(base_url=server.url, session_header="bad header: value")


async def test_a_debate_outside_a_run_has_sessions_of_its_own(server: FaultProxy) -> None:
    """``moot ask`` and the library's ``evaluate``: the plain caller gives each debate's agents their own ids."""
    backend = OpenAIBackend(OpenAIBackendConfig(base_url=server.url, model=CANNED_MODEL))
    request = GenerationRequest(messages=(Message("user", "What is 2+2?"),), max_tokens=8)
    first, second = Caller(), Caller()
    for caller in (first, first, second):
        await caller.call(backend, request, agent="agent-1", round=0)
    await backend.generate(request)  # no caller: no session
    await backend.aclose()
    ids = [h.get("x-session-id") for h in server.headers]
    assert ids[0] == ids[1] == first.session("agent-1") and ids[2] == second.session("agent-1") != ids[0]
    assert ids[3] is None
