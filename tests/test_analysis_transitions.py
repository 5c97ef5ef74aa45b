"""Transitions between rounds, oracles, per-agent changes and round-0 diversity, on hand-built trajectories
(including the stopping study's Liang tables, rebuilt from the counts it prints)."""

from __future__ import annotations

import pytest

from moot.analysis.formatting import fixed
from moot.analysis.transitions import (
    Trajectory,
    Transitions,
    agent_changes,
    first_to_final,
    initial_diversity,
    oracle,
    pass_at_k,
    round_to_round,
)


def one_voice(answers: list[str], rounds_used: int | None = None) -> Trajectory:
    """A trajectory whose single agent (a moderator) gives ``answers`` round by round; "R" is right."""
    correct = tuple(a == "R" for a in answers)
    return Trajectory(
        agents=("moderator",),
        answers=tuple((a,) for a in answers),
        correct=tuple((c,) for c in correct),
        system_answers=tuple(answers),
        system_correct=correct,
        final_answer=answers[-1],
        final_correct=correct[-1],
        rounds_used=rounds_used or len(answers),
    )


# "Rounds used | n | C→C | W→C | C→W | W→W | Answer changed" (Liang strict adaptive: moderator round 1 to
# the final scored output, by stopping round)
LIANG_BY_STOPPING_ROUND = [
    (1, 21, 13, 0, 0, 8, 0),
    (2, 52, 24, 1, 0, 27, 1),
    (3, 4, 0, 0, 0, 4, 0),
    (4, 1, 0, 0, 1, 0, 1),
    (5, 3, 1, 0, 1, 1, 1),
    (6, 19, 5, 9, 3, 2, 14),
]


def liang_trajectories() -> list[Trajectory]:
    out = []
    for rounds, _n, cc, wc, cw, ww, changed in LIANG_BY_STOPPING_ROUND:
        ww_changed = changed - wc - cw  # a wrong answer replaced by another wrong one
        out += [one_voice(["R"] * rounds) for _ in range(cc)]
        out += [one_voice(["W1"] * (rounds - 1) + ["R"]) for _ in range(wc)]
        out += [one_voice(["R"] * (rounds - 1) + ["W1"]) for _ in range(cw)]
        out += [one_voice(["W1"] * (rounds - 1) + ["W2"]) for _ in range(ww_changed)]
        out += [one_voice(["W1"] * rounds) for _ in range(ww - ww_changed)]
    return out


def test_the_study_transition_table_by_stopping_round() -> None:
    by_round, total = first_to_final(liang_trajectories())
    rows = [
        (r, t.n, t.right_right, t.wrong_right, t.right_wrong, t.wrong_wrong, t.changed) for r, t in by_round.items()
    ]
    assert rows == LIANG_BY_STOPPING_ROUND
    # "Total | 100 | 43 | 10 | 5 | 42 | 17"
    assert total == Transitions(n=100, right_right=43, wrong_right=10, right_wrong=5, wrong_wrong=42, changed=17)
    assert total.net == 5


def test_the_study_round_to_round_oracle() -> None:
    # "Liang prompt-matched control: moderator round 1 to round 2 | 3 wrong-to-correct; 2 correct-to-wrong;
    # 95 unchanged in correctness; only 5 answers changed | 54/100 (0.54) if an oracle could choose the
    # better moderator round; forced round 2 was 52/100"
    runs = (
        [one_voice(["R", "R"])] * 49
        + [one_voice(["W1", "R"])] * 3
        + [one_voice(["R", "W1"])] * 2
        + [one_voice(["W1", "W1"])] * 46
    )
    steps = round_to_round(runs)
    assert steps == {1: Transitions(n=100, right_right=49, wrong_right=3, right_wrong=2, wrong_wrong=46, changed=5)}
    o = oracle(runs)
    assert (o.final, o.any_round, fixed(o.any_round / o.n, 2)) == (52, 54, "0.54")
    assert o.round_gap == 2


def test_agent_changes_and_oracle_hand_checked() -> None:
    # two agents over three rounds; gold is "7"
    t = Trajectory(
        agents=("a", "b"),
        answers=(("7", "3"), ("3", "7"), ("3", None)),
        correct=((True, False), (False, True), (False, False)),
        system_answers=("7", "3", "3"),
        system_correct=(True, False, False),
        final_answer="3",
        final_correct=False,
        rounds_used=3,
    )
    changes = {c.agent: c for c in agent_changes([t])}
    a, b = changes["a"], changes["b"]
    assert (a.steps, a.changed, a.wrong_to_right, a.right_to_wrong) == (2, 1, 0, 1)
    assert (b.steps, b.changed, b.wrong_to_right, b.right_to_wrong) == (2, 2, 1, 1)
    o = oracle([t])
    assert (o.n, o.final, o.any_round, o.any_turn, o.gap) == (1, 0, 1, 1, 1)
    assert t.system_changed and t.any_agent_changed
    by_round, total = first_to_final([t])
    assert by_round == {3: Transitions(1, 0, 0, 1, 0, 1)} and total == by_round[3]
    assert round_to_round([t]) == {1: Transitions(1, 0, 0, 1, 0, 1), 2: Transitions(1, 0, 0, 0, 1, 0)}


def test_pass_at_k_hand_checked() -> None:
    assert pass_at_k(3, 1, 1) == pytest.approx(1 / 3)
    assert pass_at_k(3, 1, 2) == pytest.approx(2 / 3)  # 1 - C(2,2)/C(3,2)
    assert pass_at_k(3, 1, 3) == 1.0
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)  # 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(5, 0, 3) == 0.0
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_initial_diversity_hand_checked() -> None:
    unanimous = Trajectory(("a", "b", "c"), (("1", "1", "1"),), ((True, True, True),), ("1",), (True,), "1", True, 1)
    split = Trajectory(("a", "b", "c"), (("2", None, "3"),), ((False, False, True),), ("2",), (False,), "2", False, 1)
    d = initial_diversity([unanimous, split])
    assert d is not None
    assert (d.n, d.agents, d.mean_distinct, d.unanimous, d.majority_correct) == (2, 3, 1.5, 1, 1)
    assert d.pass_at == pytest.approx((2 / 3, (1 + 2 / 3) / 2, 1.0))
    assert initial_diversity([]) is None
