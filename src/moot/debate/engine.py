"""The round loop. Every protocol runs through ``run_debate``; protocols only change its data."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from moot.backends.base import GenerationRequest, Message
from moot.calls import Caller
from moot.debate.agents import Agent
from moot.debate.aggregation import majority_vote
from moot.debate.judge import judge_messages, read_judge
from moot.debate.prompts import debate_message, fresh_message, initial_messages, reflection_message, system_messages
from moot.debate.protocols import ProtocolSpec
from moot.debate.records import DebateResult, FinalStatus, JudgeVerdict, RoundRecord, Turn
from moot.debate.stopping import stop_reason
from moot.errors import BackendError, ConfigError
from moot.seeds import derive_seed
from moot.tasks.base import Question, Task

ROUND_CONVENTION = (
    "round 0: independent answers; round r >= 1: every agent sees its peers' round r-1 replies "
    "(simultaneous update); the round count includes round 0"
)
HISTORY_MODE = "chat: each agent keeps its own multi-turn history (Du et al.); fresh: one new prompt per round"
JUDGE_NAME = "judge"

RoundCallback = Callable[[Question, RoundRecord], None]


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


async def _judge(
    judge: Agent, task: Task, question: Question, turns: Sequence[Turn], round_index: int, seed: int, caller: Caller
) -> JudgeVerdict:
    sampling = judge.spec.sampling
    request = GenerationRequest(
        messages=judge_messages(task, question, turns),
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        max_tokens=sampling.max_tokens,
        seed=derive_seed(seed, question.id, JUDGE_NAME, round_index),
    )
    reply = await caller.call(judge.backend, request, agent=JUDGE_NAME, round=round_index)
    sample = reply.samples[0]
    reading = read_judge(task, sample.text)
    return JudgeVerdict(
        sample.text, reading.answer, reading.confidence, sample.prompt_tokens, sample.completion_tokens,
        sample.latency_s,
    )  # fmt: skip


def _next_prompts(
    protocol: ProtocolSpec, agents: Sequence[Agent], task: Task, question: Question,
    histories: list[list[Message]], previous: Sequence[Turn],
) -> None:  # fmt: skip
    """Extend (chat) or replace (fresh) each agent's messages for the next round."""
    for i, peer_ids in enumerate(protocol.topology.peers(protocol.agents)):
        agent = agents[i]
        peers = [previous[j] for j in peer_ids]
        if protocol.history == "fresh":
            histories[i] = system_messages(task, agent.spec.persona) + [
                fresh_message(task, question, previous[i], peers, protocol.rendering, agent.spec.agreement)
            ]
        elif peers:
            histories[i].append(debate_message(task, peers, protocol.rendering, agent.spec.agreement))
        else:
            histories[i].append(reflection_message(task))


async def run_debate(
    question: Question,
    task: Task,
    protocol: ProtocolSpec,
    agents: Sequence[Agent],
    *,
    caller: Caller,
    seed: int = 0,
    judge: Agent | None = None,
    on_round: RoundCallback | None = None,
) -> DebateResult:
    """Run one question under ``protocol``. A failed model call ends the question with status ``error``."""
    if len(agents) != protocol.agents:
        raise ConfigError(f"protocol {protocol.name!r} needs {protocol.agents} agents, got {len(agents)}")
    if len({a.name for a in agents} | {JUDGE_NAME}) != len(agents) + 1:
        raise ConfigError(f"agent names must be unique and not {JUDGE_NAME!r}")
    if protocol.needs_judge and judge is None:
        raise ConfigError(f"protocol {protocol.name!r} needs a judge agent")
    histories = [initial_messages(task, question, a.spec.persona) for a in agents]
    records: list[RoundRecord] = []
    reason = "max_rounds"
    try:
        for r in range(protocol.rounds):
            if r > 0:
                _next_prompts(protocol, agents, task, question, histories, records[-1].turns)
            turns = await asyncio.gather(
                *(
                    _speak(a, task, question, tuple(histories[i]), r, call_seed(seed, question, a, r), caller)
                    for i, a in enumerate(agents)
                )
            )
            if protocol.history == "chat":
                for history, turn in zip(histories, turns):
                    history.append(Message("assistant", turn.text))
            vote = majority_vote(
                [t.answer for t in turns], protocol.tie_rule, seed=derive_seed(seed, question.id, "tie", r)
            )
            verdict = await _judge(judge, task, question, turns, r, seed, caller) if judge and protocol.needs_judge else None
            record = RoundRecord(index=r, turns=tuple(turns), vote=vote, judge=verdict)
            records.append(record)
            if on_round is not None:
                on_round(question, record)
            if (why := stop_reason(protocol.stopping, records)) is not None and r < protocol.rounds - 1:
                reason = why
                break
            if why is not None:
                reason = why
    except BackendError as exc:
        return DebateResult(question, protocol.name, tuple(records), None, FinalStatus.ERROR, False, "error", str(exc))
    last = records[-1]
    if protocol.aggregation == "judge":
        assert last.judge is not None
        winner, tied = last.judge.answer, ()
    else:
        winner, tied = last.vote.winner, last.vote.tied
    if winner is not None:
        status = FinalStatus.ANSWERED
    elif tied:
        status = FinalStatus.ABSTAINED
    else:
        status = FinalStatus.UNPARSED
    correct = winner is not None and task.score(winner, question)
    return DebateResult(question, protocol.name, tuple(records), winner, status, correct, reason)
