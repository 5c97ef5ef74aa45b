"""Debate against voting at equal cost (moot.analysis.budget): the exact vote@k, its tie rules and unparsed
answers, the budget matching, the sign-flip test, and one scripted store end to end (no model)."""

from __future__ import annotations

import csv
import itertools
import math
import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from moot.analysis import AnalysisError
from moot.analysis.budget import equal_budget, equal_budget_table
from moot.analysis.budget_costs import Spend, check_measure
from moot.analysis.budget_estimators import SignFlip, sign_flip_test, vote_probabilities
from moot.analysis.budget_matching import default_pool, matched_pool_names, request_signature
from moot.analysis.budget_pools import VoteAtK, VotePool, vote_at_k
from moot.analysis.cli import app
from moot.analysis.frontier import beaten_by, dominated, frontier
from moot.analysis.plots import plots
from moot.analysis.render import report_markdown
from moot.analysis.report import build_report
from moot.analysis.stats import bootstrap_mean, holm
from moot.analysis.tables import equal_budget_rows_table, vote_at_k_table
from moot.debate.components.aggregation import TieRule, majority_vote
from moot.errors import ConfigError
from moot.runner.store import RunStore
from tests import helpers
from tests.fixtures.analysis_run import MODELS, PRICE, experiment, make_run
from tests.helpers import WriteRun

QUESTIONS = 12
CONDITIONS = [
    {"name": "vote", "protocol": "vote", "agents": 8},
    {"name": "society", "protocol": "society", "agents": 3, "rounds": 2},
]


def test_vote_at_k_on_a_hand_made_pool() -> None:
    """K = 4 answers [7, 7, 3, 9] (agents 0..3), gold 7.

    vote@1: 2 of 4 answers are 7 -> 1/2 under every rule.
    vote@2, the 6 pairs: {7,7} -> 7; {7a,3} {7a,9} {7b,3} {7b,9} -> a 1-1 tie with 7; {3,9} -> a tie without 7.
      random: (1 + 4 x 1/2 + 0) / 6 = 1/2; first: 7 is the earlier agent in all 4 ties -> (1 + 4) / 6 = 5/6;
      abstain: only {7,7} -> 1/6.
    vote@3, the 4 triples: {7,7,3} {7,7,9} -> 7; {7a,3,9} {7b,3,9} -> a 3-way tie.
      random: (2 + 2 x 1/3) / 4 = 2/3; first: 7 is earliest in both ties -> 1; abstain: 2/4 = 1/2.
    vote@4: 7 has 2 votes against 1 and 1 -> 1.
    """
    answers = ["7", "7", "3", "9"]
    assert vote_probabilities(answers, {"7"}, "random") == pytest.approx((0, 1 / 2, 1 / 2, 2 / 3, 1))
    assert vote_probabilities(answers, {"7"}, "first") == pytest.approx((0, 1 / 2, 5 / 6, 1, 1))
    assert vote_probabilities(answers, {"7"}, "abstain") == pytest.approx((0, 1 / 2, 1 / 6, 1 / 2, 1))


def test_the_first_tie_rule_follows_agent_order() -> None:
    """The same multiset in the order [3, 7, 9, 7] (agents 0..3), gold 7, tie rule first.

    vote@2: {3,7a} {3,9} {3,7b} -> 3 or 9 is earlier (wrong); {7a,9} -> 7 earlier; {7a,7b} -> 7; {9,7b} -> 9:
      2/6 = 1/3.
    vote@3: {3,7a,9} -> tie, 3 first; {3,7a,7b} -> 7; {3,9,7b} -> tie, 3 first; {7a,9,7b} -> 7: 2/4 = 1/2.
    """
    assert vote_probabilities(["3", "7", "9", "7"], {"7"}, "first") == pytest.approx((0, 1 / 2, 1 / 3, 1 / 2, 1))


