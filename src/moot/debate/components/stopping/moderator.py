"""Liang et al.'s adaptive break: after each round the moderator (part of the Liang schedule) rules.

``moderator_answer``: Liang et al.'s release (code/debate4tran.py): the debate ends as soon as the
moderator's ``debate_answer`` is non-empty; "Whether there is a preference" is not read.
``moderator``: moot 0.1's rule (the name keeps its meaning for stored runs): the moderator states a
preference and an answer that parses.
``moderator_confidence``: an answer with confidence >= ``threshold``; with ``require_preference``
(the stopping study's strict rule, preset liang-strict) also a preferred side, and the answer need
only be non-empty. Its default keeps moot 0.1's meaning for stored runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from moot.debate.components.stopping import Stopping
from moot.debate.records import JudgeVerdict, RoundRecord, StopReason
from moot.debate.registry import register


class ModeratorStopping(Stopping):
    """A rule that reads the ruling of the schedule's moderator (``Schedule.moderated``)."""

    needs_moderator = True

    @staticmethod
    def answered(verdict: JudgeVerdict | None) -> bool:
        """The moderator's ``debate_answer`` is non-empty (whether or not the task can read it)."""
        return verdict is not None and bool((verdict.answer_text or "").strip())


@register
class ModeratorAnswered(ModeratorStopping):
    kind: Literal["moderator_answer"] = "moderator_answer"

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        return StopReason.MODERATOR_ANSWER if self.answered(history[-1].judge) else None

    def condition(self) -> str:
        return "the moderator's debate_answer is non-empty (Liang et al.)"


@register
class ModeratorPreference(ModeratorStopping):
    kind: Literal["moderator"] = "moderator"

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        verdict = history[-1].judge
        if verdict is not None and verdict.preference and verdict.answer is not None:
            return StopReason.MODERATOR_PREFERENCE
        return None

    def condition(self) -> str:
        return "the moderator states a preference and an answer that parses (moot 0.1)"


@register
class ModeratorConfidence(ModeratorStopping):
    kind: Literal["moderator_confidence"] = "moderator_confidence"
    threshold: float = Field(default=90.0, ge=0.0, le=100.0, description="moderator confidence to stop at (0-100)")
    require_preference: bool = Field(
        default=False,
        description="also require a stated preference, and a non-empty answer rather than one that parses "
        "(the stopping study's strict rule)",
    )
    needs_moderator_confidence = True

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        verdict = history[-1].judge
        if verdict is None or verdict.confidence is None or verdict.confidence < self.threshold:
            return None
        if not self.require_preference:
            return StopReason.MODERATOR_CONFIDENT if verdict.answer is not None else None
        return StopReason.MODERATOR_CONFIDENT if verdict.preference and self.answered(verdict) else None

    def condition(self) -> str:
        if self.require_preference:
            return f"the moderator gives a preference, a non-empty answer and confidence >= {self.threshold:g}/100"
        return f"the moderator gives an answer that parses with confidence >= {self.threshold:g}/100"
