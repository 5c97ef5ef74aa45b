"""A cue written outside moot: in each debate round agents are told how the previous round's answers were
split, most common first ("Last round's answers: 7 (2 agents), 12 (1 agent)."): more than the last-vote
cue's winner alone.

Use it from an experiment file with ``plugins = ["tally.py"]`` (a path relative to that file) and
``cues = [{ kind = "tally" }]`` in a condition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import Field

from moot.debate.components.cues import Cue
from moot.debate.records import RoundRecord
from moot.debate.registry import register


@register
class Tally(Cue):
    kind: Literal["tally"] = "tally"
    reads_answers: ClassVar[bool] = True  # what it says depends on the answers read from the replies
    most: int = Field(default=3, ge=1, description="how many answers are named, most common first")

    def tally(self, previous: RoundRecord, show: Callable[[str | None], str] = str) -> str:
        # vote.counts is in order of first appearance; a stable sort keeps that order among equal counts
        ranked = sorted(previous.vote.counts, key=lambda count: count[1], reverse=True)
        named = [f"{show(answer)} ({n} agent{'s' if n > 1 else ''})" for answer, n in ranked[: self.most]]
        if len(ranked) > self.most:
            named.append(f"{len(ranked) - self.most} other answers")
        if previous.vote.unparsed:
            named.append(f"{previous.vote.unparsed} without an answer")
        return f"Last round's answers: {', '.join(named) or 'none'}."

    def prefix(self, previous: RoundRecord) -> str:  # chat history: before the round's prompt
        return self.tally(previous) + "\n\n"

    def inline(self, previous: RoundRecord, show: Callable[[str | None], str]) -> str:  # fresh history
        return "\n" + self.tally(previous, show) + "\n"

    def describe(self, protocol: Any = None) -> str:
        return f"last round's answers (the {self.most} most common)"