def test_unparsed_answers_do_not_vote() -> None:
    """K = 4 answers [7, None, 3, None], gold 7 (None: unparsed).

    vote@1: 1/4 (only the 7).
    vote@2, 6 pairs: {7,N1} {7,N3} -> 7 alone; {7,3} -> a tie; {N1,3} {3,N3} -> 3; {N1,N3} -> no answer.
      random: (2 + 1/2) / 6 = 5/12; first: (2 + 1) / 6 = 1/2; abstain: 2/6 = 1/3.
    vote@3, 4 triples: {7,N1,3} {7,3,N3} -> a tie of 7 and 3; {7,N1,N3} -> 7; {N1,3,N3} -> 3.
      random: (1/2 + 1/2 + 1) / 4 = 1/2; first: 3/4; abstain: 1/4.
    vote@4: a tie of 7 and 3: random 1/2, first 1, abstain 0.
    """
    answers = ["7", None, "3", None]
    assert vote_probabilities(answers, {"7"}, "random") == pytest.approx((0, 1 / 4, 5 / 12, 1 / 2, 1 / 2))
    assert vote_probabilities(answers, {"7"}, "first") == pytest.approx((0, 1 / 4, 1 / 2, 3 / 4, 1))
    assert vote_probabilities(answers, {"7"}, "abstain") == pytest.approx((0, 1 / 4, 1 / 3, 1 / 4, 0))
    assert vote_probabilities([None, None], {"7"}, "first") == (0.0, 0.0, 0.0)


def _enumerated(answers: list[str | None], right: set[str], rule: TieRule) -> list[float]:
    """P(vote@k right) by enumerating every k-subset and voting it as the engine does (1/t for random)."""
    out = [0.0]
    for k in range(1, len(answers) + 1):
        total, subsets = 0.0, 0
        for subset in itertools.combinations(range(len(answers)), k):
            vote = majority_vote([answers[i] for i in subset], "abstain" if rule == "abstain" else "first")
            if rule == "random":
                total += sum(a in right for a in vote.tied) / len(vote.tied) if vote.tied else 0.0
            else:
                total += vote.winner in right
            subsets += 1
        out.append(total / subsets)
    return out


def test_the_count_formula_agrees_with_enumerating_subsets() -> None:
    rng = random.Random(39)
    for trial in range(120):
        size = rng.randint(1, 9)
        answers = [rng.choice(["a", "b", "c", "d", None]) for _ in range(size)]
        right = {"a", "b"} if trial % 4 == 0 else {"a"}  # two spellings both scored right
        for rule in ("first", "random", "abstain"):
            assert vote_probabilities(answers, right, rule) == pytest.approx(_enumerated(answers, right, rule))


def test_a_pool_of_64_is_exact_and_quick() -> None:
    """64 answers, 40 of them right and 24 wrong spread over 8 answers: every vote of 33 or more is right; a
    single answer is right with probability 40/64."""
    answers = ["r"] * 40 + [str(i % 8) for i in range(24)]
    for rule in ("first", "random", "abstain"):
        p = vote_probabilities(answers, {"r"}, rule)
        assert p[1] == pytest.approx(40 / 64) and all(x == pytest.approx(1.0) for x in p[33:])


def _pool(tokens_per_answer: float, agents: int) -> VotePool:
    rows = tuple(VoteAtK(k, 0.5, k * tokens_per_answer, float(k)) for k in range(1, agents + 1))
    return VotePool("vote", "t", agents, "first", 1, 1, tokens_per_answer, rows, (("q", (0.5,) * agents),))


def test_budget_matching_takes_the_smallest_k_that_costs_as_much() -> None:
    """100 tokens per answer, K = 4: vote@k costs 100k tokens and k calls. A debate of 250 tokens/q -> k = 3
    (300 >= 250, 200 < 250); 300 -> 3 (equal counts); 450 -> none is that large: k = K = 4, pool too small;
    6 calls -> k = 4 too small; 2 calls -> 2."""
    pool = _pool(100.0, 4)
    assert pool.matched(250, "tokens") == (3, False)
    assert pool.matched(300, "tokens") == (3, False)
    assert pool.matched(450, "tokens") == (4, True)
    assert pool.matched(6, "calls") == (4, True)
    assert pool.matched(2, "calls") == (2, False)


def test_sign_flip_exact_p_by_hand() -> None:
    """d = [1, 1, 1, 1, 0.5]: |sum d| = 4.5 is reached only by all signs + or all -: p = 2/32 = 1/16.

    d = [1, 0.5, -0.5, 0, 1]: |sum| = 2. The two 1s give +-2 or 0 (1, 2, 1 ways), the two halves +-1 or 0
    (1, 2, 1 ways), the 0 doubles every count. |total| >= 2 needs the 1s at +2 with halves at +1 or 0
    (1 + 2 = 3 ways), or the mirror (3): 6 of 16, so 12/32 = 3/8.
    """
    assert sign_flip_test([1, 1, 1, 1, 0.5]) == SignFlip(1 / 16, True, 32)
    flipped = sign_flip_test([1, 0.5, -0.5, 0, 1])
    assert (flipped.p, flipped.exact, flipped.flips) == (pytest.approx(3 / 8), True, 32)
    assert sign_flip_test([0, 0, 0]).p == 1.0


