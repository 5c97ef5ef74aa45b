"""Answer extractors shared by tasks. Each returns a canonical string or None. Numbers are read as
moot.tasks.numeric reads them (one normaliser per answer format, shared by the numeric tasks)."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, Decimal

from moot.tasks.numeric import PLAIN_NUMBER, canonical_number, plain_number, plain_numbers, whole_answer
from moot.tasks.numeric import numbers_equal as numbers_equal  # at home in numeric, imported from here as ever

_BOXED = re.compile(r"\\boxed\s*\{")
# Choi et al.'s answer format: "{final answer: 123}" (any case, optional spaces; one level of braces
# inside, as in "{final answer: \frac{1}{2}}")
_FINAL_ANSWER = re.compile(r"\{\s*final\s+answer\s*:(?P<body>(?:[^{}]|\{[^{}]*\})*)\}", re.IGNORECASE)
_DIGIT = re.compile(r"\d")


def numbers_in(text: str) -> list[str]:
    """All numbers stated in running text, canonical, in order (``numeric.plain_numbers``)."""
    return plain_numbers(text)


def boxed_contents(text: str) -> list[str]:
    """Contents of every \\boxed{...}, with nested braces balanced."""
    contents = []
    for m in _BOXED.finditer(text):
        depth, start = 1, m.end()
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    contents.append(text[start:i])
                    break
    return contents


def final_answer_number(text: str) -> str | None:
    """The number the last "{final answer: N}" (Choi et al.'s format) that holds a digit states
    (``numeric.whole_answer``), else None."""
    body = _final_answer_body(text)
    return None if body is None else whole_answer(body)


def _final_answer_body(text: str) -> str | None:
    """The body of the last "{final answer: ...}" that holds a digit, else None."""
    for match in reversed(list(_FINAL_ANSWER.finditer(text))):
        if _DIGIT.search(match.group("body")):
            return match.group("body")
    return None


def stated_answer(text: str) -> tuple[bool, str | None]:
    """Whether a reply states its answer in a field, and the number it states there: its fields are the body
    of its last "{final answer: ...}" (Choi et al.) that holds a digit, then the content of its last
    \\boxed{} that holds one, and the first that is one number (``numeric.whole_answer``) is the answer. A
    reply whose fields are none of them one number ("\\boxed{3 or 4}", "\\boxed{\\sqrt{2}}", "\\boxed{30 +
    60}") states no number: it is unparsed, not read from a number inside them or after them."""
    fields = [field for field in (_final_answer_body(text), _last_boxed(text)) if field is not None]
    return bool(fields), next((number for field in fields if (number := whole_answer(field)) is not None), None)


def _last_boxed(text: str) -> str | None:
    """The content of the last \\boxed{} that holds a digit, else None."""
    return next((content for content in reversed(boxed_contents(text)) if _DIGIT.search(content)), None)


_BRACES = re.compile(r"\{(.*?)\}")  # every {...} within one line, the shortest first
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")  # what float() reads, bar inf/nan/_


def _choi_body(text: str) -> str | None:
    """What Choi et al.'s evaluator reads of a reply: its last ``{...}``, "final answer:" removed (as
    written: the removal is case-sensitive), stripped; None when the reply has no ``{...}``."""
    groups = _BRACES.findall(text)
    return groups[-1].replace("final answer:", "").strip() if groups else None


def choi_number(text: str) -> str | None:
    """Choi et al.'s reading of a numeric reply (their evaluator's ``evaluate_arithmetics``, which DAR
    reuses for arithmetic and GSM8K): the last ``{...}`` in the reply, "final answer:" removed, read as
    one plain number and rounded to one decimal; None when the reply has no ``{...}`` or its last holds
    anything else. Nothing outside the braces counts: a number the reply writes after its answer (a
    copied uncertainty score) is not read as the answer, and a reply with no braces is unparsed."""
    body = _choi_body(text)
    if body is None or not _PLAIN_NUMBER.fullmatch(body) or (number := canonical_number(body)) is None:
        return None
    return canonical_number(str(Decimal(number).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)))


def choi_choice(text: str) -> str | None:
    """Choi et al.'s reading of a multiple-choice reply (their evaluator's ``evaluate_mcq``): the last
    ``{...}`` in the reply, "final answer:" removed and stripped; one or two characters give the first
    ("{B}" -> "B"), longer ones the second ("{final answer: (C)}" -> "C", "{final answer: (C) Paris}" ->
    "C"); None when the reply has no ``{...}`` or its last is empty. The character is kept as written,
    so "{A. Paris}" reads "." and "{final answer: (b)}" reads "b": votes that match no option, as in
    their evaluator (whose compare with "(B)" fails; moot scores "b" as B, its letters being upper case)."""
    body = _choi_body(text)
    if not body:
        return None
    return body[0] if len(body) < 3 else body[1]


def last_number(text: str, skip: re.Pattern[str] | None = None) -> str | None:
    """The final stated number: the number the reply's answer fields state (the last "{final answer: N}" of
    Choi et al., else the last \\boxed{}; ``stated_answer``), else the last in the text, passing over the
    numbers of what ``skip`` matches (a restatement of the question)."""
    stated, number = stated_answer(text)
    if stated:
        return number
    numbers = numbers_in(skip.sub(" ", text) if skip is not None else text)
    return numbers[-1] if numbers else None


# Wrappers a number may stand in: "$155$", "**155**", "\(155\)", "\boxed{155}", "\(\boxed{155}\)"
# (possessive, "*+": a run of spaces is never split between a wrapper and what follows, which made a long
# run take time cubic in its length)
_OPEN = r"(?:[\s*$]|\\[(\[]|\\boxed\s*\{)*+"
_CLOSE = r"(?:[\s*$}]|\\[)\]])*+"
_REJECTS = r"(?:(?:and|but)\s+)?(?:not|rather\s+than|instead\s+of)"
_ALONE = re.compile(rf"{_CLOSE}(?:\.?\s*$|[,;(])")  # after a number: the end (a full stop aside), or , ; (
_REJECTION = re.compile(rf"{_CLOSE}[,;]?\s*\(?\s*(?i:{_REJECTS})\s{_OPEN}[-\u2212]?\d")  # ", not 533"


def field_number(text: str) -> str | None:
    """The number a moderator's or judge's answer field states before anything else, canonical; None
    when the field has no such number (then the task's reply reader reads it).

    1. A field that opens with a number standing alone (wrappers such as ``$``, ``**``, ``\\(`` and
       ``\\boxed{}`` aside), followed by the field's end, a full stop ending it, or ",", ";" or "(":
       "-332", "$155$", "\\(\\boxed{155}\\)", "537, not 533", "155 (the negative's -262 is wrong)". A
       number followed by anything else is not alone: "25 + 26 = 51" is an expression, "1. First" a list.
    2. Else the first number directly followed by the rejection of another number (", not N", " rather
       than N", " instead of N", " (not N)"): "The correct answer is 537, not 533" is 537, "The result
       of 12 + 18 * 9 + 0 - 4 * 4 is 178, not 133." is 178. The number named to be rejected is not read,
       nor is the first of a restated expression; "533 is wrong" or "not 533 but 537" state no such
       number.
    """
    start = re.match(_OPEN, text)
    first = PLAIN_NUMBER.match(text, start.end() if start else 0)
    if first is not None and _ALONE.match(text, first.end()):
        return plain_number(first)
    for match in PLAIN_NUMBER.finditer(text):
        if _REJECTION.match(text, match.end()):
            return plain_number(match)
    return None
