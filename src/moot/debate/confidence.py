"""Verbalised confidence (Zhu et al.): agents state a confidence on a 0..scale range with their answer.

Every confidence statement is read and removed before the answer is extracted (a trailing
"Confidence: 8", or "my confidence in this answer is \\(\\boxed{9}\\)", must not become the answer of a
numeric task). A missing or out-of-range confidence is recorded as missing (None), never invented or clipped.

The statements recognised (the forms small models write when asked for "Confidence: N"; the last one
that states a value wins):

- the noun with a few plain words before the value: "Confidence: 8", "Confidence level: 8",
  "Confidence (0-10): 8", "my confidence is 8.5", "my confidence in this answer is **10**", "Your
  confidence that this answer is correct is \\(\\boxed{10}\\)", "the confidence in our revised result is
  now rated as \\(6\\)", "I rate my confidence as a 7", "Confidence: \\boxed{9}". The words between the
  noun and the value are a short run of plain words (this, answer, is, rated, ...; see ``_LINK_WORDS``);
  "my confidence that the final answer is 233" is not a statement (the number is the answer);
- the value first: "90% confident", "10/10 confidence", "10 out of 10 rate of confidence",
  "9 as my confidence level";
- a rating of the reply: "I'll rate it as 7/10"; a line "Rating: 9"; "confident: 10";
- removed without a value (they state no single confidence): "between 8 and 10" after the noun, a
  hedge "not 100% confident", and a mention of the scale, "on a scale from 0 to 10" (with a following
  "with 10 being ..." clause);
- removed without a value, in a reply that states no confidence: the confidence line with its label
  miswritten, a capitalised word other than an answer's name and a value on the scale ending the reply
  ("842 - 28 = 814 Terror: 10"; "Total: 7" and "Answer: 7" stay the answer).

How a stated value is read onto the 0..scale range (scale 10 in Zhu et al.):

- an integer or a decimal above 1 is the value as it stands, on the scale ("Confidence: 1" is 1/10, not 100%);
- "8/10", "8 out of 10", "7(out of 10)", "80/100": rescaled from the stated scale (80/100 -> 8);
- "80%", "80 percent": a percentage (80% -> 8);
- "0.8", ".8": a number written with a decimal point and at most 1, when the scale is larger than 1,
  is a fraction of the scale (0.8 -> 8; "1.0" is therefore 10/10, a probability of 1);
- anything that ends up outside [0, scale] ("Confidence: 11", "Confidence: 85", "120%"), a negative
  value, or a confidence in words ("Confidence: high") is missing.
"""

from __future__ import annotations

import re

from moot.debate.registry import template

_VALUE = r"(?P<value>-?(?:\d+(?:\.\d+)?|\.\d+))"
# Markup around a value: bold, \( \), \[ \], $ $, and \boxed{...} (its closing brace only when it opened one).
_OPEN = r"(?:\s|\*|\\\(|\\\[|\$)*(?P<box>\\(?:boxed|textbf|mathbf)\s*\{\s*)?\**\s*"
_CLOSE = r"\s*\**(?(box)\s*\})(?:\s*(?:\*\*|\\\)|\\\]|\$))*"
# A stated scale or percentage after the value: "/10", " out of 10", "(out of 10)", "%", " percent".
_SCALE = r"(?:\s*(?P<percent>%|percent\b)|\s*\(?\s*(?:/|out\s+of)\s*(?P<scale>\d+)\s*\)?)?"
_NOT_ARITHMETIC = r"(?!\s*[-+*×÷=]\s*\d)"  # "Confidence: 3+4" is not a statement

