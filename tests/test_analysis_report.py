"""Reports built from a stored run (scripted 'debater' model): figures checked against the store itself,
Markdown, terminal and HTML output, the CLI, and the sections that appear once confidences exist."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from moot.analysis import AnalysisError, build_report, compare_conditions
from moot.analysis.calibration import calibrate
from moot.analysis.cli import app
from moot.analysis.html import SCRIPT, report_html
from moot.analysis.records import Report
from moot.analysis.render import print_report, report_markdown
from moot.analysis.stats import holm, mcnemar_exact, wilson
from moot.debate.components.aggregation import majority_vote
from moot.runner.store import RunStore
from tests import helpers
from tests.fixtures.analysis_run import MODELS, PAYLOAD, PRICE, QUESTIONS, debater, experiment, make_run
from tests.helpers import WriteRun, query, write_store

RESAMPLES = 2000


@pytest.fixture(scope="module")
def run(write_run: WriteRun) -> Path:
    return write_run("analysis", experiment(), MODELS)


@pytest.fixture(scope="module")
def report(run: Path) -> Report:
    return build_report(run, resamples=RESAMPLES)


def test_accuracy_and_paired_tests_match_the_store(run: Path, report: Report) -> None:
    correct = {(c, q): bool(k) for c, q, k in query(run, "SELECT condition, question_id, correct FROM results")}
    (task,) = report.tasks
    assert task.task == "arithmetic" and task.units == QUESTIONS
    assert [c.name for c in task.conditions] == ["single", "vote", "society"]
    for c in task.conditions:
        right = sum(v for (name, _), v in correct.items() if name == c.name)
        assert (c.accuracy.successes, c.accuracy.n) == (right, QUESTIONS)
        assert c.accuracy == wilson(right, QUESTIONS)
    ids = sorted({q for _, q in correct})
    for p in task.pairs:
        a_only = sum(correct[(p.a, q)] and not correct[(p.b, q)] for q in ids)
        b_only = sum(correct[(p.b, q)] and not correct[(p.a, q)] for q in ids)
        assert (p.accuracy.n, p.accuracy.a_only, p.accuracy.b_only) == (QUESTIONS, a_only, b_only)
        assert p.accuracy.mcnemar_p == mcnemar_exact(a_only, b_only)
    assert [(p.a, p.b) for p in task.pairs] == [("single", "vote"), ("single", "society"), ("vote", "society")]
    assert [p.holm_p for p in task.pairs] == holm([p.accuracy.mcnemar_p for p in task.pairs])
    assert task.cochran is not None and task.cochran.n == QUESTIONS and task.cochran.df == 2
    society_vs_single = task.pairs[1].rounds
    assert (society_vs_single.sign.more, society_vs_single.mean) == (QUESTIONS, 2.0)  # 3 rounds against 1


def test_rounds_usage_and_cost_match_the_store(run: Path, report: Report) -> None:
    (task,) = report.tasks
    calls = defaultdict(lambda: [0, 0.0])
    for condition, prompt, completion in query(run, "SELECT condition, prompt_tokens, completion_tokens FROM calls"):
        calls[condition][0] += 1
        calls[condition][1] += (prompt * PRICE["prompt"] + completion * PRICE["completion"]) / 1e6
    used = dict(query(run, "SELECT condition, COUNT(*) FROM turns GROUP BY condition"))
    for c in task.conditions:
        assert c.usage.calls == calls[c.name][0] and c.usage.cost == pytest.approx(calls[c.name][1])
        assert c.usage.used_calls == used[c.name]
        assert c.stop_reasons == (("max_rounds", QUESTIONS),)
    society = task.conditions[2]
    assert society.rounds == ((3, QUESTIONS, society.accuracy.successes),) and society.mean_rounds == 3
    assert [(r, n) for r, n, _ in society.accuracy_by_round] == [(0, QUESTIONS), (1, QUESTIONS), (2, QUESTIONS)]
    # the shared round 0: single's and vote's calls are counted once, in the condition that made them
    assert sum(c.usage.calls for c in task.conditions) == query(run, "SELECT COUNT(*) FROM calls")[0][0]


def test_transitions_and_oracles_match_a_recount_from_turns(run: Path, report: Report) -> None:
    """Recount from the turns table with moot's own majority vote: round-0 majority -> final answer."""
    turns: dict[tuple[str, str], dict[int, list[tuple[str, str | None, bool]]]] = defaultdict(lambda: defaultdict(list))
    for c, q, r, agent, answer, right in query(
        run, "SELECT condition, question_id, round, agent, answer, correct FROM turns ORDER BY agent"
    ):
        turns[(c, q)][r].append((agent, answer, bool(right)))
    results = query(run, "SELECT condition, question_id, correct, final_answer FROM results")
    final = {(c, q): (bool(k), a) for c, q, k, a in results}
    (task,) = report.tasks
    for c in task.conditions:
        counts = defaultdict(int)
        oracle_turn = 0
        for (name, q), rounds in turns.items():
            if name != c.name:
                continue
            winner = majority_vote([a for _, a, _ in rounds[0]]).winner
            before = any(a == winner and ok for _, a, ok in rounds[0])
            after, final_answer = final[(name, q)]
            counts[(before, after)] += 1
            counts["changed"] += winner != final_answer
            oracle_turn += after or any(ok for turns_ in rounds.values() for _, _, ok in turns_)
        t = c.first_to_final_total
        recount = (counts[(True, True)], counts[(False, True)], counts[(True, False)], counts[(False, False)])
        assert (t.right_right, t.wrong_right, t.right_wrong, t.wrong_wrong) == recount
        assert t.changed == counts["changed"]
        assert c.oracle.any_turn == oracle_turn and c.oracle.final == c.accuracy.successes
        assert c.oracle.any_turn >= c.oracle.any_round >= c.oracle.final
    single, vote, society = task.conditions
    assert single.first_to_final_total.changed == vote.first_to_final_total.changed == 0
    assert single.round_to_round == vote.round_to_round == ()
    assert [n for n, t in society.round_to_round] == [1, 2] and all(t.n == QUESTIONS for _, t in society.round_to_round)
    assert [a.agent for a in society.agent_changes] == ["agent-1", "agent-2", "agent-3"]
    assert all(a.steps == 2 * QUESTIONS for a in society.agent_changes)
    assert single.diversity is not None and single.diversity.agents == 1
    assert vote.diversity == society.diversity  # shared round 0
    assert single.calibration is None and society.judge_calibration is None  # no confidences stored yet