def test_sign_flip_beyond_20_questions_is_seeded_monte_carlo() -> None:
    d = [0.5] * 15 + [-0.25] * 10
    first, again = sign_flip_test(d, seed=3), sign_flip_test(d, seed=3)
    assert first == again and not first.exact and first.flips == 10_000
    assert 0 < first.p < 0.05  # sum 5.0 against a null sd of sqrt(15/4 + 10/16) ~ 2.09


@pytest.fixture(scope="module")
def run(write_run: WriteRun) -> Path:
    return write_run("budget", experiment(questions=QUESTIONS, conditions=CONDITIONS), MODELS)


def test_vote_at_K_is_the_stored_vote_and_costs_come_from_the_turns(run: Path) -> None:
    """With the tie rule 'first' the vote of all K = 8 answers is the stored vote: vote@8 equals the stored
    accuracy; vote@1 is the share of right round-0 answers; tokens/q of vote@k are k x the mean per answer."""
    store = RunStore.read(run)
    try:
        assert default_pool(store) == "vote"
        assert store.conditions()["vote"].protocol.tie_rule == "first"
        stored = [r for r in store.iter_results() if r.condition == "vote"]
    finally:
        store.close()
    (pool,) = vote_at_k(run)
    turns = [t for r in stored for t in r.result.rounds[0].turns]
    assert (pool.agents, pool.questions, pool.seeds, pool.tie_rule) == (8, QUESTIONS, 1, "first")
    assert pool.rows[-1].accuracy == pytest.approx(np.mean([r.result.correct for r in stored]))
    assert pool.rows[0].accuracy == pytest.approx(np.mean([bool(t.correct) for t in turns]))
    per_answer = np.mean([t.prompt_tokens + t.completion_tokens for t in turns])
    assert [r.tokens for r in pool.rows] == pytest.approx([k * per_answer for k in range(1, 9)])
    assert [r.calls for r in pool.rows] == [float(k) for k in range(1, 9)]
    table = vote_at_k_table(pool)
    assert [row[0] for row in table.rows] == [str(k) for k in range(1, 9)]


def test_equal_budget_on_a_scripted_store(run: Path) -> None:
    """society (3 agents x 2 rounds) makes 6 calls per question: at equal calls it meets vote@6; per question
    d = society's correctness - P(vote@6 right), and the test's figures follow from those d."""
    (pool,) = vote_at_k(run)
    (row,) = equal_budget(run, "society", "vote", "calls", resamples=500)
    assert (row.k, row.debate_cost, row.vote_cost, row.pool_too_small, row.n) == (6, 6.0, 6.0, False, QUESTIONS)
    store = RunStore.read(run)
    try:
        society = {
            r.result.question.id: float(r.result.correct) for r in store.iter_results() if r.condition == "society"
        }
    finally:
        store.close()
    probabilities = dict(pool.by_question)
    d = [society[q] - probabilities[q][5] for q in society]
    assert row.difference == pytest.approx(np.mean(d))
    assert row.vote_accuracy == pytest.approx(pool.rows[5].accuracy)
    assert row.ci == bootstrap_mean(d, 0, 500)
    assert (row.p, row.exact) == (pytest.approx(sign_flip_test(d).p), True)
    assert row.holm_p == pytest.approx(row.p)  # one row: Holm changes nothing

    tokens: defaultdict[str, int] = defaultdict(int)
    store = RunStore.read(run)
    try:
        for r in store.iter_results():
            if r.condition == "society":
                tokens[r.result.question.id] += sum(
                    t.prompt_tokens + t.completion_tokens for record in r.result.rounds for t in record.turns
                )
    finally:
        store.close()
    (by_tokens,) = equal_budget(run, "society", measure="tokens", resamples=500)
    cost = np.mean(list(tokens.values()))
    assert by_tokens.debate_cost == pytest.approx(cost)
    larger = [r.k for r in pool.rows if r.tokens >= cost]
    assert (by_tokens.k, by_tokens.pool_too_small) == ((larger[0], False) if larger else (8, True))

    pools, rows = equal_budget_table(run, measure="calls", resamples=500)
    assert [r.debate for r in rows] == ["society"] and rows[0].holm_p == holm([rows[0].p])[0]
    table = equal_budget_rows_table(rows)
    assert table.rows[0][:6] == ("arithmetic", "society", "6.0", "vote", "6 (6.0)", str(QUESTIONS))


