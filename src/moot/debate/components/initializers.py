"""Initialisers: how round 0 is answered.

``independent``: each agent answers once; ``diverse`` (Zhu et al.'s diversity-aware initialisation):
sample ``pool_size`` candidates round-robin over the agents, keep the N that add most answer diversity
(moot.debate.diversity.select_diverse: new parsed answers first, then other parsed candidates; an
unparsed candidate only when too few parsed ones are left), and give the k-th kept candidate to agent k
as its round-0 reply.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from moot.debate.diversity import Candidate, answer_diversity, select_diverse, similarity_function, text_diversity
from moot.debate.records import PoolRecord, Turn
from moot.debate.registry import Component, register
from moot.seeds import derive_seed

if TYPE_CHECKING:
    from moot.debate.context import Debate


class Initializer(Component):
    """How round 0 is answered. Only a schedule that reads the ``initializer`` slot calls it (see
    ``Schedule.slots``); a protocol that sets it for another schedule is refused."""

    family = "initializer"
    samples_pool: ClassVar[bool] = False  # it samples a pool of candidates and keeps some (a PoolRecord)

    async def first_round(self, debate: Debate) -> tuple[list[Turn], PoolRecord | None]:
        """Round 0's turns, one per agent, from the agents' initial messages."""
        raise NotImplementedError

    def calls_note(self, agents: int) -> str:
        """How round 0's calls differ from one per agent, for `moot protocols show`."""
        return ""


@register
class Independent(Initializer):
    kind: Literal["independent"] = "independent"

    async def first_round(self, debate: Debate) -> tuple[list[Turn], PoolRecord | None]:
        turns = await asyncio.gather(*(debate.speak(a, debate.histories[i], 0) for i, a in enumerate(debate.agents)))
        return list(turns), None


@register
class Diverse(Initializer):
    kind: Literal["diverse"] = "diverse"
    reads_answers: ClassVar[bool] = True
    samples_pool = True
    pool_size: int | None = Field(default=None, ge=1, description="candidates sampled (default 2 x agents)")
    similarity: Literal["jaccard", "embedding"] = Field(
        default="jaccard", description="text similarity: token Jaccard or MiniLM embeddings (the embeddings extra)"
    )

    def pool(self, agents: int) -> int:
        return self.pool_size if self.pool_size is not None else 2 * agents

    def check(self, protocol: Any) -> None:
        if self.pool(protocol.agents) < protocol.agents:
            raise ValueError("initializer 'diverse' needs pool_size >= agents")
        from moot.debate import embeddings

        if self.similarity == "embedding" and not embeddings.available():
            raise ValueError("similarity 'embedding' needs the embeddings extra: pip install 'moot[embeddings]'")

    def calls_note(self, agents: int) -> str:
        return f" ({self.pool(agents)} candidate calls in round 0)"

    def describe(self, protocol: Any = None) -> str:
        pool = self.pool(protocol.agents) if protocol is not None else self.pool_size
        return f"diverse (pool of {pool}, {self.similarity} similarity)"

    async def first_round(self, debate: Debate) -> tuple[list[Turn], PoolRecord | None]:
        agents, n, q = debate.agents, len(debate.agents), debate.question
        seeds = [derive_seed(debate.seed, q.id, agents[j % n].name, 0, "pool", j) for j in range(self.pool(n))]
        candidates = await asyncio.gather(
            *(debate.speak(agents[j % n], debate.histories[j % n], 0, seed) for j, seed in enumerate(seeds))
        )
        texts = [c.text for c in candidates]
        similarity = similarity_function(self.similarity)
        chosen = select_diverse([Candidate(c.text, c.answer) for c in candidates], n, similarity)
        turns = [
            replace(candidates[j], agent=agents[i].name, shown=tuple(debate.histories[i])) for i, j in enumerate(chosen)
        ]
        distinct, _ = answer_diversity([t.answer for t in turns])
        pool = PoolRecord(
            texts=tuple(texts),
            answers=tuple(c.answer for c in candidates),
            sources=tuple(c.agent for c in candidates),
            selected=tuple(chosen),
            answer_diversity=distinct,
            text_diversity=text_diversity([texts[j] for j in chosen], similarity),
            prompt_tokens=sum(c.prompt_tokens for c in candidates),
            completion_tokens=sum(c.completion_tokens for c in candidates),
        )
        return turns, pool
