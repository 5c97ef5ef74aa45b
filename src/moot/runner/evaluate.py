"""Run one protocol over a list of questions and collect results and usage."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from moot.backends.base import Backend
from moot.backends.config import BackendConfig
from moot.backends.factory import make_backend
from moot.calls import Caller, Usage
from moot.debate.agents import Agent, AgentSpec, Sampling
from moot.debate.engine import RoundCallback, run_debate
from moot.debate.protocols import ProtocolSpec
from moot.debate.records import DebateResult, FinalStatus
from moot.tasks.base import Question, Task


@dataclass(frozen=True)
class EvalResult:
    protocol: ProtocolSpec
    task: str
    results: tuple[DebateResult, ...]
    usage: Usage
    wall_s: float

    @property
    def accuracy(self) -> float:
        return sum(r.correct for r in self.results) / len(self.results) if self.results else 0.0

    def count(self, status: FinalStatus) -> int:
        return sum(r.status is status for r in self.results)


def uniform_agents(
    count: int, backend: BackendConfig, sampling: Sampling, persona: str | None = None
) -> list[AgentSpec]:
    """``count`` identical agents named agent-1..agent-N (they differ only by their call seeds)."""
    return [
        AgentSpec(name=f"agent-{i}", backend=backend, sampling=sampling, persona=persona) for i in range(1, count + 1)
    ]


def build_agents(specs: Sequence[AgentSpec], backends: dict[BackendConfig, Backend] | None = None) -> list[Agent]:
    """Agents with one backend instance per distinct backend config (so a local model loads once).

    ``backends`` holds the instances already built (and receives the new ones), so that agents built
    in several calls share them."""
    backends = {} if backends is None else backends
    agents = []
    for spec in specs:
        if spec.backend not in backends:
            backends[spec.backend] = make_backend(spec.backend)
        agents.append(Agent(spec, backends[spec.backend]))
    return agents


def request_widths(groups: Iterable[Sequence[Agent]]) -> dict[int, int]:
    """How many requests one question sends to each backend at once (keyed by ``id(backend)``): the most
    agents of one group (a condition's agents and judge) that it serves."""
    widths: dict[int, int] = {}
    for group in groups:
        counts = Counter(id(a.backend) for a in group)
        for key, count in counts.items():
            widths[key] = max(widths.get(key, 0), count)
    return widths


async def check_agents(agents: Sequence[Agent], groups: Iterable[Sequence[Agent]] | None = None) -> None:
    """Size every backend to the requests a question sends it at once (``groups``: the agents of each
    condition; default all of ``agents`` together), then load every model and reach every server once,
    before any question starts."""
    widths = request_widths([agents] if groups is None else groups)
    for backend in _unique_backends(agents):
        plan = getattr(backend, "plan", None)
        if plan is not None:
            plan(widths.get(id(backend), 1))
        await backend.check()


def _unique_backends(agents: Sequence[Agent]) -> list[Backend]:
    return list({id(a.backend): a.backend for a in agents}.values())


async def close_agents(agents: Sequence[Agent]) -> None:
    for backend in _unique_backends(agents):
        await backend.aclose()


async def evaluate(
    task: Task,
    protocol: ProtocolSpec,
    agents: Sequence[Agent],
    questions: Sequence[Question],
    *,
    seed: int = 0,
    judge: Agent | None = None,
    on_round: RoundCallback | None = None,
    on_result: Callable[[DebateResult], None] | None = None,
) -> EvalResult:
    """Debate each question in order; a question whose calls fail is recorded with status ``error``."""
    caller = Caller()
    start = time.perf_counter()
    results = []
    for question in questions:
        result = await run_debate(
            question, task, protocol, agents, caller=caller, seed=seed, judge=judge, on_round=on_round
        )
        results.append(result)
        if on_result is not None:
            on_result(result)
    return EvalResult(protocol, task.name, tuple(results), caller.usage, time.perf_counter() - start)