def test_compare_budget_on_the_command_line(run: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["compare", str(run), "society", "--budget", "calls", "--resamples", "500"])
    assert result.exit_code == 0, result.output
    assert "vote@k from the pool 'vote'" in result.output and "at equal calls" in result.output
    result = runner.invoke(app, ["compare", str(run), "society", "--budget", "calls", "--pool", "nope"])
    assert result.exit_code == 2 and result.stderr.startswith("moot: error: no condition 'nope'")
    result = runner.invoke(app, ["compare", str(run), "society", "--budget", "dollars"])
    assert result.exit_code == 2 and "--budget 'dollars'" in result.stderr
    result = runner.invoke(app, ["compare", str(run), "society"])
    assert result.exit_code == 2 and "two conditions" in result.stderr
    with pytest.raises(AnalysisError, match="no condition 'nope'"):
        equal_budget(run, "nope")


# A pool (vote of 6 agents) and a debate (society 3 x 2) whose round 0 is the pool's first three answers.
POOLED: list[dict[str, object]] = [
    {"name": "vote", "protocol": "vote", "agents": 6},
    {"name": "society", "protocol": "society", "agents": 3, "rounds": 2},
]


def test_the_report_shows_vote_at_k_and_the_equal_budget_table(tmp_path: Path) -> None:
    """A run with a pool (vote of 6 agents) and a debate (society 3 x 2): ``moot report`` shows vote@k for
    k = 1..6 with budget_pools.vote_at_k's accuracies and society's row against vote@k at equal tokens, and the
    accuracy-cost frontier plot; a run without a pool of K >= 2 shows neither table nor plot."""
    path = make_run(tmp_path / "pooled.sqlite", questions=6, conditions=POOLED)
    report = build_report(path, resamples=200)
    (task,) = report.tasks
    (pool,) = vote_at_k(path)
    assert task.vote_pool is not None and task.equal_budget is not None
    assert [r.accuracy for r in task.vote_pool.rows] == pytest.approx([r.accuracy for r in pool.rows])
    markdown = report_markdown(report)
    assert "### vote@k from the pool 'vote' (6 round-0 answers per question)" in markdown
    table = markdown[markdown.index("### vote@k from the pool") :].split("\n\n")[1].splitlines()[2:]
    vote_rows = [line.split(" | ") for line in table]
    assert [cells[0] for cells in vote_rows] == [f"| {k}" for k in range(1, 7)]
    assert [cells[1] for cells in vote_rows] == [f"{r.accuracy:.3f}" for r in pool.rows]
    (row,) = equal_budget(path, "society", "vote", "tokens", resamples=200)
    assert "### Debate against vote@k at equal tokens (prompt + completion)" in markdown
    assert f"| arithmetic | society | {row.debate_cost:.1f} | vote | {row.k} ({row.vote_cost:.1f})" in markdown
    assert markdown.index("### Paired accuracy comparisons") < markdown.index("### vote@k from the pool")
    assert "frontier" in [p.key for p in plots(report)]
    assert "### Accuracy-cost frontier, arithmetic" in markdown
    rows = markdown[markdown.index("### Accuracy-cost frontier") :].split("\n\n")[1].splitlines()[2:]
    assert [r.split(" | ")[0] for r in rows] == ["| vote", "| society", *(f"| vote@{k}" for k in range(1, 7))]

    single: list[dict[str, object]] = [
        {"name": "single", "protocol": "single"},
        {"name": "society", "protocol": "society", "agents": 3, "rounds": 2},
    ]
    path = make_run(tmp_path / "single.sqlite", questions=6, conditions=single)
    report = build_report(path, resamples=200)
    assert all(t.vote_pool is None and t.equal_budget is None for t in report.tasks)
    markdown = report_markdown(report)
    assert "vote@k" not in markdown and "frontier" not in [p.key for p in plots(report)]


def test_the_frontier_keeps_the_points_nothing_beats_for_less() -> None:
    """(cost, accuracy): (1, 0.5) and (3, 0.9) are on it; (2, 0.4) is beaten by (1, 0.5); (3, 0.8) by (3, 0.9)."""
    assert dominated([(1, 0.5), (2, 0.4), (3, 0.9), (3, 0.8)]) == [False, True, False, True]


