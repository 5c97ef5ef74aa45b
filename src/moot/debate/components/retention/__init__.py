"""Retention: which of the previous round's replies the agents hear, chosen by agent so that
forwarded texts are never rewritten (DAR, Nguyen et al. 2026, and its baselines). One rule per module.

The retained set is the same for every agent (each minus its own reply). A rule that cannot choose
(an empty or invalid filter selection) keeps all, and the fallback is recorded. A rule that ``refills``
(DAR's filters, as their get_new_message_global) gives an agent left with no kept peer all its peers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from moot.debate.records import RoundRecord
from moot.debate.registry import Component

if TYPE_CHECKING:
    from moot.debate.context import Debate


@dataclass(frozen=True)
class Kept:
    """The indices of the replies a rule keeps (None: it could not choose), and the filter call behind it."""

    indices: list[int] | None
    filter_text: str | None = None
    filter_calls: int = 0
    filter_prompt_tokens: int = 0
    filter_completion_tokens: int = 0


class Retention(Component):
    family = "retention"
    refills: ClassVar[bool] = False  # an agent whose peers were all dropped hears all of them

    async def keep(self, debate: Debate, previous: RoundRecord) -> Kept:
        """Which of ``previous``'s replies are forwarded into the next round."""
        raise NotImplementedError
