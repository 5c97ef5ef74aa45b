"""Numeric answers as models write them: one documented normaliser per answer format, shared by every
numeric task (arithmetic, GSM8K, a data file's number task), and the canonical string a numeric answer is
stored and voted under.

The canonical string (``canonical``): an integer as its digits ("12", "-3"); a terminating decimal as its
shortest decimal ("0.5", "-0.75"); any other rational as "p/q" in lowest terms ("1/3", "-2/7"). Two answers
that are the same number get the same string, so "0.5", "1/2" and "\\frac{1}{2}" vote together; equality
(``numbers_equal``) is by exact rational value. A plain integer or decimal keeps the string
``canonical_number`` has always given it (stored answers and published results depend on it).

The formats (docs/numeric.md gives the rules with examples):

- ``canonical_number``: a number as stored (a gold, a canonical answer): "1,234", "-0.50", "1.5e2", "2/4";
- ``whole_answer``: an answer that is the whole text (a ``\\boxed{}``, a "{final answer: ...}" body):
  wrappers, a variable's assignment, words and units, percent signs and thousands separators aside, one
  number or None;
- ``leading_answer``: an answer that opens the text (what follows "the answer is" or "####"), anything after;
- ``plain_numbers``: every number of running text, in order (a reply's last number).

Read: integers, decimals, fractions ("1/2", "\\frac{1}{2}", "\\dfrac12", mixed "1\\frac{1}{2}"), scientific
notation ("1.5e3", "1.5 \\times 10^{3}"). A percentage is its number ("50%" is 50: GSM8K's golds for
percent questions are the percent number). Not read (None): expressions ("2^{10}", "\\sqrt{2}", "30 + 60"),
several answers ("x = 3 or x = -3"), ranges ("3-4"), dates ("1/2/2024"), times ("3:45"), truncated decimals
("0.333..."); the MATH task's symbolic grader is the place for those.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction

_EXPANSION = 64  # digits that an exponent ("1e60") may add to a number as written
_PART_DIGITS = 300  # digits a part of a written fraction (whole, numerator, denominator) may have


def canonical_number(text: str) -> str | None:
    """'1,234' -> '1234', '-12.0' -> '-12', '0.50' -> '0.5', '2/4' -> '0.5', '1/3' -> '1/3'; None if not a
    number. Exact at any length (a 5,000-digit number too); a number whose exponent would add more than 64
    digits ("1e999999") is not read as one. A fraction is two integers around "/"; any other form (a
    ``\\frac``, a percentage) is a written answer's (``whole_answer``)."""
    cleaned = text.replace(",", "").replace("\u2212", "-").replace(" ", "")
    if (fraction := _STORED_FRACTION.fullmatch(cleaned)) is not None:
        exact = _fraction(fraction["n"], fraction["d"])
        return None if exact is None else canonical(exact)
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


_STORED_FRACTION = re.compile(r"(?P<n>[-+]?\d+)/(?P<d>\d+)")