def test_transcripts_hold_every_turn_and_what_each_agent_was_shown(run: Path, report: Report) -> None:
    assert len(report.transcripts) == 3 * QUESTIONS
    assert [t.condition for t in report.transcripts[:3]] == ["single", "vote", "society"]
    society = [t for t in report.transcripts if t.condition == "society"]
    first = society[0]
    assert [len(r.turns) for r in first.rounds] == [3, 3, 3]
    round0, round1 = first.rounds[0].turns[0], first.rounds[1].turns[0]
    assert [role for role, _ in round0.shown_new] == ["system", "user"]
    assert [role for role, _ in round1.shown_new] == ["user"]  # the peers' replies, not its own earlier turn
    assert "other agents" in round1.shown_new[0][1] and len(round1.shown) == 4
    assert PAYLOAD in round0.text
    changed = [t for t in society if t.changed]
    assert changed and all(t.changed is False for t in report.transcripts if t.condition == "single")


def test_markdown_and_terminal_tables(report: Report) -> None:
    md = report_markdown(report)
    assert md.startswith("# moot report: analysis")
    single = report.tasks[0].conditions[0]
    row = f"| single | single | {QUESTIONS} | {single.accuracy.successes} |"
    assert row in md
    titles = (
        "Accuracy and cost",
        "Paired accuracy comparisons",
        "Paired differences in rounds used",
        "Round 0 to final answer",
        "Oracle accuracy",
        "Per-agent answer changes",
        "Round-0 diversity",
    )
    for title in titles:
        assert f"### {title}" in md
    assert "Calibration" not in md and "Cochran's Q over all conditions" in md
    # one seed: the unit is said, no per-seed tables; DAR's best round for the one debate with two debate rounds
    assert "n = 12 questions x 1 seed." in md and "### Accuracy per seed" not in md and "per seed\n" not in md
    single, vote, society = report.tasks[0].conditions
    assert single.best_round is None and vote.best_round is None
    best = society.best_round
    assert best is not None and [r for r, _ in best.by_round] == [1, 2] and best.final.seeds == 1
    assert dict(best.by_round)[2].mean == society.accuracy.estimate  # fixed rounds: the last round's vote is final
    assert "### DAR-style: best round, mean ± std over seeds" in md and "optimistic selection" in md
    console = Console(record=True, width=200)
    print_report(report, console)
    text = console.export_text()
    assert "Paired accuracy comparisons" in text and "McNemar p" in text and "society" in text


