"""Readers validated before they judge (issue 55): each reader's accuracy on hand-labelled stored replies, the rule
that a reader below the threshold marks no verdict fragile, moot's reader on the replies the labels showed it
misread, and the five committed samples (docs/results/readers/STORE.jsonl, drawn by benchmarks/reader_sample.py from
runs/replicate/STORE.sqlite and labelled by hand)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moot.analysis.budget import BudgetReaders
from moot.analysis.cli import app
from moot.analysis.reader_check import (
    STORED,
    TRUSTED,
    ReaderAccuracy,
    accuracies,
    agrees,
    load_sample,
    reader_accuracy,
)
from moot.analysis.readers import MOOT, breaking, reader_pairs, robustness
from moot.analysis.transcripts import AnalysisError
from moot.debate.protocol_presets import PRESETS
from moot.tasks import get_task
from moot.tasks.base import Question
from moot.tasks.choice import reply_letter

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "docs" / "results" / "readers"
STORES = ROOT / "runs" / "replicate"
NAMES = ("du", "stopping", "zhu", "dar", "across")


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# -- the arithmetic, on a tiny sample of du's replies labelled here by hand ------------------------------------
@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five labelled replies of du.sqlite and one unlabelled. By hand: moot reads -671, 308, 94, 203, -268; Du's
    parser 29, 308, 72, 42, 725 (the last piece float() reads: "\\boxed{-671}." is none); the strict reader -671,
    308, None, 203, -268; the stored answers are moot's."""
    rows = _lines(SAMPLES / "du.jsonl")
    picked = [rows[i] for i in (0, 1, 2, 4, 6, 7)]
    labels = ["-671", "308.0", None, "203", "-268", None]  # 308.0 is 308 in the task's form
    notes = ["", "", "states no answer of its own", "", "", ""]  # the last: not labelled, skipped
    path = tmp_path_factory.mktemp("sample") / "tiny.jsonl"
    path.write_text(
        "".join(json.dumps({**r, "label": lab, "note": n}) + "\n" for r, lab, n in zip(picked, labels, notes)),
        encoding="utf-8",
    )
    return path


def test_accuracy_on_a_tiny_sample(tiny: Path) -> None:
    found = {r.reader: r for r in reader_accuracy(tiny, STORES / "du.sqlite")}
    assert list(found) == [MOOT, STORED, "paper", "strict"]
    assert [(r.n, r.agreed) for r in found.values()] == [(5, 4), (5, 4), (5, 1), (5, 5)]
    moot = found[MOOT]
    assert moot.accuracy == 0.8 and not moot.trusted
    # Wilson 95%: 4/5 -> (0.3755, 0.9638); 1/5 -> (0.0362, 0.6245); 5/5 -> (0.5655, 1)
    assert (moot.interval.low, moot.interval.high) == pytest.approx((0.3755, 0.9638), abs=5e-4)
    paper = found["paper"].interval
    assert (paper.low, paper.high) == pytest.approx((0.0362, 0.6245), abs=5e-4)
    assert found["strict"].interval.low == pytest.approx(0.5655, abs=5e-4) and found["strict"].trusted
    assert [(d.index, d.label, d.reading) for d in moot.disagreements] == [(2, None, "94")]
    assert [(d.index, d.reading) for d in found["paper"].disagreements] == [(0, "29"), (2, "72"), (3, "42"), (4, "725")]
    # moot's verdict reader keeps the stored answers: its accuracy is theirs
    assert accuracies(tuple(found.values())) == {MOOT: 0.8, "paper": 0.2, "strict": 1.0}


def test_a_reply_not_in_the_store_is_refused(tiny: Path, tmp_path: Path) -> None:
    rows = _lines(tiny)
    rows[0]["text"] = "edited"
    changed = tmp_path / "changed.jsonl"
    changed.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(AnalysisError, match="reply 0 of the sample"):
        reader_accuracy(changed, STORES / "du.sqlite")


def test_labelled_lines_and_the_canonical_comparison(tiny: Path) -> None:
    sample = load_sample(tiny)
    assert [r.labelled for r in sample] == [True] * 5 + [False]
    arithmetic, mmlu = get_task("arithmetic"), get_task("mmlu")
    assert agrees(arithmetic, "413", "413.0") and agrees(arithmetic, None, None)
    assert not agrees(arithmetic, "413", None) and not agrees(arithmetic, None, "413")
    assert agrees(mmlu, "b", "B") and not agrees(mmlu, "C", "B")


