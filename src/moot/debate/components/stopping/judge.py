"""Stop when a judge is confident: after each round a helper call reads the agents' latest replies and
returns an answer and a 0-100 confidence; the debate stops at confidence >= ``threshold`` (the stopping
study's Du adaptive condition)."""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from moot.backends.base import Message
from moot.debate.components.stopping import Stopping
from moot.debate.context import JUDGE_NAME
from moot.debate.records import JudgeVerdict, RoundRecord, StopReason, Turn
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
    replies = "".join(f"\n\n{t.agent}: ```{t.peer_text}```" for t in turns)
    prompt = (
        f"Question: {task.render(question)}\n\nThe agents answered:{replies}\n\n"
        'Reply with JSON only: {"answer": "<the final answer>", "confidence": <0-100>}.'
    )
    return (Message("system", JUDGE_SYSTEM), Message("user", prompt))


_MAX_RESTARTS = 16  # "{" that never close, after each of which the scan starts again
_MAX_DEPTH = 16  # a ruling is a flat object: a deeper candidate is not read
_MAX_CANDIDATES = 16  # complete objects tried, from the last back
# Escapes kept as written; any other backslash is doubled (a literal backslash). \b, \f, \r, \t before a
# letter are LaTeX commands (\boxed, \frac, \right, \times), not escapes; \n is always a newline.
_JSON_ESCAPE = re.compile(r'\\(?:["\\/n]|u[0-9a-fA-F]{4}|[bfrt](?![A-Za-z]))|(?P<stray>\\)')
_PYTHON_ESCAPE = re.compile(r"""\\(?:["'\\n]|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[bfrt](?![A-Za-z]))|(?P<stray>\\)""")
# What a LaTeX command becomes when read as a JSON escape: \boxed a backspace, \frac a form feed,
# \times and \text a tab before a letter, \right a carriage return before a letter.
_LATEX_MARKS = re.compile(r"[\x08\x0c]|[\t\r][A-Za-z]")


def _objects(text: str) -> list[tuple[str, int]]:
    """The complete top-level ``{...}`` of ``text`` in order, each with its nesting depth. Braces inside
    quoted strings (double or single quotes, backslash escapes honoured) do not count; a quote opens a
    string only inside an object, so an apostrophe in prose opens nothing. After a ``{`` that never
    closes (a truncated reply, "{" in prose) the scan starts again just after it, at most 16 times, so
    the work stays linear in the text's length."""
    spans: list[tuple[str, int]] = []
    start = 0
    for _ in range(_MAX_RESTARTS):
        depth, deepest, opened, quote, escaped = 0, 0, 0, "", False
        for i in range(start, len(text)):
            char = text[i]
            if quote:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == quote:
                    quote = ""
            elif char == "{":
                if depth == 0:
                    opened, deepest = i, 0
                depth += 1
                deepest = max(deepest, depth)
            elif depth and char == "}":
                depth -= 1
                if depth == 0:
                    spans.append((text[opened : i + 1], deepest))
            elif depth and char in "\"'":
                quote = char
        if depth == 0:
            break
        start = opened + 1
    return spans


def _double_stray(candidate: str, escapes: re.Pattern[str]) -> str:
    """``candidate`` with every backslash that starts none of ``escapes`` doubled: a literal backslash."""
    return escapes.sub(lambda m: "\\\\" if m.group("stray") else m.group(0), candidate)


def _read_dict(candidate: str) -> dict[Any, Any] | None:
    """``candidate`` read as a dict by the first of three readers that can, else None:

    1. ``json.loads`` (control characters allowed in strings), unless a top-level string it decoded
       holds the marks of a LaTeX command read as a JSON escape (``_LATEX_MARKS``);
    2. ``json.loads`` after doubling each backslash that starts no JSON escape (``\\"``, ``\\\\``,
       ``\\/``, ``\\n``, ``\\uXXXX``, and ``\\b``, ``\\f``, ``\\r``, ``\\t`` when no letter follows), so that
       ``\\(`` and ``\\boxed`` are kept as written (``\\n`` is always a newline: ``\\neq`` is not kept);
    3. ``ast.literal_eval`` after the same doubling for Python's escapes: single quotes, True, False,
       None, any Python literal. Never ``eval``.

    A reader's error (a RecursionError or MemoryError too) or a value that is not a dict is "not this
    reader"."""
    readers: list[Callable[[], Any]] = [
        lambda: json.loads(candidate, strict=False),
        lambda: json.loads(_double_stray(candidate, _JSON_ESCAPE), strict=False),
        lambda: ast.literal_eval(_double_stray(candidate, _PYTHON_ESCAPE)),
    ]
    for index, reader in enumerate(readers):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # literal_eval's SyntaxWarning on odd literals
                data = reader()
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            continue
        if not isinstance(data, dict):
            continue
        strings = [s for item in data.items() for s in item if isinstance(s, str)]
        if index == 0 and any(_LATEX_MARKS.search(s) for s in strings):
            continue
        return data
    return None