def test_html_is_self_contained_and_escapes_model_text(report: Report) -> None:
    page = report_html(report)
    assert "<script>window.__moot_pwned" not in page and "<img src=x" not in page
    assert "&lt;script&gt;window.__moot_pwned = 1&lt;/script&gt;" in page
    assert page.count("<script>") == 1 and page.count("<script") == 1  # the page's own script only
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in page and f"<script>{SCRIPT}</script>" in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # nothing fetched from anywhere
    assert page.count('<img alt="') == 5  # accuracy, by round, stopping, cost, frontier (vote pool; no reliability)
    assert page.count('class="transcript ') == 3 * QUESTIONS


def test_confidences_and_judges_make_calibration_appear(run: Path, tmp_path: Path) -> None:
    """Agents' confidences on their protocol's 0-10 scale; a judge's on 0-100, whose answer is the round's
    answer once the protocol aggregates by judge."""
    path = tmp_path / "confident.sqlite"
    shutil.copy(run, path)
    db = sqlite3.connect(path)
    for name, config in db.execute("SELECT name, config FROM conditions").fetchall():
        config = json.loads(config)
        config["protocol"] |= {"confidence": True, "confidence_scale": 10}
        if name == "society":  # a judge's answer needs a judge after each round
            config["protocol"] |= {"aggregation": "judge", "stopping": {"kind": "judge"}}
        db.execute("UPDATE conditions SET config = ? WHERE name = ?", (json.dumps(config), name))
    db.execute("UPDATE turns SET confidence = CASE WHEN correct = 1 THEN 6 + round ELSE 4 + round * 2 END")
    gold = dict(db.execute("SELECT question_id, gold FROM questions").fetchall())
    for condition, qid, votes in db.execute("SELECT condition, question_id, votes FROM results").fetchall():
        rounds = json.loads(votes)
        for r in rounds:  # the judge names the gold answer after round 1 only
            answer = gold[qid] if r["round"] == 1 else "-1"
            r["judge"] = {
                "answer": answer,
                "confidence": 90 if r["round"] == 1 else 75,
                "text": "<i>judged</i>",
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "latency_s": 0.0,
            }
            if r["round"] == 0:  # a diversity-aware round 0: three candidates, two retained
                r["pool"] = {
                    "texts": ["<u>a</u> 5", "b 7", "c 9"],
                    "answers": ["5", "7", "9"],
                    "sources": ["agent-1", "agent-2", "agent-1"],
                    "selected": [2, 0],
                    "answer_diversity": 1.0,
                    "text_diversity": 0.5,
                    "prompt_tokens": 0,
                    "completion_tokens": 0,
                }
        db.execute(
            "UPDATE results SET votes = ? WHERE condition = ? AND question_id = ?", (json.dumps(rounds), condition, qid)
        )
    db.commit()
    expected = db.execute("SELECT confidence / 10.0, correct FROM turns WHERE condition = 'society'").fetchall()
    db.close()
    report = build_report(path, resamples=RESAMPLES)
    single, vote, society = report.tasks[0].conditions
    want = calibrate([c for c, _ in expected], [bool(k) for _, k in expected])
    got = society.calibration
    assert got is not None and got.n == len(expected) and (got.n, got.correct) == (want.n, want.correct)
    assert [(b.n, b.correct) for b in got.bins] == [(b.n, b.correct) for b in want.bins]
    assert (got.mean_confidence, got.brier, got.ece, got.auroc) == pytest.approx(
        (want.mean_confidence, want.brier, want.ece, want.auroc)
    )
    judge = society.judge_calibration
    assert judge is not None and (judge.n, judge.correct) == (3 * QUESTIONS, QUESTIONS)
    bins = [(b.low, b.n, b.correct) for b in judge.bins if b.n]
    assert bins == [(0.7, 2 * QUESTIONS, 0), (0.9, QUESTIONS, QUESTIONS)]
    # society aggregates by judge: its round answers are the judge's; single and vote keep their majority
    assert [(r, k) for r, _, k in society.accuracy_by_round] == [(0, 0), (1, QUESTIONS), (2, 0)]
    assert society.oracle.any_round == QUESTIONS
    majority_right = sum(t.rounds[0].winner_correct for t in report.transcripts if t.condition == "vote")
    assert vote.accuracy_by_round[0][2] == majority_right
    md = report_markdown(report)
    assert "### Calibration of stated confidence" in md and "### Accuracy by confidence bin" in md
    assert f"| society | judge | {3 * QUESTIONS} |" in md
    # the stopping study's Table 7 bins: 75 after rounds 0 and 2 (wrong), 90 after round 1 (right)
    spread = society.judge_confidence
    assert spread is not None and (spread.n, spread.median, spread.q1, spread.q3) == (3 * QUESTIONS, 75, 75, 90)
    assert [(b.n, b.correct) for b in spread.bins] == [(0, 0), (2 * QUESTIONS, 0), (0, 0), (QUESTIONS, QUESTIONS)]
    assert "### Judge and moderator confidence: accuracy by confidence bin" in md
    assert (
        f"| society | {3 * QUESTIONS} | 75.0 | 75.0–90.0 | 75.0–90.0 | — | 0/{2 * QUESTIONS} = 0.000 | — | "
        f"{QUESTIONS}/{QUESTIONS} = 1.000 |" in md
    )
    page = report_html(report)
    assert 'data-key="judge-confidence"' in page
    assert 'data-key="reliability"' in page and "confidence 90" in page and "&lt;i&gt;judged&lt;/i&gt;" in page
    assert "candidate pool: 3 sampled, 2 retained" in page and "&lt;u&gt;a&lt;/u&gt; 5" in page
    assert "<td>agent 2 </td><td><pre>&lt;u&gt;a&lt;/u&gt; 5</pre>" in page  # candidate 0 went to agent 2


