"""The learned debate gate (moot.debate.gate, stopping 'learned-gate', `moot gate`): round-0 features and the label by
hand, cross-validation by question, the gate file, the stopping rule with scripted agents, and the command line end to
end on a store the runner wrote."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moot.backends.base import GenerationRequest
from moot.backends.scripted import register_scripted_model
from moot.calls import Caller
from moot.cli import app
from moot.debate import resolve_protocol, run_debate
from moot.debate.components.stopping.learned_gate import LearnedGate
from moot.debate.gate import (
    FEATURES,
    LEFT_OUT_STOPPED,
    Gate,
    GateRow,
    decide,
    fold_assignment,
    gate_row,
    predict,
    round0_correct,
    round0_features,
    rows_of,
    train,
)
from moot.debate.records import DebateResult, FinalStatus, RoundRecord, StopReason, Turn, Vote
from moot.errors import ConfigError
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from moot.runner.records import StoredResult
from moot.runner.session import RunOptions
from moot.runner.store import RunStore
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import ParseStatus, Question
from tests.helpers import scripted_agents

TASK = ArithmeticTask()
QUESTION = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")


def turn(
    answer: str | None,
    tokens: int = 10,
    confidence: float | None = None,
    anll: float | None = None,
    correct: bool | None = None,
    agent: str = "a",
) -> Turn:
    return Turn(
        agent=agent,
        round=0,
        text=answer or "no idea",
        answer=answer,
        parse_status=ParseStatus.PARSED if answer is not None else ParseStatus.UNPARSED,
        correct=correct if correct is not None else answer == "-19",
        finish_reason="stop",
        prompt_tokens=5,
        completion_tokens=tokens,
        latency_s=0.0,
        seed=None,
        shown=(),
        confidence=confidence,
        anll=anll,
    )


# -- features --------------------------------------------------------------------------------------------------------


def test_round0_features_by_hand() -> None:
    f = round0_features([turn("1", 10), turn("1", 20), turn("2", 30)])
    assert list(f) == list(FEATURES)
    assert f["agreement"] == pytest.approx(2 / 3)
    # -(2/3 log2 2/3 + 1/3 log2 1/3) = 0.9183 bits
    assert f["entropy"] == pytest.approx(0.9183, abs=1e-4)
    assert (f["unparsed"], f["length"], f["confidence"], f["anll"]) == (0.0, 20.0, None, None)

    unanimous = round0_features([turn("7"), turn("7"), turn("7")])
    assert (unanimous["agreement"], unanimous["entropy"]) == (1.0, 0.0)
    assert math.copysign(1, unanimous["entropy"] or 0.0) == 1  # not -0.0

    # unparsed replies are one category of their own: {1: 1, unparsed: 2} is 0.9183 bits again
    f = round0_features([turn("1"), turn(None), turn(None)])
    assert f["agreement"] == pytest.approx(1 / 3) and f["unparsed"] == pytest.approx(2 / 3)
    assert f["entropy"] == pytest.approx(0.9183, abs=1e-4)
    # four distinct answers: 2 bits; nothing parsed: agreement 0, entropy 0
    assert round0_features([turn(a) for a in "1234"])["entropy"] == pytest.approx(2.0)
    nothing = round0_features([turn(None), turn(None)])
    assert (nothing["agreement"], nothing["entropy"], nothing["unparsed"]) == (0.0, 0.0, 1.0)

    # means over the agents that state a confidence / have log-probabilities
    f = round0_features(
        [turn("1", confidence=8, anll=0.5), turn("1", confidence=None, anll=1.0), turn("2", confidence=6)]
    )
    assert (f["confidence"], f["anll"]) == (7.0, 0.75)


def test_round0_vote_and_the_label_by_hand() -> None:
    # the majority (5) is wrong, the lone right answer (3) loses
    assert not round0_correct([turn("3", correct=True), turn("5", correct=False), turn("5", correct=False)])
    # a 1-1 tie goes to the earliest agent
    assert round0_correct([turn("3", correct=True), turn("5", correct=False)])
    assert not round0_correct([turn("5", correct=False), turn("3", correct=True)])
    assert not round0_correct([turn(None), turn(None)])

    wrong_then_right = stored_result([["3", "5", "5"], ["3", "3", "3"]], final="3", gold="3")
    row = gate_row(wrong_then_right, "store.sqlite")
    assert isinstance(row, GateRow)
    assert (row.c0, row.c1, row.helps, row.group, row.agents) == (False, True, True, ("arithmetic", "q"), 3)
    right_then_wrong = gate_row(stored_result([["3", "3", "5"], ["5", "5", "5"]], final="5", gold="3"))
    assert isinstance(right_then_wrong, GateRow) and not right_then_wrong.helps  # debate hurt: not "helps"
    # a debate stopped after round 0 says nothing about what debating gives: left out, and counted
    rows, left = rows_of([wrong_then_right, stored_result([["3", "3", "3"]], final="3", gold="3")])
    assert len(rows) == 1 and left == Counter({LEFT_OUT_STOPPED: 1})


def stored_result(rounds: list[list[str]], final: str, gold: str, qid: str = "q", seed: int = 0) -> StoredResult:
    records = tuple(
        RoundRecord(
            index=i,
            turns=tuple(turn(a, correct=a == gold, agent=f"agent-{j}") for j, a in enumerate(answers)),
            vote=Vote((), None, (), 0),
        )
        for i, answers in enumerate(rounds)
    )
    result = DebateResult(
        Question(qid, "x", gold), "society", records, final, FinalStatus.ANSWERED, final == gold, StopReason.MAX_ROUNDS
    )
    return StoredResult("society", "arithmetic", seed, result, 1)


# -- training ----------------------------------------------------------------------------------------------------------


def row(question: str, agreement: float, c0: bool, c1: bool, seed: int = 0, **more: float | None) -> GateRow:
    features: dict[str, float | None] = dict.fromkeys(FEATURES, None)
    features |= {"agreement": agreement, "length": 10.0, **more}
    return GateRow("arithmetic", question, seed, features, c0, c1, agents=3)


# q0-q3: round 0 split and wrong, debate fixes it (y = 1); q4-q6 unanimous and right; q7 unanimous, right, and
# debate breaks it; q8-q9 unanimous and wrong, debate does not help
TINY = [
    *(row(f"q{i}", 1 / 3, False, True) for i in range(4)),
    *(row(f"q{i}", 1.0, True, True) for i in range(4, 7)),
    row("q7", 1.0, True, False),
    *(row(f"q{i}", 1.0, False, False) for i in (8, 9)),
]


def test_the_four_accuracies_by_hand_on_a_tiny_dataset() -> None:
    gate = train(TINY, folds=5, condition="society", stores=("s.sqlite",), protocol="society")
    cv = gate.cv
    assert cv is not None
    assert (gate.results, gate.questions, gate.positives) == (10, 10, 4)
    # length is 10 throughout and the rest are absent: agreement alone is used
    assert gate.features == ("agreement",)
    assert cv.never == pytest.approx(4 / 10)  # q4-q7
    assert cv.always == pytest.approx(7 / 10)  # q0-q6
    assert cv.oracle == pytest.approx(8 / 10)  # q0-q7
    # agreement separates the classes, in every fold: the gate debates q0-q3 only, as the oracle does
    assert cv.gate == pytest.approx(8 / 10) and cv.saving == pytest.approx(6 / 10) and cv.label_accuracy == 1.0
    assert decide(gate, {"agreement": 1 / 3}) and not decide(gate, {"agreement": 1.0})
    assert gate.coefficients[0] < 0  # more agreement, less need to debate


def test_predict_is_the_fitted_regression_and_a_missing_value_is_the_training_mean() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    rows = [*TINY, row("q10", 2 / 3, False, True), row("q11", 2 / 3, True, True)]
    gate = train(rows, folds=3)
    x = [[r.features["agreement"]] for r in rows]
    y = [int(r.helps) for r in rows]
    scaler = StandardScaler().fit(x)
    fitted = LogisticRegression(class_weight="balanced", max_iter=1000).fit(scaler.transform(x), y)
    for value in (1 / 3, 2 / 3, 1.0):
        expected = fitted.predict_proba(scaler.transform([[value]]))[0, 1]
        assert predict(gate, {"agreement": value}) == pytest.approx(expected, abs=1e-9)
    # a missing feature adds nothing: the intercept alone
    assert predict(gate, {}) == pytest.approx(1 / (1 + math.exp(-gate.intercept)))
    assert predict(gate, {"agreement": None}) == predict(gate, {})
    # the threshold: debate when the probability is above it
    p = predict(gate, {"agreement": 2 / 3})
    assert decide(gate, {"agreement": 2 / 3}, threshold=p - 1e-9) and not decide(
        gate, {"agreement": 2 / 3}, threshold=p
    )


def test_cross_validation_never_splits_a_question() -> None:
    # every question under three seeds, its label differing between seeds for some: a question's rows share a fold
    rows = [
        row(f"q{q}", (q % 3 + 1) / 3, c0=bool((q + s) % 2), c1=bool(q % 3), seed=s) for q in range(12) for s in range(3)
    ]
    assigned = fold_assignment(rows, folds=4, seed=0)
    by_question: dict[tuple[str, str], set[int]] = {}
    for r, fold in zip(rows, assigned, strict=True):
        by_question.setdefault(r.group, set()).add(fold)
    assert all(len(folds) == 1 for folds in by_question.values())
    assert sorted(set(assigned)) == [0, 1, 2, 3]
    assert fold_assignment(rows, folds=4, seed=0) == assigned  # reproducible

    # leakage would show here: each question's features are its own (a unique agreement), its label random, and it
    # appears under two seeds. A split by row would hold out one copy and train on its twin; by question it cannot.
    twins = [row(f"t{q}", q / 20, c0=False, c1=bool(q % 3 == 0), seed=s) for q in range(20) for s in (0, 1)]
    assigned = fold_assignment(twins, folds=5, seed=1)
    assert all(assigned[2 * q] == assigned[2 * q + 1] for q in range(20))


def test_too_little_data_or_one_class_is_refused_with_the_counts() -> None:
    with pytest.raises(
        ConfigError, match=r"too few questions .* 5-fold .*: 4 results of 4 questions, debate helped in 4"
    ):
        train(TINY[:4])
    never = [row(f"q{i}", 1.0, True, True) for i in range(6)]
    with pytest.raises(ConfigError, match="results where debate helped and results where it did not: 6 results"):
        train(never)
    flat = [row(f"q{i}", 1.0, bool(i % 2), True) for i in range(6)]
    with pytest.raises(ConfigError, match="no feature varies over the 6 results"):
        train(flat)


def test_a_feature_present_in_some_rows_is_used_and_imputed() -> None:
    rows = [row(r.question, r.features["agreement"] or 0, r.c0, r.c1, confidence=8.0 if r.helps else 9.0) for r in TINY]
    rows[0] = row("q0", 1 / 3, False, True, confidence=None)
    gate = train(rows, confidence_scale=10)
    assert gate.features == ("agreement", "confidence") and gate.confidence_scale == 10
    # its mean is over the rows that have it; missing, it is that mean
    assert gate.means[1] == pytest.approx((3 * 8 + 6 * 9) / 9)


# -- the gate file -----------------------------------------------------------------------------------------------------


def hand_gate(debate: bool, **fields: Any) -> Gate:
    """A gate on agreement alone: probability 0.5 - at agreement 2/3 - moved by -4 per standard deviation (1/3):
    ``debate`` moves the intercept so that it debates everything, else nothing."""
    values: dict[str, Any] = {
        "task": "arithmetic",
        "agents": 3,
        "features": ("agreement",),
        "coefficients": (-4.0,),
        "intercept": 10.0 if debate else -10.0,
        "means": (2 / 3,),
        "scales": (1 / 3,),
    }
    return Gate(**(values | fields))


def test_a_gate_file_round_trips(tmp_path: Path) -> None:
    gate = train(TINY, condition="society", stores=("a.sqlite", "b.sqlite"), protocol="society")
    path = gate.save(tmp_path / "gate.json")
    assert Gate.load(path) == gate
    data = json.loads(path.read_text())
    assert (data["format"], data["version"], data["features"], data["cv"]["folds"]) == (
        "moot-gate",
        1,
        ["agreement"],
        5,
    )
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]  # written through a part file


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "gate file {path}: no such file"),
        (b"\xff\xfe", "gate file {path}: not a moot gate (not JSON)"),
        (b"[1, 2]", 'gate file {path}: not a moot gate (no "format": "moot-gate")'),
        (b'{"format": "moot-gate", "version": 2}', "gate file {path}: a gate of version 2; this moot reads version 1"),
        (
            b'{"format": "moot-gate", "version": 1, "task": "arithmetic", "agents": 3, "features": ["agreement"], '
            b'"coefficients": [1.0, 2.0], "intercept": 0, "means": [0], "scales": [1]}',
            "gate file {path}: invalid gate (features, coefficients, means and scales must have one entry per feature)",
        ),
        (
            b'{"format": "moot-gate", "version": 1, "task": "arithmetic", "agents": 3, "features": ["mood"], '
            b'"coefficients": [1.0], "intercept": 0, "means": [0], "scales": [1]}',
            "gate file {path}: invalid gate (unknown feature 'mood'",
        ),
    ],
)
def test_a_file_that_is_no_gate_is_refused_by_name(tmp_path: Path, content: bytes | None, message: str) -> None:
    path = tmp_path / "gate.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError) as caught:
        Gate.load(path)
    assert str(caught.value).startswith(message.format(path=path))


# -- the stopping rule ------------------------------------------------------------------------------------------------


def gated(path: Path, **stopping: Any) -> Any:
    return resolve_protocol(
        "society", rounds=2, components={"stopping": {"kind": "learned-gate", "file": str(path), **stopping}}
    )


async def test_a_gate_that_says_no_debate_stops_after_round_0(tmp_path: Path) -> None:
    path = hand_gate(debate=False).save(tmp_path / "gate.json")
    agents = scripted_agents(["4", "-19"], ["5", "-19"], ["5", "-19"])
    caller = Caller()
    result = await run_debate(QUESTION, TASK, gated(path), agents, caller=caller)
    assert (result.rounds_used, result.stop_reason, result.final_answer) == (1, StopReason.GATE_SKIP, "5")
    assert result.stop_reason == "gate_no_debate" and caller.usage.calls == 3


async def test_a_gate_that_says_debate_plays_the_debate_round(tmp_path: Path) -> None:
    path = hand_gate(debate=True).save(tmp_path / "gate.json")
    agents = scripted_agents(["4", "-19"], ["5", "-19"], ["5", "-19"])
    result = await run_debate(QUESTION, TASK, gated(path), agents, caller=Caller())
    assert (result.rounds_used, result.stop_reason, result.final_answer) == (2, "max_rounds", "-19")
    # a cap of 3: the gate decides only after round 0, the cap after that
    protocol = resolve_protocol(
        "society", rounds=3, components={"stopping": {"kind": "learned-gate", "file": str(path)}}
    )
    agents = scripted_agents(["4", "-19", "-19"], ["5", "-19", "-19"], ["5", "-19", "-19"])
    result = await run_debate(QUESTION, TASK, protocol, agents, caller=Caller())
    assert (result.rounds_used, result.stop_reason) == (3, "max_rounds")


async def test_the_gate_reads_round_0_and_the_threshold_can_be_overridden(tmp_path: Path) -> None:
    # intercept 0: probability 0.5 at agreement 2/3; unanimity -> sigmoid(-4) = 0.018, a 1-1-1 split -> 0.982
    path = hand_gate(debate=False, intercept=0.0).save(tmp_path / "gate.json")
    split = scripted_agents(["4", "-19"], ["5", "-19"], ["6", "-19"])
    result = await run_debate(QUESTION, TASK, gated(path), split, caller=Caller())
    assert result.rounds_used == 2
    unanimous = scripted_agents(["4", "-19"], ["4", "-19"], ["4", "-19"])
    result = await run_debate(QUESTION, TASK, gated(path), unanimous, caller=Caller())
    assert (result.rounds_used, result.stop_reason) == (1, "gate_no_debate")
    unanimous = scripted_agents(["4", "-19"], ["4", "-19"], ["4", "-19"])
    result = await run_debate(QUESTION, TASK, gated(path, threshold=0.01), unanimous, caller=Caller())
    assert result.rounds_used == 2
    assert "above 0.01" in gated(path, threshold=0.01).describe()["stopping"]


def test_what_the_protocol_cannot_give_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "gate.json"
    with pytest.raises(ConfigError, match=f"protocol setting stopping: gate file {path}: no such file"):
        gated(path)
    with pytest.raises(ConfigError, match="stopping 'learned-gate' needs file"):
        resolve_protocol("society", components={"stopping": "learned-gate"})

    base = {"features": ("agreement", "confidence"), "coefficients": (1.0, 1.0), "means": (0.5, 5.0)}
    hand_gate(True, **base, scales=(0.2, 2.0), confidence_scale=10).save(path)
    with pytest.raises(ConfigError, match=f"gate {path} uses feature 'confidence', but this protocol's agents state"):
        gated(path)
    stated = resolve_protocol(
        "society", rounds=2, components={"confidence": True, "stopping": {"kind": "learned-gate", "file": str(path)}}
    )
    assert stated.stopping.kind == "learned-gate"
    with pytest.raises(ConfigError, match="trained on confidences of scale 0-10; this protocol asks 0-100"):
        resolve_protocol(
            "society",
            rounds=2,
            components={"confidence": {"scale": 100}, "stopping": {"kind": "learned-gate", "file": str(path)}},
        )

    other = tmp_path / "anll.json"
    hand_gate(True, features=("anll",)).save(other)
    with pytest.raises(ConfigError, match="uses feature 'anll', which needs log-probabilities"):
        gated(other)
    with_logprobs = resolve_protocol(
        "society",
        rounds=2,
        components={"uncertainty_cue": True, "stopping": {"kind": "learned-gate", "file": str(other)}},
    )
    assert with_logprobs.needs_logprobs

    five = tmp_path / "five.json"
    hand_gate(True, agents=5).save(five)
    with pytest.raises(ConfigError, match="was trained with 5 agents and this protocol has 3"):
        gated(five)
    with pytest.raises(ConfigError, match="rounds must be at least 2"):
        resolve_protocol("society", rounds=1, components={"stopping": {"kind": "learned-gate", "file": str(five)}})


async def test_a_gate_of_another_task_is_refused_when_the_debate_starts(tmp_path: Path) -> None:
    path = hand_gate(debate=True, task="gsm8k").save(tmp_path / "gate.json")
    agents = scripted_agents(["4", "-19"], ["5", "-19"], ["5", "-19"])
    with pytest.raises(ConfigError, match=f"gate {path} was trained on task 'gsm8k', not 'arithmetic'"):
        await run_debate(QUESTION, TASK, gated(path), agents, caller=Caller())


def test_the_gate_is_read_once_per_version_of_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from moot.debate.components.stopping import learned_gate

    path = hand_gate(debate=True).save(tmp_path / "gate.json")
    loads = []
    real = Gate.load.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(Gate, "load", classmethod(lambda cls, p: loads.append(p) or real(cls, p)))
    first = learned_gate.load_gate(path)
    assert learned_gate.load_gate(path) is first and len(loads) == 1
    hand_gate(debate=False).save(path)
    os.utime(path, ns=(1, 1))  # a new version of the file, whatever the clock's resolution
    assert learned_gate.load_gate(path).intercept == -10.0 and len(loads) == 2


def test_the_rule_keeps_the_gate_it_was_configured_with(tmp_path: Path) -> None:
    path = hand_gate(debate=True).save(tmp_path / "gate.json")
    protocol = gated(path)
    stored = protocol.model_dump(mode="json")
    path.unlink()  # a stored run reads without the file, with the gate it ran with
    again = type(protocol).model_validate(stored)
    assert isinstance(again.stopping, LearnedGate) and again.stopping.gate == protocol.stopping.gate
    # naming another file reads that file, even over a table that holds a gate
    other = hand_gate(debate=False).save(tmp_path / "other.json")
    swapped = LearnedGate.model_validate({**stored["stopping"], "file": str(other)})
    assert swapped.gate is not None and swapped.gate.intercept == -10.0


# -- the command line, end to end ---------------------------------------------------------------------------------------

EXPRESSION = re.compile(r"(\d+)\+(\d+)\*(\d+)\+(\d+)-(\d+)\*(\d+)")


def kind_of(expression: str) -> int:
    """0: easy (right throughout); 1: debate fixes a wrong, hesitant round 0; 2: hopeless (wrong throughout);
    3: debate breaks a right round 0."""
    return hashlib.sha256(expression.encode()).digest()[0] % 4


def patterned(request: GenerationRequest, index: int) -> str:
    """Replies by the question's kind (``kind_of``) and round; a wrong round-0 answer differs by agent (its seed)."""
    users = [m.content for m in request.messages if m.role == "user"]
    match = EXPRESSION.search(users[0])
    assert match is not None
    a, b, c, d, e, f = (int(g) for g in match.groups())
    gold, kind, later = a + b * c + d - e * f, kind_of(match[0]), len(users) > 1
    wrong = gold + hashlib.sha256(str(request.seed).encode()).digest()[0] % 3 + 1
    if kind == 0 or (kind == 3 and not later):
        return f"the answer is {gold}"
    if kind == 1:
        return f"the answer is {gold}" if later else f"hmm, I am not sure, let me think again, perhaps {wrong}"
    return f"the answer is {gold + 10 if later else wrong}"


