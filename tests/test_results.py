"""The replications document (``moot results``): summaries of real stores give the figures ``moot report``
gives, the document renders hand-checked numbers, refuses to overwrite what moot did not write, and the
repository's own docs/results.md agrees with the summaries it ships."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moot.analysis import build_report
from moot.analysis.budget import equal_budget_table
from moot.analysis.budget_pools import VoteAtK, VotePool
from moot.analysis.results import Paths, check, update
from moot.analysis.results_figures import (
    RESAMPLES,
    Comparison,
    _budget_match,
    compare,
    condition_figures,
    equal_budget_rows,
    task_figures,
)
from moot.analysis.results_page import MARKER, render
from moot.analysis.results_summaries import DOCUMENT, Paper, Papers, ResultRow, read_summary, rows_csv, summarise
from moot.analysis.stats import compare_paired, wilson
from moot.cli import app
from moot.errors import ConfigError, MootError
from tests.fixtures.analysis_run import MODELS, experiment
from tests.helpers import WriteRun, query

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def seeded(write_run: WriteRun) -> Path:
    return write_run("results", experiment(questions=6, seeds=[0, 1, 2]), MODELS, file="seeded.sqlite")


@pytest.fixture(scope="module")
def single_seed(write_run: WriteRun) -> Path:
    # 12 questions: ids arithmetic-s0-10 and -11 sort before -2, so a summary that reordered the questions
    # would resample other ones than the report does
    return write_run("results", experiment(questions=12), MODELS, file="one.sqlite")


@pytest.mark.parametrize("which", ["single_seed", "seeded"])
def test_summary_figures_are_the_reports(which: str, request: pytest.FixtureRequest) -> None:
    store: Path = request.getfixturevalue(which)
    facts, rows = summarise(store)
    report = build_report(store, resamples=RESAMPLES)
    (task,) = report.tasks
    assert facts.conditions == ("single", "vote", "society") and facts.status == "complete"
    assert len(rows) == facts.planned == task.units * 3
    # in the store's question order, as the report reads them: the bootstraps resample the same questions
    order = [q for (q,) in query(store, "SELECT question_id FROM questions ORDER BY rowid")]
    assert list(dict.fromkeys(r.question_id for r in rows)) == order
    for c in task.conditions:
        mine = [r for r in rows if r.condition == c.name]
        figures = condition_figures(c.name, mine)
        assert figures.accuracy == c.accuracy
        assert figures.paid_calls == c.usage.calls
        assert sum(r.calls for r in mine) == c.usage.used_calls
        assert sum(r.prompt_tokens for r in mine) == c.usage.used_prompt_tokens
        assert sum(r.paid_completion_tokens for r in mine) == c.usage.completion_tokens
    for p in task.pairs:
        a = [r for r in rows if r.condition == p.a]
        b = [r for r in rows if r.condition == p.b]
        assert compare(a, b) == p.accuracy


@pytest.mark.parametrize("which", ["single_seed", "seeded"])
def test_equal_budget_from_the_summary_is_the_reports(which: str, request: pytest.FixtureRequest) -> None:
    """The document's equal-budget rows, made from the summary alone (the pool's vote@k in the facts, the
    rows' tokens), are ``moot report``'s and ``moot compare --budget tokens``'s, Holm included."""
    store: Path = request.getfixturevalue(which)
    facts, rows = summarise(store)
    ((pool,), expected) = equal_budget_table(store, "vote", "tokens", resamples=RESAMPLES)
    assert facts.vote_pools == (pool,)
    by_condition = {c: [r for r in rows if r.condition == c] for c in facts.conditions}
    match = {"single": "vote", "society": "vote"}
    assert dict(_budget_match(facts, "arithmetic")) == match  # each arm's own first request is the pool's
    rows_alone = tuple(replace(e, readers="", differs=None) for e in expected)  # the figures, from the rows alone
    assert equal_budget_rows([pool], match, by_condition) == rows_alone
    figures = task_figures(Paper(file="toy", title="Toy", baseline="vote"), facts, rows, "arithmetic")
    assert figures.equal_budget == expected  # the readers' verdicts and what else differs (the facts') included
    assert [e.debate for e in expected] == ["single", "society"]