def test_cli_report_and_compare(run: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    html, md = tmp_path / "out" / "report.html", tmp_path / "report.md"
    result = runner.invoke(app, ["report", str(run), "--html", str(html), "--markdown", str(md), "--resamples", "500"])
    assert result.exit_code == 0, result.output
    assert "Paired accuracy comparisons" in result.output and f"HTML report written to {html}" in result.output
    assert html.read_text().startswith("<!DOCTYPE html>") and md.read_text().startswith("# moot report")

    result = runner.invoke(app, ["report", str(run), "--markdown", "-", "--no-html", "--resamples", "500"])
    assert result.exit_code == 0 and result.stdout.startswith("# moot report: analysis")

    result = runner.invoke(app, ["compare", str(run), "single", "society", "--resamples", "500"])
    assert result.exit_code == 0, result.output
    assert "single vs society on arithmetic: accuracy" in result.output and "McNemar p" in result.output
    assert "rounds used (B - A)" in result.output

    result = runner.invoke(app, ["compare", str(run), "single", "debate"])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"moot: error: no condition 'debate' in {run}; conditions: single, vote, society"
    result = runner.invoke(app, ["report", str(tmp_path / "missing.sqlite")])
    assert result.exit_code == 2 and result.stderr.startswith("moot: error: no run store at")


def test_library_comparison_and_errors(run: Path, tmp_path: Path) -> None:
    store = RunStore.open(run)
    try:
        ((task, pair),) = compare_conditions(store, "vote", "society", resamples=RESAMPLES)
    finally:
        store.close()
    assert task == "arithmetic" and (pair.a, pair.b, pair.accuracy.n) == ("vote", "society", QUESTIONS)
    assert pair.holm_p is None
    with pytest.raises(AnalysisError, match="two different conditions"):
        compare_conditions(run, "vote", "vote")
    with pytest.raises(AnalysisError, match="no results for task 'gsm8k'"):
        compare_conditions(run, "vote", "society", task="gsm8k")
    empty = tmp_path / "empty.sqlite"
    shutil.copy(run, empty)
    db = sqlite3.connect(empty)
    db.execute("DELETE FROM results")
    db.commit()
    db.close()
    with pytest.raises(AnalysisError, match="holds no results yet"):
        build_report(empty)


def test_errored_questions_are_counted_apart(tmp_path: Path) -> None:
    from moot.errors import BackendError

    def flaky(request, index):  # type: ignore[no-untyped-def]
        if "13*1" in request.messages[1].content and len(request.messages) > 2:  # question 0, after round 0
            raise BackendError("server went away")
        return debater(request, index)

    path = tmp_path / "flaky.sqlite"
    with helpers.scripted_models({"debater": flaky}):
        outcome = helpers.run(experiment(questions=4), path)
    assert outcome.errors > 0
    report = build_report(path, resamples=RESAMPLES)
    society = report.tasks[0].conditions[2]
    assert (society.errors, society.accuracy.n) == (1, 4)
    assert dict(society.stop_reasons)["error"] == 1
    assert society.first_to_final_total.n == society.oracle.n == 3  # the errored question is left out
    (errored,) = [t for t in report.transcripts if t.status == "error"]
    assert errored.condition == "society" and not errored.correct and errored.error
    assert "error: <code>" in report_html(report)


def test_an_adaptive_run_with_a_judge(tmp_path: Path) -> None:
    """du-adaptive (a judge after every round, stop at confidence >= 90) against fixed society: stopping
    distribution, stop reasons, paired round differences and the judge's calibration, checked against the store."""
    conditions = [
        {"name": "society", "protocol": "society", "agents": 3, "rounds": 4},
        {"name": "adaptive", "protocol": "du-adaptive", "agents": 3, "rounds": 4},
    ]
    path = make_run(tmp_path / "adaptive.sqlite", questions=16, conditions=conditions)
    report = build_report(path, resamples=RESAMPLES)
    ((society, adaptive),) = [t.conditions for t in report.tasks]
    rounds = dict(query(path, "SELECT question_id, rounds_used FROM results WHERE condition = 'adaptive'"))
    reasons = query(path, "SELECT stop_reason, COUNT(*) FROM results WHERE condition = 'adaptive' GROUP BY stop_reason")
    assert dict(adaptive.stop_reasons) == dict(reasons) and len(reasons) == 2  # some stop early, some at the cap
    assert [(r, n) for r, n, _ in adaptive.rounds] == sorted(
        (r, list(rounds.values()).count(r)) for r in set(rounds.values())
    )
    assert adaptive.mean_rounds == pytest.approx(sum(rounds.values()) / 16)
    (pair,) = report.tasks[0].pairs
    fewer = sum(r < 4 for r in rounds.values())
    assert (pair.rounds.sign.fewer, pair.rounds.sign.tied, pair.rounds.sign.more) == (fewer, 16 - fewer, 0)
    assert pair.rounds.mean == pytest.approx(sum(r - 4 for r in rounds.values()) / 16)
    assert pair.rounds.ci.low <= pair.rounds.mean <= pair.rounds.ci.high < 0
    judged = adaptive.judge_calibration
    assert judged is not None and judged.n == sum(rounds.values()) and judged.auroc is not None
    assert society.judge_calibration is None and adaptive.calibration is None
    confident = sum(b.n for b in judged.bins if b.low >= 0.9)
    assert confident >= sum(n for reason, n in reasons if reason != "max_rounds")
    spread = adaptive.judge_confidence
    assert spread is not None and spread.n == judged.n == sum(b.n for b in spread.bins)  # 0-49 included: none dropped
    assert spread.bins[-1].n == confident and spread.bins[0].n > 0  # the debater's judge says 10 without answers
    md = report_markdown(report)
    assert "| adaptive | judge |" in md and "### Accuracy by confidence bin" in md


def test_a_pair_of_arms_with_no_task_in_common_is_refused_by_name(tmp_path: Path) -> None:
    """Only vote ran (``--condition vote``): society has no results, so vote and society are no pair; the error
    names both and what each ran."""
    path = tmp_path / "half.sqlite"
    conditions = [{"name": "vote", "protocol": "vote", "agents": 3}, {"name": "society", "protocol": "society"}]
    write_store(path, experiment(questions=3, conditions=conditions), MODELS, conditions=("vote",))
    with pytest.raises(
        AnalysisError, match=r"conditions 'vote' \(arithmetic\) and 'society' \(no results\) ran no task"
    ):
        compare_conditions(path, "vote", "society")
