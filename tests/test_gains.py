"""Debate gains split into voting and exchange (moot.analysis.gains): hand-checked values on a scripted store with
repeated seeds, the parts summing to the total per question, the report's and ``moot compare``'s tables, the
rule of which part carries a paper's effect, and Du et al.'s replication store."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moot.analysis.cli import app
from moot.analysis.gains import (
    GainPart,
    GainSplit,
    TaskGains,
    carrier,
    gain_pairs,
    gains_table,
    no_split_reason,
    single_agent,
    split_gains,
    store_gains,
)
from moot.analysis.render import report_markdown
from moot.analysis.report import build_report, compare_conditions
from moot.backends.base import GenerationRequest
from moot.debate.protocol_presets import resolve_protocol
from moot.seeds import derive_seed
from moot.tasks.arithmetic import ArithmeticTask
from tests.helpers import WriteRun, arithmetic_experiment, query

RESAMPLES = 1000
SEEDS = (0, 1)
QUESTIONS = ArithmeticTask().questions(12, 0)
DEBATERS = ("a", "b", "c")

# Per question, per seed: (single right, society's round-0 vote right, society's final answer right).
GAIN = (0, 1, 1)  # the vote fixes what the single agent got wrong; the exchange keeps it
OUTCOMES: dict[int, tuple[tuple[int, int, int], tuple[int, int, int]]] = {
    **{q: (GAIN, GAIN) for q in range(8)},
    8: ((0, 1, 0), (1, 1, 0)),  # the vote is right, the debate talks itself out of it
    9: ((0, 0, 1), (0, 0, 0)),  # the exchange fixes a wrong vote once
    10: ((1, 1, 1), (1, 1, 1)),
    11: ((1, 0, 0), (0, 0, 0)),
}


def _calls() -> dict[int, tuple[int, int, str, int]]:
    """Each call's seed (``call_seed``) -> (run seed, question index, agent, round)."""
    out = {}
    for s in SEEDS:
        for i, q in enumerate(QUESTIONS):
            for agent, rounds in (("solo", 1), *((name, 2) for name in DEBATERS)):
                for r in range(rounds):
                    out[derive_seed(s, q.id, agent, r)] = (s, i, agent, r)
    return out


CALLS = _calls()


def scripted(request: GenerationRequest, index: int) -> str:
    """The reply OUTCOMES asks for: right answers are the gold, wrong ones gold + 1 (so that two wrong agents
    outvote a right one). Round 0 of a right vote is right, right, wrong; of a wrong vote, wrong, wrong, right;
    round 1 is all right or all wrong, as the debate's final answer."""
    assert request.seed is not None
    seed, i, agent, round_index = CALLS[request.seed]
    single, vote, debate = OUTCOMES[i][SEEDS.index(seed)]
    if agent == "solo":
        right = bool(single)
    elif round_index == 0:
        right = (agent != "c") == bool(vote)
    else:
        right = bool(debate)
    gold = int(QUESTIONS[i].gold)
    return f"Working it out.\nSo the answer is {gold if right else gold + 1}."


def _agents(*names: str) -> list[dict[str, str]]:
    return [{"name": n} for n in names]


@pytest.fixture(scope="module")
def run(write_run: WriteRun) -> Path:
    conditions = [
        {"name": "single", "protocol": "single", "agents": _agents("solo")},
        {"name": "vote", "protocol": "vote", "agents": _agents(*DEBATERS)},
        {"name": "society", "protocol": "society", "agents": _agents(*DEBATERS), "rounds": 2},
    ]
    experiment = arithmetic_experiment("gains", conditions, len(QUESTIONS), "gains", seeds=list(SEEDS))
    return write_run("gains", experiment, {"gains": scripted}, file="gains.sqlite")


@pytest.fixture(scope="module")
def gains(run: Path) -> TaskGains:
    (task,) = store_gains(run, resamples=RESAMPLES)
    return task


def test_the_store_holds_the_scripted_outcomes(run: Path) -> None:
    rows = query(run, "SELECT condition, question_id, seed, correct FROM results")
    correct = {(c, q, s): bool(k) for c, q, s, k in rows}
    assert len(correct) == 3 * len(QUESTIONS) * len(SEEDS)
    for i, q in enumerate(QUESTIONS):
        for s, (single, vote, debate) in zip(SEEDS, OUTCOMES[i]):
            assert correct[("single", q.id, s)] == bool(single)
            assert correct[("vote", q.id, s)] == bool(vote)  # the vote condition shares society's round 0
            assert correct[("society", q.id, s)] == bool(debate)


