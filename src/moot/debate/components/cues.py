"""Cues: what agents are told besides their peers' replies.

- ``confidence`` (Zhu et al.): agents state a 0..``scale`` confidence after their answer; peers see it;
- ``uncertainty`` (DAR's uncertainty prompt, after Lin and Hooi 2025): each reply carries its ANLL,
  computed from the log-probabilities of the tokens actually generated, in DAR's words (their
  model_utils.py appends it to the reply itself: in the fresh history an agent's own last reply and the
  filter's input carry it too);
- ``vote`` (DAR's last-vote cue, "Majority vote from last round: X"): in chat history each round's
  prompt opens with it; in fresh history it stands after the peers' replies, as in DAR's build_normal_msg.
  A numeric vote is written as DAR writes it (its evaluator's np.round(float(x), 1): "7" -> "7.0",
  "-332" -> "-332.0"); a letter or text vote stays as it is (``dar_vote``).

A protocol holds each built-in cue in its own slot (``confidence``, ``uncertainty_cue``, ``vote_cue``; ``true``
in an experiment file means the cue with its defaults) and any other registered cue, a plug-in's own, in the
list ``cues`` (``cues = [{ kind = "tally" }]``). ``ProtocolSpec.cues`` is all of them, in that order: the order
in which their texts are joined wherever cues apply.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import Field

from moot.debate.confidence import confidence_instruction, split_confidence
from moot.debate.records import RoundRecord, Turn
from moot.debate.registry import Component, register, template


class Cue(Component):
    family = "cue"

    def instruction(self) -> str:
        """Appended to every message an agent is asked to answer."""
        return ""

    def label(self, turn: Turn) -> str:
        """Shown beside a forwarded reply's heading."""
        return ""

    def footnote(self, turn: Turn) -> str:
        """Shown after a forwarded reply."""
        return ""

    def prefix(self, previous: RoundRecord) -> str:
        """Put before a debate round's prompt (chat history)."""
        return ""

    def inline(self, previous: RoundRecord, show: Callable[[str | None], str]) -> str:
        """Written inside a fresh round prompt, after the peers' replies (DAR's placement); ``show``
        writes an answer as the prompt's templates do."""
        return ""


@register
class ConfidenceCue(Cue):
    kind: Literal["confidence"] = "confidence"
    scale: int = Field(default=10, ge=1, description="agents state a confidence from 0 to scale")

    def instruction(self) -> str:
        return confidence_instruction(self.scale)

    def read(self, text: str) -> tuple[str, float | None]:
        """(the reply without its confidence statement, the stated confidence or None)."""
        return split_confidence(text, self.scale)

    @template
    def label(self, turn: Turn) -> str:
        stated = "not stated" if turn.confidence is None else f"{turn.confidence:g}/{self.scale}"
        return f" (confidence {stated})"

    def describe(self, protocol: Any = None) -> str:
        return f"stated on 0-{self.scale}, shown to peers"


@register
class UncertaintyCue(Cue):
    kind: Literal["uncertainty"] = "uncertainty"
    needs_logprobs = True

    @template
    def footnote(self, turn: Turn) -> str:
        value = "unknown" if turn.anll is None else f"{turn.anll:.4f}"
        return f"\n\nUncertainty score (Average Negative Log Likelihood) for this response: {value}"

    def describe(self, protocol: Any = None) -> str:
        return "uncertainty (ANLL)"


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")  # a numeric answer as moot stores it (canonical)


def dar_vote(answer: str | None) -> str | None:
    """A vote as DAR writes it: a numeric answer as the float it keeps (its evaluator's np.round(float(x), 1)),
    written as Python's str(round(float(x), 1)): "7" -> "7.0", "-332" -> "-332.0", "2.5" -> "2.5"; any other
    answer (a letter, a text) and None unchanged."""
    if answer is None or not _NUMBER.fullmatch(answer):
        return answer
    return str(round(float(answer), 1))


@register
class VoteCue(Cue):
    kind: Literal["vote"] = "vote"
    reads_answers: ClassVar[bool] = True

    @template
    def prefix(self, previous: RoundRecord) -> str:
        last = dar_vote(previous.vote.winner)
        return f"Majority vote from last round: {last if last is not None else 'none'}\n\n"

    @template
    def inline(self, previous: RoundRecord, show: Callable[[str | None], str]) -> str:
        return f"\nMajority vote from last round: {show(dar_vote(previous.vote.winner))}\n"

    def describe(self, protocol: Any = None) -> str:
        return "last vote"


@register
class AntiConformityCue(Cue):
    """Free-MAD's anti-conformity (Cui et al. 2026): in every debate round, agents are told to look for the flaws
    in their peers' solutions and to keep their own answer unless they find an error in it, so that a correct
    minority is not talked out of its answer by the majority. The wording is moot's: the paper's prompt was not
    available to moot. Put before the round's prompt in chat history, after the peers' replies in fresh history;
    round 0 is unchanged (its requests are those of the same protocol without the cue)."""

    kind: Literal["anti-conformity"] = "anti-conformity"

    @template
    def prefix(self, previous: RoundRecord) -> str:
        return (
            "Do not follow the other agents because several of them agree. Check each of their solutions step by "
            "step for errors, and check your own. Keep your answer unless you find an error in your own reasoning; "
            "if you do, correct it.\n\n"
        )

    def inline(self, previous: RoundRecord, show: Callable[[str | None], str]) -> str:
        return "\n" + self.prefix(previous)

    def describe(self, protocol: Any = None) -> str:
        return "anti-conformity (check peers for errors; keep one's answer unless one's own is wrong)"