register_scripted_model("gate-pattern", patterned)


def experiment(conditions: list[dict[str, Any]]) -> Any:
    return parse_experiment(
        {
            "name": "gate",
            "seeds": [0, 1],
            "tasks": [{"name": "arithmetic", "count": 30, "seed": 0}],
            "agent": {"backend": {"kind": "scripted", "model": "gate-pattern"}},
            "conditions": conditions,
        }
    )


def by_hand(path: Path, condition: str) -> list[tuple[str, int, bool, bool]]:
    """(question, seed, round 0's majority right, final answer right) of each result, read from the store's rows."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        out = []
        results = db.execute("SELECT question_id, seed, correct FROM results WHERE condition = ?", (condition,))
        for question, seed, correct in results.fetchall():
            turns = db.execute(
                "SELECT answer, correct FROM turns WHERE condition = ? AND question_id = ? AND seed = ? AND round = 0 "
                "ORDER BY rowid",
                (condition, question, seed),
            ).fetchall()
            counts = Counter(a for a, _ in turns if a is not None)
            top = max(counts.values())
            winner = next(a for a, _ in turns if a is not None and counts[a] == top)  # ties: the earliest agent
            out.append((question, seed, any(a == winner and ok for a, ok in turns), bool(correct)))
        return out
    finally:
        db.close()


def table_rows(output: str) -> dict[str, list[str]]:
    return {
        cells[0]: cells[1:]
        for line in output.splitlines()
        if line.startswith("│") and (cells := [c.strip() for c in line.strip("│").split("│")])
    }


def test_gate_train_end_to_end_on_a_stored_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "run.sqlite"
    asyncio.run(
        run_experiment(
            experiment(
                [{"name": "society", "protocol": "society", "rounds": 2}, {"name": "single", "protocol": "single"}]
            ),
            store,
            RunOptions(),
        )
    )
    runner = CliRunner()
    result = runner.invoke(app, ["gate", "train", str(store), "--condition", "society", "--out", "gate.json"])
    assert result.exit_code == 0, result.output
    print(result.output)

    facts = by_hand(store, "society")
    n = len(facts)
    assert n == 60
    helps = sum(not c0 and c1 for _, _, c0, c1 in facts)
    never, always = sum(c0 for *_, c0, _ in facts), sum(c1 for *_, c1 in facts)
    oracle = sum(c0 or c1 for *_, c0, c1 in facts)
    assert 0 < helps < n and never != always  # every kind of question is there

    def shown(count: int) -> str:
        return f"{100 * count / n:.1f}% ({count}/{n})"

    rows = table_rows(result.output)
    assert rows["oracle: debate exactly where it helps"] == [shown(oracle), shown(helps)]
    assert rows["always debate"] == [shown(always), shown(n)]
    assert rows["never debate (round 0's majority)"] == [shown(never), shown(0)]
    # a hesitant round 0 is long and it is the one debate fixes: out of fold the gate debates exactly there
    assert rows["learned gate (5-fold CV by question)"] == [shown(oracle), shown(helps)]
    assert f"saving: {100 * (n - helps) / n:.1f}% of results not debated, out of fold" in result.output
    assert f"60 results of 30 questions · debate helped in {helps} " in result.output
    assert "left out: none" in result.output

    gate = Gate.load(tmp_path / "gate.json")
    assert (gate.task, gate.condition, gate.stores, gate.agents, gate.rounds) == (
        "arithmetic",
        "society",
        (str(store),),
        3,
        2,
    )
    assert "length" in gate.features and "confidence" not in gate.features and "anll" not in gate.features

    shown_gate = runner.invoke(app, ["gate", "show", "gate.json"])
    assert shown_gate.exit_code == 0, shown_gate.output
    assert table_rows(shown_gate.output)["always debate"] == [shown(always), shown(n)]
    assert "(intercept)" in shown_gate.output

    # a condition applies the gate: each question is debated where the gate says so, and only there
    gated_store = tmp_path / "gated.sqlite"
    config = experiment(
        [
            {
                "name": "learned",
                "protocol": "society",
                "rounds": 2,
                "stopping": {"kind": "learned-gate", "file": "gate.json"},
            }
        ]
    )
    asyncio.run(run_experiment(config, gated_store, RunOptions()))
    reader = RunStore.read(gated_store)
    try:
        played = {(s.result.question.id, s.seed): s.result for s in reader.iter_results()}
        questions = {q.id: q.prompt for q in reader.questions().values()}
    finally:
        reader.close()
    for (question, _), debate in played.items():
        helped = kind_of(questions[question]) == 1
        assert (debate.rounds_used, debate.stop_reason) == ((2, "max_rounds") if helped else (1, "gate_no_debate"))

    # the gate is part of the condition: a rerun with the same file resumes (nothing to do), a changed file is
    # another experiment
    again = asyncio.run(run_experiment(config, gated_store, RunOptions()))
    assert (again.calls, again.ran, again.skipped) == (0, 0, 60)
    kept = (tmp_path / "gate.json").read_bytes()
    Gate.load(tmp_path / "gate.json").model_copy(update={"threshold": 0.9}).save(tmp_path / "gate.json")
    with pytest.raises(ConfigError, match="holds a run of a different experiment"):
        asyncio.run(run_experiment(config, gated_store, RunOptions()))
    (tmp_path / "gate.json").write_bytes(kept)

    # the store keeps the gate it ran with: it reads, and `moot report` reports it, without the file
    (tmp_path / "gate.json").unlink()
    reader = RunStore.read(gated_store)
    try:
        stopping = reader.conditions()["learned"].protocol.stopping
        assert isinstance(stopping, LearnedGate) and stopping.gate == gate
    finally:
        reader.close()
    report = runner.invoke(app, ["report", str(gated_store)])
    assert report.exit_code == 0, report.output


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of 3 questions: condition society (2 rounds) and single (1 round)."""
    path = tmp_path_factory.mktemp("small") / "run.sqlite"
    small = parse_experiment(
        {
            "name": "gate",
            "tasks": [{"name": "arithmetic", "count": 3, "seed": 0}],
            "agent": {"backend": {"kind": "scripted", "model": "gate-pattern"}},
            "conditions": [
                {"name": "society", "protocol": "society", "rounds": 2},
                {"name": "single", "protocol": "single"},
            ],
        }
    )
    asyncio.run(run_experiment(small, path, RunOptions()))
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.sqlite", "--condition", "society"], "no run store at missing.sqlite"),
        (["run.sqlite", "--condition", "debate"], "run.sqlite: no condition 'debate'; its conditions: society, single"),
        (["run.sqlite", "--condition", "single"], "run.sqlite: condition 'single' plays one round only (rounds = 1)"),
        (
            ["run.sqlite", "--condition", "society", "--task", "gsm8k"],
            "no stored result of condition 'society' on task",
        ),
        (["run.sqlite", "run.sqlite", "--condition", "society"], "store run.sqlite is named twice"),
        (["run.sqlite", "--condition", "society", "--folds", "1"], "--folds must be at least 2, got 1"),
        (["run.sqlite", "--condition", "society", "--folds", "40"], "too few questions to train a gate with 40-fold"),
    ],
)
def test_gate_train_errors_are_one_line(
    small_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(small_store, tmp_path / "run.sqlite")
    result = CliRunner().invoke(app, ["gate", "train", *args, "--out", "gate.json"])
    assert result.exit_code == 2
    assert result.output.startswith("moot: error: ") and message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "gate.json").exists()


