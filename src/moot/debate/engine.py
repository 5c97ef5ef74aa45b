"""The round loop. Every protocol runs through ``run_debate``; protocols only change its data."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from moot.backends.base import GenerationRequest, Message
from moot.calls import Caller
from moot.debate.agents import Agent
from moot.debate.aggregation import majority_vote
from moot.debate.prompts import debate_message, initial_messages, reflection_message
from moot.debate.protocols import ProtocolSpec
from moot.debate.records import DebateResult, FinalStatus, RoundRecord, Turn
from moot.errors import BackendError, ConfigError
from moot.seeds import derive_seed
from moot.tasks.base import Question, Task

ROUND_CONVENTION = (
    "round 0: independent answers; round r >= 1: every agent sees its peers' round r-1 replies "
    "(simultaneous update); the round count includes round 0"
)
HISTORY_MODE = "chat: each agent keeps its own multi-turn history (Du et al.)"

RoundCallback = Callable[[Question, RoundRecord], None]


def peers_of(protocol: ProtocolSpec, index: int) -> list[int]:
    """Indices of the agents whose previous replies agent ``index`` reads."""
    if protocol.topology == "none":
        return []
    return [j for j in range(protocol.agents) if j != index]


def call_seed(run_seed: int, question: Question, agent: Agent, round_index: int) -> int:
    """Independent of the protocol, so paired protocols share identical round-0 calls."""
    return derive_seed(run_seed, question.id, agent.name, round_index)


async def _speak(
    agent: Agent, task: Task, question: Question, shown: tuple[Message, ...], round_index: int, seed: int, caller: Caller
) -> Turn:
    sampling = agent.spec.sampling
    request = GenerationRequest(
        messages=shown,
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        max_tokens=sampling.max_tokens,
        seed=seed,
    )
    reply = await caller.call(agent.backend, request, agent=agent.name, round=round_index)
    sample = reply.samples[0]
    extraction = task.extract(sample.text)
    return Turn(
        agent=agent.name,
        round=round_index,
        text=sample.text,
        answer=extraction.answer,
        parse_status=extraction.status,
        correct=extraction.answer is not None and task.score(extraction.answer, question),
        finish_reason=sample.finish_reason,
        prompt_tokens=sample.prompt_tokens,
        completion_tokens=sample.completion_tokens,
        latency_s=sample.latency_s,
        seed=seed,
        shown=shown,
        logprobs=sample.logprobs,
    )


async def run_debate(
    question: Question,
    task: Task,
    protocol: ProtocolSpec,
    agents: Sequence[Agent],
    *,
    caller: Caller,
    seed: int = 0,
    on_round: RoundCallback | None = None,
) -> DebateResult:
    """Run one question under ``protocol``. A failed model call ends the question with status ``error``."""
    if len(agents) != protocol.agents:
        raise ConfigError(f"protocol {protocol.name!r} needs {protocol.agents} agents, got {len(agents)}")
    if len({a.name for a in agents}) != len(agents):
        raise ConfigError("agent names must be unique")
    histories = [initial_messages(task, question, a.spec.persona) for a in agents]
    records: list[RoundRecord] = []
    try:
        for r in range(protocol.rounds):
            if r > 0:
                previous = records[-1].turns
                for i, history in enumerate(histories):
                    peers = peers_of(protocol, i)
                    history.append(
                        debate_message(task, [previous[j].text for j in peers]) if peers else reflection_message(task)
                    )
            turns = await asyncio.gather(
                *(
                    _speak(a, task, question, tuple(histories[i]), r, call_seed(seed, question, a, r), caller)
                    for i, a in enumerate(agents)
                )
            )
            for history, turn in zip(histories, turns):
                history.append(Message("assistant", turn.text))
            vote = majority_vote(
                [t.answer for t in turns], protocol.tie_rule, seed=derive_seed(seed, question.id, "tie", r)
            )
            record = RoundRecord(index=r, turns=tuple(turns), vote=vote)
            records.append(record)
            if on_round is not None:
                on_round(question, record)
    except BackendError as exc:
        return DebateResult(question, protocol.name, tuple(records), None, FinalStatus.ERROR, False, "error", str(exc))
    vote = records[-1].vote
    if vote.winner is not None:
        status = FinalStatus.ANSWERED
    elif vote.tied:
        status = FinalStatus.ABSTAINED
    else:
        status = FinalStatus.UNPARSED
    correct = vote.winner is not None and task.score(vote.winner, question)
    return DebateResult(question, protocol.name, tuple(records), vote.winner, status, correct, "max_rounds")