def test_hand_checked_split(gains: TaskGains) -> None:
    """12 questions x 2 seeds; per question the accuracy over the two seeds (single S, round-0 vote V, debate D):

    q0-q7: S 0, V 1, D 1 -> total +1, voting +1, exchange 0
    q8: S 1/2, V 1, D 0 (the vote right, the debate wrong) -> total -1/2, voting +1/2, exchange -1
    q9: S 0, V 0, D 1/2 -> total +1/2, voting 0, exchange +1/2
    q10: all right -> 0, 0, 0
    q11: S 1/2, V 0, D 0 -> total -1/2, voting -1/2, exchange 0

    total = (8 - 1/2 + 1/2 - 1/2) / 12 = 7.5/12 = 0.625; voting = (8 + 1/2 - 1/2) / 12 = 2/3;
    exchange = (-1 + 1/2) / 12 = -1/24; 2/3 - 1/24 = 15/24 = 0.625.
    Sign tests on questions: total D > S on 9 (q0-q9 but q8), D < S on 2 (q8, q11): p = 2 (1 + 11 + 55) / 2^11
    = 134/2048; voting 9 against 1 (q11): p = 2 (1 + 10) / 2^10 = 22/1024; exchange 1 (q9) against 1 (q8): p = 1.
    Holm over the two parts: 2 x 22/1024 = 0.04296875, then max(that, 1) = 1; the total is its own family.
    """
    (split,) = gains.splits
    assert (split.task, split.debate, split.single, split.n, split.seeds) == ("arithmetic", "society", "single", 12, 2)
    assert split.total.difference == pytest.approx(0.625)
    assert split.voting.difference == pytest.approx(2 / 3)
    assert split.exchange.difference == pytest.approx(-1 / 24)
    counts = [(p.comparison.a_only, p.comparison.b_only) for p in split.parts]
    assert counts == [(9, 2), (9, 1), (1, 1)]
    assert [p.comparison.mcnemar_p for p in split.parts] == pytest.approx([134 / 2048, 22 / 1024, 1.0])
    assert [p.holm_p for p in split.parts] == pytest.approx([134 / 2048, 0.04296875, 1.0])
    assert split.total.comparison.accuracy_a == pytest.approx(9.5 / 12)  # the debate
    assert split.voting.comparison.accuracy_a == pytest.approx(10 / 12)  # its round-0 vote
    assert split.total.comparison.accuracy_b == pytest.approx(2 / 12)  # the single agent
    for p in split.parts:
        assert p.comparison.difference_ci.low <= p.difference <= p.comparison.difference_ci.high
    assert [u.debate for u in gains.unsplit] == ["vote"]
    assert gains.unsplit[0].reason == "one round: no exchange (all voting)"


def test_voting_plus_exchange_is_the_total_per_question(gains: TaskGains) -> None:
    (split,) = gains.splits
    assert len(split.questions) == 12
    for q in split.questions:
        assert q.voting + q.exchange == pytest.approx(q.total)
    by_id = {q.question_id: q for q in split.questions}
    q8 = by_id[QUESTIONS[8].id]  # the vote right in both seeds, the debate wrong in both
    assert (q8.single, q8.vote, q8.debate) == (0.5, 1.0, 0.0)
    assert (q8.total, q8.voting, q8.exchange) == (-0.5, 0.5, -1.0)
    assert sum(q.total for q in split.questions) / 12 == pytest.approx(split.total.difference)
    assert sum(q.voting for q in split.questions) / 12 == pytest.approx(split.voting.difference)
    assert sum(q.exchange for q in split.questions) / 12 == pytest.approx(split.exchange.difference)


def test_which_part_carries_a_papers_effect(gains: TaskGains) -> None:
    """Voting goes the paper's way with Holm p 0.043 < 0.05; exchange's Holm p is 1: voting carries a positive
    effect, nothing carries a negative one."""
    (split,) = gains.splits
    assert carrier(split, 0.148) == "voting"
    assert carrier(split, -0.05) == "neither"
    with pytest.raises(ValueError, match="no direction"):
        carrier(split, 0.0)


def _part(part: GainPart, difference: float, holm_p: float) -> GainPart:
    return replace(part, comparison=replace(part.comparison, difference=difference), holm_p=holm_p)


def _with_parts(split: GainSplit, voting: tuple[float, float], exchange: tuple[float, float]) -> GainSplit:
    """``split`` with its parts' differences and Holm p replaced, for the carrier rule's other cases."""
    return replace(split, voting=_part(split.voting, *voting), exchange=_part(split.exchange, *exchange))


def test_carrier_rule_cases(gains: TaskGains) -> None:
    (split,) = gains.splits
    assert carrier(_with_parts(split, (0.1, 0.01), (0.05, 0.02)), 1) == "both"
    assert carrier(_with_parts(split, (0.1, 0.2), (0.05, 0.02)), 1) == "exchange"
    assert carrier(_with_parts(split, (-0.1, 0.01), (-0.05, 0.02)), 1) == "neither"  # significant, the wrong way
    assert carrier(_with_parts(split, (-0.1, 0.01), (0.05, 0.02)), -0.2) == "voting"


@dataclass(frozen=True)
class Row:
    """A docs/results/*.csv row as the split reads it."""

    condition: str
    task: str
    question_id: str
    seed: int
    correct: bool
    round0_correct: bool | None = None


