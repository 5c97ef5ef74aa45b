"""Reports of runs with repeated seeds, DAR-style best-round reporting and task metrics, checked against
the store itself with independent numpy/scipy computations.

Seeds repeat the same questions: a run of 6 questions x 3 seeds has n = 6 questions, not 18. Before the
question became the unit, every figure below was computed on the 18 (question, seed) results.
"""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from scipy.stats import binomtest, friedmanchisquare, wilcoxon
from typer.testing import CliRunner

from moot.analysis import build_report, compare_conditions, report_markdown
from moot.analysis.cli import app
from moot.analysis.formatting import fixed, interval, p_value
from moot.analysis.records import Report
from moot.analysis.render import print_comparison
from moot.analysis.stats import bootstrap_mean, wilson
from moot.analysis.tables import difference_text
from moot.debate.components.aggregation import majority_vote
from moot.tasks import get_task
from tests.fixtures.analysis_run import MODELS, experiment, make_run
from tests.helpers import WriteRun, query

QUESTIONS, SEEDS = 6, (0, 1, 2)
RESAMPLES = 2000


@pytest.fixture(scope="module")
def run(write_run: WriteRun) -> Path:
    return write_run("seeds", experiment(questions=QUESTIONS, seeds=list(SEEDS)), MODELS)


@pytest.fixture(scope="module")
def report(run: Path) -> Report:
    return build_report(run, resamples=RESAMPLES)


def matrices(path: Path) -> tuple[list[str], dict[str, np.ndarray]]:
    """Per condition, correctness as a questions x seeds array (question ids sorted)."""
    rows = query(path, "SELECT condition, question_id, seed, correct FROM results")
    ids = sorted({q for _, q, _, _ in rows})
    out: dict[str, np.ndarray] = {}
    for c in {c for c, *_ in rows}:
        out[c] = np.zeros((len(ids), len(SEEDS)))
    for c, q, s, k in rows:
        out[c][ids.index(q), s] = k
    return ids, out


def test_the_unit_is_the_question_and_the_report_says_so(run: Path, report: Report) -> None:
    (task,) = report.tasks
    md = report_markdown(report)
    assert "n = 6 questions x 3 seeds" in md
    assert (task.questions, task.units, task.seeds) == (QUESTIONS, QUESTIONS * len(SEEDS), SEEDS)
    assert task.repeated and task.unit == "n = 6 questions x 3 seeds"
    assert "| single | single | 6 x 3 |" in md and "95% CI (questions)" in md and "95% Wilson CI" not in md
    for title in (
        "Accuracy per seed and over seeds",
        "DAR-style: best round, mean ± std over seeds",
        "Paired accuracy comparisons per seed",
    ):
        assert f"### {title}" in md
    assert "Counted over question x seed results (n = 6 questions x 3 seeds)." in md  # transitions and the like


def test_accuracy_per_seed_mean_std_and_a_question_level_interval(run: Path, report: Report) -> None:
    _, m = matrices(run)
    for c in report.tasks[0].conditions:
        x = m[c.name]
        assert c.accuracy != wilson(int(x.sum()), 18)  # the interval of 18 independent results, as before
        per_seed = x.mean(axis=0)
        s = c.seed_accuracy
        assert s is not None and [(v.seed, v.n, v.total) for v in s.per_seed] == [
            (seed, QUESTIONS, x[:, seed].sum()) for seed in SEEDS
        ]
        assert s.mean == pytest.approx(per_seed.mean()) and s.std == pytest.approx(np.std(per_seed, ddof=1))
        a = c.accuracy
        assert (a.n, a.questions, a.successes, a.method) == (18, QUESTIONS, x.sum(), "cluster bootstrap")
        assert a.estimate == pytest.approx(x.mean(axis=1).mean())
        ci = bootstrap_mean(x.mean(axis=1), seed=0, resamples=RESAMPLES)
        assert (a.low, a.high) == (min(ci.low, a.estimate), max(ci.high, a.estimate))


