"""Answer extractors of the benchmark tasks: hand-checked awkward replies, then golden replies
of the local models (tests/fixtures/tasks/golden_replies.json, made by make_golden_replies.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moot.tasks import ParseStatus, get_task
from moot.tasks.biographies import Verdict, bullets, parse_verdict
from moot.tasks.chess_tasks import extract_move, extract_square
from moot.tasks.choice import choice_letter
from moot.tasks.gsm8k import gsm8k_answer, gsm8k_gold

FIXTURES = Path(__file__).parent / "fixtures" / "tasks"


@pytest.mark.parametrize(
    ("reply", "letters", "expected"),
    [
        ("The answer is (B).", "ABCD", "B"),
        ("(A) is wrong because ... so the answer is (C)", "ABCD", "C"),  # last match wins
        ("The answer is C.", "ABCD", "C"),
        ("Answer: **D**", "ABCD", "D"),
        ("the correct answer is: (b)", "ABCD", None),  # a lower-case letter is not read
        ("{final answer: B}", "ABCD", "B"),
        ("{Final Answer: (E)}", "ABCDE", "E"),
        ("So I pick (E).", "ABCD", None),  # outside the question's letters
        ("So I pick (E). Final answer is A", "ABCD", "A"),
        ("( D )", "ABCD", "D"),
        ("**(B) refrigerator**", "ABCDE", "B"),
        ("The answer is A bit unclear", "ABCD", "A"),  # a known false reading, kept simple
        ("The answer is Apple", "ABCD", None),  # a word starting with a letter is not a letter
        ("I think it's B", "ABCD", None),  # no recognised form: unparsed, never a guess
        ("", "ABCD", None),
        ("The final answer would be option C", "ABCD", "C"),
        ("(A) foo\n(B) bar\n(C) baz\nAnswer: (A)", "ABCD", "A"),
    ],
)
def test_choice_letter(reply: str, letters: str, expected: str | None) -> None:
    assert choice_letter(reply, letters) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (r"She makes 9 * 2 = $18. \boxed{18}", "18"),
        (r"\boxed{\$1,234}", "1234"),
        ("#### 72", "72"),
        ("Total 5 + 7 = 12.\n#### 12\nCheck: 3 pens", "12"),  # '####' beats a later number
        ("The answer is $1,080 per 3 weeks.", "1080"),  # 'the answer is' beats the last number
        ("The answer is: -5 degrees.", "-5"),
        ("She has 3 apples and buys 4 more, so 7 apples.", "7"),  # last number
        ("I don't know.", None),
        ("The answer is unclear, but 4 + 4 = 8", "8"),
        (r"\boxed{} then 6", "6"),
        ("{final answer: 123}. The answer is 5.", "123"),  # Choi et al.'s format wins
        (r"{final answer: $18} \boxed{20}", "18"),
    ],
)
def test_gsm8k_answer(reply: str, expected: str | None) -> None:
    assert gsm8k_answer(reply) == expected


def test_gsm8k_gold_is_the_number_after_hashes() -> None:
    assert gsm8k_gold("Janet sells 16 - 3 - 4 = 9 eggs.\n#### 18") == "18"
    assert gsm8k_gold("...\n#### 1,000") == "1000"
    assert gsm8k_gold("...\n#### -3") == "-3"
    assert gsm8k_gold("no final answer") is None


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("14. Nf3", "Nf3"),
        ("I suggest 14. <Qxf7#> which mates.", "Qxf7#"),
        ("1. e4 e5 2. Nf3 ... so: 14... Nc6", "Nc6"),
        ("The best move is e2e4 because it controls the centre.", "e2e4"),
        ("Play 0-0 now.", "O-O"),
        ("{final answer: Bb5}", "Bb5"),
        ("**exd5**", "exd5"),
        ("e8=Q+", "e8=Q+"),
        ("The knight should go forward.", None),
        ("", None),
    ],
)
def test_extract_move(reply: str, expected: str | None) -> None:
    assert extract_move(reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("The knight on g1 can jump to f3.\nf3", "f3"),
        ("f3 is valid: the knight at g1 moves in an L.\n\n**f3**", "f3"),
        ("The rook moves along the file to a4.", "a4"),  # no answer line: last square mentioned
        ("Final answer: e5", "e5"),
        ("No square.", None),
        ("e9 is off the board", None),
    ],
)
def test_extract_square(reply: str, expected: str | None) -> None:
    assert extract_square(reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Yes", Verdict.CONSISTENT),
        ("yes.", Verdict.CONSISTENT),
        ("No, the biography gives a different year.", Verdict.INCONSISTENT),
        ("Uncertain", Verdict.UNCERTAIN),
        ("The biography does not mention it, so I'm not sure.", Verdict.INCONSISTENT),  # Du: "no" in "not"
        ("Inconsistent.", Verdict.UNPARSED),  # Du reads only uncertain, yes, no
        ("Consistent", Verdict.UNPARSED),
        ("Not consistent", Verdict.INCONSISTENT),
        ("I cannot know that.", Verdict.INCONSISTENT),
        ("", Verdict.UNPARSED),
    ],
)
def test_parse_verdict(reply: str, expected: Verdict) -> None:
    assert parse_verdict(reply) is expected


def test_bullets_strip_markers_and_blank_lines() -> None:
    text = "\n\n- First fact.\n* Second fact\n1. Third fact\n2) Fourth\n\u2022 Fifth\n   \nPlain line"
    assert bullets(text) == ["First fact.", "Second fact", "Third fact", "Fourth", "Fifth", "Plain line"]
    assert bullets("- 1961: born") == ["born"]  # cut at the first letter, as Du et al. do


def test_unparsed_replies_have_the_unparsed_status() -> None:
    for name in ("mmlu", "gsm8k", "chess-validity", "chess-move"):
        extraction = get_task(name).extract("I have no idea.")
        assert (extraction.answer, extraction.status) == (None, ParseStatus.UNPARSED), name


# --- golden replies of real models -----------------------------------------------------------

GOLDEN = json.loads((FIXTURES / "golden_replies.json").read_text())
ANSWERS = [r for r in GOLDEN if r["kind"] == "answer"]
JUDGED = [r for r in GOLDEN if r["kind"].startswith("judge")]


def _id(record: dict[str, object]) -> str:
    return f"{record['model']}-{record['task']}-{record['question_id']}-{record['kind']}"


def test_golden_replies_cover_every_task_with_an_extractor() -> None:
    tasks = {r["task"] for r in ANSWERS}
    assert {"mmlu-formal-logic", "csqa", "hellaswag", "arc-challenge", "gpqa", "quality", "hh-rlhf"} <= tasks
    assert {"gsm8k", "chess-validity", "chess-move", "biographies"} <= tasks
    assert any(r["expected"] is None for r in ANSWERS), "golden set should include unparseable replies"
    assert all("expected" in r for r in GOLDEN), "every golden reply has a hand-checked expectation"


@pytest.mark.parametrize("record", ANSWERS, ids=_id)
def test_golden_reply_extraction(record: dict[str, object]) -> None:
    data = record["data"]
    task = get_task(str(record["task"]), data=str(FIXTURES / str(data)) if data else None)
    extraction = task.extract(str(record["reply"]))
    expected = record["expected"]
    if record["task"] == "biographies":  # the extraction is the bullet list; check its length
        assert extraction.answer is not None and len(extraction.answer.splitlines()) == expected
    else:
        assert extraction.answer == expected
        assert (extraction.status is ParseStatus.UNPARSED) == (expected is None)


@pytest.mark.parametrize("record", JUDGED, ids=_id)
def test_golden_judge_verdicts(record: dict[str, object]) -> None:
    assert parse_verdict(str(record["reply"])).value == record["expected"]
