"""Stop when at least ``fraction`` of the agents give the same parsed answer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field

from moot.debate.components.stopping import Stopping
from moot.debate.records import RoundRecord, StopReason
from moot.debate.registry import register


@register
class Consensus(Stopping):
    kind: Literal["consensus"] = "consensus"
    reads_answers: ClassVar[bool] = True
    fraction: float = Field(default=1.0, gt=0.0, le=1.0, description="share of agents that must agree")
    needs_peers = True

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        last = history[-1]
        answers = [t.answer for t in last.turns if t.answer is not None]
        if answers and Counter(answers).most_common(1)[0][1] >= self.fraction * len(last.turns):
            return StopReason.CONSENSUS
        return None

    def condition(self) -> str:
        return f"consensus of {self.fraction:.0%} of agents"
