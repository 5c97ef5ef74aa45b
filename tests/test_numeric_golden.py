"""Numeric answers as models write them (moot.tasks.numeric, docs/numeric.md): a golden table of replies read
by the numeric tasks' readers, each expectation checked by hand, then the canonical strings and exact equality.

``before`` is what moot read before the normaliser: computed once by running the previous extractor (the
reply readers of src/moot/tasks/extract.py and gsm8k.py at commit b976807) and pasted as literals; the table
asserts the new reading, and ``test_the_golden_table_counts`` counts the rows that read differently now.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from moot.tasks import get_task
from moot.tasks.extract import canonical_number, field_number, last_number, numbers_equal
from moot.tasks.gsm8k import gsm8k_answer
from moot.tasks.numeric import canonical, leading_answer, plain_numbers, whole_answer

# (task whose reader reads the reply, the reply, what moot read before, the hand-checked reading)
GOLDEN: list[tuple[str, str, str | None, str | None]] = [
    # fractions
    ("gsm8k", r"Each friend gets half: \boxed{\frac{1}{2}}.", "2", "0.5"),
    ("gsm8k", r"\boxed{\dfrac{3}{4}}", "4", "0.75"),
    ("gsm8k", r"\boxed{\tfrac12}", None, "0.5"),
    ("gsm8k", r"\boxed{-\frac{3}{4}}", "4", "-0.75"),
    ("gsm8k", r"\boxed{\frac{-3}{4}}", "4", "-0.75"),
    ("gsm8k", r"\boxed{\frac{1}{3}}", "3", "1/3"),
    ("gsm8k", r"\boxed{\frac{2}{6}}", "6", "1/3"),
    ("gsm8k", r"\boxed{\frac{10}{2}}", "2", "5"),
    ("gsm8k", r"\boxed{1\frac{1}{2}}", "2", "1.5"),
    ("gsm8k", r"\boxed{1/2}", "2", "0.5"),
    ("gsm8k", r"\boxed{2 1/2}", "2", "2.5"),
    ("gsm8k", "The answer is 1/2.", "1", "0.5"),
    ("gsm8k", r"The answer is $\frac{1}{2}$.", "2", "0.5"),
    ("gsm8k", "She needs 2 1/2 cups in all. The answer is 2 1/2 cups.", "2", "2.5"),
    ("gsm8k", "#### 3/4", "3", "0.75"),
    ("gsm8k", r"{final answer: \frac{5}{2}}", "2", "2.5"),
    ("arithmetic", r"So the share is $\frac{3}{4}$.", "4", "0.75"),
    ("arithmetic", "The result is 275. My confidence is 9/10.", "10", "10"),
    # percentages: the percent number
    ("gsm8k", r"\boxed{50\%}", "50", "50"),
    ("gsm8k", "The answer is 25%.", "25", "25"),
    ("gsm8k", r"\boxed{12.5 \%}", "12.5", "12.5"),
    ("gsm8k", "{final answer: 40 percent}", "40", "40"),
    # a variable's assignment, an equation's last side
    ("gsm8k", "The answer is x = 3.", "3", "3"),
    ("gsm8k", r"\boxed{x = 3}", "3", "3"),
    ("gsm8k", r"\boxed{x=12}", "12", "12"),
    ("arithmetic", "{final answer: x = -7}", "-7", "-7"),
    ("gsm8k", r"\boxed{2 \times 9 = 18}", "18", "18"),
    ("gsm8k", r"\boxed{x \approx 3.5}", "3.5", "3.5"),
    # units and words
    ("gsm8k", r"\boxed{3 \text{ apples}}", "3", "3"),
    ("gsm8k", r"\boxed{5 \text{ cm}^2}", "2", "5"),
    ("gsm8k", r"\boxed{\$1,000}", "1000", "1000"),
    ("gsm8k", r"\boxed{\$18.00}", "18", "18"),
    ("gsm8k", r"\boxed{-\$5}", "-5", "-5"),
    ("gsm8k", r"\boxed{12 \text{ dollars}}", "12", "12"),
    ("gsm8k", r"\boxed{\text{Total: } 18}", "18", "18"),
    ("gsm8k", r"\boxed{90^\circ}", "90", "90"),
    ("gsm8k", r"\boxed{60 \text{ km/h}}", "60", "60"),
    ("gsm8k", r"\boxed{18 \text{ (rounded)}}", "18", "18"),
    ("gsm8k", "{final answer: 18 dollars per week}", "18", "18"),
    ("gsm8k", "The answer is $1,080 per 3 weeks.", "1080", "1080"),
    ("gsm8k", r"The answer is: **\$18**.", "18", "18"),
    # thousands separators
    ("gsm8k", r"\boxed{1{,}000}", "1", "1000"),
    ("gsm8k", r"\boxed{1\,000}", "0", "1000"),
    ("gsm8k", r"\boxed{1 000}", "1000", "1000"),
    ("gsm8k", "\\boxed{12\u2009345}", "345", "12345"),
    ("gsm8k", r"\boxed{10 00}", "1000", None),
    ("gsm8k", "The total is $1{,}250$.", "1", "1250"),
    ("gsm8k", "#### 1,000", "1000", "1000"),
    ("arithmetic", "Total: 1,234,567!", "1234567", "1234567"),
    # decimals, signs, scientific notation
    ("gsm8k", r"\boxed{.5}", "0.5", "0.5"),
    ("gsm8k", r"\boxed{0.50}", "0.5", "0.5"),
    ("gsm8k", r"\boxed{5.}", "5", "5"),
    ("gsm8k", "\\boxed{\u221212}", "-12", "-12"),
    ("gsm8k", r"\boxed{+5}", "5", "5"),
    ("arithmetic", "Hence the value is \u221245", "-45", "-45"),
    ("gsm8k", r"\boxed{1.5 \times 10^{3}}", "3", "1500"),
    ("gsm8k", r"\boxed{2 \times 10^{-3}}", "-3", "0.002"),
    ("gsm8k", r"\boxed{1e3}", "1000", "1000"),
    # wrappers
    ("gsm8k", r"\boxed{\textbf{42}}", "42", "42"),
    ("gsm8k", r"\(\boxed{42}\).", "42", "42"),
    ("gsm8k", r"\boxed{{265}}", "265", "265"),
    ("arithmetic", r"\boxed{\{-388\}}", "-388", "-388"),
    ("arithmetic", r"\boxed{{final answer: -739}}", "-739", "-739"),
    ("arithmetic", "{final answer: 1,024.50}", "1024.5", "1024.5"),
    ("gsm8k", r"{final answer: $18} \boxed{20}", "18", "18"),
    (
        "arithmetic",
        "2. 22 + 51 + 10 - 514\n   {Final answer: 73 + 10 - 514}\n3. 83 - 754 = -671\nSo it is \\(\\boxed{-671}\\).",
        "514",
        "-671",
    ),
    # hard negatives: not one number
    ("gsm8k", r"\boxed{1/2/2024}", "2024", None),
    ("gsm8k", r"\boxed{3-4}", "4", None),
    ("gsm8k", r"\boxed{2^{10}}", "10", None),
    ("gsm8k", r"\boxed{1.2.3}", "1.2", None),
    ("gsm8k", r"\boxed{x = 3 \text{ or } x = -3}", "-3", None),
    ("gsm8k", r"\boxed{3 or 4}", "4", None),
    ("gsm8k", r"\boxed{0.333...}", "0.333", None),
    ("gsm8k", r"\boxed{\sqrt{2}}", "2", None),
    ("gsm8k", r"\boxed{\pm 3}", "3", None),
    ("gsm8k", r"\boxed{3 \text{ hours and } 20 \text{ minutes}}", "20", None),
    ("gsm8k", r"Since x and y are unknown, \(\boxed{110 + x + y}\).", "110", None),
    ("gsm8k", r"\boxed{2\pi}", "2", None),
    ("gsm8k", r"\boxed{3:45}", "45", None),
    ("gsm8k", r"\boxed{\frac{1}{0}}", "0", None),
    ("gsm8k", r"Bill was \(\boxed{30 + 60} = 90\).", "60", None),
    (
        "arithmetic",
        r"Thus, the final answer is \(\boxed{\text{Both 659 and 704 are potentially viable interpretations}}\).",
        "704",
        None,
    ),
    ("arithmetic", "{final answer: 7+7*25+4-25*17}", "17", None),
    # a stated answer that goes on (an expression, another answer): the marker is passed over
    ("gsm8k", "The answer is 5 - 2 = 3.", "5", "3"),
    ("gsm8k", r"The answer is $2 \times 9 = 18$.", "2", "18"),
    ("gsm8k", "The answer is x = 3 or x = -3.", "-3", "-3"),  # two answers: passed over, the last number read
    # running text reads as it always did
    ("arithmetic", "10+20*23+3-11*18 = 10+460+3-198 = 275", "275", "275"),
    ("arithmetic", "x - 5", "5", "5"),
    ("arithmetic", "- 275", "275", "275"),
    ("arithmetic", "It equals 275.0", "275", "275"),
    ("arithmetic", "I am 90% sure that it is -12.", "-12", "-12"),
    ("arithmetic", "On 1/2/2024 I computed 1/2/2024", "2024", "2024"),
    ("gsm8k", "She has 3 apples and buys 4 more, so 7 apples.", "7", "7"),
    ("arithmetic", "12,5", None, None),
]


@pytest.mark.parametrize(
    ("task", "reply", "before", "expected"), GOLDEN, ids=[f"{i}-{row[0]}" for i, row in enumerate(GOLDEN)]
)
def test_a_reply_reads_as_checked_by_hand(task: str, reply: str, before: str | None, expected: str | None) -> None:
    assert get_task(task).extract(reply).answer == expected


def test_the_golden_table_counts() -> None:
    changed = [row for row in GOLDEN if row[2] != row[3]]
    assert len(GOLDEN) == 94
    assert len(changed) == 45  # read wrongly before: the rows that read differently now
    assert len(GOLDEN) - len(changed) == 49  # read rightly before, and still
    assert {task for task, *_ in GOLDEN} == {"arithmetic", "gsm8k"}
    assert sum(row[3] is None for row in GOLDEN) >= 15  # hard negatives


def test_every_reading_is_canonical() -> None:
    # a stored answer is its canonical string: reading it again gives it back unchanged
    for _, _, _, expected in GOLDEN:
        if expected is not None:
            assert canonical_number(expected) == expected
            assert whole_answer(expected) == expected


@pytest.mark.parametrize(
    ("forms", "canonical_form"),
    [
        (
            [
                "0.5",
                "1/2",
                r"\frac{1}{2}",
                r"\dfrac12",
                r"\tfrac{1}{2}",
                "0.50",
                ".5",
                "2/4",
                "50/100",
                r"$\frac{2}{4}$",
            ],
            "0.5",
        ),
        (["1/3", "2/6", r"\frac{1}{3}", r"\dfrac{2}{6}", r"\frac{-1}{-3}"], "1/3"),
        (["-0.75", "-3/4", r"-\frac{3}{4}", r"\frac{-3}{4}", r"\frac{3}{-4}", "\u22120.75"], "-0.75"),
        (
            ["1000", "1,000", "1{,}000", r"1\,000", "1 000", "1\u2009000", r"\$1,000", "1e3", r"10 \times 10^{2}"],
            "1000",
        ),
        (["1.5", "3/2", r"1\frac{1}{2}", "1 1/2", r"\frac{3}{2}", "1.50"], "1.5"),
    ],
)
def test_answers_that_are_the_same_number_vote_under_one_string(forms: list[str], canonical_form: str) -> None:
    assert {form: whole_answer(form) for form in forms} == dict.fromkeys(forms, canonical_form)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ("0.5", "1/2", True),
        ("1/3", "0.333", False),  # a truncated decimal is another number
        ("1/3", "2/6", True),
        ("275", "275.0", True),
        ("-0.75", "-3/4", True),
        ("1/3", "-1/3", False),
        ("0", "-0", True),
        ("1.5", "3/2", True),
        ("2", "4/2", True),
        ("x", "1", False),
        ("1/0", "0", False),
        ("1/2", "x", False),
        ("1" * 6000, "1" * 6000, True),  # exact at any length, as ever
        ("1/7", "1e999999", False),
    ],
)
def test_numbers_are_equal_by_exact_value(a: str, b: str, equal: bool) -> None:
    assert numbers_equal(a, b) is equal
    assert numbers_equal(b, a) is equal


@pytest.mark.parametrize(
    ("text", "number"),
    # what canonical_number returned before the normaliser, computed with the previous code: unchanged
    [
        ("1,234", "1234"),
        ("-12.0", "-12"),
        ("0.50", "0.5"),
        ("1e3", "1000"),
        ("1.5e2", "150"),
        ("1E-3", "0.001"),
        ("-0.0", "0"),
        ("0.12345678901234567890123456789012345", "0.12345678901234567890123456789012345"),
        (" 42 ", "42"),
        ("\u22127", "-7"),
        ("+3", "3"),
        ("3.", "3"),
        (".5", "0.5"),
        ("1 000", "1000"),
        ("12,5", "125"),
        ("abc", None),
        ("1e999999", None),
        ("inf", None),
        ("nan", None),
        # added: a fraction of two integers, in its canonical form
        ("2/4", "0.5"),
        ("1/3", "1/3"),
        ("-2/6", "-1/3"),
        ("10/5", "2"),
        ("1/0", None),
    ],
)
def test_canonical_number_reads_plain_numbers_as_before_and_fractions_too(text: str, number: str | None) -> None:
    assert canonical_number(text) == number


def test_canonical_strings_of_exact_values() -> None:
    assert canonical(Fraction(12)) == "12"
    assert canonical(Fraction(-3, 4)) == "-0.75"
    assert canonical(Fraction(1, 3)) == "1/3"
    assert canonical(Fraction(-2, 7)) == "-2/7"
    assert canonical(Fraction(1, 1024)) == "0.0009765625"
    assert canonical(Fraction(7, 40)) == "0.175"


def test_each_format_reads_by_its_own_rules() -> None:
    # an answer that is the whole text: a plain space may group thousands
    assert whole_answer("1 000") == "1000" and whole_answer("10 00") is None
    # an answer that opens the text: anything may follow it, so a plain space ends it
    assert leading_answer(" 1 000 people") == "1" and leading_answer(" 1\u2009000 people") == "1000"
    assert leading_answer(" 3-4 hours") is None and leading_answer(" 1/2/2024") is None
    # running text: "a/b" is two numbers, as it always was (a confidence "9/10" as often as a fraction)
    assert plain_numbers(r"so 9/10, \frac{3}{4} of 1{,}200 is 900") == ["9", "10", "0.75", "1200", "900"]
    assert last_number("On 1/2/2024") == "2024"
    # a moderator's answer field
    assert field_number(r"\frac{1}{2}, not \frac{1}{3}") == "0.5"


def test_long_runs_of_spaces_read_in_linear_time() -> None:
    # each of these took time cubic in the run's length (20,000 spaces: hours) before the wrappers were
    # matched possessively
    spaces = " " * 20_000
    assert field_number(f"5{spaces}apples 3") is None
    assert field_number(f"{{final answer: 5{spaces}apples 3}}") is None
    assert whole_answer(f"5{spaces}apples") == "5"
    assert leading_answer(f"x ={spaces}") is None
    assert gsm8k_answer(f"The answer is{spaces}") is None
