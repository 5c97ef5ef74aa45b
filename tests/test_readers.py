"""Reader sensitivity: each documented reader on hand-checked replies, the re-vote of a final round, and the
verdict table of a small scripted store where one reader flips significance (p-values computed by hand)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moot.analysis.cli import app
from moot.analysis.readers import (
    READERS,
    du_arithmetic,
    du_choice,
    du_gsm8k,
    get_reader,
    revote,
    strict_boxed,
    strict_choice,
    strict_number_at_end,
)
from moot.analysis.report import build_report, compare_conditions
from moot.analysis.report_sections import sections
from moot.analysis.results_figures import task_figures
from moot.analysis.results_summaries import Paper, read_summary, rows_csv, summarise
from moot.backends.base import GenerationRequest
from moot.debate.protocol_presets import PRESETS
from moot.debate.records import DebateResult, FinalStatus, RoundRecord, Turn, Vote
from moot.errors import ConfigError
from moot.tasks import get_task
from moot.tasks.base import ParseStatus, Question
from tests.helpers import WriteRun, arithmetic_experiment

ROOT = Path(__file__).resolve().parents[1]
BOTH_AGREE = "\\boxed{-70} Both Agent 1 and Agent 2 ..."  # s0-17 of runs/replicate/du.sqlite, shortened


# -- the readers on hand-checked replies ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "paper", "strict"),
    [
        # Du splits on spaces and takes the last piece float() reads: the "2" of "Agent 2", not the boxed -70
        (BOTH_AGREE, "2", None),
        ("The answer is 155.", "155", "155"),  # float("155.") == 155.0; strict drops the closing "."
        ("= 155**", None, "155"),  # float("155**") fails; strict drops the markdown
        ("$155$", None, "155"),
        ("So it is 155 and not 156 **", "156", None),  # Du: the last float-able piece; strict: "**" ends it
        ("The result is 1,234", "1.234", "1234"),  # Du turns commas into full stops first
        ("Answer: \\boxed{-70}", None, "-70"),  # a boxed number ending the reply is stated at the end
        ("", None, None),
    ],
)
def test_arithmetic_readers(text: str, paper: str | None, strict: str | None) -> None:
    assert du_arithmetic(text) == paper
    assert strict_number_at_end(text) == strict
    assert READERS["paper"].read("arithmetic", text) == paper
    assert READERS["strict"].read("arithmetic", text) == strict


@pytest.mark.parametrize(
    ("text", "paper", "strict"),
    [
        ("so she pays \\boxed{18} dollars, or 20 with tax", "18", "18"),  # Du: last {digits}; strict: last box
        ("\\boxed{$1,200}", "1200", "1200"),
        ("it is \\boxed{-5} in the end, 7 left", "7", "-5"),  # Du's braces take no "-": its last number, 7
        ("The answer is 42.", "42", None),  # no box: Du's last number; strict reads none
        ("no number at all", None, None),  # Du's evaluator scores this right; here it is unparsed
        ("\\boxed{18 apples}", "18", None),
    ],
)
def test_gsm8k_readers(text: str, paper: str | None, strict: str | None) -> None:
    assert du_gsm8k(text) == paper
    assert strict_boxed(text) == strict


@pytest.mark.parametrize(
    ("text", "paper", "strict"),
    [
        ("I pick (b), no, (C)", "C", "C"),
        ("The answer is (b)", "B", None),  # Du upper-cases any word character; strict wants a capital
        ("The answer is B", None, None),
        ("(A) is wrong; the answer is ( B )", "A", "A"),  # "( B )" is no "(X)" for either
    ],
)
def test_choice_readers(text: str, paper: str | None, strict: str | None) -> None:
    assert du_choice(text) == paper
    assert strict_choice(text) == strict
    assert READERS["strict"].read("csqa", text) == strict


def test_registry_names_and_applicability() -> None:
    assert list(READERS) == ["moot", "paper", "strict"]
    assert all(r.description for r in READERS.values())
    assert READERS["paper"].applies("mmlu") and not READERS["paper"].applies("csqa")  # Du ran MMLU only
    assert READERS["strict"].applies("csqa") and not READERS["strict"].applies("biographies")
    assert READERS["moot"].applies("biographies")  # the stored answers: every task
    with pytest.raises(ConfigError) as caught:
        get_reader("loose")
    assert "\n" not in str(caught.value) and "unknown reader 'loose'" in str(caught.value)


# -- the re-vote -----------------------------------------------------------------------------------------
def _turn(agent: str, text: str, answer: str | None) -> Turn:
    status = ParseStatus.PARSED if answer is not None else ParseStatus.UNPARSED
    return Turn(agent, 0, text, answer, status, None, "stop", 0, 0, 0.0, None, ())


def test_revote_of_a_final_round() -> None:
    """moot's stored answers 5, 5, 7 vote 5. Strict reads agent-1 none (its reply ends in words), agent-2 7 (the
    number ending its reply) and agent-3 7 ("= 7**"): the vote is 7. Du's reader: agent-1 none, agent-2 7,
    agent-3 none ("7**" is no float): 7 again, alone."""
    turns = (
        _turn("agent-1", "\\boxed{5} Both agents agree", "5"),
        _turn("agent-2", "I get 5, the others say 7", "5"),
        _turn("agent-3", "= 7**", "7"),
    )
    question = Question("q", "1+2*2+0-0*0", "5")
    vote = Vote((("5", 2), ("7", 1)), "5", ("5",), 0)
    result = DebateResult(question, "vote", (RoundRecord(0, turns, vote),), "5", FinalStatus.ANSWERED, True, "fixed")
    protocol = PRESETS["vote"]
    strict = revote(result, protocol, lambda t: READERS["strict"].read("arithmetic", t), seed=0)
    assert strict.counts == (("7", 2),) and strict.winner == "7" and strict.unparsed == 1
    paper = revote(result, protocol, lambda t: READERS["paper"].read("arithmetic", t), seed=0)
    assert paper.counts == (("7", 1),) and paper.winner == "7" and paper.unparsed == 2


def test_revote_breaks_a_random_tie_with_the_recorded_seed() -> None:
    """Strict reads 3 and 4 (one vote each): a tie, broken with the stored vote's tie seed, as the engine did."""
    import random

    turns = (_turn("agent-1", "it is 3", "3"), _turn("agent-2", "it is 4", "4"))
    question = Question("q", "", "3")
    vote = Vote((("3", 1), ("4", 1)), "4", ("3", "4"), 0, tie_seed=12345)
    result = DebateResult(question, "x", (RoundRecord(0, turns, vote),), "4", FinalStatus.ANSWERED, False, "fixed")
    protocol = PRESETS["vote"].model_copy(update={"tie_rule": "random"})
    again = revote(result, protocol, strict_number_at_end, seed=0)
    assert again.tie_seed == 12345 and again.winner == random.Random(12345).choice(["3", "4"])


