"""When a debate stops: after a fixed number of rounds, at consensus, when answers are stable, or when
a judge is confident enough. ``rounds`` of the protocol is always the cap."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from moot.debate.records import RoundRecord


class Stopping(BaseModel):
    """``fixed``: run every round. ``consensus``: stop when at least ``fraction`` of the agents give the
    same parsed answer. ``stable``: stop when no agent's answer changed since the previous round.
    ``judge``: after each round a judge call returns an answer and a 0-100 confidence; stop when the
    confidence is >= ``threshold``. ``moderator`` (Liang): stop when the moderator states a preference
    and an answer; ``moderator_confidence`` (Liang strict): stop when the moderator gives an answer with
    confidence >= ``threshold``. ``min_rounds`` rounds (counting round 0) always run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["fixed", "consensus", "stable", "judge", "moderator", "moderator_confidence"] = "fixed"
    fraction: float = Field(default=1.0, gt=0.0, le=1.0, description="consensus: share of agents that must agree")
    threshold: float = Field(default=90.0, ge=0.0, le=100.0, description="judge: confidence to stop at (0-100)")
    min_rounds: int = Field(default=1, ge=1, description="rounds that always run, counting round 0")


def stop_reason(stopping: Stopping, history: Sequence[RoundRecord]) -> str | None:
    """Why the debate stops after the last round of ``history``, or None to go on (the cap is the caller's)."""
    if stopping.kind == "fixed" or len(history) < stopping.min_rounds:
        return None
    last = history[-1]
    if stopping.kind == "consensus":
        answers = [t.answer for t in last.turns if t.answer is not None]
        if answers and Counter(answers).most_common(1)[0][1] >= stopping.fraction * len(last.turns):
            return "consensus"
        return None
    if stopping.kind == "stable":
        if len(history) >= 2 and [t.answer for t in last.turns] == [t.answer for t in history[-2].turns]:
            return "stable"
        return None
    verdict = last.judge
    if verdict is None:
        return None
    if stopping.kind == "moderator":
        return "moderator_preference" if verdict.preference and verdict.answer is not None else None
    confident = verdict.confidence is not None and verdict.confidence >= stopping.threshold
    if stopping.kind == "moderator_confidence":
        return "moderator_confident" if confident and verdict.answer is not None else None
    return "judge_confident" if confident else None