# The noun, then a short run of words without digits or sentence ends, then the value (or a range).
_NOUN_FIRST = re.compile(
    r"(?:\*\*)?confidence(?:\s*\.\s*level|\s+(?:level|score|rating|value)s?)?(?:\s*\(\s*\d+\s*[-–]\s*\d+\s*\))?"
    r"(?P<link>[^\d.!?;]{0,60}?)(?P<range>\bbetween\s+\d+(?:\.\d+)?\s+and\s+)?"
    + _OPEN
    + _VALUE
    + _SCALE
    + _CLOSE
    + _NOT_ARITHMETIC
    + r"(?:\*\*)?\.?",
    re.IGNORECASE,
)
# The words that may stand between "confidence" and its value.
_LINK_WORDS = frozenset(
    re.findall(
        r"\w+",
        "a an the this that it my our your in of on for about with which is was be would will can could now still "
        "also here currently rated rate rating level score value as at to answer result calculation computation "
        "solution response correctness correct updated final revised new overall stated remains stays stands "
        "terms i am say give set around approximately roughly original based",
    )
)
_ANSWER_NOUN = r"(?:answer|result|solution|calculation|computation|response|number|sum|total|value)s?"
_ENDS_WITH_ANSWER = re.compile(rf"\b{_ANSWER_NOUN}\s*(?:is|was|=|:)?\s*$")
# "confidence in this answer is 10": the answer is the object of a preposition, the number is the confidence
_ABOUT_THE_ANSWER = re.compile(
    rf"(?:based\s+)?(?:in|of|for|on|about)\s+(?:\w+\s+){{0,4}}?{_ANSWER_NOUN}\s+(?:is|was)\s*"
)

_VALUE_FIRST = re.compile(
    r"(?<![\w.\\])"
    + _OPEN
    + _VALUE
    + r"(?:\s*(?P<percent>%|percent\b)|\s*(?:/|out\s+of)\s*(?P<scale>\d+))"
    + _CLOSE
    + r"\s*(?:rate\s+of\s+)?(?:confiden(?:t|ce)|certain|sure)\b",
    re.IGNORECASE,
)
_AS_MY_CONFIDENCE = re.compile(
    r"(?<![\w.])" + _VALUE + r"\s+as\s+(?:my|our|the)\s+confidence(?:\s+level)?\b", re.IGNORECASE
)
_RATE_IT = re.compile(
    r"\brate\s+(?:(?:it|this|these|them|the|my|our|provided|answers?|responses?|results?)\s+){1,3}(?:as|at|with)\s+"
    r"(?:a\s+)?" + _OPEN + _VALUE + _SCALE + _CLOSE + _NOT_ARITHMETIC + r"(?:\s+for\s+confidence\b)?",
    re.IGNORECASE,
)
_LABEL = re.compile(
    r"(?:^[#*\s]*(?:rating|certainty)|\bconfident)\**\s*[:=]" + _OPEN + _VALUE + _SCALE + _CLOSE + _NOT_ARITHMETIC,
    re.IGNORECASE | re.MULTILINE,
)
# Removed, stating no value: a hedge and a mention of the scale.
_HEDGE = re.compile(
    r"\bnot\s+(?:even\s+)?\d+(?:\.\d+)?\s*(?:%|percent\b)\s*(?:confident|sure|certain)\b", re.IGNORECASE
)
_SCALE_MENTION = re.compile(
    r"\(?\bon\s+a\s+scale\s+(?:from|of)\s+(?:(?:\d+|zero|one)\s*(?:to|-|–)\s*)?\d+\b\)?"
    r"(?:\s*,?\s*with\s+\d+(?:\.\d+)?\s+(?:being|indicating|meaning)\b[^.\n]*)?",
    re.IGNORECASE,
)
_STATEMENTS = (_NOUN_FIRST, _VALUE_FIRST, _AS_MY_CONFIDENCE, _RATE_IT, _LABEL, _HEDGE, _SCALE_MENTION)
# "Terror: 10" ending a reply that states no confidence: the confidence line, mislabelled
_MISLABELLED = re.compile(r"(?<![\w*])\**(?P<label>[A-Z][a-z]+)\**\s*:\s*\**(?P<value>\d+(?:\.\d+)?)\**\.?\s*$")
_ANSWER_WORDS = frozenset(
    re.findall(
        r"\w+",
        "answer answers ans result results solution calculation computation response number sum total value final "
        "output difference product equals",
    )
)


@template
def confidence_instruction(scale: int) -> str:
    return (
        f" After your answer, rate your confidence that it is correct on a scale from 0 to {scale}, "
        f'on its own line as "Confidence: N".'
    )