def test_paired_tests_count_questions_not_question_seed_pairs(run: Path, report: Report) -> None:
    _, m = matrices(run)
    (task,) = report.tasks
    for p in task.pairs:
        a, b = m[p.a], m[p.b]
        d = a.mean(axis=1) - b.mean(axis=1)
        s = p.accuracy
        assert s.n == QUESTIONS  # 18 (question, seed) pairs before
        assert (s.units, s.repeats) == (18, 3)
        assert (s.a_only, s.b_only) == (int((d > 0).sum()), int((d < 0).sum()))
        k, n = s.a_only, s.a_only + s.b_only
        assert s.mcnemar_p == pytest.approx(binomtest(k, n, 0.5).pvalue if n else 1.0)
        assert s.difference == pytest.approx(d.mean())
        assert s.difference_ci == bootstrap_mean(d, seed=0, resamples=RESAMPLES)
        assert s.oracle == int(np.logical_or(a, b).sum()) and s.oracle_n == 18
        assert [(t.seed, t.n, t.a_only, t.b_only) for t in s.per_seed] == [
            (seed, QUESTIONS, int((a[:, seed] > b[:, seed]).sum()), int((a[:, seed] < b[:, seed]).sum()))
            for seed in SEEDS
        ]
        assert p.rounds.n == QUESTIONS and p.rounds.repeats == 3
    # three conditions: Friedman's test on the questions' accuracies (Cochran's Q with one seed)
    q = task.cochran
    assert q is not None and (q.test, q.n, q.df) == ("Friedman", QUESTIONS, 2)
    means = [m[c.name].mean(axis=1) for c in task.conditions]
    if all(np.all(row == row[0]) for row in np.stack(means, axis=1)):
        assert (q.statistic, q.p) == (0.0, 1.0)
    else:
        expected = friedmanchisquare(*means)
        assert q.statistic == pytest.approx(expected.statistic) and q.p == pytest.approx(expected.pvalue)


