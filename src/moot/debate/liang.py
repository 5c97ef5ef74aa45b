"""Liang et al.'s debate (MAD, "Encouraging Divergent Thinking"): an affirmative and a negative debater
speak in turn, a moderator evaluates each round, and a final judge decides at the cap.

The prompt wording follows Liang et al.'s release (code/utils/config4all.json: the debater and
moderator meta prompts, the negative side's opening, the rebuttal, the moderator's JSON schema and
the final judge's two steps), reproduced for the protocol's fidelity. moot adds the task's format
request and, for the strict variant, a 0-100 confidence field. JSON is parsed with validation and
one bounded repair call, never with eval.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from moot.backends.base import Message
from moot.tasks.base import Question, Task

ROLES = ("affirmative", "negative")


def debater_system(task: Task, question: Question) -> str:
    return (
        "You are a debater. Hello and welcome to the debate. It's not necessary to fully agree with each "
        "other's perspectives, as our objective is to find the correct answer. The debate topic is stated as "
        f"follows: {task.render(question)}"
    )


def opening(task: Task, question: Question) -> Message:
    return Message("user", task.render(question))


def negative_opening(task: Task, affirmative: str) -> Message:
    return Message("user", f"{affirmative}\n\nYou disagree with my answer. Provide your answer and reasons. {task.answer_instruction}")


def rebuttal(task: Task, other: str) -> Message:
    return Message(
        "user", f"{other}\n\nDo you agree with my perspective? Please provide your reasons and answer. {task.answer_instruction}"
    )


def moderator_system(task: Task, question: Question) -> str:
    return (
        "You are a moderator. There will be two debaters involved in a debate. They will present their answers "
        f"and discuss their perspectives on the following topic: {task.render(question)}\nAt the end of each "
        "round, you will evaluate answers and decide which is correct."
    )


def moderator_prompt(round_index: int, affirmative: str, negative: str, with_confidence: bool) -> Message:
    fields = '"Whether there is a preference": "Yes or No", "Supported Side": "Affirmative or Negative", "Reason": "", "debate_answer": ""'
    if with_confidence:
        fields += ', "confidence": "0-100"'
    return Message(
        "user",
        f"Now the round {round_index + 1} of debate for both sides has ended.\n\nAffirmative side arguing: "
        f"{affirmative}\n\nNegative side arguing: {negative}\n\nYou, as the moderator, will evaluate both sides' "
        "answers and determine if there is a clear preference for an answer candidate. If so, please summarize "
        "your reasons for supporting affirmative/negative side and give the final answer that you think is "
        "correct, and the debate will conclude. If not, the debate will continue to the next round. Now please "
        f"output your answer in json format, with the format as follows: {{{fields}}}. Please strictly output in "
        "JSON format, do not output irrelevant content.",
    )


def judge_candidates_prompt(affirmative: str, negative: str) -> Message:
    return Message(
        "user",
        f"Affirmative side arguing: {affirmative}\n\nNegative side arguing: {negative}\n\n"
        "Now, what answer candidates do we have? Present them without reasons.",
    )


def judge_decision_prompt(task: Task, question: Question) -> Message:
    return Message(
        "user",
        f"Therefore, {task.render(question)}\nPlease summarize your reasons and give the final answer that you "
        'think is correct. Now please output your answer in json format, with the format as follows: {"Reason": '
        '"", "debate_answer": ""}. Please strictly output in JSON format, do not output irrelevant content.',
    )


REPAIR = Message(
    "user",
    "Your reply was not valid JSON in the requested format. Reply again with only the JSON object, nothing else.",
)


@dataclass(frozen=True)
class ModeratorReading:
    """A moderator's or final judge's JSON, validated: None fields were missing or invalid."""

    valid: bool
    preference: bool | None
    side: str | None
    answer_text: str | None
    confidence: float | None


def read_moderator(text: str) -> ModeratorReading:
    """Parse the last JSON object in ``text`` (with or without a ```json fence); validate its fields."""
    for candidate in reversed(re.findall(r"\{.*?\}", text, re.DOTALL)):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            continue
        keys = {k.lower().strip(): v for k, v in data.items()}
        raw_preference = str(keys.get("whether there is a preference", "")).strip().lower()
        preference = {"yes": True, "no": False}.get(raw_preference)
        side = str(keys.get("supported side", "")).strip().lower() or None
        answer = keys.get("debate_answer")
        answer_text = str(answer).strip() if answer not in (None, "") else None
        raw_confidence = keys.get("confidence")
        try:
            confidence: float | None = float(raw_confidence) if raw_confidence not in (None, "") else None
        except (TypeError, ValueError):
            confidence = None
        if confidence is not None and not 0 <= confidence <= 100:
            confidence = None
        return ModeratorReading(True, preference, side if side in ROLES else None, answer_text, confidence)
    return ModeratorReading(False, None, None, None, None)