def canonical(value: Fraction) -> str:
    """The canonical string of an exact value: '12', '0.5', '-0.75', '1/3' (a non-terminating decimal as
    p/q in lowest terms)."""
    numerator, denominator = value.numerator, value.denominator
    if denominator == 1:
        return str(numerator)
    rest, places = denominator, {2: 0, 5: 0}
    for prime in places:
        while rest % prime == 0:
            rest //= prime
            places[prime] += 1
    if rest != 1:
        return f"{numerator}/{denominator}"
    shift = max(places.values())
    digits = str(abs(numerator) * (10**shift // denominator)).rjust(shift + 1, "0")
    decimal = f"{'-' if numerator < 0 else ''}{digits[:-shift]}.{digits[-shift:]}"
    number = canonical_number(decimal)
    assert number is not None  # digits and one point
    return number


def value_of(answer: str) -> Fraction | None:
    """The exact value of a canonical answer ('12', '0.5', '1/3'), or None if it is not one."""
    if (fraction := _STORED_FRACTION.fullmatch(answer)) is not None:
        return _fraction(fraction["n"], fraction["d"])
    try:
        value = Decimal(answer)
    except InvalidOperation:
        return None
    exponent = value.as_tuple().exponent
    if not value.is_finite() or not isinstance(exponent, int) or abs(exponent) > len(answer) + _EXPANSION:
        return None
    return Fraction(value)


def numbers_equal(a: str, b: str) -> bool:
    """Numeric equality of two canonical numbers, by exact rational value: '275' equals '275.0', '0.5' equals
    '1/2', '1/3' equals '2/6'; '1/3' is not '0.333'. Anything else than a number equals nothing."""
    if "/" not in a and "/" not in b:  # decimals: exact decimal arithmetic at any length, as ever
        try:
            return Decimal(a) == Decimal(b)
        except InvalidOperation:
            return False
    first, second = value_of(a), value_of(b)
    return first is not None and first == second


def _fraction(numerator: str, denominator: str) -> Fraction | None:
    """numerator / denominator (each an integer or decimal as written), or None for a zero denominator or a
    part longer than ``_PART_DIGITS``."""
    if max(len(numerator), len(denominator)) > _PART_DIGITS:
        return None
    bottom = Fraction(Decimal(denominator.replace("\u2212", "-")))
    return None if bottom == 0 else Fraction(Decimal(numerator.replace("\u2212", "-"))) / bottom


# -- the numeral forms --------------------------------------------------------------------------------
# Each is written with named groups to read its value (``_value``); the patterns that find a numeral in a
# text use the same forms without the names (``_bare``).
_ARGUMENT = r"[-+\u2212]?\d+(?:\.\d+)?"
_LATEX = (
    rf"\\[dt]?frac\s*(?:\{{\s*(?P<n>{_ARGUMENT})\s*\}}|(?P<n1>\d))"
    rf"\s*(?:\{{\s*(?P<d>{_ARGUMENT})\s*\}}|(?P<d1>\d))"
)  # \frac{1}{2}, \dfrac{-3}{4}, \tfrac12
_MIXED_LATEX = rf"(?P<w>\d+)\s?{_LATEX}"  # 1\frac{1}{2}: one and a half
_SLASH = r"(?P<n>\d+(?:\.\d+)?)\s*/\s*(?P<d>\d+(?:\.\d+)?)"  # 1/2, 1 / 2, 1.5/3
_TIGHT_SLASH = r"(?P<n>\d+)/(?P<d>\d+)"  # 1/2 in running text: integers, no spaces
_MIXED_SLASH = r"(?P<w>\d+)\s(?P<n>\d+)/(?P<d>\d+)"  # 2 1/2: two and a half
_MANTISSA = r"(?P<m>\d+(?:\.\d*)?|\.\d+)"
_TIMES_TEN = rf"{_MANTISSA}\s*(?:\\times|\\cdot|×|\*|x)\s*10\s*\^\s*(?:\{{\s*(?P<e>[-+\u2212]?\d+)\s*\}}|(?P<e1>[-+\u2212]?\d+))"  # 1.5 \times 10^{3}
_E_NOTATION = rf"{_MANTISSA}[eE](?P<e>[-+]?\d+)"  # 1.5e3, as canonical_number reads it
# a decimal with thousands separators: "," and LaTeX's "{,}" anywhere; a thin space ("\," too) or, in an
# answer that is the whole text, a plain space, only between groups of exactly three digits
_THIN = "\u2009"
_GROUPED = r"\d{1,3}(?:(?:,|\{,\}|\\,|" + _THIN + r")\d{3})+"
_SPACED = r"\d{1,3}(?: \d{3})+"
_DECIMAL = rf"(?:{_SPACED}|{_GROUPED}|\d+)(?:\.\d*)?|\.\d+"  # 1 000, 1,000, 5., .5
_TIGHT_DECIMAL = rf"(?:{_GROUPED}|\d+)(?:\.\d+)?"  # in running text a full stop after digits ends a sentence

_FORMS = [
    (name, re.compile(form))
    for name, form in [
        ("latex", _LATEX),
        ("mixed", _MIXED_LATEX),
        ("fraction", _SLASH),
        ("mixed", _MIXED_SLASH),
        ("times ten", _TIMES_TEN),
        ("e", _E_NOTATION),
        ("decimal", _DECIMAL),
    ]
]
_SEPARATORS = re.compile(r"\{,\}|\\,|[, \u2009]")


def _bare(pattern: str) -> str:
    """A form without its group names, to be one alternative of a larger pattern."""
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


def _value(numeral: str, negative: bool) -> str | None:
    """The canonical string of a numeral in one of the forms (a minus sign before it: ``negative``), or None
    for a zero denominator, an improper mixed number ("3\\frac{4}{2}") or a part too long to read."""
    for name, form in _FORMS:
        if (match := form.fullmatch(numeral)) is None:
            continue
        if name == "decimal":
            return canonical_number(("-" if negative else "") + _SEPARATORS.sub("", numeral))
        parts = {key: part for key, part in match.groupdict().items() if part is not None}
        if name in ("times ten", "e"):
            exponent = (parts.get("e") or parts["e1"]).replace("\u2212", "-")
            return canonical_number(f"{'-' if negative else ''}{parts['m']}e{exponent}")
        value = _fraction(parts.get("n") or parts["n1"], parts.get("d") or parts["d1"])
        if value is not None and name == "mixed":
            whole = parts["w"]
            value = Fraction(int(whole)) + value if len(whole) <= _PART_DIGITS and 0 < value < 1 else None
        if value is None:
            return None
        return canonical(-value if negative else value)
    return None


# -- plain_numbers: running text ----------------------------------------------------------------------
# A number in running text: an optional minus sign directly before it (only where it cannot be a binary
# operator, i.e. not right after a word character or closing bracket, and not a "- " list bullet), then a
# LaTeX fraction (a whole number before it makes it mixed), or digits with optional thousands separators
# ("," or LaTeX's "{,}") and an optional decimal part. A trailing full stop is not a decimal point: digits
# must follow it. "12,5" (a decimal comma or a list without spaces) is ambiguous and yields no number. "a/b"
# is two numbers here, as it always was: in running text it is a confidence rating ("9/10") as often as a
# fraction, and reading it as one would change what ordinary replies read.
PLAIN_NUMBER = re.compile(
    r"(?<![\w)\]}.])(?<!\d,)(?P<sign>[-\u2212])?(?:"
    rf"(?P<fraction>(?:\d+ ?)?{_bare(_LATEX)})"
    r"|(?P<int>\d{1,3}(?:(?:,|\{,\})\d{3})++|\d+)(?P<frac>\.\d+)?(?![\d,]*\d))"
)  # "++": fewer groups than all could never be followed by no digit, so none are tried (linear time)


def plain_number(match: re.Match[str]) -> str | None:
    """A ``PLAIN_NUMBER`` match as a canonical number."""
    negative = match["sign"] is not None
    if match["fraction"] is not None:
        return _value(match["fraction"], negative)
    return canonical_number(("-" if negative else "") + match["int"].replace("{,}", "") + (match["frac"] or ""))


def plain_numbers(text: str) -> list[str]:
    """All numbers stated in running text, canonical, in order: 'so \\frac{3}{4} of 12 is 9' -> ['0.75', '12',
    '9']; '9/10' -> ['9', '10']."""
    return [number for match in PLAIN_NUMBER.finditer(text) if (number := plain_number(match)) is not None]


# -- whole_answer: an answer that is the whole text ---------------------------------------------------
_COMMANDS = re.compile(
    r"\\(?:text|textbf|textit|textrm|textnormal|mathrm|mathbf|mathit|mbox|operatorname|boxed|fbox)\s*\{([^{}]*)\}"
)
_REPLACEMENTS = [
    (re.compile(r"\^\s*\{?\s*\\circ\s*\}?|\\circ\b|\\degree\b"), "°"),
    (re.compile(r"\\[,:>]|[\u2009\u202f\u2007]"), _THIN),  # thin spaces: thousands separators
    (re.compile(r"\\[;!]|\\q?quad\b|\\ |~|\u00a0"), " "),
    (re.compile(r"\\%"), "%"),
    (re.compile(r"\\\$|\$|\\[()\[\]]|\*\*|`|\\left\b|\\right\b|\\displaystyle\b"), ""),
    (re.compile(r"×"), r"\\times"),
    (re.compile(r"[\u2212\u2013]"), "-"),
    (re.compile(r"(?<=[A-Za-z])\s*\^\s*\{?\s*2\s*\}?"), "²"),  # units: cm^2, m^{3}
    (re.compile(r"(?<=[A-Za-z])\s*\^\s*\{?\s*3\s*\}?"), "³"),
]
_DEPTH = 8  # wrappers unwrapped one inside another, at most (each layer costs a pass over the text)
_ELLIPSIS = re.compile(r"\.\.\.|…|\\[lc]?dots\b")
_SIDES = re.compile(r"=|\\approx\b|≈|\\simeq\b")
_SEVERAL = re.compile(r"\b(?:or|and)\b|,(?!\d)|;|\\pm\b|±|\\lor\b|\\vee\b", re.IGNORECASE)
# words before the number ("Total:", "Janet makes"), never a function's name ("sqrt 2")
_PROSE = r"(?:(?!(?:sqrt|log|ln|sin|cos|tan|exp|pi)\b)[A-Za-z][A-Za-z'\u2019-]*(?:\s*:\s*|\s+))*"
_CURRENCY = r"(?:Rs\.|[£€¥₹])\s*"  # "$" and "\$" are removed with the math delimiters
# words and units after the number ("apples", "cm²", "km/h", "°C", "(rounded)", ", as computed"): spaced or
# comma'd off, or two letters or more ("5cm"; "2x" and "5m" are not read), with no digit and no operator
_TAIL = (
    r"(?:[\s,;]|(?=[A-Za-z]{2}|[°(²³']))"
    r"(?:[^\d\\^=+*×÷<>{}/\-]|(?<=[A-Za-z])[-/](?=[A-Za-z]))*+"
)
_WHOLE_NUMERAL = "|".join(
    _bare(form) for form in (_TIMES_TEN, _E_NOTATION, _MIXED_LATEX, _LATEX, _MIXED_SLASH, _SLASH, _DECIMAL)
)
_WHOLE = re.compile(  # matched against a stripped text: no spaces at either end to backtrack over
    rf"{_PROSE}(?:{_CURRENCY})?(?P<sign>[-+])?\s*(?:{_CURRENCY})?(?P<numeral>{_WHOLE_NUMERAL})(?:\s*+%)?(?:{_TAIL})?"
)


def _unwrap(text: str) -> str | None:
    """The answer inside its wrappers: math delimiters ($, \\( \\), \\[ \\]), bold, \\text{}, \\boxed{}, outer
    braces, a trailing full stop; LaTeX spaces, "\\%", "{,}", unicode minus and degree signs and unit
    exponents in one spelling. None for a truncated decimal ("0.333...")."""
    if _ELLIPSIS.search(text):
        return None
    text = text.replace("{,}", ",")
    for _ in range(_DEPTH):
        if (unwrapped := _COMMANDS.sub(r"\1", text)) == text:
            break
        text = unwrapped
    for pattern, replacement in _REPLACEMENTS:
        text = pattern.sub(replacement, text)
    for _ in range(_DEPTH):
        text = text.strip().rstrip("\\").rstrip(".").strip()  # "\\{final answer: 311\\}" leaves "311\\"
        if text.startswith("\\{") and text.endswith("\\}"):
            text = text[2:-2]
        elif text.startswith("{") and text.endswith("}") and _balanced(text[1:-1]):
            text = text[1:-1]
        else:
            break
    return text


def _balanced(text: str) -> bool:
    """Whether every brace of ``text`` closes one opened before it (so "{1}{2}" is not one group)."""
    depth = 0
    for char in text:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def whole_answer(text: str) -> str | None:
    """An answer that is the whole text (a ``\\boxed{}`` content, a "{final answer: ...}" body) as one number,
    canonical; None when it is not one number.

    Read: "\\frac{1}{2}", "\\dfrac12", "-\\frac{3}{4}", "\\frac{-3}{4}", "1\\frac{1}{2}" and "1 1/2" (mixed,
    when the fraction is below one), "1/2", "0.50", ".5", "5.", "1,000", "1{,}000", "1\\,000", "1 000"
    (groups of three), "1.5e3", "1.5 \\times 10^{3}", "50%" and "50\\%" (50), "$1,000", "\\$18", "£5",
    "3 apples", "5 cm^2", "12 \\text{dollars}", "x = 3" (an equation's last side: "2 \\times 9 = 18" is 18),
    "Total: 18" (words before the number). Not read: an expression ("2^{10}", "\\sqrt{2}", "30 + 60", "2x"),
    several answers ("x = 3 or x = -3", "3, 4"), a range ("3-4"), a date ("1/2/2024"), a time ("3:45"), a
    truncated decimal ("0.333...")."""
    unwrapped = _unwrap(text)
    if unwrapped is None:
        return None
    *left, side = _SIDES.split(unwrapped)
    if left and (_SEVERAL.search("=".join(left)) or not side.strip()):
        return None
    match = _WHOLE.fullmatch(side.strip())
    if match is None:
        return None
    return _value(match["numeral"], match["sign"] == "-")


# -- leading_answer: an answer that opens the text ----------------------------------------------------
_LEADING_NUMERAL = "|".join(
    _bare(form) for form in (_TIMES_TEN, _MIXED_LATEX, _LATEX, _MIXED_SLASH, _TIGHT_SLASH, _TIGHT_DECIMAL)
)
_OPENING = r"(?:\s|[:*$]|\\[(\[$]|\\(?:boxed|text|textbf|mathbf)\s*\{|\{)*+"  # "*+": linear time
# what makes the number part of something else: more digits, a decimal or date or time going on, an
# ellipsis, an operator or a range dash before a number ("3 - 4", "2 \times 9", "2^{10}"), or another
# answer after it ("3 or 4", "x = 3 or x = -3", "3, 4")
_GOES_ON = (
    r"[\d^]|[.,:/]\d|\.\.|…|\s+x\s*\d"
    r"|\s*(?:[-\u2212\u2013+*×÷/]|\\times\b|\\cdot\b|\\div\b|\\pm\b|\\[dt]?frac\b)\s*[\d\\({]"
    r"|(?:\s*,\s*|\s+(?:or|and)\s+)(?:[A-Za-z]\w*\s*=\s*)?[-\u2212]?(?:\\?\$)?\d"
)
_LEADING = re.compile(
    rf"{_OPENING}(?:[A-Za-z]\w*\s*={_OPENING})?(?P<sign>[-\u2212])?(?:\\?\$|[£€¥₹])?"
    rf"(?P<numeral>{_LEADING_NUMERAL})(?!{_GOES_ON})"
)


def leading_answer(text: str) -> str | None:
    """The number that opens ``text`` (what follows "the answer is" or "####"), canonical; anything may follow
    it. Before it: spaces, ":", bold, "$", "\\(", "\\[", "\\boxed{", "\\text{", "{" and an assignment "x = ";
    the forms are ``whole_answer``'s less the spaced ones ("1 000") and with "1/2" written without spaces.
    None when the text does not open with a number, or when the number goes on into something else: an
    expression ("2 \\times 9 = 18", "5 - 2"), a range ("3-4"), a date ("1/2/2024"), a time, an ellipsis."""
    match = _LEADING.match(text)
    if match is None:
        return None
    return _value(match["numeral"], match["sign"] is not None)