# -- the rule: a reader below the threshold breaks nothing, and the text gives its accuracy ------------------
def test_a_misreading_reader_breaks_no_verdict() -> None:
    verdicts = [(MOOT, (1, True)), ("paper", (-1, False)), ("strict", (1, False))]
    assert breaking(verdicts) == ("paper", "strict")  # unvalidated: today's rule
    assert breaking(verdicts, {"paper": 0.61, "strict": 0.97}) == ("strict",)
    assert breaking(verdicts, {"paper": 0.61, "strict": 0.94}) == ()
    assert breaking(verdicts, {"paper": TRUSTED}) == ("paper", "strict")  # the threshold itself is trusted
    assert robustness((), {"paper": 0.61}) == "robust (paper misreads this model: 61%)"
    assert robustness(("strict",), {"paper": 0.61}) == "breaks under: strict (paper misreads this model: 61%)"
    assert robustness((), {"paper": 0.9495}) == "robust (paper misreads this model: 94.9%)"  # never "95%"
    assert robustness(("paper",)) == "breaks under: paper"


def test_pairs_and_budget_rows_take_the_accuracies() -> None:
    # ten questions: under moot's reading A is right and B wrong on each (p = 0.002); under the paper's, both right
    moot = {"a": {q: {0: True} for q in range(10)}, "b": {q: {0: False} for q in range(10)}}
    paper = {"a": {q: {0: True} for q in range(10)}, "b": {q: {0: True} for q in range(10)}}
    by_reader = {MOOT: moot, "paper": paper}
    (today,) = reader_pairs(by_reader, [("a", "b")], False, resamples=100)
    assert today.breaks == ("paper",) and today.summary == "breaks under: paper"
    (validated,) = reader_pairs(by_reader, [("a", "b")], False, resamples=100, accuracies={"paper": 0.5})
    assert validated.breaks == () and validated.summary == "robust (paper misreads this model: 50%)"

    class Row:  # an equal-budget row as BudgetReaders reads it: direction and Holm p
        def __init__(self, difference: float, holm_p: float) -> None:
            self.difference, self.holm_p = difference, holm_p

    rows = ((MOOT, Row(-0.2, 0.01)), ("paper", Row(0.1, 0.5)), ("strict", Row(-0.3, 0.001)))
    assert BudgetReaders("d", rows).summary == "breaks under: paper"  # type: ignore[arg-type]
    validated = BudgetReaders("d", rows, {"paper": 0.53, "strict": 0.56})  # type: ignore[arg-type]
    assert validated.breaks == ()
    assert validated.summary == "robust (paper misreads this model: 53%; strict misreads this model: 56%)"


# -- moot's reader on the replies its labels showed it misread (exact texts of the stores) -------------------
ELEVATOR = Question(
    "q",
    "",
    "B",
    {
        "choices": [
            "Mass, velocity, height, and acceleration",
            "Mass, velocity, and acceleration",
            "Mass and velocity",
            "Mass and acceleration",
        ]
    },
)
PSYCHOLOGY = Question(
    "q",
    "",
    "D",
    {"choices": ["the adaptation-level phenomenon", "two-factor theory", "James-Lange theory", "Cannon-Bard theory"]},
)
BLACKJACK = Question("q", "", "D", {"choices": ["11", "15", "20", "21"]})
HAMBURGER = Question("q", "", "D", {"choices": ["tasty", "health problems", "eat cake", "indigestion", "gain weight"]})
POKER = Question("q", "", "D", {"choices": ["supermarket", "pantry", "motherboard", "bar", "bar"]})
PEN = Question("q", "", "E", {"choices": ["backpack", "bank", "desk drawer", "eat cake", "office desk"]})
STOOL = Question("q", "", "B", {"choices": ["bar", "bar stool", "pantry", "oven"]})


