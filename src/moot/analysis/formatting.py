"""Number formatting for reports: round half up, as statistics tables are printed.

Python's ``format`` rounds the binary value half to even (3.625 -> "3.62", 0.0625 -> "0.062");
tables by hand or in papers round half up (3.63, 0.063). Every figure moot prints goes
through ``fixed``, so its tables and the published ones agree digit for digit.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

DASH = "—"


def fixed(x: float | None, digits: int = 3, sign: bool = False) -> str:
    """``x`` with ``digits`` decimals, rounded half up from its shortest decimal form; "—" for None/NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return DASH
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    text = str(Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
    if text.startswith("-") and Decimal(text) == 0:
        text = text[1:]
    if sign and not text.startswith("-"):
        text = "+" + text
    return text


def interval(low: float | None, high: float | None, digits: int = 3) -> str:
    return f"[{fixed(low, digits)}, {fixed(high, digits)}]"


def p_value(p: float | None, digits: int = 3) -> str:
    """A p-value with ``digits`` decimals, or "<0.001" below the smallest printable value."""
    if p is None or math.isnan(p):
        return DASH
    floor = 10.0**-digits
    if p < floor:
        return f"<{fixed(floor, digits)}"
    return fixed(p, digits)


def percent(x: float | None, digits: int = 1) -> str:
    return DASH if x is None or math.isnan(x) else fixed(100 * x, digits) + "%"
