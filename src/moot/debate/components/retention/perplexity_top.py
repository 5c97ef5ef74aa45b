"""MAD-M2's objective mask (Tian et al. 2026): keep the ``fraction`` of replies with the lowest
perplexity of their generated tokens."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from moot.debate.components.retention import Kept, Retention
from moot.debate.records import RoundRecord, Turn
from moot.debate.registry import register

if TYPE_CHECKING:
    from moot.debate.context import Debate


def perplexity_top(turns: Sequence[Turn], fraction: float) -> list[int]:
    """Indices of the ceil(fraction x N) replies with the lowest perplexity (missing ranks last; ties by order)."""
    keep = max(1, math.ceil(fraction * len(turns)))
    ranked = sorted(range(len(turns)), key=lambda i: (turns[i].perplexity is None, turns[i].perplexity or 0.0, i))
    return sorted(ranked[:keep])


@register
class PerplexityTop(Retention):
    kind: Literal["perplexity-top"] = "perplexity-top"
    fraction: float = Field(default=0.5, gt=0.0, le=1.0, description="share of replies kept")
    needs_logprobs = True

    def describe(self, protocol: Any = None) -> str:
        return f"perplexity-top ({self.fraction:.0%})"

    async def keep(self, debate: Debate, previous: RoundRecord) -> Kept:
        return Kept(perplexity_top(previous.turns, self.fraction))
