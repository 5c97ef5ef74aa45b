"""The arithmetic extractor on awkward replies (hand-checked expectations)."""

import pytest

from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import ParseStatus
from moot.tasks.extract import (
    boxed_contents,
    canonical_number,
    choi_choice,
    choi_number,
    field_number,
    last_number,
    numbers_equal,
)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("The answer is 275.", "275"),
        ("so the result = -12.", "-12"),
        ("The total is 1,234", "1234"),
        ("Total: 1,234,567!", "1234567"),
        ("Hence the value is −45", "-45"),  # unicode minus
        (r"We get \boxed{-7}. Check: 3*4 = 12", "-7"),  # a boxed answer wins over later numbers
        (r"\boxed{1,024}", "1024"),
        (r"$$\boxed{ 42 }$$", "42"),
        ("10+20*23+3-11*18 = 10+460+3-198 = 275", "275"),
        ("8 - 12 = -4", "-4"),
        ("x - 5", "5"),  # binary minus after a letter is not a sign
        ("10-12", "12"),  # binary minus between digits is not a sign
        ("- 275", "275"),  # a list bullet is not a sign
        ("The answer is **-3**.", "-3"),
        ("It is 2.50 exactly.", "2.5"),
        ("It equals 275.0", "275"),
        ("Step 1: 3*4=12\nStep 2: 12+1=13\n", "13"),
        ("(-4)", "-4"),
        ("I cannot compute this.", None),
        ("", None),
        ("12,5", None),  # ambiguous decimal comma: not guessed
        # Choi et al.'s format wins over later numbers
        ("{final answer: 123} (I used 2 steps)", "123"),
        ("{Final Answer: -18} Uncertainty 0.5", "-18"),
        ("{final answer: 1,024.50}", "1024.5"),
        ("{final answer: 7} then {final answer: 9}", "9"),
        ("{final answer: unsure} so 12", "12"),  # no number in the braces: the last number
    ],
)
def test_last_number(reply: str, expected: str | None) -> None:
    assert last_number(reply) == expected


def test_extraction_status_marks_unparsed_replies() -> None:
    task = ArithmeticTask()
    assert task.extract("no number here").status is ParseStatus.UNPARSED
    assert task.extract("no number here").answer is None
    parsed = task.extract("The answer is -3.")
    assert (parsed.answer, parsed.status) == ("-3", ParseStatus.PARSED)


def test_canonical_numbers_and_equality() -> None:
    assert canonical_number("1,000") == "1000"
    assert canonical_number("-0.50") == "-0.5"
    assert canonical_number("abc") is None
    assert numbers_equal("275", "275.0")
    assert not numbers_equal("275", "-275")
    assert not numbers_equal("x", "1")


def test_boxed_contents_balance_nested_braces() -> None:
    assert boxed_contents(r"\boxed{\frac{1}{2}} and \boxed{3}") == [r"\frac{1}{2}", "3"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Step 1 ... {final answer: 275}", "275"),
        ("{final answer: 12.34}", "12.3"),  # Choi rounds to one decimal (np.round(x, 1)): half to even
        ("{final answer: 0.25}", "0.2"),
        ("{final answer: 329.96}", "330"),  # so a near miss within 0.05 scores as the integer gold
        ("{final answer: -465}", "-465"),
        ("{ final answer:  7 }", "7"),
        ("It is {314}.\n\nUncertainty score (Average Negative Log Likelihood) for this response: 0.0495", "314"),
        ("{final answer: 3} and then {x}", None),  # only the last {...} is read
        ("{final answer: 3} and then {5}", "5"),
        (r"\boxed{12}", "12"),  # any {...}: the braces of \boxed too
        ("The answer is 42.", None),  # no braces: unparsed, not the last number
        ("{final answer: 1,234}", None),  # float() reads no thousands separator
        ("{Final Answer: 5}", None),  # the removal is case-sensitive, as str.replace is
        ("{final answer: $5$}", None),
        ("{final answer: 1e999999}", None),
        ("{final answer:\n5}", None),  # a {...} spans one line
    ],
)
def test_chois_reading_of_a_numeric_reply(reply: str, expected: str | None) -> None:
    assert choi_number(reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Paris is the capital. {final answer: (C)}", "C"),
        ("{final answer: (C) Paris}", "C"),  # three characters or more: the second
        ("{final answer: C}", "C"),  # one or two: the first
        ("{B}", "B"),
        ("{B.}", "B"),
        ("{ final answer:  (D) }", "D"),
        ("{final answer: (A)} but on reflection (B)", "A"),  # nothing outside the braces counts
        ("{final answer: (A)} and {final answer: (D)}", "D"),  # the last {...}
        ("So it is (B).", None),  # no braces: unparsed, not the last "(X)"
        ("{final answer: }", None),  # empty
        ("{A. Paris}", "."),  # the second character, whatever it is: a vote for no option
        ("{final answer: (b)}", "b"),  # kept as written
        ("{Final Answer: (C)}", "i"),  # the removal is case-sensitive: "Final Answer: (C)"[1]
        ("{final answer:\n(C)}", None),  # a {...} spans one line
    ],
)
def test_chois_reading_of_a_multiple_choice_reply(reply: str, expected: str | None) -> None:
    # Choi et al.'s evaluate_mcq, read by hand for each reply
    assert choi_choice(reply) == expected


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("-332", "-332"),  # 1. a field that opens with a number standing alone
        ("537, not 533", "537"),
        ("$155$", "155"),
        ("**155**", "155"),
        (r"\(\boxed{155}\)", "155"),
        (r"\[155\]", "155"),
        ("155.", "155"),
        ("155; the negative side's 150 is wrong", "155"),
        ("155 (not 150)", "155"),
        ("1,234", "1234"),
        ("The correct answer is 537, not 533.", "537"),  # 2. the number directly before a rejection
        ("The result of 26+10*9+13-3*3 is 313, not 314.", "313"),
        ("it is 155 rather than 150", "155"),
        ("it is 155 instead of 150", "155"),
        ("it is 155, but not 150", "155"),
        (r"it is \(\boxed{155}\), not \(\boxed{150}\)", "155"),
        ("it is 155, not -150", "155"),
        ("25 + 26 = 51", None),  # an expression: no such number
        ("1. First step", None),  # a list marker
        ("155 apples", None),  # a number followed by words
        ("The answer is 155", None),  # no rejection: the task's reply reader decides
        ("533 is not right", None),  # "not" before no number rejects nothing
        ("not 533 but 537", None),
        ("", None),
    ],
)
def test_the_number_an_answer_field_states_first(field: str, expected: str | None) -> None:
    assert field_number(field) == expected