def read_object(text: str) -> dict[str, Any] | None:
    """The last complete top-level ``{...}`` in ``text`` that reads as a dict (``_read_dict``; a ```json
    fence around it is fine), its keys lower-cased and stripped (``"Supported Side "`` is
    ``"supported side"``); None when none does: the ruling is unreadable. Of the complete objects, the
    last 16 are tried, and none nested deeper than 16: a ruling is a flat object, and the cap keeps
    hostile text (deep nesting, thousands of braces) cheap and free of RecursionError."""
    candidates = [span for span, depth in _objects(text) if depth <= _MAX_DEPTH]
    for candidate in reversed(candidates[-_MAX_CANDIDATES:]):
        data = _read_dict(candidate)
        if data is not None:
            return {str(key).strip().lower(): value for key, value in data.items()}
    return None


_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_PERCENT = re.compile(rf"(?P<number>{_NUMBER})\s*%")
_RATIO = re.compile(rf"(?P<number>{_NUMBER})\s*/\s*(?P<scale>{_NUMBER})")


def read_confidence(value: object) -> float | None:
    """A stated confidence on the 0-100 scale, or None.

    - A number, or a string that is one: the number (90, "90", 90.5), except that a number written with
      a decimal point and at most 1 is a fraction of 1: 0.95 and "0.95" are 95, 1.0 is 100 (1 is 1).
    - "N%": N ("90%" is 90, "0.5%" is 0.5).
    - "N/M" with M > 0: N out of M, rescaled ("90/100" and "9/10" are 90).
    - Anything else is None: words ("high"), a range ("0-100"), a bool, a list. So is a value outside
      0-100 after these rules, a negative one too: missing, never clipped.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    if isinstance(value, int):
        return float(value) if 0 <= value <= 100 else None
    if isinstance(value, float):
        number = value * 100 if 0 <= value <= 1 else value
    elif (ratio := _RATIO.fullmatch(value.strip())) is not None:
        scale = float(ratio.group("scale"))
        number = 100 * float(ratio.group("number")) / scale if scale > 0 else -1.0
    elif (percent := _PERCENT.fullmatch(value.strip())) is not None:
        number = float(percent.group("number"))
    elif re.fullmatch(_NUMBER, value.strip()):
        number = float(value)
        number = number * 100 if "." in value and 0 <= number <= 1 else number
    else:
        return None
    return number if 0 <= number <= 100 else None


# "confidence: 90", "Confidence - 90%", "confidence 9/10": a number within four non-word characters
_CONFIDENCE = re.compile(rf"confidence\W{{0,4}}?(?P<value>{_NUMBER}(?:\s*%|\s*/\s*{_NUMBER})?)", re.IGNORECASE)


def read_judge(task: Task, question: Question, text: str) -> JudgeReading:
    """The judge's answer and confidence.

    Its JSON is read by ``read_object`` (the last complete object that reads as a dict: strict JSON, then
    stray backslashes kept, then Python literals; keys in any case). The ``answer`` field is read as a
    stated answer (``task.read_answer``: a bare "B" is the letter B); the ``confidence`` field by
    ``read_confidence`` (0-100; "90%", "9/10", 0.95 rescaled; out of range or words: None). Without a
    readable confidence, a "confidence: N" statement in the reply is read by the same rules; without
    an answer field, the whole reply less its confidence statement is read as a reply (the confidence's
    number is not the answer)."""
    data = read_object(text) or {}
    answer = data.get("answer")
    answer_text = str(answer) if answer is not None else None
    confidence = read_confidence(data.get("confidence"))
    match = _CONFIDENCE.search(text)
    if confidence is None and match is not None:
        confidence = read_confidence(match.group("value"))
    if answer_text is not None:
        extraction = task.read_answer(answer_text, question)
    else:
        extraction = task.read_reply(_CONFIDENCE.sub(" ", text), question)
    return JudgeReading(extraction.answer, confidence)


@register
class JudgeConfidence(Stopping):
    kind: Literal["judge"] = "judge"
    threshold: float = Field(default=90.0, ge=0.0, le=100.0, description="judge confidence to stop at (0-100)")
    needs_helper = True
    needs_peers = True  # a peer schedule asks for its verdict after each round
    judges_rounds = True

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
            return StopReason.JUDGE_CONFIDENT
        return None

    def condition(self) -> str:
        return f"judge confidence >= {self.threshold:g}/100"
