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
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from pydantic import Field

from moot.debate.records import JudgeVerdict, RoundRecord, Turn, Vote
from moot.debate.registry import Component, register, rules

if TYPE_CHECKING:
    from moot.debate.context import Debate

TieRule = Literal["first", "random", "abstain"]
TIE_RULES: tuple[str, ...] = get_args(TieRule)  # the tie rules, in the order they are documented


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
    # Its vote reads every round so far (``round_vote``), not the round alone: a reader re-reads them all.
    reads_rounds: ClassVar[bool] = False

    def vote(self, turns: Sequence[Turn], tie_rule: TieRule, seed: int) -> Vote:
        return majority_vote([t.answer for t in turns], tie_rule, seed)

    def round_vote(self, earlier: Sequence[RoundRecord], turns: Sequence[Turn], tie_rule: TieRule, seed: int) -> Vote:
        """The vote of a round given the rounds before it (``earlier``): what the schedules record. A rule that
        reads only the round itself (every rule but a trajectory score) overrides ``vote`` alone."""
        return self.vote(turns, tie_rule, seed)

    async def conclude(self, debate: Debate) -> JudgeVerdict | None:
        """A helper's ruling after the last round of a peer debate, where the rule has one (an aggregator's
        synthesis); stored as the result's final verdict and passed to ``final``."""
        return None

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


@register
class TrajectoryScore(Aggregation):
    """Free-MAD's score-based decision (Cui et al. 2026): every round of every agent scores the answers, and the
    answer with the highest score wins, rather than the last round's majority.

    Round 0: each agent's answer gains ``initial``. Round r >= 1: an agent that keeps its answer adds ``keep`` to
    it; one that changes takes ``change_penalty`` from the answer it left and adds ``change_bonus`` to the one it
    took (from an unread reply, it only adds). Every round-r amount is scaled by 1 / (r + 1), so that later rounds,
    where agents have read their peers and conform more, count less. An unread reply changes no score. Ties at the top score go by the
    protocol's tie rule (in order of first appearance). The defaults are those of a public implementation of the
    paper (jonathansantilli/freemad: 20, 25, 30, 20); the paper's own PDF was not available to moot, so they are
    parameters. Each round's vote records the scores so far in ``weights``."""

    kind: Literal["trajectory"] = "trajectory"
    reads_rounds: ClassVar[bool] = True
    initial: float = Field(default=20.0, ge=0, description="score an answer gains from each agent giving it in round 0")
    change_penalty: float = Field(default=25.0, ge=0, description="score an answer loses when an agent leaves it")
    change_bonus: float = Field(default=30.0, ge=0, description="score an answer gains when an agent changes to it")
    keep: float = Field(default=20.0, ge=0, description="score an answer gains when an agent keeps it")

    def round_vote(self, earlier: Sequence[RoundRecord], turns: Sequence[Turn], tie_rule: TieRule, seed: int) -> Vote:
        rounds = [[t.answer for t in record.turns] for record in earlier] + [[t.answer for t in turns]]
        scores = trajectory_scores(rounds, (self.initial, self.change_penalty, self.change_bonus, self.keep))
        plain = majority_vote(rounds[-1], tie_rule, seed)
        if not scores:
            return plain
        top = max(scores.values())
        tied = tuple(a for a, s in scores.items() if s == top)
        winner = break_tie(tied, tie_rule, seed)
        return Vote(plain.counts, winner, tied, plain.unparsed, tuple(scores.items()), _drawn(tied, tie_rule, seed))

    def check(self, protocol: Any) -> None:
        if not protocol.style.has_peers:
            raise ValueError("aggregation 'trajectory' scores the rounds of a peer debate (style 'peers')")

    def describe(self, protocol: Any = None) -> str:
        ties = f"; ties: {protocol.tie_rule}" if protocol is not None else ""
        return (
            f"Free-MAD trajectory score: round 0 +{self.initial:g} an answer, then keep +{self.keep:g}, change "
            f"-{self.change_penalty:g} to the answer left and +{self.change_bonus:g} to the one taken, round r "
            f"scaled by 1/(r+1); the highest score wins{ties}"
        )


def trajectory_scores(
    rounds: Sequence[Sequence[str | None]], weights: tuple[float, float, float, float]
) -> dict[str, float]:
    """Free-MAD's scores of the answers given in ``rounds`` (each a list of the agents' answers, in agent order;
    None: unread), in order of first appearance. ``weights``: (initial, change penalty, change bonus, keep)."""
    initial, penalty, bonus, keep = weights
    scores: dict[str, float] = {}

    def add(answer: str | None, amount: float) -> None:
        if answer is not None:
            scores[answer] = scores.get(answer, 0.0) + amount

    for r, answers in enumerate(rounds):
        scale = 1.0 / (r + 1)
        for i, answer in enumerate(answers):
            if r == 0:
                add(answer, initial * scale)
                continue
            before = rounds[r - 1][i] if i < len(rounds[r - 1]) else None
            if answer is None:
                continue  # an unread reply says nothing: no answer gains or loses
            if answer == before:
                add(answer, keep * scale)
            else:
                add(before, -penalty * scale)
                add(answer, bonus * scale)
    return scores


@register
class Synthesis(Aggregation):
    """Mixture-of-Agents' aggregator (Wang et al. 2024; Self-MoA, Li et al. 2025): after the last round a helper
    model reads the agents' replies under the Aggregate-and-Synthesize prompt and writes one answer, which is the
    final answer as the debate's reader reads it. A synthesis with no answer is unparsed and counted so: never
    replaced by a vote of the agents."""

    kind: Literal["synthesis"] = "synthesis"
    judged = True
    needs_helper: ClassVar[bool] = True

    async def conclude(self, debate: Debate) -> JudgeVerdict | None:
        from moot.debate.context import AGGREGATOR_NAME
        from moot.debate.prompts import synthesis_messages

        protocol, task, question = debate.protocol, debate.task, debate.question
        last = debate.records[-1]
        helper = debate.helper
        system = protocol.system_prompt(task, helper.spec) if helper is not None else None
        messages = synthesis_messages(task, question, system, [t.peer_text for t in last.turns])
        reply = await debate.ask(AGGREGATOR_NAME, messages, last.index + 1)
        extraction = protocol.history.read(task, question, reply.text)
        return JudgeVerdict(
            reply.text, extraction.answer, None, reply.prompt_tokens, reply.completion_tokens, reply.latency_s
        )

    def final(
        self, records: Sequence[RoundRecord], final_judge: JudgeVerdict | None
    ) -> tuple[str | None, tuple[str, ...]]:
        return (final_judge.answer if final_judge is not None else None), ()

    def check(self, protocol: Any) -> None:
        if not protocol.style.has_peers:
            raise ValueError("aggregation 'synthesis' reads the last round of a peer debate (style 'peers')")

    def describe(self, protocol: Any = None) -> str:
        return (
            "synthesis: after the last round an aggregator (the helper model) reads every reply under "
            "Mixture-of-Agents' Aggregate-and-Synthesize prompt; its answer is final (none read: unparsed)"
        )
