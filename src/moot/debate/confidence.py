"""Verbalised confidence (Zhu et al.): agents state a confidence on a 0..scale range with their answer.

The statement is read robustly and removed before the answer is extracted (a trailing
"Confidence: 8" must not become the answer of a numeric task). A missing or out-of-range
confidence is recorded as missing (None), never invented or clipped.

How a stated value is read onto the 0..scale range (scale 10 in Zhu et al.), the last statement winning:

- "Confidence: 8", "Confidence level: 8", "Confidence (0-10): 8", "my confidence is 8.5": the value as it
  stands, on the scale (an integer is always read on the scale: "Confidence: 1" is 1/10, not 100%);
- "8/10", "8 out of 10", "80/100": rescaled from the stated scale (80/100 -> 8);
- "80%", "80 percent": a percentage (80% -> 8);
- "0.8", ".8": a number written with a decimal point and at most 1, when the scale is larger than 1,
  is a fraction of the scale (0.8 -> 8; "1.0" is therefore 10/10, a probability of 1);
- anything that ends up outside [0, scale] ("Confidence: 11", "Confidence: 85", "120%"), a negative
  value, or a confidence in words ("Confidence: high") is missing.
"""

from __future__ import annotations

import re

from moot.debate.registry import template

# The number must follow the word "confidence" within a few non-digit characters.
_STATEMENT = re.compile(
    r"\**confidence\**(?:\s*(?:level|score|rating))?\**\s*(?:\(\s*\d+\s*[-–]\s*\d+\s*\))?\s*(?:is|of|=|:)?\s*\**\s*"
    r"(?P<value>-?(?:\d+(?:\.\d+)?|\.\d+))\s*"
    r"(?:(?P<percent>%|percent\b)|\**(?:\s*(?:/|out\s+of)\s*(?P<scale>\d+))?)\**\.?",
    re.IGNORECASE,
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


def split_confidence(text: str, scale: int) -> tuple[str, float | None]:
    """(the text without its confidence statements, the last stated confidence or None).

    The value is read onto 0..``scale`` as the module's docstring says; out of range is None.
    """
    matches = list(_STATEMENT.finditer(text))
    if not matches:
        return text, None
    last = matches[-1]
    value = read_value(last.group("value"), scale, last.group("scale"), last.group("percent") is not None)
    return _STATEMENT.sub(" ", text), value
