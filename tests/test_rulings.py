"""Liang et al.'s moderator and final-judge rulings, and judges' answers, read as the papers' code reads
them (Liang's evaluates the reply), safely: lenient JSON, confidence on a 0-100 scale, answer fields whose
leading answer wins over later mentions.

The golden file tests/fixtures/rulings.json holds real rulings of the shipped run stores
(runs/replicate/across.sqlite: arithmetic; stopping.sqlite: MMLU): every distinct ruling text the old
reader (json.loads on the shortest ``{...}``) could not read, 18 it could, and the three "X, not Y"
answer fields; each expected value was typed after reading the text, not computed by the reader.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from moot.backends.scripted import ScriptedBackend
from moot.calls import Caller
from moot.debate import resolve_protocol, run_debate
from moot.debate.agents import Agent, AgentSpec
from moot.debate.components.stopping.judge import read_confidence, read_judge, read_object
from moot.debate.schedules.liang import read_moderator, ruling_readable
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import Question, Task
from moot.tasks.choice import field_letter
from moot.tasks.gsm8k import GSM8KTask
from moot.tasks.mmlu import MMLUTask
from tests.helpers import SCRIPTED, scripted_agents

RECORDS: list[dict[str, Any]] = json.loads((Path(__file__).parent / "fixtures" / "rulings.json").read_text())
TASKS: dict[str, Task] = {"arithmetic": ArithmeticTask(), "mmlu": MMLUTask()}
ARITHMETIC = ArithmeticTask()
SUM = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")
MC = Question(
    id="mc1",
    prompt="Which city is the capital of France?\n\n(A) London\n(B) Paris\n(C) Rome\n(D) Oslo",
    gold="B",
    metadata={"choices": ["London", "Paris", "Rome", "Oslo"]},
)


# -- 1. the golden file: real rulings -----------------------------------------------------------------


def test_the_golden_file_holds_distinct_real_rulings_of_every_kind() -> None:
    texts = [r["text"] for r in RECORDS]
    assert len(texts) == len(set(texts)) == 54
    assert sum(not r["old_reader_read"] for r in RECORDS) == 33  # every distinct text the old reader lost
    assert {r["store"] for r in RECORDS} == {"across", "stopping"}
    assert {r["agent"] for r in RECORDS} == {"moderator", "judge"}
    assert any(not r["expected"]["valid"] for r in RECORDS)  # a reply cut off inside its JSON stays unreadable


@pytest.mark.parametrize(
    "record",
    RECORDS,
    ids=[f"{r['store']}-{r['condition']}-{r['question_id']}-{r['round']}-{r['agent']}" for r in RECORDS],
)
def test_a_real_ruling_reads_as_checked_by_hand(record: dict[str, Any]) -> None:
    expected = record["expected"]
    reading = read_moderator(record["text"])
    assert ruling_readable(record["text"]) is expected["valid"]
    assert (reading.valid, reading.preference, reading.side, reading.answer_text, reading.confidence) == (
        expected["valid"],
        expected["preference"],
        expected["side"],
        expected["answer_text"],
        expected["confidence"],
    )
    question = Question(record["question_id"], "", record["gold"], {"choices": record["choices"] or []})
    answer = None if reading.answer_text is None else TASKS[record["task"]].read_answer(reading.answer_text, question)
    assert (answer.answer if answer is not None else None) == expected["answer"]


# -- 2. the lenient reader ----------------------------------------------------------------------------


def ruling(body: str) -> str:
    return "```json\n{" + body + "}\n```"


@pytest.mark.parametrize(
    ("text", "answer_text"),
    [
        (ruling('"debate_answer": "-19"'), "-19"),  # strict JSON in a fence
        ('Here it is: {"debate_answer": "-19"} Thanks.', "-19"),
        (ruling(r'"Reason": "it is \(-19\)", "debate_answer": "-19"'), "-19"),  # a LaTeX escape
        (ruling(r'"debate_answer": "\(\boxed{155}\)"'), r"\(\boxed{155}\)"),  # kept as written
        # valid JSON whose \b would be a backspace, \t a tab: LaTeX commands, kept as written
        (ruling(r'"debate_answer": "The answer is \boxed{C}"'), r"The answer is \boxed{C}"),
        (ruling(r'"debate_answer": "$3 \times 5$"'), r"$3 \times 5$"),
        (ruling(r'"debate_answer": "a\nb"'), "a\nb"),  # \n is a newline, as JSON says
        (ruling('"debate_answer": "a\\"b"'), 'a"b'),  # an escaped quote
        ("{'Whether there is a preference': 'Yes', 'debate_answer': 'B'}", "B"),  # a Python dict
        ("{'debate_answer': 'it\\'s B'}", "it's B"),
        (ruling(r"'debate_answer': '\(5\)'"), r"\(5\)"),  # single quotes and a LaTeX escape
        (ruling('"Reason": "f^{-1}(2) = 4 } {", "debate_answer": "C"'), "C"),  # braces inside a string
        (ruling('"Reason": "it\'s {odd", "debate_answer": "C"'), "C"),  # an apostrophe inside a string
        ('{"debate_answer": "1"} then {"debate_answer": "2"}', "2"),  # the last object wins
        ('{"debate_answer": "1"} then {not a ruling}', "1"),  # the last that reads as a dict
        ('{"debate_answer": "1"} and {1, 2}', "1"),  # a set is not a dict
        ('Consider {x and then {"debate_answer": "7"}', "7"),  # an unclosed "{" in prose
        ('It\'s {"debate_answer": "7"}', "7"),  # an apostrophe in prose opens nothing
        ('{"debate_answer": "5"}}', "5"),  # a stray closing brace
        ('[{"debate_answer": "5"}]', "5"),  # a list around the object: the object is read
        ('{"debate_answer": "\n5\n"}', "5"),  # a raw newline in a string (control characters allowed)
        ('{"debate_answer": 155}', "155"),  # a number
        ('{"debate_answer": "  "}', None),  # blank is missing
        ('{"debate_answer": null}', None),
        ("{'debate_answer': None}", None),
    ],
)
def test_the_lenient_reader_reads_json_like_rulings(text: str, answer_text: str | None) -> None:
    reading = read_moderator(text)
    assert reading.valid and ruling_readable(text)
    assert reading.answer_text == answer_text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no json at all",
        '{"debate_answer": "5"',  # never closed
        '```json\n{\n  "Reason": "cut off by the token limit, f^{-1}(2) = ',
        '["Yes", "Affirmative", "5"]',  # a list, not a dict
        "{1, 2, 3}",  # a set
        "{debate_answer: 5}",  # unquoted keys: no reader reads it
        "{'debate_answer': __import__('os').getcwd()}",  # a call is not a literal: never evaluated
        "{'debate_answer': 1 + 1}",  # nor is arithmetic
    ],
)
def test_a_ruling_no_reader_can_read_is_unreadable(text: str) -> None:
    assert read_moderator(text) == read_moderator("")
    assert not read_moderator(text).valid and not ruling_readable(text)


@pytest.mark.parametrize(
    "text",
    [
        "{" * 100_000 + "}" * 100_000,  # deep nesting: not read (a ruling is flat), no RecursionError
        "{" * 100_000,  # never closed
        '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",  # deep inside a shallow object
        "{'a': " + "(" * 10_000 + ")" * 10_000 + "}",  # too deep for Python's parser
        '{"confidence": 1' + "0" * 5_000 + "}",  # too many digits for int(): ValueError
        "{}" * 50_000,  # many objects: the last 16 are tried
        "{'" * 50_000,  # a string that never ends
    ],
)
def test_hostile_text_is_unreadable_or_read_without_crashing_and_fast(text: str) -> None:
    start = time.perf_counter()
    reading = read_moderator(text)
    assert time.perf_counter() - start < 5
    assert reading.answer_text is None and reading.confidence is None


def test_keys_compare_case_and_space_insensitively_and_fields_validate() -> None:
    reading = read_moderator(
        '{" WHETHER THERE IS A PREFERENCE ": "YES", "supported side": " Negative ", "Debate_Answer": "5"}'
    )
    assert (reading.preference, reading.side, reading.answer_text) == (True, "negative", "5")
    reading = read_moderator("{'Whether there is a preference': False, 'Supported Side': 'Both'}")
    assert (reading.valid, reading.preference, reading.side, reading.answer_text) == (True, False, None, None)
    assert read_object('{"A": 1, " b ": 2}') == {"a": 1, "b": 2}


# -- 3. confidence on a 0-100 scale -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "confidence"),
    [
        (90, 90.0),
        ("90", 90.0),
        ("90%", 90.0),
        ("90 %", 90.0),
        ("90/100", 90.0),
        ("9/10", 90.0),
        ("9 / 10", 90.0),
        ("0.95", 95.0),
        (0.95, 95.0),
        (1.0, 100.0),  # a decimal point and at most 1: a fraction
        (1, 1.0),  # no decimal point: 1 out of 100
        ("1", 1.0),
        (0, 0.0),
        (100, 100.0),
        (95.5, 95.5),
        ("0.5%", 0.5),  # a percent sign says the scale
        (150, None),  # out of range: missing, never clipped
        (-5, None),
        ("-5", None),
        (-0.5, None),
        ("110%", None),
        ("11/10", None),
        ("5/0", None),
        ("high", None),
        ("0-100", None),  # the prompt's placeholder copied back
        ("90 percent", None),
        (True, None),
        (None, None),
        ([90], None),
        (float("nan"), None),
        (float("inf"), None),
        (10**400, None),
    ],
)
def test_a_stated_confidence_reads_on_the_0_to_100_scale(value: object, confidence: float | None) -> None:
    assert read_confidence(value) == confidence


@pytest.mark.parametrize(
    ("field", "confidence"), [('"90%"', 90.0), ("0.95", 95.0), ('"9/10"', 90.0), ("90", 90.0), ('"ninety"', None)]
)
def test_a_moderators_confidence_is_read_by_the_same_rules(field: str, confidence: float | None) -> None:
    assert read_moderator('{"debate_answer": "5", "confidence": ' + field + "}").confidence == confidence


@pytest.mark.parametrize(
    ("reply", "answer", "confidence"),
    [
        ('{"answer": "42", "confidence": "90%"}', "42", 90.0),
        ('{"answer": "42", "confidence": 0.95}', "42", 95.0),
        ('{"Answer": "42", "Confidence": "9/10"}', "42", 90.0),  # keys in any case
        ("{'answer': '42', 'confidence': 80}", "42", 80.0),  # a Python dict
        (r'{"answer": "\(\boxed{42}\)", "confidence": 70}', "42", 70.0),  # a LaTeX escape
        ('{"answer": "42, not 24", "confidence": 70}', "42", 70.0),  # the leading answer wins
        ("The answer is 12. Confidence: 9/10", "12", 90.0),  # no JSON: "confidence: N" by the same rules
        ("The answer is 12. Confidence: 0.95", "12", 95.0),
        ("The answer is 12. Confidence: 90%.", "12", 90.0),
        ("The answer is 12. Confidence: -5", "12", None),  # negative: missing
        ("The answer is 12. Confidence: 1000", "12", None),  # not read as its first three digits
        ('{"answer": "5", "confidence": "high"} confidence: 60', "5", 60.0),  # the statement backs the field
    ],
)
def test_a_judges_answer_and_confidence(reply: str, answer: str | None, confidence: float | None) -> None:
    reading = read_judge(ARITHMETIC, SUM, reply)
    assert (reading.answer, reading.confidence) == (answer, confidence)


def test_a_judges_letter_is_read_from_a_python_dict_and_a_leading_choice() -> None:
    assert read_judge(MMLUTask(), MC, "{'answer': '(B) Paris, not (A) London', 'confidence': 80}").answer == "B"


# -- 4. answer fields: a leading answer wins ----------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "letter"),
    [
        ("(B) Paris, not (A) London", "B"),  # the choice named to reject it is not read
        ("B. Paris", "B"),
        ("Option B - Paris", "B"),
        ("Option B \u2013 Paris", "B"),
        ("B - Paris (A is wrong)", "B"),
        ("B, not A", "B"),
        ("B rather than (A)", "B"),
        ("B. The answer is (C)", "B"),  # a leading answer wins over later mentions
        (r"\boxed{C}", "C"),
        (r"The correct answer is \boxed{C}.", "C"),
        (r"\(\boxed{C}\)", "C"),
        ("$C$", "C"),
        ("The answer is (C), not (A)", "C"),  # today's reply rule, which the leading rule agrees with
        ("Not (A) but (C)", "C"),  # no leading letter: the last mention, as in a reply
        ("B-cell", None),  # a letter before a hyphen is a word
        ("A person would say Paris", None),
    ],
)
def test_a_choice_field_reads_its_leading_letter(field: str, letter: str | None) -> None:
    assert field_letter(field, MC) == letter


@pytest.mark.parametrize(
    ("field", "number"),
    [
        ("537, not 533", "537"),
        ("-332", "-332"),
        ("$155$", "155"),
        (r"\(\boxed{155}\)", "155"),
        ("**155**", "155"),
        ("155.", "155"),
        ("155 (the negative's -262 is wrong)", "155"),
        (r"\(\boxed{155}\), not \(\boxed{150}\)", "155"),
        ("1,234, not 1,243", "1234"),
        ("The answer is 155, not 150", "155"),  # the number directly before a rejection
        ("The answer is 155 rather than 150.", "155"),
        ("The answer is 155 instead of 150.", "155"),
        ("The answer is 155 (not 150).", "155"),
        ("The answer is 155 and not 150.", "155"),
        ("The result of 12 + 18 * 9 + 0 - 4 * 4 is 178, not 133.", "178"),  # not the expression's 12
        ("25 + 26 = 51", "51"),  # an expression opens it: the reply reader's last number
        ("1. First 9*15 = 135. 2. Then 135 + 20 = 155", "155"),  # a list marker is not an answer
        ("not 533 but 537", "537"),  # nothing before the rejection: the reply reader
        ("The answer is 155, not because of 150", "150"),  # "not" before no number rejects nothing
        ("533 is wrong; 537", "537"),  # no rule applies: the reply reader (last number), as before
        ("The correct answer is 41.", "41"),
        ("x", None),
    ],
)
def test_a_numeric_field_reads_its_leading_number(field: str, number: str | None) -> None:
    assert ARITHMETIC.read_answer(field, SUM).answer == number


def test_gsm8k_fields_read_the_same_way_and_replies_are_unchanged() -> None:
    gsm8k = GSM8KTask()
    question = Question(id="g", prompt="p", gold="18")
    assert gsm8k.read_answer("18, not 20", question).answer == "18"
    assert gsm8k.read_answer(r"The answer is \boxed{18}, not 20", question).answer == "18"
    assert gsm8k.read_answer("The total is 9 * 2 = 18", question).answer == "18"
    # an agent's reply is read as before: the last stated number
    assert ARITHMETIC.read_reply("537, not 533", SUM).answer == "533"
    assert gsm8k.read_reply("18, not 20", question).answer == "20"


# -- 5. a readable ruling costs no repair call --------------------------------------------------------


async def liang(*replies: str) -> tuple[Any, Caller]:
    judge = Agent(AgentSpec(name="judge", backend=SCRIPTED), ScriptedBackend(list(replies)))
    caller = Caller()
    affirmative, negative = scripted_agents(["a 1"], ["b 2"])
    protocol = resolve_protocol("liang", rounds=3)
    return await run_debate(SUM, ARITHMETIC, protocol, [affirmative, negative], caller=caller, judge=judge), caller


async def test_a_ruling_with_latex_is_read_without_a_repair_call() -> None:
    latex = ruling(r'"Whether there is a preference": "Yes", "Reason": "\(-19\)", "debate_answer": "\(\boxed{-19}\)"')
    result, caller = await liang(latex)
    assert (result.rounds_used, result.stop_reason, result.final_answer) == (1, "moderator_answer", "-19")
    assert result.rounds[0].judge is not None and result.rounds[0].judge.calls == 1
    assert caller.usage.calls == 2 + 1


async def test_only_an_unreadable_ruling_gets_the_repair_call() -> None:
    cut = '```json\n{"Whether there is a preference": "Yes", "Reason": "f^{-1}'
    result, caller = await liang(cut, ruling('"Whether there is a preference": "Yes", "debate_answer": "-19"'))
    assert (result.rounds_used, result.final_answer) == (1, "-19")
    assert result.rounds[0].judge is not None and result.rounds[0].judge.calls == 2
    assert caller.usage.calls == 2 + 2
