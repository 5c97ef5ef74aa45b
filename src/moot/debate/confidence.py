"""Verbalised confidence (Zhu et al.): agents state a confidence on a 0..scale range with their answer.

The statement is read robustly and removed before the answer is extracted (a trailing
"Confidence: 8" must not become the answer of a numeric task). A missing or out-of-range
confidence is recorded as missing, never invented or clipped.
"""

from __future__ import annotations

import re

from moot.debate.registry import template

# "Confidence: 8", "confidence level: 8/10", "Confidence (0-10): 7", "**Confidence**: 9 out of 10",
# "my confidence is 6". The number must follow the word within a few non-digit characters.
_STATEMENT = re.compile(
    r"\**confidence\**(?:\s*(?:level|score))?\s*(?:\(\s*\d+\s*[-–]\s*\d+\s*\))?\s*(?:is|of|=|:)?\s*\**\s*"
    r"(?P<value>-?\d+(?:\.\d+)?)\s*\**(?:\s*(?:/|out\s+of)\s*(?P<scale>\d+))?\.?",
    re.IGNORECASE,
)


@template
def confidence_instruction(scale: int) -> str:
    return (
        f" After your answer, rate your confidence that it is correct on a scale from 0 to {scale}, "
        f'on its own line as "Confidence: N".'
    )


def split_confidence(text: str, scale: int) -> tuple[str, float | None]:
    """(the text without its confidence statements, the last stated confidence or None).

    A value stated "out of" another scale is rescaled to ``scale``; a value outside [0, scale] is None.
    """
    matches = list(_STATEMENT.finditer(text))
    if not matches:
        return text, None
    last = matches[-1]
    value = float(last.group("value"))
    if last.group("scale"):
        stated = float(last.group("scale"))
        value = value / stated * scale if stated > 0 else -1.0
    stripped = _STATEMENT.sub(" ", text)
    return stripped, value if 0 <= value <= scale else None