# -- a scripted store where the strict reader flips significance -------------------------------------------
QUESTIONS = 6
_EXPRESSION = re.compile(r"result of (\d+)\+(\d+)\*(\d+)\+(\d+)-(\d+)\*(\d+)")


def _gold(request: GenerationRequest) -> tuple[str, int]:
    first = next(m.content for m in request.messages if m.role == "user")
    match = _EXPRESSION.search(first)
    assert match is not None, first
    a, b, c, d, e, f = (int(x) for x in match.groups())
    return match.group(0).removeprefix("result of "), a + b * c + d - e * f


def tidy(request: GenerationRequest, index: int) -> str:
    """Always right, in the form every reader reads."""
    return f"So the answer is {_gold(request)[1]}."


def messy(request: GenerationRequest, index: int) -> str:
    """Right on the first question, in a form only moot's reader and Du's read; wrong elsewhere."""
    expression, gold = _gold(request)
    first = get_task("arithmetic").questions(QUESTIONS, 0)[0].prompt
    if expression == first:
        return f"The answer: {gold} Both agents agree"
    return f"So the answer is {gold + 1}."


@pytest.fixture(scope="module")
def store(write_run: WriteRun) -> Path:
    conditions = [
        {"name": "tidy", "protocol": "single"},
        {"name": "messy", "protocol": "single", "agents": [{"backend": {"kind": "scripted", "model": "messy"}}]},
    ]
    experiment = arithmetic_experiment("readers", conditions, QUESTIONS, "tidy", seeds=[0])
    return write_run("readers", experiment, {"tidy": tidy, "messy": messy}, file="readers.sqlite")


def test_the_verdict_table_names_the_reader_that_breaks_it(store: Path) -> None:
    """tidy is right on all 6 questions under every reader. messy is right on question 0 only, and only under
    moot's and Du's readers ("The answer: N Both agents agree": the last number is N; Du's last float-able
    piece is N; strict sees "agree" end the reply).

    moot and paper: tidy only right on 5 questions, messy only on none: exact McNemar p = 2 x 0.5^5 = 0.0625,
    not significant; strict: 6 discordant, p = 2 x 0.5^6 = 0.03125, significant. Two conditions: no Holm."""
    (task,) = build_report(store, resamples=200).tasks
    readers = task.readers
    assert readers is not None and not readers.adjusted
    accuracy = {c.name: {r: a.estimate for r, a in c.accuracy if a is not None} for c in readers.conditions}
    assert accuracy == {
        "tidy": {"moot": 1.0, "paper": 1.0, "strict": 1.0},
        "messy": {"moot": pytest.approx(1 / 6), "paper": pytest.approx(1 / 6), "strict": 0.0},
    }
    assert {c.note for c in readers.conditions} == {"re-read"}
    (pair,) = readers.pairs
    assert (pair.a, pair.b) == ("tidy", "messy")
    got = {v.reader: (v.comparison.a_only, v.comparison.b_only, v.p, v.text) for v in pair.verdicts if v.comparison}
    assert got == {
        "moot": (5, 0, pytest.approx(0.0625), "A better, not significant"),
        "paper": (5, 0, pytest.approx(0.0625), "A better, not significant"),
        "strict": (6, 0, pytest.approx(0.03125), "A better, significant"),
    }
    assert pair.breaks == ("strict",) and pair.summary == "breaks under: strict"
    (section,) = sections(build_report(store, resamples=200))
    table = next(t for t in section.tables if t.key == "readers-pairs")
    assert ("tidy", "messy", "strict", "+1.000", "0.031", "A better, significant", "breaks under: strict") in table.rows
    assert any(t.key == "readers-accuracy" for t in section.tables)


