"""Aggregation of a round's answers into the system's answer."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from moot.debate.records import Vote

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
    return Vote(ranked, break_tie(tied, tie_rule, seed), tied, unparsed)


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
    return Vote(plain.counts, break_tie(tied, tie_rule, seed), tied, plain.unparsed, tuple(totals.items()))