@pytest.mark.parametrize(
    ("text", "question", "letters", "letter"),
    [
        # stopping: a boxed letter is a stated letter
        ("Therefore, the total cost of 4 magazines and 3 books is \\(\\boxed{C}\\).", ELEVATOR, "ABCD", "C"),
        ("Therefore, the correct answer is \\(\\boxed{B}\\).", ELEVATOR, "ABCD", "B"),
        # stopping: a letter followed by another choice's exact text contradicts itself
        ("The correct answer is (A) Mass, velocity, and acceleration.", ELEVATOR, "ABCD", None),
        ("The correct answer is (B) Mass, velocity, and acceleration.", ELEVATOR, "ABCD", "B"),
        ("The correct answer is (A) because of the height.", ELEVATOR, "ABCD", "A"),
        # stopping and zhu: no letter stated, one choice named in the opening sentence
        ("The description exemplifies the Cannon-Bard theory.", PSYCHOLOGY, "ABCD", "D"),
        ("The value of a queen and a king together is 21.", BLACKJACK, "ABCD", "D"),
        ("(X) Eating hamburgers may cause indigestion.", HAMBURGER, "ABCDE", "D"),
        ("(P) bar", POKER, "ABCDE", "D"),  # D and E have the same text: one answer, the first letter
        (
            "(X) According to the reasoning provided by other agents, the most appropriate place to keep a ballpoint "
            "pen when not in use in an office setting is indeed an office desk. Office desks are designed with "
            "drawers specifically for storing office supplies such as pens, pencils, erasers, and other "
            "office-related items. By keeping the ballpoint pen in the desk drawer, you can easily access it.",
            PEN,
            "ABCDE",
            "E",
        ),
        ("You would find them at a bar stool.", STOOL, "ABCD", "B"),  # "bar" inside "bar stool" is not named
        ("Either a backpack or a bank would do.", PEN, "ABCDE", None),  # two choices: unparsed
        (
            "To determine the correct answer, let's analyze the provided information step by step:\n\n1. This "
            "contradicts the claim that the effect is health problems.",
            HAMBURGER,
            "ABCDE",
            None,  # the opening sentence names no choice; a later one is not read
        ),
        ("None of the provided solutions are accurate or complete.", HAMBURGER, "ABCDE", None),
    ],
)
def test_choice_replies_read_with_their_question(
    text: str, question: Question, letters: str, letter: str | None
) -> None:
    assert reply_letter(text, question, letters) == letter


TRUNCATED = (  # du.sqlite, society, arithmetic-s0-43: cut off inside its \boxed{ (its tail)
    "   - Finally, subtract \\(132 - 5\\):\n     \\[\n     132 - 5 = 127\n     \\]\n\nTherefore, the result of the "
    "expression \\(20 + 9 \\cdot 11 + 13 - 5 \\cdot 1\\) is \\(\\boxed{"
)
CODE = (  # across.sqlite, diverse-confidence (its tail)
    "\\[377 - 112 = 265\\]\n\nWe can confirm this with Python code as well:\n```python\n# Calculation using Python\n"
    "result = 18 + 26 * 13 + 18 - 8 * 14\nprint(result)\n```"
)


@pytest.mark.parametrize(
    ("text", "expression", "answer"),
    [
        (TRUNCATED, "20+9*11+13-5*1", "127"),  # not the 1 of the restated expression
        (CODE, "18+26*13+18-8*14", "265"),  # not the 14 of the code that restates it
        ("20 + 9 × 11 + 13 − 5 × 1 = 127", "20+9*11+13-5*1", "127"),
        ("So 20+9*11+13-5*12 is not the question.", "20+9*11+13-5*1", "12"),  # another expression: read as ever
        ("The answer is \\boxed{20+9*11+13-5*1 = 127}", "20+9*11+13-5*1", "127"),  # a stated answer, as ever
    ],
)
def test_arithmetic_passes_over_the_restated_question(text: str, expression: str, answer: str) -> None:
    task = get_task("arithmetic")
    assert task.read_reply(text, Question("q", expression, answer)).answer == answer


def test_extract_without_the_question_is_unchanged() -> None:
    assert get_task("arithmetic").extract(TRUNCATED).answer == "1"