def test_compare_shows_the_pair_under_each_reader(store: Path) -> None:
    """The same lines for the pair in ``moot compare`` (messy - tidy: the signs turn)."""
    ((task, pair),) = compare_conditions(store, "messy", "tidy", resamples=200)
    assert task == "arithmetic" and pair.readers is not None
    assert pair.readers.pairs[0].summary == "breaks under: strict"
    out = CliRunner().invoke(
        app, ["compare", str(store), "messy", "tidy", "--resamples", "200"], env={"COLUMNS": "200"}
    )
    assert out.exit_code == 0, out.output
    assert "reader sensitivity" in out.output and "breaks under: strict" in out.output
    assert "B better, significant" in out.output  # strict: p = 0.031


def test_the_summary_carries_each_readers_correctness(store: Path, tmp_path: Path) -> None:
    """Each result row holds its correctness under paper and strict; the document's readers column is
    derived from the summary alone (Holm over one comparison is its own p)."""
    facts, rows = summarise(store)
    messy = sorted(
        (r.question_id, r.correct, r.correct_paper, r.correct_strict) for r in rows if r.condition == "messy"
    )
    assert [x[1:] for x in messy].count((True, True, False)) == 1
    assert [x[1:] for x in messy].count((False, False, False)) == 5
    (tmp_path / "readers.csv").write_text(rows_csv(rows), encoding="utf-8")
    (tmp_path / "readers.json").write_text(facts.model_dump_json(), encoding="utf-8")
    summary = read_summary(tmp_path, "readers")
    assert summary is not None and summary[1] == rows
    figures = task_figures(Paper(file="readers", title="t", baseline="messy"), *summary, "arithmetic")
    (comparison,) = figures.comparisons
    assert (comparison.a, comparison.b) == ("tidy", "messy")
    assert comparison.robustness == "breaks under: strict"
    assert comparison.readers is not None
    assert comparison.readers.under("strict").p == pytest.approx(0.03125)


def test_an_unknown_reader_is_one_clear_line() -> None:
    with pytest.raises(ConfigError, match=r"^unknown reader 'papers'; did you mean paper\?$"):
        get_reader("papers")


# -- the shipped replication of Du et al. -------------------------------------------------------------------
DU = ROOT / "runs" / "replicate" / "du.sqlite"


@pytest.mark.skipif(not DU.exists(), reason="the shipped store is not here")
def test_du_arithmetic_under_each_reader() -> None:
    """Du et al.'s arithmetic (100 questions): Du's own parse_answer scores single 36%, vote 43%, society 21%,
    and society - single, significant under moot's reading (Holm p 0.035 in the document), turns."""
    report = build_report(DU, resamples=200)
    task = next(t for t in report.tasks if t.task == "arithmetic")
    assert task.readers is not None
    paper = {c.name: dict(c.accuracy)["paper"] for c in task.readers.conditions}
    assert {n: round(a.estimate, 2) for n, a in paper.items() if a is not None} == {
        "single": 0.36,
        "vote": 0.43,
        "society": 0.21,
    }
    pair = next(p for p in task.readers.pairs if {p.a, p.b} == {"single", "society"})
    assert pair.breaks == ("paper", "strict")


def test_the_main_tables_under_another_reader(store: Path) -> None:
    """``--reader strict`` scores the final answers as strict reads them: messy 0 of 6 right (moot: 1 of 6),
    and the pairs table's McNemar p is 2 x 0.5^6 = 0.031; an unknown reader is one error line."""
    strict = build_report(store, resamples=200, reader="strict")
    (task,) = strict.tasks
    assert {c.name: c.accuracy.successes for c in task.conditions} == {"tidy": 6, "messy": 0}
    assert task.pairs[0].accuracy.mcnemar_p == pytest.approx(0.03125)
    (task,) = build_report(store, resamples=200).tasks
    assert {c.name: c.accuracy.successes for c in task.conditions} == {"tidy": 6, "messy": 1}
    out = CliRunner().invoke(
        app, ["report", str(store), "--no-html", "--md", "-", "--resamples", "200", "--reader", "strict"]
    )
    assert out.exit_code == 0, out.output
    assert "final answers read by the 'strict' reader" in out.output
    out = CliRunner().invoke(app, ["compare", str(store), "tidy", "messy", "--reader", "loose"])
    assert out.exit_code == 2
    assert out.output.strip().splitlines() == [
        "moot: error: unknown reader 'loose'; known readers: moot, paper, strict"
    ]