def test_equal_budget_rows_hand_checked() -> None:
    """Two questions, a pool of 3: q0's answers right, right, wrong (P(vote@1) = 2/3, P(vote@3) = 1),
    q1's wrong, wrong, right (1/3, 0); 100 tokens an answer. A debate of 250 tokens a question matches k = 3;
    right on both: d = (1 - 1, 1 - 0) = (0, 1), mean 0.5; the exact sign-flip test over the 4 sign vectors
    finds |mean| >= 0.5 in all 4 (the 0 flips nothing): p = 1. A condition of 100 tokens matches k = 1,
    wrong on both: d = (-2/3, -1/3), mean -0.5, every flip but none-and-both smaller: p = 2/4."""
    rows = (VoteAtK(1, 0.5, 100.0, 1.0), VoteAtK(2, 0.5, 200.0, 2.0), VoteAtK(3, 0.5, 300.0, 3.0))
    pool = VotePool("vote", "arithmetic", 3, "first", 2, 1, 100.0, rows,
                    (("q0", (2 / 3, 2 / 3, 1.0)), ("q1", (1 / 3, 1 / 3, 0.0))))  # fmt: skip

    def row(condition: str, q: int, correct: bool, tokens: int) -> ResultRow:
        return _row(condition, q, correct).model_copy(update={"prompt_tokens": tokens, "completion_tokens": 0})

    debate = [row("debate", 0, True, 250), row("debate", 1, True, 250)]
    one = [row("one", 0, False, 100), row("one", 1, False, 100)]
    a, b = equal_budget_rows([pool], {"debate": "vote", "one": "vote"}, {"vote": [], "debate": debate, "one": one})
    assert (a.debate, a.k, a.pool_too_small, a.difference, a.p, a.exact) == ("debate", 3, False, 0.5, 1.0, True)
    assert (b.debate, b.k, b.vote_cost, b.difference, b.p) == ("one", 1, 100.0, pytest.approx(-0.5), 0.5)
    assert (a.holm_p, b.holm_p) == (1.0, 1.0)  # Holm: min(1, 2 x 0.5) = 1, then the larger p 1


def test_equal_budget_verdicts_under_each_reader_hand_checked() -> None:
    """The same two questions and pool as above, now also read by the paper's parser and the strict reader. Six
    questions would be needed for significance, so the verdict is compared on its direction: moot's debate is
    +0.5 against vote@3 (right on both). The paper's reading makes the debate wrong on q1 and its pool
    right/right/right on q0 (P(vote@3) = 1) and wrong on q1 (0): d = (0, 0), no difference: it breaks the
    verdict (direction + against none). The strict reader keeps the debate's correctness and reads q1's pool as
    moot does: d = (0, 1), +0.5: robust under it. A reader that reads no question of the condition (None) is
    not applicable and breaks nothing."""
    from moot.analysis.results_figures import budget_readers

    rows = (VoteAtK(1, 0.5, 100.0, 1.0), VoteAtK(2, 0.5, 200.0, 2.0), VoteAtK(3, 0.5, 300.0, 3.0))
    moot = VotePool("vote", "arithmetic", 3, "first", 2, 1, 100.0, rows,
                    (("q0", (2 / 3, 2 / 3, 1.0)), ("q1", (1 / 3, 1 / 3, 0.0))))  # fmt: skip
    paper = VotePool("vote", "arithmetic", 3, "first", 2, 1, 100.0, rows,
                     (("q0", (1.0, 1.0, 1.0)), ("q1", (0.0, 0.0, 0.0))), "paper")  # fmt: skip
    strict = VotePool("vote", "arithmetic", 3, "first", 2, 1, 100.0, rows, moot.by_question, "strict")

    def row(q: int, correct: bool, paper: bool | None) -> ResultRow:
        base = _row("debate", q, correct).model_copy(update={"prompt_tokens": 250, "completion_tokens": 0})
        return base.model_copy(update={"correct_paper": paper, "correct_strict": correct})

    debate = [row(0, True, True), row(1, True, False)]
    match = {"debate": "vote"}
    (base,) = equal_budget_rows([moot], match, {"debate": debate})
    (under,) = budget_readers([base], [paper, strict], match, {"debate": debate})
    verdicts = dict(under.rows)
    assert (verdicts["paper"].k, verdicts["paper"].difference) == (3, 0.0)  # type: ignore[union-attr]
    assert verdicts["strict"].difference == 0.5  # type: ignore[union-attr]
    assert under.breaks == ("paper",) and under.summary == "breaks under: paper"
    unread = [row(0, True, None), row(1, True, None)]  # the paper's parser does not read the condition
    (under,) = budget_readers([base], [paper, strict], match, {"debate": unread})
    assert dict(under.rows)["paper"] is None and under.summary == "robust"
    (under,) = budget_readers([base], [], match, {"debate": debate})  # no reader reads the pool: nothing re-derived
    assert under.summary == "—"