def test_the_frontier_points_are_the_conditions_and_vote_at_k_by_tokens_and_by_calls(tmp_path: Path) -> None:
    """Each condition's point is its accuracy and its used tokens and calls per question (the report's usage
    over its results), each vote@k's the pool's row; a point is on a measure's frontier exactly when no
    point of the task beats it (``dominated``, checked by hand below)."""
    path = make_run(tmp_path / "pooled.sqlite", questions=6, conditions=POOLED)
    report = build_report(path, resamples=200)
    (task,) = report.tasks
    points = frontier(report)
    assert [p.name for p in points] == ["vote", "society", *(f"vote@{k}" for k in range(1, 7))]
    society = next(c for c in task.conditions if c.name == "society")
    s = points[1]
    assert (s.tokens, s.calls) == (society.usage.used_tokens / 6, society.usage.used_calls / 6)
    assert s.calls == 6  # 3 agents x 2 rounds, round 0 shared with the pool's first three
    assert (s.accuracy, s.low, s.high) == (society.accuracy.estimate, society.accuracy.low, society.accuracy.high)
    assert task.vote_pool is not None
    assert [(p.k, p.tokens, p.calls, p.accuracy) for p in points[2:]] == [
        (r.k, r.tokens, r.calls, r.accuracy) for r in task.vote_pool.rows
    ]
    assert all(math.isnan(p.low) for p in points[2:])
    for measure in ("tokens", "calls"):
        on = [getattr(p, f"on_{measure}_frontier") for p in points]
        costs = [getattr(p, measure) for p in points]
        assert on == [not d for d in dominated([(c, p.accuracy) for p, c in zip(points, costs)])] and any(on)


def test_as_accurate_for_less_beats_and_rounding_does_not() -> None:
    """Pareto: as accurate for less beats (gated 59% at 2,644 tokens beats society 59% at 2,966, as in across);
    equal points do not beat each other, nor do points equal but for rounding: a 4-answer pool's vote@4 is the
    4-agent vote itself, its accuracy 2/9 off in the last bit, and vote@3 of a 3-answer pool costs 3 x the
    mean tokens an answer, off in the last bit from the vote's own mean."""
    assert dominated([(2644.0, 0.59), (2966.0, 0.59)]) == [False, True]
    assert dominated([(2.0, 0.5), (2.0, 0.5)]) == [False, False]
    assert 0.22222222222222224 > 2 / 9
    assert dominated([(801.4, 2 / 9), (801.4, 0.22222222222222224)]) == [False, False]
    assert 693.5799999999999 < 693.58
    assert dominated([(693.58, 0.58), (693.5799999999999, 0.58)]) == [False, False]
    assert beaten_by([(1.0, 0.5), (3.0, 0.4), (2.0, 0.45)]) == [None, 0, 0]  # the cheapest that beats it


