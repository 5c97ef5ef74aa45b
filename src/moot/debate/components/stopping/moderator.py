"""Liang et al.'s adaptive break: after each round the moderator (part of the Liang schedule) rules.

``moderator``: stop when the moderator states a preference and an answer; ``moderator_confidence``
(the stopping study's strict variant): stop when it gives an answer with confidence >= ``threshold``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from moot.debate.components.stopping import Stopping
from moot.debate.records import RoundRecord
from moot.debate.registry import register


class ModeratorStopping(Stopping):
    def check(self, protocol: Any) -> None:
        super().check(protocol)
        if protocol.style.kind != "liang":
            raise ValueError("a moderator exists only in style 'liang'")


@register
class ModeratorPreference(ModeratorStopping):
    kind: Literal["moderator"] = "moderator"

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        verdict = history[-1].judge
        if verdict is not None and verdict.preference and verdict.answer is not None:
            return "moderator_preference"
        return None

    def condition(self) -> str:
        return "the moderator states a preference and an answer"


@register
class ModeratorConfidence(ModeratorStopping):
    kind: Literal["moderator_confidence"] = "moderator_confidence"
    threshold: float = Field(default=90.0, ge=0.0, le=100.0, description="moderator confidence to stop at (0-100)")

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        verdict = history[-1].judge
        confident = verdict is not None and verdict.confidence is not None and verdict.confidence >= self.threshold
        return "moderator_confident" if confident and verdict is not None and verdict.answer is not None else None

    def condition(self) -> str:
        return f"the moderator answers with confidence >= {self.threshold:g}/100"
