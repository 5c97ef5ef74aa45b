"""Stage 1: self-consistency targets through moot's runner, stored and resumable, on the scripted backend."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from moot.backends.base import GenerationRequest
from moot.backends.scripted import SCRIPTED_MODELS
from moot.debate.agents import Agent, AgentSpec
from moot.debate.context import call_seed
from moot.debate.records import Turn
from moot.errors import ConfigError
from moot.tasks.arithmetic import gold_value
from moot.tasks.base import ParseStatus, Question
from moot.training.config import TrainConfig, parse_train_config
from moot.training.targets import question_target, read_targets, run_targets, targets_experiment

QUESTION = re.compile(r"What is the result of (\d+)\+(\d+)\*(\d+)\+(\d+)-(\d+)\*(\d+)\?")


def half_right(request: GenerationRequest, index: int) -> str:
    """Right (confidence 7) when the call's seed is even, else one off (confidence 3): a model whose
    self-consistency accuracy per question is the share of its agents' seeds that are even."""
    match = next(m for message in request.messages if (m := QUESTION.search(message.content)))
    gold = gold_value(*(int(g) for g in match.groups()))
    assert request.seed is not None
    if request.seed % 2 == 0:
        return f"Step by step: the result is {gold}.\nConfidence: 7"
    return f"I think it is {gold + 1}.\nConfidence: 3"


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SCRIPTED_MODELS, "half-right", half_right)


def config(tmp_path: Path, questions: int = 6, samples: int = 4) -> TrainConfig:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    return parse_train_config(
        {
            "model": "qwen2.5-0.5b",
            "task": "arithmetic",
            "output": str(out),
            "targets": {
                "questions": questions,
                "samples": samples,
                "backend": {"kind": "scripted", "model": "half-right"},
                "seed": 3,
            },
        }
    )


def turn(answer: str | None, correct: bool, confidence: float | None = None) -> Turn:
    status = ParseStatus.PARSED if answer is not None else ParseStatus.UNPARSED
    return Turn("a", 0, f"{answer}", answer, status, correct, "stop", 1, 1, 0.0, 0, (), confidence=confidence)


def test_a_question_target_is_the_share_of_right_samples_and_the_plurality() -> None:
    q = Question("q", "1+1", "2")
    target = question_target(
        q, [turn("3", False), turn("2", True), turn(None, False), turn("2", True), turn("3", False)]
    )
    assert target.accuracy == pytest.approx(2 / 5)
    assert target.majority == "3"  # 3 and 2 tie at two votes: the earliest sample's answer, as moot's majority
    assert target.answers == ("3", "2", None, "2", "3")
    assert question_target(q, [turn(None, False), turn(None, False)]).majority is None


def test_the_stage_is_the_confidence_presets_round_zero(tmp_path: Path) -> None:
    experiment = targets_experiment(config(tmp_path))
    (condition,) = experiment.conditions
    assert (condition.protocol, condition.agents, condition.rounds) == ("confidence", 4, 1)
    assert experiment.agent.sampling is not None and experiment.agent.sampling.temperature == 1.0
    assert experiment.agent.sampling.top_p == 0.9  # Zhu et al.
    assert experiment.tasks[0].count == 6 and experiment.tasks[0].seed == 3


def test_targets_are_stored_and_a_rerun_replays_at_no_cost(tmp_path: Path, scripted: None) -> None:
    c = config(tmp_path)
    first = run_targets(c)
    assert first.store == c.output / "targets.sqlite" and first.store.is_file()
    assert first.calls == 6 * 4 and first.failed == 0
    assert len(first.targets) == 6
    for target in first.targets:
        # the accuracy is the share of the 4 agents whose call seed is even (half_right's rule), computed here
        # from moot's own seed derivation, independently of the stage
        seeds = [
            call_seed(3, target.question, Agent(AgentSpec(name=f"agent-{i}"), None), 0)  # type: ignore[arg-type]
            for i in range(1, 5)
        ]
        assert target.accuracy == sum(s % 2 == 0 for s in seeds) / 4
        assert [t.confidence for t in target.samples] == [7.0 if s % 2 == 0 else 3.0 for s in seeds]
        assert {t.answer for t in target.samples} <= {target.question.gold, str(int(target.question.gold) + 1)}
    table = (c.output / "targets.jsonl").read_text().splitlines()
    assert len(table) == 6 and '"accuracy"' in table[0]
    again = run_targets(c)
    assert (again.calls, again.replayed) == (0, 0)  # a finished run is read back: no model call
    assert again.targets == first.targets
    assert read_targets(c.output / "targets.sqlite") == (list(first.targets), 0)


def test_other_settings_on_the_same_store_are_refused_clearly(tmp_path: Path, scripted: None) -> None:
    run_targets(config(tmp_path, questions=3))
    with pytest.raises(ConfigError, match=r"targets.sqlite holds stage 1 with other settings"):
        run_targets(config(tmp_path, questions=5))
