"""Stopping: when a debate ends before its round cap (the protocol's ``rounds``). One rule per module.

A rule may call a helper after each round (``verdict``: the stopping study's judge); the verdict is
stored with the round. ``min_rounds`` rounds (counting round 0) always run.

A rule declares what it needs of the schedule (``needs_peers``, ``needs_moderator``,
``needs_moderator_confidence``) and what it gives the aggregation (``judges_rounds``); ``check`` compares
those with the schedule's declared capabilities, never with its name. Its ``reason`` is a ``StopReason``
(a built-in constant) or any plain name (a plug-in's own), which ``stop`` turns into one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from moot.debate.records import JudgeVerdict, RoundRecord, StopReason, Turn
from moot.debate.registry import Component, rules

if TYPE_CHECKING:
    from moot.debate.context import Debate


class Stopping(Component):
    family = "stopping"
    legacy_defaults = {"fraction": 1.0, "threshold": 90.0}  # stored by moot 0.1 for every kind
    min_rounds: int = Field(default=1, ge=1, description="rounds that always run, counting round 0")
    needs_peers: ClassVar[bool] = False  # it reads what a peer schedule gives each round (``Schedule.has_peers``)
    needs_moderator: ClassVar[bool] = False  # it reads the moderator's ruling (``Schedule.moderated``)
    needs_moderator_confidence: ClassVar[bool] = False  # ... and the confidence the moderator states
    judges_rounds: ClassVar[bool] = False  # its ``verdict`` calls a judge after each round, stored with the round
    # it decides over every question of a condition at once, after each round (``stop_dataset``), not per question:
    # the runner plays such a condition round by round over all its questions (moot.runner.experiment)
    dataset_scope: ClassVar[bool] = False

    async def verdict(self, debate: Debate, turns: Sequence[Turn], round_index: int) -> JudgeVerdict | None:
        """A helper's verdict on the round just played, if the rule needs one (peer schedule)."""
        return None

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        """Why to stop after the last round of ``history``, or None to go on; ``min_rounds`` is applied by
        ``stop``. The cap is the round loop's."""
        raise NotImplementedError

    def stop_dataset(self, rounds: Sequence[Sequence[RoundRecord]], agents: int) -> bool:
        """A ``dataset_scope`` rule: whether every question stops after the rounds played so far (``rounds``: each
        question's rounds)."""
        raise NotImplementedError

    def stop(self, history: Sequence[RoundRecord]) -> StopReason | None:
        if len(history) < self.min_rounds:
            return None
        reason = self.reason(history)
        return StopReason(reason) if reason is not None else None

    def check(self, protocol: Any) -> None:
        if self.min_rounds > protocol.rounds:
            raise ValueError(f"stopping.min_rounds ({self.min_rounds}) exceeds rounds ({protocol.rounds})")
        style = protocol.style
        if self.needs_moderator and not style.moderated:
            moderated = [kind for kind, rule in rules("schedule").items() if getattr(rule, "moderated", False)]
            raise ValueError(f"a moderator exists only in style {_names(moderated)}")
        if self.needs_peers and not style.has_peers:
            usable = [kind for kind, rule in rules("stopping").items() if _serves(style, rule)]
            raise ValueError(f"style {style.kind!r} stops by {_names(usable)}")
        if self.needs_moderator_confidence and not style.moderator_states_confidence(protocol):
            raise ValueError(f"stopping {self.kind!r} needs a moderator prompt that asks for confidence")

    def describe(self, protocol: Any = None) -> str:
        text = self.condition()
        cap = f", cap {protocol.rounds} rounds" if protocol is not None else ""
        return text + cap + (f", at least {self.min_rounds} rounds" if self.min_rounds > 1 else "")

    def condition(self) -> str:
        """When it stops, in words."""
        return self.kind


def _serves(style: Any, rule: type[Component]) -> bool:
    """Whether schedule ``style`` gives what stopping ``rule`` needs (its confidence aside)."""
    needs_peers, needs_moderator = getattr(rule, "needs_peers", False), getattr(rule, "needs_moderator", False)
    return (style.has_peers or not needs_peers) and (style.moderated or not needs_moderator)


def _names(kinds: Sequence[str]) -> str:
    """'a', 'b' or 'c'."""
    quoted = [repr(k) for k in kinds]
    return " or ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted) or "none"