def test_the_pool_under_each_reader_is_its_stored_replies_read_again(single_seed: Path) -> None:
    """``pools_by_reader``: moot's pool is ``vote_at_k``'s; the paper's is vote@k of the pool's round-0 replies
    read by Du et al.'s parse_answer (``du_arithmetic``) and scored against the gold answer, per question."""
    from moot.analysis.budget_estimators import vote_probabilities
    from moot.analysis.budget_pools import pools_by_reader, vote_at_k
    from moot.analysis.readers import du_arithmetic, strict_number_at_end
    from moot.runner.store import RunStore

    pools = pools_by_reader(single_seed)
    assert pools["moot"] == vote_at_k(single_seed)
    ((paper,), (strict,)) = pools["paper"], pools["strict"]
    assert (paper.reader, strict.reader, paper.condition) == ("paper", "strict", "vote")
    store = RunStore.read(single_seed)
    try:
        for pool, read in ((paper, du_arithmetic), (strict, strict_number_at_end)):
            expected = []
            for r in store.iter_results():
                if r.condition == "vote":
                    answers = [read(t.text) for t in r.result.rounds[0].turns]
                    right = {a for a in answers if a is not None and float(a) == float(r.result.question.gold)}
                    expected.append((r.result.question.id, vote_probabilities(answers, right, "first")[1:]))
            assert list(pool.by_question) == expected
    finally:
        store.close()


def test_the_document_and_moot_compare_give_the_same_equal_budget_readers(single_seed: Path) -> None:
    """The readers column of docs/results.md's equal-budget table (from the summaries) and of ``moot compare
    --budget`` / ``moot report`` (``equal_budget_table``, from the store) say the same for every row, and each
    row's figures under moot's reader are the same."""
    facts, rows = summarise(single_seed)
    figures = task_figures(Paper(file="toy", title="Toy", baseline="vote"), facts, rows, "arithmetic")
    _, table = equal_budget_table(single_seed, resamples=RESAMPLES)
    assert [e.debate for e in table] == [e.debate for e in figures.equal_budget] == ["single", "society"]
    assert [e.readers for e in table] == [r.summary for r in figures.budget_readers]
    assert all(e.readers in ("robust", "breaks under: paper", "breaks under: strict", "breaks under: paper, strict")
               for e in table)  # fmt: skip
    assert [(e.k, e.difference, e.p) for e in table] == [(e.k, e.difference, e.p) for e in figures.equal_budget]


