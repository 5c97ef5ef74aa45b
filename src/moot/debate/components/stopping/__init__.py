"""Stopping: when a debate ends before its round cap (the protocol's ``rounds``). One rule per module.

A rule may call a helper after each round (``verdict``: the stopping study's judge); the verdict is
stored with the round. ``min_rounds`` rounds (counting round 0) always run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import Field

from moot.debate.records import JudgeVerdict, RoundRecord, Turn
from moot.debate.registry import Component

if TYPE_CHECKING:
    from moot.debate.context import Debate


class Stopping(Component):
    family = "stopping"
    legacy_defaults = {"fraction": 1.0, "threshold": 90.0}  # stored by moot 0.1 for every kind
    min_rounds: int = Field(default=1, ge=1, description="rounds that always run, counting round 0")

    async def verdict(self, debate: Debate, turns: Sequence[Turn], round_index: int) -> JudgeVerdict | None:
        """A helper's verdict on the round just played, if the rule needs one (peer schedule)."""
        return None

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        """Why to stop after the last round of ``history``, or None to go on; ``min_rounds`` is applied by
        ``stop``. The cap is the round loop's."""
        raise NotImplementedError

    def stop(self, history: Sequence[RoundRecord]) -> str | None:
        if len(history) < self.min_rounds:
            return None
        return self.reason(history)

    def check(self, protocol: Any) -> None:
        if self.min_rounds > protocol.rounds:
            raise ValueError(f"stopping.min_rounds ({self.min_rounds}) exceeds rounds ({protocol.rounds})")

    def describe(self, protocol: Any = None) -> str:
        text = self.condition()
        cap = f", cap {protocol.rounds} rounds" if protocol is not None else ""
        return text + cap + (f", at least {self.min_rounds} rounds" if self.min_rounds > 1 else "")

    def condition(self) -> str:
        """When it stops, in words."""
        return self.kind
