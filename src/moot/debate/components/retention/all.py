"""Keep every reply: standard debate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from moot.debate.components.retention import Kept, Retention
from moot.debate.records import RoundRecord
from moot.debate.registry import register

if TYPE_CHECKING:
    from moot.debate.context import Debate


@register
class KeepAll(Retention):
    kind: Literal["all"] = "all"

    async def keep(self, debate: Debate, previous: RoundRecord) -> Kept:
        return Kept(list(range(len(previous.turns))))
