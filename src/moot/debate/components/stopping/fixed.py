"""Run every round up to the cap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from moot.debate.components.stopping import Stopping
from moot.debate.records import RoundRecord
from moot.debate.registry import register


@register
class Fixed(Stopping):
    kind: Literal["fixed"] = "fixed"

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        return None

    def describe(self, protocol: Any = None) -> str:
        rounds = f"all {protocol.rounds} rounds" if protocol is not None else "all rounds"
        return f"fixed: {rounds}" + (f", at least {self.min_rounds} rounds" if self.min_rounds > 1 else "")