def test_split_from_plain_rows() -> None:
    """Four questions, one seed: S = 0 0 1 0, V = 1 1 1 0, D = 1 0 1 1. total: D > S on q0, q3 (2 vs 0);
    voting: q0, q1 (2 vs 0); exchange: D > V on q3, D < V on q1. Each McNemar p = 0.5 or 1."""
    single, vote, debate = (0, 0, 1, 0), (1, 1, 1, 0), (1, 0, 1, 1)
    rows = [Row("single", "t", f"q{i}", 0, bool(s)) for i, s in enumerate(single)]
    rows += [Row("deb", "t", f"q{i}", 0, bool(d), bool(v)) for i, (v, d) in enumerate(zip(vote, debate))]
    (split,) = split_gains(rows, [("deb", "single")], resamples=RESAMPLES)
    assert [p.difference for p in split.parts] == pytest.approx([0.5, 0.5, 0.0])
    assert [(p.comparison.a_only, p.comparison.b_only) for p in split.parts] == [(2, 0), (2, 0), (1, 1)]
    assert [p.comparison.mcnemar_p for p in split.parts] == pytest.approx([0.5, 0.5, 1.0])
    assert [p.holm_p for p in split.parts] == pytest.approx([0.5, 1.0, 1.0])
    missing = [*rows[:4], Row("deb", "t", "q0", 0, True)]
    with pytest.raises(ValueError, match="no round-0 vote"):
        split_gains(missing, [("deb", "single")])


def test_which_conditions_split() -> None:
    single, vote = resolve_protocol("single"), resolve_protocol("vote")
    society, liang = resolve_protocol("society"), resolve_protocol("liang")
    assert single_agent(single) and not single_agent(vote) and not single_agent(society)
    assert no_split_reason(society) is None
    assert no_split_reason(vote) == "one round: no exchange (all voting)"
    assert no_split_reason(liang) == "the final answer is a judge's or moderator's"
    protocols = {"single": single, "vote": vote, "society": society, "liang": liang}
    pairs = [("single", "society"), ("vote", "society"), ("liang", "single"), ("vote", "single")]
    split, unsplit = gain_pairs(pairs, protocols)
    assert split == [("society", "single")]
    assert [(d, s) for d, s, _ in unsplit] == [("liang", "single"), ("vote", "single")]


def test_report_and_compare_show_the_split(run: Path) -> None:
    report = build_report(run, resamples=RESAMPLES)
    (task,) = report.tasks
    assert task.gains is not None
    (split,) = task.gains.splits
    assert split.total.difference == pytest.approx(0.625)
    society_single = next(p for p in task.pairs if {p.a, p.b} == {"society", "single"})
    assert abs(society_single.accuracy.difference) == pytest.approx(split.total.difference)
    markdown = report_markdown(report)
    assert "### Debate gains split: voting and exchange, arithmetic" in markdown
    assert "| society | single | voting: round-0 vote - single | 12 | 9 / 1 | +0.667 " in markdown
    assert "| society | single | exchange: debate - round-0 vote | 12 | 1 / 1 | -0.042 " in markdown
    assert "| vote | single | not split: one round: no exchange (all voting) |" in markdown

    ((_, pair),) = compare_conditions(run, "single", "society", resamples=RESAMPLES)
    assert pair.gains is not None and pair.gains.splits[0].voting.difference == pytest.approx(2 / 3)
    short = gains_table(pair.gains, short=True)
    assert short.title == "society - single on arithmetic: voting and exchange, 12 questions"
    assert [row[0] for row in short.rows] == [
        "total: debate - single",
        "voting: round-0 vote - single",
        "exchange: debate - round-0 vote",
    ]
    assert short.rows[1][-1] == "0.043"  # Holm over the two parts

    result = CliRunner().invoke(app, ["compare", str(run), "society", "single", "--resamples", "1000"])
    assert result.exit_code == 0, result.output
    assert "society - single on arithmetic: voting and exchange" in result.output
    result = CliRunner().invoke(app, ["compare", str(run), "vote", "single", "--resamples", "1000"])
    assert result.exit_code == 0, result.output
    assert "not split: one round" in result.output
    result = CliRunner().invoke(app, ["compare", str(run), "vote", "society", "--resamples", "1000"])
    assert "voting and exchange" not in result.output  # no single agent: no split


DU = Path(__file__).resolve().parents[1] / "runs" / "replicate" / "du.sqlite"


@pytest.mark.skipif(not DU.exists(), reason="the du replication store is not in this checkout")
def test_du_society_against_single() -> None:
    """docs/results.md: society - single = +13 points on arithmetic (100 questions). Society's own round-0 vote
    is the vote condition's answer on every question (they share round 0), so voting is vote - single = +12
    and the exchange adds +1."""
    by_task = {g.task: g for g in store_gains(DU, resamples=RESAMPLES)}
    (split,) = by_task["arithmetic"].splits
    assert (split.debate, split.single, split.n) == ("society", "single", 100)
    assert split.total.difference == pytest.approx(0.13)
    assert split.voting.difference == pytest.approx(0.12)
    assert split.exchange.difference == pytest.approx(0.01)
    vote = {
        q: bool(k)
        for q, k in query(
            DU, "SELECT question_id, correct FROM results WHERE condition = 'vote' AND task = 'arithmetic'"
        )
    }
    assert all(vote[q.question_id] == bool(q.vote) for q in split.questions)
    assert [u.debate for u in by_task["arithmetic"].unsplit] == ["vote"]
