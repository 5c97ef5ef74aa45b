"""Records of a debate: turns, rounds, votes and the result of one question."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from moot.backends.base import Message, TokenLogprob
from moot.tasks.base import ParseStatus, Question

TRUNCATED = "length"  # the finish reason of a reply cut off by the token limit


class FinalStatus(StrEnum):
    """How the system's final answer came about."""

    ANSWERED = "answered"
    UNPARSED = "unparsed"  # no agent gave a parseable answer in the deciding round: scored wrong
    ABSTAINED = "abstained"  # a tie under the "abstain" rule: scored wrong
    ERROR = "error"  # a model call failed: scored wrong, reported separately


class StopReason(str):
    """Why a debate ended: a name from an open set, so a plug-in's stopping rule may name its own reason.

    A str subclass rather than a StrEnum: the built-in reasons are constants (``StopReason.MAX_ROUNDS``),
    a plug-in's rule returns any name (``Stopping.stop`` makes it a StopReason), and a store writes and
    reads the plain string, so runs stored before this type existed read back the same values (equal to,
    and hashing as, the strings they hold)."""

    __slots__ = ()

    MAX_ROUNDS: ClassVar[StopReason]  # the round cap was reached
    ERROR: ClassVar[StopReason]  # a model call failed
    CONSENSUS: ClassVar[StopReason]  # stopping 'consensus'
    STABLE: ClassVar[StopReason]  # stopping 'stable'
    JUDGE_CONFIDENT: ClassVar[StopReason]  # stopping 'judge'
    MODERATOR_ANSWER: ClassVar[StopReason]  # stopping 'moderator_answer' (Liang et al.'s release)
    MODERATOR_PREFERENCE: ClassVar[StopReason]  # stopping 'moderator' (moot 0.1)
    MODERATOR_CONFIDENT: ClassVar[StopReason]  # stopping 'moderator_confidence'
    DATASET_STABLE: ClassVar[StopReason]  # stopping 'stability': the agreement over all questions settled
    GATE_SKIP: ClassVar[StopReason]  # stopping 'learned-gate': the gate kept round 0's answer (no debate)

    def __repr__(self) -> str:
        return f"StopReason({str.__repr__(self)})"


StopReason.MAX_ROUNDS = StopReason("max_rounds")
StopReason.ERROR = StopReason("error")
StopReason.CONSENSUS = StopReason("consensus")
StopReason.STABLE = StopReason("stable")
StopReason.JUDGE_CONFIDENT = StopReason("judge_confident")
StopReason.MODERATOR_ANSWER = StopReason("moderator_answer")
StopReason.MODERATOR_PREFERENCE = StopReason("moderator_preference")
StopReason.MODERATOR_CONFIDENT = StopReason("moderator_confident")
StopReason.DATASET_STABLE = StopReason("dataset_stable")
StopReason.GATE_SKIP = StopReason("gate_no_debate")


@dataclass(frozen=True)
class Turn:
    """One agent's reply in one round, and everything it was shown."""

    agent: str
    round: int
    text: str
    answer: str | None
    parse_status: ParseStatus
    correct: bool | None
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    seed: int | None
    shown: tuple[Message, ...]
    logprobs: tuple[TokenLogprob, ...] | None = None
    confidence: float | None = None  # verbalised, on the protocol's scale; None when not given
    nll: float | None = None  # of the generated tokens, when log-probabilities were asked
    anll: float | None = None  # average per token: DAR's uncertainty cue
    perplexity: float | None = None
    reasoning: str | None = None  # the reply's reasoning, read apart from ``text`` (its content)
    reasoning_tokens: int | None = None  # of completion_tokens; None when unknown or no reasoning
    seen: str | None = None  # what the protocol's peer_view shows again of the reply; None: ``text``

    @property
    def peer_text(self) -> str:
        """The reply as it is shown again, to peers and in the agent's own next prompt (``peer_view``)."""
        return self.text if self.seen is None else self.seen

    @property
    def reasoning_only(self) -> bool:
        """The reply reasoned but gave no content (its block never closed, or nothing followed it): unparsed,
        its answer never read from the reasoning."""
        return self.reasoning is not None and not self.text.strip()

    @property
    def truncated(self) -> bool:
        """The reply was cut off by the token limit (finish reason "length", as the OpenAI API and
        llama.cpp report it): its answer, if any, may be incomplete."""
        return self.finish_reason == TRUNCATED