def test_dar_style_best_round_against_a_recount_from_turns(run: Path, report: Report) -> None:
    """Society (3 rounds): each debate round's majority vote, per seed, recounted from the turns table."""
    turns: dict[tuple[str, int, int], list[tuple[str | None, bool]]] = defaultdict(list)
    for q, s, r, answer, right in query(
        run, "SELECT question_id, seed, round, answer, correct FROM turns WHERE condition = 'society' ORDER BY agent"
    ):
        turns[(q, s, r)].append((answer, bool(right)))
    by_round: dict[int, dict[int, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for (_q, s, r), answers in turns.items():
        if r >= 1:
            winner = majority_vote([a for a, _ in answers]).winner
            by_round[r][s].append(any(a == winner and ok for a, ok in answers))
    single, vote, society = report.tasks[0].conditions
    assert single.best_round is None and vote.best_round is None  # no debate round: not DAR's kind of debate
    b = society.best_round
    assert b is not None and [r for r, _ in b.by_round] == [1, 2]
    for r, spread in b.by_round:
        per_seed = [float(np.mean(by_round[r][s])) for s in SEEDS]
        assert [v.mean for v in spread.per_seed] == pytest.approx(per_seed)
        assert spread.mean == pytest.approx(np.mean(per_seed)) and spread.std == pytest.approx(np.std(per_seed, ddof=1))
    means = {r: s.mean for r, s in b.by_round}
    assert b.best_round == min(r for r in means if means[r] == max(means.values()))
    assert b.final == society.seed_accuracy
    assert dict(b.by_round)[2].mean == pytest.approx(b.final.mean)  # fixed rounds, majority: the last round is final
    md = report_markdown(report)
    row = f"| society | 3 | {fixed(b.final.mean)} ± {fixed(b.final.std)} |"
    assert row in md and "optimistic selection" in md


def test_compare_reads_in_80_columns(run: Path) -> None:
    pairs = compare_conditions(run, "single", "society", resamples=RESAMPLES)
    console = Console(width=80, record=True)
    print_comparison(pairs, console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    ((_, pair),) = pairs
    s = pair.accuracy
    assert "n = 6 questions x 3 seeds" in text
    assert difference_text(s.difference, s.difference_ci.low, s.difference_ci.high) in text  # on one line, unfolded
    assert f"{s.a_only} / {s.b_only}" in text and "seed 2: A only / B only, McNemar p" in text
    assert "single vs society on arithmetic: rounds used (B - A)" in text


# -- task metrics (biographies' fact precision, chess-move's pawn score) ---------------------------------
def with_metric(run: Path, path: Path, task: str) -> dict[tuple[str, str, int], float | None]:
    """A copy of ``run`` relabelled as ``task``, its results carrying a metric value (None for some)."""
    shutil.copy(run, path)
    db = sqlite3.connect(path)
    for table in ("results", "turns", "calls", "questions"):
        db.execute(f"UPDATE {table} SET task = ?", (task,))
    values: dict[tuple[str, str, int], float | None] = {}
    for condition, qid, seed in db.execute("SELECT condition, question_id, seed FROM results").fetchall():
        i = int(qid.rsplit("-", 1)[-1]) if qid.rsplit("-", 1)[-1].isdigit() else len(qid)
        bonus = {"single": 0.0, "vote": 0.05, "society": 0.1}[condition]
        value = None if (i + seed) % 5 == 0 else round(0.3 + 0.1 * ((i * 7 + seed * 3) % 6) + bonus, 6)
        values[(condition, qid, seed)] = value
        db.execute(
            "UPDATE results SET metric = ?, metric_detail = ? WHERE condition = ? AND question_id = ? AND seed = ?",
            (value, json.dumps({"judge": {"calls": 0}}), condition, qid, seed),
        )
    if task == "biographies":
        db.execute("UPDATE results SET correct = 0")
    db.commit()
    db.close()
    return values


@pytest.mark.parametrize("task", ["biographies", "chess-move"])
def test_a_task_metric_gets_a_question_level_interval_and_paired_tests(run: Path, tmp_path: Path, task: str) -> None:
    path = tmp_path / "scored.sqlite"
    values = with_metric(run, path, task)
    report = build_report(path, resamples=RESAMPLES)
    (t,) = report.tasks
    description = get_task(task).metric_description  # type: ignore[attr-defined]
    md = report_markdown(report)
    assert f"### Task metric: {description}" in md and "### Paired task-metric comparisons" in md
    assert t.metric_name == description and t.scored
    assert t.accuracy_applies is (task == "chess-move")  # biographies is scored only by its metric
    ids = sorted({q for _, q, _ in values})
    per_question: dict[str, list[dict[int, float | None]]] = {
        c: [{s: values[(c, q, s)] for s in SEEDS} for q in ids] for c in ("single", "vote", "society")
    }
    for c in t.conditions:
        m = c.metric
        assert m is not None
        present = [[v for v in q.values() if v is not None] for q in per_question[c.name]]
        means = [float(np.mean(v)) for v in present if v]
        assert (m.questions, m.results, m.missing) == (
            len(means),
            sum(map(len, present)),
            sum(v is None for q in per_question[c.name] for v in q.values()),
        )
        assert m.missing > 0 and m.mean == pytest.approx(np.mean(means))
        assert m.ci == bootstrap_mean(means, seed=0, resamples=RESAMPLES) and m.ci.low < m.mean < m.ci.high
    for p in t.pairs:
        m = p.metric
        assert m is not None and p.metric_name == description
        d = []
        for qa, qb in zip(per_question[p.a], per_question[p.b]):
            both = [s for s in SEEDS if qa[s] is not None and qb[s] is not None]
            if both:
                d.append(np.mean([qa[s] for s in both]) - np.mean([qb[s] for s in both]))  # type: ignore[misc]
        diffs = np.asarray(d)
        assert m.n == len(d) <= QUESTIONS and m.difference == pytest.approx(diffs.mean())
        assert (m.a_higher, m.b_higher) == (int((diffs > 1e-12).sum()), int((diffs < -1e-12).sum()))
        nonzero = diffs[np.abs(diffs) > 1e-12]
        assert m.sign_p == pytest.approx(binomtest(m.a_higher, m.a_higher + m.b_higher).pvalue)
        assert m.wilcoxon_p == pytest.approx(wilcoxon(nonzero).pvalue)
        assert m.ci == bootstrap_mean(diffs, seed=0, resamples=RESAMPLES)
    if task == "biographies":  # no accuracy of 0 and McNemar p = 1 for a task that accuracy does not score
        assert "### Paired accuracy comparisons" not in md and "### DAR-style" not in md
        assert "| single | single | 6 x 3 | — | — | — |" in md
        for title in (  # every table that counts right and wrong answers, at 0.000 for a metric-only task
            "Accuracy of each round's answer",
            "Round 0 to final answer",
            "Round-to-round transitions",
            "Oracle accuracy",
            "Per-agent answer changes",
            "Pass@N",
            "Reader sensitivity",
        ):
            assert title not in md, title
    else:
        assert "### Paired accuracy comparisons" in md
    society = t.pairs[1]
    assert (society.a, society.b) == ("single", "society")
    result = CliRunner().invoke(app, ["compare", str(path), "single", "society", "--resamples", "500"])
    assert result.exit_code == 0, result.output
    assert f"single vs society on {task}: task metric" in result.output and "Wilcoxon signed-rank p" in result.output
    assert (f"single vs society on {task}: accuracy" in result.output) is (task == "chess-move")


def test_one_seed_reports_as_before(tmp_path: Path) -> None:
    """One seed: Wilson intervals and exact McNemar on questions, figures as they were."""
    path = make_run(tmp_path / "one.sqlite", questions=8)
    report = build_report(path, resamples=RESAMPLES)
    (task,) = report.tasks
    assert not task.repeated and task.unit == "n = 8 questions x 1 seed"
    for c in task.conditions:
        assert c.accuracy == wilson(c.accuracy.successes, 8)
        assert c.seed_accuracy is not None and math.isnan(c.seed_accuracy.std)
    for p in task.pairs:
        assert p.accuracy.repeats == 1 and p.accuracy.per_seed == () and p.accuracy.units is None
    assert task.cochran is not None and task.cochran.test == "Cochran's Q"
    md = report_markdown(report)
    assert "95% Wilson CI" in md and "### Accuracy per seed" not in md and "per seed" not in md.split("### DAR")[0]
    c = task.conditions[0]
    assert f"| {fixed(c.accuracy.estimate)} | {interval(c.accuracy.low, c.accuracy.high)} |" in md
    assert p_value(task.pairs[0].accuracy.mcnemar_p) in md
