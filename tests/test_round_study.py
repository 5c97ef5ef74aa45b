"""Accuracy round by round and the martingale check (moot.analysis.round_study, `moot rounds`), on results built by
hand: every figure below is worked out in the comments."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from moot.analysis.round_study import round_study
from moot.debate.components.aggregation import majority_vote
from moot.debate.records import DebateResult, FinalStatus, RoundRecord, Turn
from moot.runner.records import StoredResult
from moot.tasks.base import ParseStatus, Question
from tests.helpers import arithmetic_experiment, write_store

GOLD = "5"


def _turn(agent: int, round_: int, answer: str | None) -> Turn:
    status = ParseStatus.PARSED if answer is not None else ParseStatus.UNPARSED
    return Turn(f"agent-{agent}", round_, f"so {answer}", answer, status, answer == GOLD, "stop", 0, 0, 0.0, None, ())


def _result(
    qid: str, rounds: list[list[str | None]], seed: int = 0, status: str = FinalStatus.ANSWERED
) -> StoredResult:
    records = []
    for r, answers in enumerate(rounds):
        turns = tuple(_turn(i, r, a) for i, a in enumerate(answers, 1))
        records.append(RoundRecord(r, turns, majority_vote(answers)))
    last = records[-1].vote.winner
    question = Question(qid, "1+2*2+0-0*0", GOLD)
    result = DebateResult(question, "society", tuple(records), last, FinalStatus(status), last == GOLD, "max_rounds")
    return StoredResult("society", "arithmetic", seed, result, 1)


RESULTS = [
    # q1: round 0 agents 1/3 right, vote 9 wrong; round 1 2/3 right, vote 5 right; round 2 3/3, vote right
    _result("q1", [["5", "9", "9"], ["5", "5", "9"], ["5", "5", "5"]]),
    # q2: 2/3 then 1/3 then 1/3 right; votes right, wrong (tie 7, 5, 8 -> first: 7), wrong
    _result("q2", [["5", "5", "3"], ["7", "5", "8"], ["7", "7", "5"]]),
    # q3: never right
    _result("q3", [["1", "2", "3"], ["1", "1", "3"], ["1", "1", "1"]]),
    # an errored result is left out
    _result("q4", [["5", "5", "5"]], status=FinalStatus.ERROR),
]


def test_points_and_steps_by_hand() -> None:
    study = round_study(RESULTS, "society", "arithmetic", resamples=1000)
    assert study.agents == 3
    assert [p.questions for p in study.points] == [3, 3, 3]
    # votes right: round 0 q2 only (1/3); round 1 q1 (1/3); round 2 q1 (1/3)
    assert [p.vote for p in study.points] == pytest.approx([1 / 3, 1 / 3, 1 / 3])
    # agents right: round 0 (1/3 + 2/3 + 0) / 3 = 1/3; round 1 (2/3 + 1/3 + 0) / 3 = 1/3; round 2 (1 + 1/3 + 0) / 3
    assert [p.agents for p in study.points] == pytest.approx([1 / 3, 1 / 3, 4 / 9])
    # steps: 0 -> 1: q1 +1/3, q2 -1/3, q3 0: mean 0; 1 -> 2: q1 +1/3, q2 0, q3 0: mean 1/9
    assert [s.start for s in study.steps] == [0, 1]
    assert [s.change for s in study.steps] == pytest.approx([0.0, 1 / 9])
    assert (study.steps[0].sign.fewer, study.steps[0].sign.tied, study.steps[0].sign.more) == (1, 1, 1)
    assert (study.steps[1].sign.fewer, study.steps[1].sign.tied, study.steps[1].sign.more) == (0, 2, 1)
    assert all(s.ci.low <= s.change <= s.ci.high for s in study.steps)


def test_seeds_average_within_a_question_and_early_stops_count_for_the_rounds_reached() -> None:
    results = [
        _result("q1", [["5", "9"], ["5", "5"]], seed=0),  # agents 1/2 then 1
        _result("q1", [["9", "9"], ["9", "9"]], seed=1),  # 0 then 0 -> q1: 1/4 then 1/2
        _result("q2", [["5", "5"]], seed=0),  # stopped after round 0: agents 1
    ]
    study = round_study(results, "society", "arithmetic", resamples=1000)
    assert [p.questions for p in study.points] == [2, 1]
    assert study.points[0].agents == pytest.approx((1 / 4 + 1) / 2)
    assert study.points[1].agents == pytest.approx(1 / 2)
    assert study.steps[0].questions == 1 and study.steps[0].change == pytest.approx(1 / 4)


def test_a_condition_with_no_result_is_an_error() -> None:
    with pytest.raises(ValueError, match="no stored result of condition 'vote'"):
        round_study(RESULTS, "vote", "arithmetic")


def test_moot_rounds_prints_the_curve_of_a_stored_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from moot.cli import app

    experiment = arithmetic_experiment("r", [{"name": "society", "protocol": "society", "rounds": 3}], 6)
    path = write_store(tmp_path / "run.sqlite", experiment)
    out = CliRunner().invoke(app, ["rounds", str(path), "--resamples", "1000"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "society on arithmetic (3 agents)" in out.output and "martingale check" in out.output
    bad = CliRunner().invoke(app, ["rounds", str(path), "--condition", "vote"])
    assert bad.exit_code != 0 and "condition 'vote' has no stored result" in bad.output
