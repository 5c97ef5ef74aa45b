"""Stop when no agent's answer changed since the previous round."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from moot.debate.components.stopping import Stopping
from moot.debate.records import RoundRecord, StopReason
from moot.debate.registry import register


@register
class Stable(Stopping):
    kind: Literal["stable"] = "stable"
    reads_answers: ClassVar[bool] = True
    needs_peers = True

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        if len(history) >= 2 and [t.answer for t in history[-1].turns] == [t.answer for t in history[-2].turns]:
            return StopReason.STABLE
        return None

    def condition(self) -> str:
        return "no answer changed since the previous round"
