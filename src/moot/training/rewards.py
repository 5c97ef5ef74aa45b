"""The reward parts of the GRPO stages (Zhu et al., B.2: correctness and confidence rewards, plus an
engagement constraint); the total reward is their weighted sum (moot.training.types.RewardPart).

A reply is read as a debate reads it (moot.debate.context.Debate.speak): its "Confidence: N" statement
is read and removed by moot.debate.confidence.split_confidence, then the task's own extractor reads the
answer and the task's scorer scores it. An unparsed answer is wrong, never a guess.

- ``correctness``: 1 when the extracted answer is right, else 0 (an unparsed reply: 0).
- ``calibration``: the negative Brier score of the stated confidence c (as a fraction of the scale)
  against the outcome y: -(c - y)^2, in [-1, 0]; y is the reply's correctness (1 or 0), or with
  ``calibration_target = "self-consistency"`` the question's stage-1 accuracy. A missing or unreadable
  confidence gets the worst score, -1.
- ``engagement`` (perception only; moot's reading of the paper's under-specified constraint, which
  "rewards discourse cues" that respond to the others' reasoning and confidence): 0.5 when the reply
  refers to its peers (one of the words agent(s), peer(s), other(s), another), plus 0.5 when it refers
  to confidence beyond stating its own (the words confidence, confident or confidently occur more often
  than its own "Confidence: N" statement accounts for: once when it states one, else never); so 0,
  0.5 or 1. An example without peers scores 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from moot.debate.confidence import split_confidence
from moot.tasks.base import Question, Task
from moot.training.types import RewardPart, Stage, TrainingExample

WORST_CALIBRATION = -1.0
PEER_CUES = re.compile(r"\b(?:agents?|peers?|others?|another)\b", re.IGNORECASE)
CONFIDENCE_CUES = re.compile(r"\bconfiden(?:ce|t|tly)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Reading:
    """A completion as a debate reads it: the answer (None: unparsed), the stated confidence as a fraction
    of the scale (None: missing), whether the answer is right, and the text without its statement."""

    answer: str | None
    confidence: float | None
    correct: bool
    text: str


@dataclass(frozen=True)
class ReplyReader:
    """Reads completions with the task's extractor and scorer; ``questions`` by id give the scorer the
    whole question (choices, positions), else a question with the example's gold is used."""

    task: Task
    questions: Mapping[str, Question]
    scale: int = 10

    def read(self, example: TrainingExample, completion: str) -> Reading:
        question = self.questions.get(example.question_id) or Question(example.question_id, "", example.gold)
        text, stated = split_confidence(completion, self.scale)
        extraction = self.task.read_reply(text, question)
        correct = extraction.answer is not None and self.task.score(extraction.answer, question)
        return Reading(extraction.answer, None if stated is None else stated / self.scale, correct, text)


class Correctness:
    """1 for a right answer, else 0."""

    def __init__(self, reader: ReplyReader, weight: float = 1.0) -> None:
        self.name = "correctness"
        self.weight = weight
        self.reader = reader

    def __call__(self, example: TrainingExample, completion: str) -> float:
        return 1.0 if self.reader.read(example, completion).correct else 0.0


class Calibration:
    """The negative Brier score of the stated confidence; -1 when none is stated."""

    def __init__(self, reader: ReplyReader, weight: float = 1.0, target: str = "correctness") -> None:
        if target not in ("correctness", "self-consistency"):
            raise ValueError(f"calibration target must be correctness or self-consistency, got {target!r}")
        self.name = "calibration"
        self.weight = weight
        self.reader = reader
        self.target = target

    def __call__(self, example: TrainingExample, completion: str) -> float:
        reading = self.reader.read(example, completion)
        if reading.confidence is None:
            return WORST_CALIBRATION
        outcome = 1.0 if reading.correct else 0.0
        if self.target == "self-consistency" and example.target_confidence is not None:
            outcome = example.target_confidence
        return -((reading.confidence - outcome) ** 2)


class Engagement:
    """0.5 for referring to the peers, 0.5 for referring to confidence beyond stating one's own."""

    def __init__(self, scale: int = 10, weight: float = 0.5) -> None:
        self.name = "engagement"
        self.weight = weight
        self.scale = scale

    def __call__(self, example: TrainingExample, completion: str) -> float:
        if not example.peer_answers:
            return 0.0
        score = 0.5 if PEER_CUES.search(completion) else 0.0
        _, stated = split_confidence(completion, self.scale)
        own = 1 if stated is not None else 0  # the reply's own "Confidence: N" (its last statement)
        if len(CONFIDENCE_CUES.findall(completion)) > own:
            score += 0.5
        return score


def stage_rewards(
    stage: Stage,
    task: Task,
    questions: Mapping[str, Question],
    *,
    correctness: float = 1.0,
    calibration: float = 1.0,
    engagement: float = 0.5,
    calibration_target: str = "correctness",
    scale: int = 10,
) -> list[RewardPart]:
    """The reward parts of a stage: correctness and calibration, and for perception engagement too;
    a part of weight 0 is left out."""
    reader = ReplyReader(task, questions, scale)
    parts: list[RewardPart] = [
        Correctness(reader, correctness),
        Calibration(reader, calibration, calibration_target),
    ]
    if stage == "perception":
        parts.append(Engagement(scale, engagement))
    return [p for p in parts if p.weight > 0]