def test_summary_files_read_back_as_written(single_seed: Path, tmp_path: Path) -> None:
    facts, rows = summarise(single_seed)
    (tmp_path / "x.csv").write_text(rows_csv(rows), encoding="utf-8")
    (tmp_path / "x.json").write_text(facts.model_dump_json(), encoding="utf-8")
    assert read_summary(tmp_path, "x") == (facts, rows)
    assert read_summary(tmp_path, "missing") is None
    (tmp_path / "x.csv").write_text("condition,task\nsingle,arithmetic\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="columns"):
        read_summary(tmp_path, "x")


def _row(condition: str, q: int, correct: bool, seed: int = 0) -> ResultRow:
    return ResultRow(
        condition=condition, task="arithmetic", question_id=f"q{q}", seed=seed, status="answered",
        correct=correct, rounds_used=1, calls=3, prompt_tokens=100, completion_tokens=50,
        paid_calls=3 if condition == "a" else 0, paid_prompt_tokens=100, paid_completion_tokens=50,
    )  # fmt: skip


def test_hand_checked_figures_in_the_document() -> None:
    # A right on 7 of 10, B on 4: A only on q0-q3, B only on q9; McNemar exact p = 2 * (1 + 5) / 32 = 0.375.
    a = [_row("a", q, q < 7) for q in range(10)]
    b = [_row("b", q, q in (4, 5, 6, 9)) for q in range(10)]
    b[0] = b[0].model_copy(update={"status": "unparsed"})  # wrong either way; counted apart
    # The strict reader: A as moot reads it; B right on q0-q6 and q9, so A only on none, B only on q9: p = 1,
    # B better, against moot's A better: the verdict breaks under strict (the paper's reader has no column here)
    a = [r.model_copy(update={"correct_strict": r.correct}) for r in a]
    b = [r.model_copy(update={"correct_strict": q < 7 or q == 9}) for q, r in enumerate(b)]
    assert condition_figures("a", a).accuracy == wilson(7, 10)
    paired = compare(a, b)
    assert (paired.a_only, paired.b_only, paired.mcnemar_p) == (4, 1, 0.375)
    assert paired == compare_paired([q < 7 for q in range(10)], [q in (4, 5, 6, 9) for q in range(10)])
    paper = Paper.model_validate(
        {
            "file": "toy",
            "title": "Toy et al.",
            "baseline": "b",
            "figure": [
                {"task": "arithmetic", "condition": "a", "accuracy": 0.8, "where": "Table 1"},
                {"task": "arithmetic", "condition": "b", "accuracy": 0.6, "where": "Table 1"},
            ],
        }
    )
    from moot.analysis.results_summaries import RunFacts

    facts = RunFacts(
        name="toy", store="runs/replicate/toy.sqlite", status="complete", moot_version="0.1.0", fingerprint="f",
        wall_s=600.0, sessions=1, models=("qwen2.5-1.5b",), planned=20, conditions=("a", "b"),
    )  # fmt: skip
    text = render(Papers(paper=(paper,)), {"toy": (facts, a + b)})
    assert text.startswith(MARKER)
    # Wilson 7/10: [0.3968, 0.8922]; 4/10: [0.1682, 0.6873]
    # both at 150 tokens a question: a is on the frontier, b is beaten by a (no vote pool in these facts)
    assert "| a | 10 | 80.0% | 70.0% [39.7, 89.2] | 3.0 | 150 | yes | 30 | 0 | 0 |" in text
    assert "| b | 10 | 60.0% | 40.0% [16.8, 68.7] | 3.0 | 150 | no: a | 0 | 1 | 0 |" in text
    # paper +20 points, moot +30 with exact p 0.375 (one comparison: Holm leaves it)
    line = next(x for x in text.splitlines() if x.startswith("| a − b |"))
    assert line.startswith("| a − b | +20.0 | +30.0 [") and line.endswith(
        "| 4 / 1 | 0.375 | 0.375 | direction only | breaks under: strict | — |"
    )
    assert (
        "not applicable here: paper. Under each reader: a − b: moot +30.0, Holm p 0.375; strict -10.0, Holm p 1.000."
        in text
    )
    assert "complete; model qwen2.5-1.5b; wall time 10 min over 1 session" in text
    assert "The paper's setting" not in text  # none given
    # moot's own comparison (no figures, no stated directions): no paper or verdict columns
    own = paper.model_copy(update={"figure": (), "setting": "every family on arithmetic"})
    text = render(Papers(paper=(own,)), {"toy": (facts, a + b)})
    # (the readers line below the table still names the reader called "paper")
    assert (
        "The setting: every family on arithmetic." in text and "paper" not in text.split("### ")[1].split("Readers:")[0]
    )
    assert "| a | 10 | 70.0% [39.7, 89.2] | 3.0 | 150 | yes | 30 | 0 | 0 |" in text
    assert "| difference (points) | moot, 95% CI | only A / only B right | exact p | Holm p | readers |" in text
    line = next(x for x in text.splitlines() if x.startswith("| a − b |"))
    assert line.startswith("| a − b | +30.0 [") and line.endswith(
        "| 4 / 1 | 0.375 | 0.375 | breaks under: strict | — |"
    )


def test_stated_directions_are_compared_where_the_paper_gives_no_figures() -> None:
    # a right on q0-q6, b (the baseline) on q4-q6 and q9, c on q0, q1 and q9; the paper gives no figures,
    # only "c better than b" and "c worse than a".
    # c - b: c only on q0, q1, b only on q4-q6: exact p = 2 * (1 + 5 + 10) / 32 = 1.0; -10 points, reversed.
    # c - a: c only on q9, a only on q2-q6: exact p = 2 * (1 + 6) / 64 = 0.21875; -40 points, the stated way.
    # a - b: 4 / 1, p = 0.375 (as above), no direction stated. Holm over the three: 0.21875 * 3 = 0.656,
    # 0.375 * 2 = 0.75, 1.0.
    a = [_row("a", q, q < 7) for q in range(10)]
    b = [_row("b", q, q in (4, 5, 6, 9)) for q in range(10)]
    c = [_row("c", q, q in (0, 1, 9)) for q in range(10)]
    paper = Paper.model_validate(
        {
            "file": "toy",
            "title": "Toy et al.",
            "baseline": "b",
            "claim": [
                {"condition": "c", "direction": "better", "where": "§4", "quote": "c helps"},
                {"condition": "c", "against": "a", "direction": "worse", "where": "Table 3", "quote": "c hurts"},
                {"condition": "missing", "direction": "better", "where": "§5", "quote": "not run here"},
            ],
        }
    )
    from moot.analysis.results_summaries import RunFacts

    facts = RunFacts(
        name="toy", store="runs/replicate/toy.sqlite", status="complete", moot_version="0.1.0", fingerprint="f",
        wall_s=600.0, sessions=1, models=("qwen2.5-1.5b",), planned=30, conditions=("a", "b", "c"),
    )  # fmt: skip
    lines = render(Papers(paper=(paper,)), {"toy": (facts, a + b + c)}).splitlines()
    rows = [x for x in lines if "| a − b |" in x or "| c − b |" in x or "| c − a |" in x]
    assert [r.split(" | ")[0] for r in rows] == ["| a − b", "| c − b", "| c − a"]  # ranked: +30, -10, -40
    assert rows[0].startswith("| a − b | — | +30.0 [") and rows[0].endswith(
        "| 4 / 1 | 0.375 | 0.750 | — | robust | — |"
    )
    assert rows[1].startswith("| c − b | better (stated) | -10.0 [")
    assert rows[1].endswith("| 2 / 3 | 1.000 | 1.000 | no, reversed | robust | — |")
    assert rows[2].startswith("| c − a | worse (stated) | -40.0 [")
    assert rows[2].endswith("| 1 / 5 | 0.219 | 0.656 | direction only | robust | — |")
    assert "Against b and in the pairs the paper states a direction for, paired on the same questions" in "\n".join(
        lines
    )
    assert '- c better than b: "c helps" (§4)' in lines and '- c worse than a: "c hurts" (Table 3)' in lines
    assert not any("not run here" in x for x in lines)


@pytest.mark.parametrize(
    ("paper", "moot", "p", "verdict"),
    [
        (0.1, 0.2, 0.01, "yes"),
        (0.1, 0.2, 0.2, "direction only"),
        (-0.1, -0.05, 0.04, "yes"),
        (0.1, -0.2, 0.01, "no, reversed"),
        (0.1, 0.0, 1.0, "no, no difference"),
        (None, 0.2, 0.01, "—"),
        ("better", 0.2, 0.01, "yes"),
        ("worse", 0.2, 0.01, "no, reversed"),
        ("worse", -0.1, 0.2, "direction only"),
        ("better", 0.0, 1.0, "no, no difference"),
    ],
)
def test_verdict(paper: float | str | None, moot: float, p: float, verdict: str) -> None:
    """From the paper's difference, or from the direction it states where it gives no figures."""
    a = [_row("a", 0, True)]
    paired = compare(a, [_row("b", 0, False)])
    from dataclasses import replace

    difference, direction = (paper, None) if not isinstance(paper, str) else (None, paper)
    comparison = Comparison("a", "b", replace(paired, difference=moot), p, difference, direction)  # type: ignore[arg-type]
    assert comparison.verdict == verdict


PAPERS = """\
[[paper]]
file = "toy"
title = "Toy et al. 2024"
setting = "a big model, 3 agents"
baseline = "single"
notes = "Small models debate less well."

[[paper.figure]]
task = "arithmetic"
condition = "single"
accuracy = 0.5
where = "Table 1"

[[paper.figure]]
task = "arithmetic"
condition = "society"
accuracy = 0.7
where = "Table 1"
note = "read off Figure 2"

[[paper]]
file = "later"
title = "Later et al."
"""


def _paths(tmp_path: Path) -> Paths:
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "runs" / "replicate").mkdir(parents=True)
    (tmp_path / "examples" / "replicate").mkdir(parents=True)
    (tmp_path / "docs" / "results" / "papers.toml").write_text(PAPERS, encoding="utf-8")
    return Paths(
        papers=tmp_path / "docs/results/papers.toml",
        summaries=tmp_path / "docs/results",
        stores=tmp_path / "runs/replicate",
        document=tmp_path / "docs/results.md",
        experiments=tmp_path / "examples/replicate",
    )


