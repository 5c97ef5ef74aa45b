"""DAR's hard filter: one reply per distinct extracted answer, the earliest agent's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

from moot.debate.components.retention import Kept, Retention
from moot.debate.records import RoundRecord, Turn
from moot.debate.registry import register

if TYPE_CHECKING:
    from moot.debate.context import Debate


def distinct_answers(turns: Sequence[Turn]) -> list[int]:
    """The earliest reply of each distinct extracted answer (unparsed replies count as one answer)."""
    seen: set[str | None] = set()
    kept = []
    for i, turn in enumerate(turns):
        if turn.answer not in seen:
            seen.add(turn.answer)
            kept.append(i)
    return kept


@register
class Distinct(Retention):
    kind: Literal["distinct"] = "distinct"
    reads_answers: ClassVar[bool] = True

    async def keep(self, debate: Debate, previous: RoundRecord) -> Kept:
        return Kept(distinct_answers(previous.turns))
