"""One debate in progress: what every schedule and component works on.

``Debate`` carries the question, task, protocol, agents, helper, caller and seed, the agents'
message histories and the rounds played so far. ``speak`` is an agent's turn; ``ask`` is a helper
call (a judge, Liang's moderator, a retention filter). Both go through the one caller that counts,
caches and replays every model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from moot.backends.base import GenerationRequest, Message
from moot.calls import Caller
from moot.debate.agents import Agent
from moot.debate.peer_view import peer_text
from moot.debate.records import RoundRecord, Turn
from moot.debate.uncertainty import uncertainty
from moot.seeds import derive_seed
from moot.tasks.base import Question, Task

if TYPE_CHECKING:
    from moot.debate.protocols import ProtocolSpec

JUDGE_NAME = "judge"
MODERATOR_NAME = "moderator"
FILTER_NAME = "filter"
AGGREGATOR_NAME = "aggregator"  # a Mixture-of-Agents aggregator (aggregation "synthesis")


def call_seed(run_seed: int, question: Question, agent: Agent, round_index: int) -> int:
    """Independent of the protocol, so paired protocols share identical round-0 calls."""
    return derive_seed(run_seed, question.id, agent.name, round_index)


@dataclass(frozen=True)
class HelperReply:
    """A helper's reply text and what it cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float


@dataclass
class Debate:
    """One question under one protocol (mutable on purpose: histories and rounds grow)."""

    question: Question
    task: Task
    protocol: ProtocolSpec
    agents: Sequence[Agent]
    caller: Caller
    seed: int = 0
    helper: Agent | None = None
    histories: list[list[Message]] = field(default_factory=list)
    records: list[RoundRecord] = field(default_factory=list)

    def seed_of(self, agent: Agent, round_index: int) -> int:
        return call_seed(self.seed, self.question, agent, round_index)

    async def speak(self, agent: Agent, shown: Sequence[Message], round_index: int, seed: int | None = None) -> Turn:
        """One agent's reply to ``shown``, read (stated confidence, answer, uncertainty) and scored."""
        sampling = agent.spec.sampling
        seed = self.seed_of(agent, round_index) if seed is None else seed
        request = GenerationRequest(
            messages=tuple(shown),
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_tokens,
            seed=seed,
            logprobs=self.protocol.needs_logprobs,
            reasoning_effort=sampling.reasoning_effort,
            thinking=sampling.thinking,
        )
        reply = await self.caller.call(agent.backend, request, agent=agent.name, round=round_index)
        sample = reply.samples[0]
        extraction, confidence = self.protocol.read_reply(self.task, self.question, sample.text)
        measured = uncertainty(sample.logprobs)
        return Turn(
            agent=agent.name,
            round=round_index,
            text=sample.text,
            answer=extraction.answer,
            parse_status=extraction.status,
            correct=extraction.answer is not None and self.task.score(extraction.answer, self.question),
            finish_reason=sample.finish_reason,
            prompt_tokens=sample.prompt_tokens,
            completion_tokens=sample.completion_tokens,
            latency_s=sample.latency_s,
            seed=seed,
            shown=tuple(shown),
            logprobs=sample.logprobs,
            confidence=confidence,
            nll=measured.nll if measured else None,
            anll=measured.anll if measured else None,
            perplexity=measured.perplexity if measured else None,
            reasoning=sample.reasoning,
            reasoning_tokens=sample.reasoning_tokens,
            seen=await peer_text(self.protocol.peer_view, sample.text, sample.reasoning, agent.backend),
        )

    async def ask(self, name: str, messages: Sequence[Message], round_index: int, step: int = 0) -> HelperReply:
        """One call of the helper agent speaking as ``name`` (judge, moderator, filter)."""
        if self.helper is None:
            raise RuntimeError(f"protocol {self.protocol.name!r} calls a {name} but the debate has no helper agent")
        sampling = self.helper.spec.sampling
        request = GenerationRequest(
            messages=tuple(messages),
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_tokens,
            seed=derive_seed(self.seed, self.question.id, name, round_index, step),
            reasoning_effort=sampling.reasoning_effort,
            thinking=sampling.thinking,
        )
        reply = await self.caller.call(self.helper.backend, request, agent=name, round=round_index)
        sample = reply.samples[0]
        return HelperReply(sample.text, sample.prompt_tokens, sample.completion_tokens, sample.latency_s)