def test_update_then_check_from_stores_and_from_summaries_alone(single_seed: Path, tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    shutil.copy(single_seed, paths.stores / "toy.sqlite")
    before = (paths.stores / "toy.sqlite").read_bytes()
    written = update(paths)
    assert [p.name for p in written] == ["toy.json", "toy.csv", "toy-frontier.png", "results.md"]
    assert (paths.stores / "toy.sqlite").read_bytes() == before  # the store is read, never written
    assert check(paths) == []
    text = paths.document.read_text(encoding="utf-8")
    # the run has a pool (vote, 3 answers): its frontier picture is drawn beside the summaries and shown
    picture = paths.summaries / "toy-frontier.png"
    assert picture.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert "![Accuracy-cost frontier of toy](results/toy-frontier.png)" in text
    assert "vote@k curve of vote's 3 answers" in text
    picture.unlink()
    assert check(paths) == [f"{picture} is missing (the document shows it): run `moot results` where the store is"]
    update(paths)
    assert picture.exists() and check(paths) == []
    assert "## Toy et al. 2024" in text and "## Later et al." in text and "Not run yet" in text
    assert "The paper's setting: a big model, 3 agents." in text and "Small models debate less well." in text
    assert "- society: read off Figure 2" in text and "| vote | 12 | — |" in text
    # without the stores (a fresh clone): the document is checked against the summaries it ships
    (paths.stores / "toy.sqlite").unlink()
    assert check(paths) == []
    paths.document.write_text(text.replace("Toy et al. 2024", "Toy et al. 2025"), encoding="utf-8")
    assert check(paths) == [f"{paths.document} differs from the summaries in {paths.summaries}"]
    assert update(paths) == [paths.document] and check(paths) == []


def test_a_stale_summary_is_out_of_date(single_seed: Path, seeded: Path, tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    shutil.copy(single_seed, paths.stores / "toy.sqlite")
    update(paths)
    shutil.copy(seeded, paths.stores / "toy.sqlite")  # the run went on
    problems = check(paths)
    assert f"{paths.summaries / 'toy.csv'} differs from {paths.stores / 'toy'}.sqlite" in problems


def test_files_moot_did_not_write_are_not_replaced(single_seed: Path, tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.document.write_text("# my notes\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="moot did not write it"):
        update(paths)
    assert paths.document.read_text(encoding="utf-8") == "# my notes\n"
    paths.document.unlink()
    shutil.copy(single_seed, paths.stores / "toy.sqlite")
    (paths.summaries / "toy.csv").write_text("a spreadsheet of mine\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="moot did not write it"):
        update(paths)


def test_a_bad_papers_file_is_one_clear_error(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.papers.write_text('[[paper]]\nfile = "x"\ntitle = "X"\n[[paper.figure]]\ntask = "a"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"papers.toml: paper.0.figure.0.condition: required key is missing"):
        update(paths)


def test_the_repository_document_matches_its_summaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/results.md is what `moot results` makes from docs/results/ (and from runs/replicate/ where the
    stores are here): `moot results --check` passes."""
    monkeypatch.chdir(ROOT)
    assert (ROOT / DOCUMENT).exists()
    result = CliRunner().invoke(app, ["results", "--check"])
    assert result.exit_code == 0, result.output
    assert "agrees with its summaries" in result.output


def test_every_paper_names_a_replication_file_and_its_conditions() -> None:
    from moot.analysis.results_summaries import EXPERIMENTS, read_papers
    from moot.runner.config_files import load_experiment

    papers = read_papers(ROOT / "docs/results/papers.toml")
    files = sorted(p.stem for p in (ROOT / EXPERIMENTS).glob("*.toml"))
    assert sorted(p.file for p in papers.paper) == files == ["across", "choi", "dar", "du", "math", "stopping", "zhu"]
    for paper in papers.paper:
        experiment = load_experiment(ROOT / EXPERIMENTS / f"{paper.file}.toml")
        assert experiment.name == paper.file and str(experiment.output) == f"runs/replicate/{paper.file}.sqlite"
        conditions = {c.name for c in experiment.conditions}
        tasks = {t.name for t in experiment.tasks}
        assert paper.baseline in conditions
        for f in paper.figure:
            assert f.condition in conditions and f.task in tasks, f
        for c in paper.claim:
            assert c.condition in conditions and (c.against or paper.baseline) in conditions, c


def test_across_makes_du_s_requests_for_du_s_arms() -> None:
    """across.toml replays du.toml's calls (calls_from) only if its single, vote and society arms and its
    arithmetic questions are du.toml's to the letter; du-adaptive debates with society's agents."""
    from moot.analysis.results_summaries import EXPERIMENTS
    from moot.runner.config_files import load_experiment
    from moot.runner.config_resolve import resolve

    du, across = (load_experiment(ROOT / EXPERIMENTS / f"{name}.toml") for name in ("du", "across"))
    assert across.calls_from[0] == du.output  # then, while it is rebuilt, its earlier stores (issues 37, 39)
    assert all(p.parent == Path("runs/replicate/previous") for p in across.calls_from[1:])
    assert (across.tasks[0], across.seeds, across.share_round0) == (du.tasks[0], du.seeds, du.share_round0)
    ours, theirs = ({c.name: c for c in resolve(e)} for e in (du, across))
    for name in ("single", "vote", "society"):
        assert theirs[name] == ours[name], name
    assert theirs["du-adaptive"].agents == ours["society"].agents


def test_a_store_from_another_version_of_its_file_is_refused(tmp_path: Path) -> None:
    """The store must be the run of the experiment file the document links: the same file's store is
    summarised, a store made before the file changed is one clear error."""
    paths = _paths(tmp_path)
    smoke = (ROOT / "examples/scripted-smoke.toml").read_text(encoding="utf-8")
    experiment = paths.experiments / "toy.toml"
    experiment.write_text(smoke, encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(experiment), "--output", str(paths.stores / "toy.sqlite")])
    assert result.exit_code == 0, result.output
    assert update(paths)[-1] == paths.document and check(paths) == []
    experiment.write_text(smoke.replace("count = 4", "count = 5"), encoding="utf-8")
    with pytest.raises(MootError, match=r"toy.sqlite holds another experiment than .*toy.toml describes now"):
        check(paths)


def test_a_session_killed_outright_counts_up_to_its_last_call_in_summaries_and_reports(
    single_seed: Path, tmp_path: Path
) -> None:
    import sqlite3

    store = tmp_path / "killed.sqlite"
    shutil.copy(single_seed, store)
    db = sqlite3.connect(store)
    with db:  # as a kill -9 leaves it: the session never recorded its end
        db.execute("UPDATE sessions SET finished_at = NULL, status = 'running'")
    (started,) = db.execute("SELECT started_at FROM sessions").fetchone()
    (last,) = db.execute("SELECT MAX(created_at) FROM calls").fetchone()
    db.close()
    facts, _ = summarise(store)
    assert facts.sessions == 1 and facts.wall_s == round(last - started, 1) and last > started
    assert build_report(store, resamples=RESAMPLES).wall_s == pytest.approx(last - started)  # `moot report`'s too


def test_a_rerun_that_only_replays_adds_no_session_or_time(tmp_path: Path) -> None:
    """The wall time beside a paper is what its run cost: a session that made no model call (a rerun of
    a run stopped after its last result, which only marks it complete) adds no session or time, so a
    shipped summary still matches its store."""
    import sqlite3

    store = tmp_path / "toy.sqlite"
    args = ["run", str(ROOT / "examples/scripted-smoke.toml"), "--output", str(store)]
    assert CliRunner().invoke(app, args).exit_code == 0
    first = summarise(store)
    db = sqlite3.connect(store)
    with db:  # as a run stopped between its last result and its end leaves it
        db.execute("UPDATE meta SET value = '\"interrupted\"' WHERE key = 'status'")
    db.close()
    rerun = CliRunner().invoke(app, args)
    assert rerun.exit_code == 0 and "model calls 0" in rerun.output, rerun.output
    assert len(query(store, "SELECT id FROM sessions")) == 2  # the rerun is recorded in the store
    assert summarise(store) == first and first[0].sessions == 1
