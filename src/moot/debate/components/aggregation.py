"""Aggregation: a round's answers as a vote, and the debate's final answer.

``majority``: plurality of the last round, ties by the protocol's tie rule (Du et al.; also Zhu et al.'s
confidence-modulated debate, whose final answer is the majority over the terminal responses);
``confidence``: the plurality weighted by stated confidence (moot's variant after Zhu et al.'s
confidence-weighted counts; a missing confidence weighs 0); ``judge``: the last judge's answer;
``moderator`` (Liang et al.): the moderator's answer when it ends the debate, else the final judge's.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from moot.debate.records import JudgeVerdict, RoundRecord, Turn, Vote
from moot.debate.registry import Component, register, rules

TieRule = Literal["first", "random", "abstain"]


def majority_vote(answers: Sequence[str | None], tie_rule: TieRule = "first", seed: int = 0) -> Vote:
    """Plurality over parsed answers; ``None`` (unparsed) does not vote.

    Ties between answers with the top count are broken by ``tie_rule``:
    ``first``: the answer of the earliest agent in order among the tied (Du et al.);
    ``random``: uniformly among the tied, from ``seed`` (reproducible);
    ``abstain``: no answer.
    """
    parsed = [a for a in answers if a is not None]
    counts = Counter(parsed)
    order = list(dict.fromkeys(parsed))  # first appearance, i.e. earliest agent
    ranked = tuple((a, counts[a]) for a in order)
    unparsed = len(answers) - len(parsed)
    if not parsed:
        return Vote(ranked, None, (), unparsed)
    top = max(counts.values())
    tied = tuple(a for a in order if counts[a] == top)
    return Vote(ranked, break_tie(tied, tie_rule, seed), tied, unparsed, tie_seed=_drawn(tied, tie_rule, seed))


def _drawn(tied: Sequence[str], tie_rule: TieRule, seed: int) -> int | None:
    """The seed of the random draw that broke a tie, recorded in the vote (None when nothing was drawn)."""
    return seed if tie_rule == "random" and len(tied) > 1 else None


def break_tie(tied: Sequence[str], tie_rule: TieRule, seed: int) -> str | None:
    """The winner among answers tied at the top (one answer is no tie)."""
    if len(tied) == 1 or tie_rule == "first":
        return tied[0]
    if tie_rule == "random":
        return random.Random(seed).choice(tied)
    if tie_rule == "abstain":
        return None
    raise ValueError(f"unknown tie rule {tie_rule!r}")


def weighted_vote(
    answers: Sequence[str | None], confidences: Sequence[float | None], tie_rule: TieRule = "first", seed: int = 0
) -> Vote:
    """Confidence-weighted plurality (Zhu et al.): each parsed answer adds its agent's confidence.

    A missing confidence weighs 0. Answers tied at the top weight are broken by ``tie_rule``
    as in ``majority_vote``. If every weight is 0 (no confidence given, or all zero), the vote
    falls back to the unweighted majority, and ``weights`` is None to say so.
    """
    plain = majority_vote(answers, tie_rule, seed)
    totals: dict[str, float] = {}
    for answer, confidence in zip(answers, confidences, strict=True):
        if answer is not None:
            totals[answer] = totals.get(answer, 0.0) + (confidence or 0.0)
    if not totals or max(totals.values()) <= 0:
        return plain
    top = max(totals.values())
    tied = tuple(a for a in totals if totals[a] == top)
    winner = break_tie(tied, tie_rule, seed)
    return Vote(plain.counts, winner, tied, plain.unparsed, tuple(totals.items()), _drawn(tied, tie_rule, seed))


class Aggregation(Component):
    """How a round's answers become a vote, and how the debate's final answer is chosen."""

    family = "aggregation"
    # The final answer is a judge's or moderator's, not the agents' vote (what style 'liang' needs).
    judged: ClassVar[bool] = False

    def vote(self, turns: Sequence[Turn], tie_rule: TieRule, seed: int) -> Vote:
        return majority_vote([t.answer for t in turns], tie_rule, seed)

    def final(
        self, records: Sequence[RoundRecord], final_judge: JudgeVerdict | None
    ) -> tuple[str | None, tuple[str, ...]]:
        """(the final answer, the answers tied at the top when the tie rule gave none)."""
        last = records[-1].vote
        return last.winner, last.tied


@register
class Majority(Aggregation):
    kind: Literal["majority"] = "majority"

    def describe(self, protocol: Any = None) -> str:
        return f"majority (ties: {protocol.tie_rule})" if protocol is not None else "majority"


@register
class ConfidenceWeighted(Aggregation):
    kind: Literal["confidence"] = "confidence"
    reads_answers: ClassVar[bool] = True

    def vote(self, turns: Sequence[Turn], tie_rule: TieRule, seed: int) -> Vote:
        return weighted_vote([t.answer for t in turns], [t.confidence for t in turns], tie_rule, seed)

    def check(self, protocol: Any) -> None:
        if protocol.confidence is None:
            raise ValueError("aggregation 'confidence' needs confidence = true (agents must state one)")

    def describe(self, protocol: Any = None) -> str:
        scale = f"0-{protocol.confidence.scale}" if protocol is not None and protocol.confidence else "its scale"
        ties = f"; ties: {protocol.tie_rule}" if protocol is not None else ""
        return (
            f"confidence-weighted majority: each parsed answer adds its agent's stated confidence ({scale}); "
            f"a missing confidence weighs 0; if every weight is 0, the unweighted majority{ties}"
        )


@register
class JudgeAnswer(Aggregation):
    """The last judge's answer (the judge is called after each round by stopping 'judge')."""

    kind: Literal["judge"] = "judge"
    judged = True

    def final(
        self, records: Sequence[RoundRecord], final_judge: JudgeVerdict | None
    ) -> tuple[str | None, tuple[str, ...]]:
        verdict = records[-1].judge
        return (verdict.answer if verdict is not None else None), ()

    def check(self, protocol: Any) -> None:
        if not protocol.stopping.judges_rounds:
            judging = [kind for kind, rule in rules("stopping").items() if getattr(rule, "judges_rounds", False)]
            kinds = " or ".join(repr(k) for k in judging)
            raise ValueError(f"aggregation 'judge' needs stopping kind {kinds} (the judge is called after each round)")


@register
class ModeratorAnswer(Aggregation):
    """Liang et al.: the moderator's answer when it ends the debate, else the final judge's."""

    kind: Literal["moderator"] = "moderator"
    judged = True

    def final(
        self, records: Sequence[RoundRecord], final_judge: JudgeVerdict | None
    ) -> tuple[str | None, tuple[str, ...]]:
        source = final_judge if final_judge is not None else records[-1].judge
        return (source.answer if source is not None else None), ()

    def check(self, protocol: Any) -> None:
        if not protocol.style.moderated:
            moderated = [kind for kind, rule in rules("schedule").items() if getattr(rule, "moderated", False)]
            raise ValueError(f"a moderator exists only in style {' or '.join(repr(k) for k in moderated)}")