def test_report_figures_writes_every_plot_and_the_frontier_csv(tmp_path: Path) -> None:
    """`moot report RUN --figures DIR`: each plot as a PNG, the frontier's points as CSV with unrounded numbers
    (read back equal to ``frontier``'s), and a second run refuses to replace them without --force."""
    run = make_run(tmp_path / "pooled.sqlite", questions=6, conditions=POOLED)
    out = tmp_path / "figures"
    args = ["report", str(run), "--no-html", "-q", "--resamples", "200", "--figures", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = build_report(run, resamples=200)
    names = {f"{p.key}.png" for p in plots(report)} | {"frontier.csv"}
    assert {p.name for p in out.iterdir()} == names and "frontier.png" in names
    assert all((out / n).read_bytes().startswith(b"\x89PNG") for n in names if n.endswith(".png"))
    with (out / "frontier.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    points = frontier(report)
    assert [(r["point"], r["k"]) for r in rows] == [(p.name, "" if p.k is None else str(p.k)) for p in points]
    assert [float(r["tokens_per_question"]) for r in rows] == [p.tokens for p in points]
    assert [float(r["accuracy"]) for r in rows] == [p.accuracy for p in points]
    assert [r["on_calls_frontier"] == "1" for r in rows] == [p.on_calls_frontier for p in points]
    again = CliRunner().invoke(app, args)
    assert again.exit_code != 0 and "--force" in again.output
    assert CliRunner().invoke(app, [*args, "--force"]).exit_code == 0


def test_a_pool_still_being_made_gives_way_to_one_with_answers(tmp_path: Path) -> None:
    """A run whose vote of 6 has no stored answers yet (its session has not reached it) votes from its vote of
    3 in the report, in ``moot compare --budget`` and in ``moot results``'s summary; once the 6 are stored,
    they are the pool."""
    from moot.analysis.results_summaries import summarise

    conditions: list[dict[str, object]] = [
        {"name": "vote", "protocol": "vote", "agents": 3},
        {"name": "society", "protocol": "society", "agents": 3, "rounds": 2},
        {"name": "vote-6", "protocol": "vote", "agents": 6},
    ]
    path = tmp_path / "growing.sqlite"
    config = experiment(questions=4, conditions=conditions)
    with helpers.scripted_models(MODELS):
        helpers.run(config, path, conditions=("vote", "society"))
        assert default_pool(path) == "vote"
        assert [p.condition for p in summarise(path)[0].vote_pools] == ["vote"]
        (task,) = build_report(path, resamples=100).tasks
        assert task.vote_pool is not None and task.vote_pool.condition == "vote"
        helpers.run(config, path)
    assert default_pool(path) == "vote-6"
    assert [p.agents for p in summarise(path)[0].vote_pools] == [6]


# Two pools of two first requests (moot's task template, and Choi et al.'s template as DAR's presets ask it), and
# arms that start from each, or from neither (the confidence form).
MATCHED: list[dict[str, object]] = [
    {"name": "vote", "protocol": "vote", "agents": 6},
    {"name": "vote-3", "protocol": "vote", "agents": 3},
    {"name": "society", "protocol": "society", "agents": 3, "rounds": 2},
    {
        "name": "vote-choi",
        "protocol": "vote",
        "agents": 8,
        "history": {"kind": "fresh", "templates": "choi"},
        "rendering": "dar",
        "tie_rule": "random",
        "uncertainty_cue": True,
    },
    {"name": "mad-m2", "protocol": "mad-m2", "agents": 4, "rounds": 2},
    {"name": "confidence", "protocol": "confidence", "agents": 3, "rounds": 2},
]


@pytest.fixture(scope="module")
def matched(write_run: WriteRun) -> Path:
    return write_run("matched", experiment(questions=6, conditions=MATCHED), MODELS)


def test_a_request_signature_is_what_is_asked_not_the_seed() -> None:
    """The seed, the sample count and whether log-probabilities come back are left out; the model, the messages
    and every sampling setting are in."""
    request = {"messages": [{"role": "user", "content": "2+2?"}], "temperature": 1.0, "top_p": 1.0, "max_tokens": 9}
    same = request_signature("m", request)
    assert request_signature("m", {**request, "seed": 7, "n": 3, "logprobs": True}) == same
    assert request_signature("other", request) != same
    assert request_signature("m", {**request, "temperature": 0.7}) != same
    assert request_signature("m", {**request, "max_tokens": 10}) != same
    assert request_signature("m", {**request, "messages": [{"role": "user", "content": "2+3?"}]}) != same


def test_each_arm_is_matched_to_the_pool_sampled_with_its_own_first_request(matched: Path) -> None:
    """society and vote-3 start from the task's template: the 6-answer vote; mad-m2 from Choi's: vote-choi (its
    first 4 answers are mad-m2's round 0, the very calls); confidence from its own form: no pool. The largest pool
    of each kind is the pool, not an arm."""
    assert matched_pool_names(matched) == {
        ("arithmetic", "vote-3"): "vote",
        ("arithmetic", "society"): "vote",
        ("arithmetic", "mad-m2"): "vote-choi",
        ("arithmetic", "confidence"): None,
    }
    store = RunStore.read(matched)
    try:
        firsts: dict[str, dict[tuple[str, str], str]] = defaultdict(dict)
        for condition, _task, question, _seed, agent, model, request in store.round0_requests():
            firsts[condition][(question, agent)] = request_signature(model, request) + str(request["seed"])
    finally:
        store.close()
    shared = [key for key in firsts["mad-m2"] if firsts["vote-choi"].get(key) == firsts["mad-m2"][key]]
    assert len(shared) == len(firsts["mad-m2"]) == 6 * 4


def test_the_equal_budget_rows_use_the_matched_pools(matched: Path) -> None:
    """At equal calls: society (6 calls) against vote@6 of vote; mad-m2 (4 x 2 = 8 calls) against vote@8 of
    vote-choi; confidence has no matched pool, so its row has no figures and says so; naming a pool sets every arm
    against it."""
    pools, rows = equal_budget_table(matched, measure="calls", resamples=200)
    assert sorted((p.condition, p.agents) for p in pools) == [("vote", 6), ("vote-choi", 8)]
    by = {r.debate: r for r in rows}
    assert list(by) == ["vote-3", "society", "mad-m2", "confidence"]
    assert (by["society"].pool, by["society"].k, by["society"].pool_too_small) == ("vote", 6, False)
    assert (by["mad-m2"].pool, by["mad-m2"].k, by["mad-m2"].pool_too_small) == ("vote-choi", 8, False)
    assert by["confidence"].unmatched and math.isnan(by["confidence"].difference)
    assert not any(r.unmatched for r in rows[:3])
    assert sum(not math.isnan(r.holm_p) for r in rows) == 3  # Holm over the rows with a test
    table = equal_budget_rows_table(rows)
    confidence = next(row for row in table.rows if row[1] == "confidence")
    assert confidence[3] == "no matched pool" and confidence[4] == "—"
    assert "No matched pool" in table.note and "Budget unit: calls per question" in table.note
    (forced,) = equal_budget(matched, "mad-m2", "vote", "calls", resamples=200)
    assert (forced.pool, forced.k) == ("vote", 6)
    result = CliRunner().invoke(app, ["compare", str(matched), "confidence", "--budget", "calls"])
    assert result.exit_code == 0, result.output
    assert "no pool was sampled with confidence's round-0 request" in result.output


def test_the_budget_units_count_completion_tokens_and_dollars(matched: Path) -> None:
    """completion: society's mean completion tokens per question against k x the pool's mean per answer; cost:
    the tokens priced at the run's prices (0.15 and 0.60 USD per million prompt and completion tokens)."""
    store = RunStore.read(matched)
    try:
        society = [r for r in store.iter_results() if r.condition == "society"]
        pool_turns = [t for r in store.iter_results() if r.condition == "vote" for t in r.result.rounds[0].turns]
    finally:
        store.close()
    prompt = np.mean([sum(t.prompt_tokens for x in r.result.rounds for t in x.turns) for r in society])
    completion = np.mean([sum(t.completion_tokens for x in r.result.rounds for t in x.turns) for r in society])
    (by_completion,) = equal_budget(matched, "society", measure="completion", resamples=200)
    assert by_completion.debate_cost == pytest.approx(completion)
    per_answer = np.mean([t.completion_tokens for t in pool_turns])
    assert by_completion.vote_cost == pytest.approx(by_completion.k * per_answer)
    if by_completion.pool_too_small:
        assert by_completion.k == 6 and completion > 6 * per_answer
    else:
        assert (by_completion.k - 1) * per_answer < completion <= by_completion.k * per_answer
    (by_cost,) = equal_budget(matched, "society", measure="cost", resamples=200)
    assert by_cost.debate_cost == pytest.approx((prompt * PRICE["prompt"] + completion * PRICE["completion"]) / 1e6)
    each = np.mean([t.prompt_tokens * PRICE["prompt"] + t.completion_tokens * PRICE["completion"] for t in pool_turns])
    assert by_cost.vote_cost == pytest.approx(by_cost.k * each / 1e6)
    table = equal_budget_rows_table([by_cost])
    assert table.title == "Debate against vote@k at equal US dollars"


def test_a_unit_the_store_cannot_give_is_one_line_naming_what_is_missing() -> None:
    with pytest.raises(ConfigError, match="some model of the store has no price"):
        check_measure("cost", [Spend(1, 10, 5, 0.1), Spend(1, 10, 5, None)])
    with pytest.raises(ConfigError, match="every price in the store is zero"):
        check_measure("cost", [Spend(1, 10, 5, 0.0)])
    with pytest.raises(ConfigError, match="no completion counts"):
        check_measure("completion", [Spend(1, 0, 0, 0.0)])
    with pytest.raises(ConfigError, match="unknown budget unit 'dollars'; one of tokens, completion, calls, cost"):
        check_measure("dollars", [])  # type: ignore[arg-type]
    check_measure("calls", [Spend(1, 0, 0, None)])  # calls need neither tokens nor prices
