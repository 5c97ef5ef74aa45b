"""Stop when a judge is confident: after each round a helper call reads the agents' latest replies and
returns an answer and a 0-100 confidence; the debate stops at confidence >= ``threshold`` (the stopping
study's Du adaptive condition)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from moot.backends.base import Message
from moot.debate.components.stopping import Stopping
from moot.debate.context import JUDGE_NAME
from moot.debate.records import JudgeVerdict, RoundRecord, Turn
from moot.debate.registry import register, template
from moot.tasks.base import Question, Task

if TYPE_CHECKING:
    from moot.debate.context import Debate

JUDGE_SYSTEM = (
    "You are a judge of a debate between agents. Read the question and the agents' latest answers, "
    "decide which answer is correct, and say how confident you are."
)


@dataclass(frozen=True)
class JudgeReading:
    """What was read from a judge's reply: the answer as the task extracts it, and the confidence."""

    answer: str | None
    confidence: float | None


@template
def judge_messages(task: Task, question: Question, turns: Sequence[Turn]) -> tuple[Message, ...]:
    replies = "".join(f"\n\n{t.agent}: ```{t.text}```" for t in turns)
    prompt = (
        f"Question: {task.render(question)}\n\nThe agents answered:{replies}\n\n"
        'Reply with JSON only: {"answer": "<the final answer>", "confidence": <0-100>}.'
    )
    return (Message("system", JUDGE_SYSTEM), Message("user", prompt))


_CONFIDENCE = re.compile(r"confidence\W{0,4}(\d{1,3}(?:\.\d+)?)", re.IGNORECASE)


def read_judge(task: Task, question: Question, text: str) -> JudgeReading:
    """Parse the judge's JSON (the last {...} object that parses); its answer field is read as a stated
    answer (a bare "B" is the letter B); fall back to "confidence: N" and the task's extractor on the
    whole reply. A confidence outside 0-100 is recorded as missing, never clipped."""
    answer_text: str | None = None
    confidence: float | None = None
    for candidate in reversed(re.findall(r"\{[^{}]*\}", text)):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            answer_text = str(data["answer"]) if data.get("answer") is not None else None
            raw = data.get("confidence")
            confidence = float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else None
            break
    match = _CONFIDENCE.search(text)
    if confidence is None and match is not None:
        confidence = float(match.group(1))
    if confidence is not None and not 0 <= confidence <= 100:
        confidence = None
    if answer_text is not None:
        extraction = task.read_answer(answer_text, question)
    else:  # the whole reply, without its confidence statement (its number is not the answer)
        extraction = task.read_reply(_CONFIDENCE.sub(" ", text), question)
    return JudgeReading(extraction.answer, confidence)


@register
class JudgeConfidence(Stopping):
    kind: Literal["judge"] = "judge"
    threshold: float = Field(default=90.0, ge=0.0, le=100.0, description="judge confidence to stop at (0-100)")
    needs_helper = True

    async def verdict(self, debate: Debate, turns: Sequence[Turn], round_index: int) -> JudgeVerdict | None:
        reply = await debate.ask(JUDGE_NAME, judge_messages(debate.task, debate.question, turns), round_index)
        reading = read_judge(debate.task, debate.question, reply.text)
        return JudgeVerdict(
            reply.text,
            reading.answer,
            reading.confidence,
            reply.prompt_tokens,
            reply.completion_tokens,
            reply.latency_s,
        )

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        verdict = history[-1].judge
        if verdict is not None and verdict.confidence is not None and verdict.confidence >= self.threshold:
            return "judge_confident"
        return None

    def condition(self) -> str:
        return f"judge confidence >= {self.threshold:g}/100"