def test_gate_train_does_not_replace_a_file_without_force(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gate.json").write_text("mine")
    result = CliRunner().invoke(app, ["gate", "train", "run.sqlite", "--condition", "society", "--out", "gate.json"])
    assert result.exit_code == 2 and "exists and moot did not write it there; pass --force" in result.output
    assert (tmp_path / "gate.json").read_text() == "mine"
    shown = CliRunner().invoke(app, ["gate", "show", "gate.json"])
    assert shown.exit_code == 2 and "not a moot gate (not JSON)" in shown.output


def test_stores_whose_condition_differs_are_refused(
    small_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(small_store, tmp_path / "a.sqlite")
    longer = parse_experiment(
        {
            "name": "gate",
            "tasks": [{"name": "arithmetic", "count": 3, "seed": 0}],
            "agent": {"backend": {"kind": "scripted", "model": "gate-pattern"}},
            "conditions": [{"name": "society", "protocol": "society", "rounds": 3}],
        }
    )
    asyncio.run(run_experiment(longer, tmp_path / "b.sqlite", RunOptions()))
    result = CliRunner().invoke(
        app, ["gate", "train", "a.sqlite", "b.sqlite", "--condition", "society", "--out", "gate.json"]
    )
    assert result.exit_code == 2
    assert "condition 'society' differs between a.sqlite and b.sqlite (agents, rounds, confidence scale: " in (
        result.output
    )
    assert "(3, 2, None) and (3, 3, None)" in result.output