@pytest.mark.parametrize(
    ("text", "answer", "confidence"),
    [
        ("842 - 28 = 814 Terror: 10", "814", None),  # across.sqlite, confidence: once read as 10
        ("410 Confirm: 10", "410", None),  # across.sqlite, confidence
        ("430\nConfidence: 8", "430", 8.0),
        ("So it is 7.\nTotal: 7", "7", None),  # an answer's name stays the answer
        ("Answer: 7", "7", None),
        ("The result is: 7", "7", None),  # not a capitalised label
        ("x = 814 Terror: 11", "11", None),  # off the 0-10 scale: not a confidence line
    ],
)
def test_a_mislabelled_confidence_line_is_not_the_answer(text: str, answer: str, confidence: float | None) -> None:
    extraction, stated = PRESETS["confidence"].read_reply(
        get_task("arithmetic"), Question("q", "1+1*1+1-1*1", "0"), text
    )
    assert (extraction.answer, stated) == (answer, confidence)


# -- the committed samples ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def checked() -> dict[str, tuple[ReaderAccuracy, ...]]:
    return {name: reader_accuracy(SAMPLES / f"{name}.jsonl", STORES / f"{name}.sqlite") for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_each_sample_has_100_labelled_replies(name: str) -> None:
    sample = load_sample(SAMPLES / f"{name}.jsonl")
    assert sum(r.labelled for r in sample) >= 100
    assert {r.store for r in sample} == {name}


def test_moots_reader_is_trusted_on_every_store(checked: dict[str, tuple[ReaderAccuracy, ...]]) -> None:
    readers = [r.reader for r in checked[NAMES[0]]]
    print("\nstore      " + "".join(f"{r:>14}" for r in readers))
    for name, results in checked.items():
        cells = "".join(f"{'—' if math.isnan(r.accuracy) else f'{r.accuracy:.0%}':>8} ({r.n:>3})" for r in results)
        print(f"{name:<10} {cells}")
    for name, results in checked.items():
        moot = next(r for r in results if r.reader == MOOT)
        assert moot.accuracy >= TRUSTED, (name, [(d.index, d.label, d.reading) for d in moot.disagreements])


def test_on_the_held_out_samples_moots_stored_answers_are_what_the_document_says() -> None:
    """The held-out samples (drawn after moot's reader fixes, none of the first samples' replies): moot's stored
    answers agree with the hand labels on every du, stopping and zhu reply and on 46 of 50 dar and 47 of 50 across
    replies, whose misses are replies to Choi et al.'s template read as Choi's evaluator reads them
    (``{\\boxed{-332}}`` unread, 1532.25 rounded to 1532.2, an escaped ``\\{final answer: -40\\}``): over both
    samples every store is at or above the threshold."""
    expected = {"du": (50, 50), "stopping": (50, 50), "zhu": (25, 25), "dar": (46, 50), "across": (47, 50)}
    for name, (agreed, n) in expected.items():
        held = {a.reader: a for a in reader_accuracy(SAMPLES / "held-out" / f"{name}.jsonl", STORES / f"{name}.sqlite")}
        first = {a.reader: a for a in reader_accuracy(SAMPLES / f"{name}.jsonl", STORES / f"{name}.sqlite")}
        assert (held["stored"].agreed, held["stored"].n) == (agreed, n), name
        both = (held["stored"].agreed + first["stored"].agreed) / (held["stored"].n + first["stored"].n)
        assert both >= TRUSTED, (name, both)


# -- the commands -----------------------------------------------------------------------------------------
def test_readers_check_prints_each_readers_accuracy() -> None:
    result = CliRunner().invoke(
        app,
        ["readers", "check", str(SAMPLES / "du.jsonl"), "--store", str(STORES / "du.sqlite")],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "│ paper  │ 100     │ 78    │ 78%      │ 69%-85%         │ no " in result.output  # Du's parser on du
    assert "moot #2: label None, read 94" in result.output


def test_compare_with_labels_names_the_misreading_readers(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "compare",
            str(STORES / "du.sqlite"),
            "society",
            "single",
            "--task",
            "arithmetic",
            "--resamples",
            "100",
            "--labels",
            str(SAMPLES / "du.jsonl"),
        ],
        env={"COLUMNS": "400"},
    )
    assert result.exit_code == 0, result.output
    assert "paper misreads this model" in result.output
