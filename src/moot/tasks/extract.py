"""Answer extractors shared by tasks. Each returns a canonical string or None."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

# A number: an optional minus sign directly before the digits (only where it cannot be
# a binary operator, i.e. not right after a word character or closing bracket, and not
# a "- " list bullet), then digits with optional thousands separators, then an optional
# decimal part. A trailing full stop is not a decimal point: digits must follow it.
# "12,5" (a decimal comma or a list without spaces) is ambiguous and yields no number.
_NUMBER = re.compile(
    r"(?<![\w)\]}.])(?<!\d,)(?P<sign>[-\u2212])?"
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?(?![\d,]*\d)"
)
_BOXED = re.compile(r"\\boxed\s*\{")
# Choi et al.'s answer format: "{final answer: 123}" (any case, optional spaces)
_FINAL_ANSWER = re.compile(r"\{\s*final\s+answer\s*:(?P<body>[^{}]*)\}", re.IGNORECASE)


_EXPANSION = 64  # digits that an exponent ("1e60") may add to a number as written


def canonical_number(text: str) -> str | None:
    """'1,234' -> '1234', '-12.0' -> '-12', '0.50' -> '0.5'; None if not a number. Exact at any length
    (a 5,000-digit number too); a number whose exponent would add more than 64 digits ("1e999999")
    is not read as one."""
    cleaned = text.replace(",", "").replace("\u2212", "-").replace(" ", "")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)  # a finite number's
    if abs(exponent) > len(cleaned) + _EXPANSION:
        return None
    if value == 0:
        return "0"
    if value == value.to_integral_value():
        return format(value.to_integral_value(), "f")  # no int(): Python converts at most 4,300 digits to text
    digits = format(value, "f")  # exact, unlike normalize(), which rounds to the context's 28 digits
    return digits.rstrip("0").rstrip(".") if "." in digits else digits


def numbers_in(text: str) -> list[str]:
    """All numbers stated in ``text``, canonical, in order."""
    found = []
    for m in _NUMBER.finditer(text):
        sign = "-" if m.group("sign") else ""
        number = canonical_number(sign + m.group("int") + (m.group("frac") or ""))
        if number is not None:
            found.append(number)
    return found


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
    """The number in the last "{final answer: N}" (Choi et al.'s format) that holds one, else None."""
    for match in reversed(list(_FINAL_ANSWER.finditer(text))):
        body = match.group("body").strip().strip("$").strip()
        if (number := canonical_number(body)) is not None:
            return number
        if numbers := numbers_in(body):
            return numbers[-1]
    return None


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


def last_number(text: str) -> str | None:
    """The final stated number: in the last "{final answer: N}" (Choi et al.), else inside the last
    \\boxed{} that holds one, else the last in the text."""
    if (number := final_answer_number(text)) is not None:
        return number
    for content in reversed(boxed_contents(text)):
        if (number := canonical_number(content.strip().strip("$"))) is not None:
            return number
        if numbers := numbers_in(content):
            return numbers[-1]
    numbers = numbers_in(text)
    return numbers[-1] if numbers else None


def numbers_equal(a: str, b: str) -> bool:
    """Numeric equality of two canonical numbers (exact decimal arithmetic)."""
    try:
        return Decimal(a) == Decimal(b)
    except InvalidOperation:
        return False


# Wrappers a number may stand in: "$155$", "**155**", "\(155\)", "\boxed{155}", "\(\boxed{155}\)"
_OPEN = r"(?:[\s*$]|\\[(\[]|\\boxed\s*\{)*"
_CLOSE = r"(?:[\s*$}]|\\[)\]])*"
_REJECTS = r"(?:(?:and|but)\s+)?(?:not|rather\s+than|instead\s+of)"
_ALONE = re.compile(rf"{_CLOSE}(?:\.?\s*$|[,;(])")  # after a number: the end (a full stop aside), or , ; (
_REJECTION = re.compile(rf"{_CLOSE}[,;]?\s*\(?\s*(?i:{_REJECTS})\s+{_OPEN}[-\u2212]?\d")  # ", not 533"


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
    first = _NUMBER.match(text, start.end() if start else 0)
    if first is not None and _ALONE.match(text, first.end()):
        return _canonical(first)
    for match in _NUMBER.finditer(text):
        if _REJECTION.match(text, match.end()):
            return _canonical(match)
    return None


def _canonical(match: re.Match[str]) -> str | None:
    """A ``_NUMBER`` match as a canonical number."""
    sign = "-" if match.group("sign") else ""
    return canonical_number(sign + match.group("int") + (match.group("frac") or ""))