def read_value(value: str, scale: int, stated_scale: str | None = None, percent: bool = False) -> float | None:
    """A stated confidence ``value`` on 0..``scale`` by the rules above, or None when out of range."""
    number = float(value)
    if percent:
        number = number / 100 * scale
    elif stated_scale is not None:
        stated = float(stated_scale)
        number = number / stated * scale if stated > 0 else -1.0
    elif scale > 1 and "." in value and 0 <= number <= 1:
        number = number * scale  # a fraction of the scale: 0.8 -> 8
    return number if 0 <= number <= scale else None


def _plain_link(link: str) -> bool:
    """Whether the words between "confidence" and a number make it a confidence statement: plain linking
    words only, and not "that the answer is" (then the number is the answer)."""
    words = re.findall(r"[a-z]+(?:'[a-z]+)*", link.lower())
    if any(word not in _LINK_WORDS for word in words):
        return False
    plain = " ".join(words)
    if re.search(r"\bthat\b.*\b(?:it|this)\s+(?:is|was)$", plain):
        return False  # "my confidence that it is 42": the number is what the reply is confident of
    if _ENDS_WITH_ANSWER.search(plain):
        return re.search(r"[,:;]", link) is None and _ABOUT_THE_ANSWER.fullmatch(plain + " ") is not None
    return True


def _matches(pattern: re.Pattern[str], text: str) -> list[re.Match[str]]:
    """The matches of ``pattern`` in ``text``; a rejected noun-first match is tried again one character on, so
    that "Confidence:** ... Confidence: 7" still finds the second statement."""
    found, pos = [], 0
    while (m := pattern.search(text, pos)) is not None:
        if pattern is not _NOUN_FIRST or _plain_link(m.group("link")):
            found.append(m)
            pos = max(m.end(), m.start() + 1)
        else:
            pos = m.start() + 1
    return found


def _statements(text: str) -> list[re.Match[str]]:
    """Every confidence statement in ``text``, in order, none overlapping (the earliest, then the longest, wins)."""
    found = [m for pattern in _STATEMENTS for m in _matches(pattern, text)]
    found.sort(key=lambda m: (m.start(), -m.end()))
    kept: list[re.Match[str]] = []
    for m in found:
        if not kept or m.start() >= kept[-1].end():
            kept.append(m)
    return kept


def _stated(match: re.Match[str]) -> bool:
    """Whether a statement states one value (a range, a hedge or a scale mention does not)."""
    groups = match.re.groupindex
    return "value" in groups and not ("range" in groups and match.group("range"))


def split_confidence(text: str, scale: int) -> tuple[str, float | None]:
    """(the text without its confidence statements, the last stated confidence or None).

    The value is read onto 0..``scale`` as the module's docstring says; out of range is None.
    """
    statements = _statements(text)
    if not any(_stated(m) for m in statements):
        text = _without_mislabelled(text, scale)
    if not statements:
        return text, None
    valued = [m for m in statements if _stated(m)]
    value = None
    if valued:
        last = valued[-1]
        groups = last.groupdict()
        value = read_value(groups["value"], scale, groups.get("scale"), groups.get("percent") is not None)
    kept, start, lines = "", 0, set()
    for m in statements:
        kept += text[start : m.start()] + " "
        lines.add(kept.count("\n"))  # the line of the rest that held this statement
        start = m.end()
    return _drop_list_markers(kept + text[start:], lines), value


def _without_mislabelled(text: str, scale: int) -> str:
    """``text`` less a mislabelled confidence line ending it ("814 Terror: 10" -> "814 "): a capitalised word
    that names no answer, then a value on 0..``scale``."""
    m = _MISLABELLED.search(text)
    if m is None or m.group("label").lower() in _ANSWER_WORDS or read_value(m.group("value"), scale) is None:
        return text
    return text[: m.start()] + " "


_LIST_MARKER = re.compile(r"^(\s*)\d{1,2}[.)]\s+(?=[^\d\s])")


def _drop_list_markers(text: str, lines: set[int]) -> str:
    """``text`` with the list number ("6. ") removed from each of ``lines`` that holds no other number once its
    statement is gone: "6. My confidence is 10" must not leave 6 as the last number of the reply."""
    out = text.split("\n")
    for i in lines:
        if i < len(out) and (m := _LIST_MARKER.match(out[i])) and not re.search(r"\d", out[i][m.end() :]):
            out[i] = m.group(1) + out[i][m.end() :]
    return "\n".join(out)