@dataclass(frozen=True)
class Vote:
    """A majority vote over one round's parsed answers."""

    counts: tuple[tuple[str, int], ...]  # answer -> votes, in order of first appearance
    winner: str | None
    tied: tuple[str, ...]  # answers sharing the top count (more than one means a tie was broken)
    unparsed: int
    # answer -> its weight, if the vote is weighted: total stated confidence, or a trajectory score (Free-MAD)
    weights: tuple[tuple[str, float], ...] | None = None
    tie_seed: int | None = None  # the seed that broke a tie at random (tie rule "random"); None: no random draw


@dataclass(frozen=True)
class JudgeVerdict:
    """A judge call after a round: its reply, the answer read from it, and its 0-100 confidence."""

    text: str
    answer: str | None
    confidence: float | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    preference: bool | None = None  # a Liang moderator's "Whether there is a preference"
    calls: int = 1  # model calls behind this verdict (a JSON repair or a two-step judge adds calls)
    answer_text: str | None = None  # the answer field as written (Liang's debate_answer), before extraction


@dataclass(frozen=True)
class PoolRecord:
    """Round 0 of a diversity-aware initialisation: the candidates sampled, the ones kept and why."""

    texts: tuple[str, ...]
    answers: tuple[str | None, ...]
    sources: tuple[str, ...]  # the agent whose call produced each candidate
    selected: tuple[int, ...]  # pool indices given to agents 1..N, in order
    answer_diversity: float  # distinct answers / N among the selected
    text_diversity: float  # mean pairwise 1 - similarity (the protocol's) among the selected
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class RetentionRecord:
    """Which previous-round replies were forwarded into this round, and what choosing them cost."""

    rule: str
    kept: tuple[str, ...]  # agent names whose replies were forwarded
    fallback: bool  # the filter's selection was empty or invalid, so every reply was kept
    forwarded: int  # replies shown to agents this round, summed over agents
    filter_text: str | None
    filter_calls: int
    filter_prompt_tokens: int
    filter_completion_tokens: int
    # The kept replies' mean pairwise 1 - similarity and its measure, as earlier runs stored them. A debate
    # no longer measures it (None): a report computes it from the kept replies' stored texts
    # (moot.analysis.report), so that no embedding model loads while a debate runs.
    diversity: float | None = None
    diversity_measure: str | None = None  # MiniLM cosine when the embeddings extra is installed, else token Jaccard


@dataclass(frozen=True)
class RoundRecord:
    index: int
    turns: tuple[Turn, ...]
    vote: Vote
    judge: JudgeVerdict | None = None
    pool: PoolRecord | None = None
    retention: RetentionRecord | None = None


@dataclass(frozen=True)
class DebateResult:
    """The outcome of one question under one protocol."""

    question: Question
    protocol: str
    rounds: tuple[RoundRecord, ...]
    final_answer: str | None
    status: FinalStatus
    correct: bool
    stop_reason: StopReason
    error: str | None = None
    final_judge: JudgeVerdict | None = None  # Liang's final judge at the round cap

    def __post_init__(self) -> None:
        if type(self.stop_reason) is not StopReason:  # a plain string (a plug-in's, a caller's): the same name
            object.__setattr__(self, "stop_reason", StopReason(self.stop_reason))

    @property
    def rounds_used(self) -> int:
        return len(self.rounds)

    @property
    def truncated(self) -> int:
        """How many of the agents' replies were cut off by the token limit."""
        return sum(t.truncated for r in self.rounds for t in r.turns)
