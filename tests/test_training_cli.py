"""``moot train confidence`` end to end on the scripted backend, with train_grpo faked: the stages' order
and inputs, resuming, the evaluation's Table 6, and bad input as one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moot.backends.base import GenerationRequest
from moot.backends.config import ScriptedBackendConfig
from moot.backends.scripted import SCRIPTED_MODELS
from moot.cli import app
from moot.errors import ConfigError
from moot.training import pipeline
from moot.training.config import TrainConfig, load_train_config
from moot.training.types import GRPOResult, StepRecord
from tests.test_training_targets import QUESTION, half_right

CONFIG = """
model = "qwen2.5-0.5b"
task = "arithmetic"
output = "{output}"

[targets]
questions = 8
samples = 4
backend = {{ kind = "scripted", model = "half-right" }}

[expression]
steps = {expression_steps}
lora_rank = 8

[perception]
steps = {perception_steps}
agents = 3
draws = {draws}

[rewards]
engagement = 0.25

[evaluation]
questions = 3
"""


def always_right(request: GenerationRequest, index: int) -> str:
    from moot.tasks.arithmetic import gold_value

    match = next(m for message in request.messages if (m := QUESTION.search(message.content)))
    return f"The other agents agree: {gold_value(*(int(g) for g in match.groups()))}.\nConfidence: 9"


class FakeTrainer:
    """Records each call of train_grpo and leaves what it would: an adapter folder and a history."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> GRPOResult:
        self.calls.append(kwargs)
        out: Path = kwargs["output_dir"]
        (out / "adapter").mkdir(parents=True, exist_ok=True)
        names = [p.name for p in kwargs["rewards"]]
        history = tuple(
            StepRecord(s, 0.1 * s, {n: 0.05 * s for (n,) in zip(names)}, float(s))
            for s in range(1, kwargs["settings"].steps + 1)
        )
        (out / "reward_curve.csv").write_text("step\n")
        return GRPOResult(
            out / "adapter", kwargs["settings"].steps, history, out / "reward_curve.png", out / "reward_curve.csv"
        )


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> FakeTrainer:
    monkeypatch.setitem(SCRIPTED_MODELS, "half-right", half_right)
    monkeypatch.setitem(SCRIPTED_MODELS, "always-right", always_right)
    trainer = FakeTrainer()
    monkeypatch.setattr(pipeline, "default_trainer", lambda: trainer)
    # the evaluation's hf backend: the base model is half right, the trained one always right
    monkeypatch.setattr(
        pipeline,
        "evaluation_backend",
        lambda config, adapter: ScriptedBackendConfig(model="always-right" if adapter else "half-right"),
    )
    monkeypatch.setenv("COLUMNS", "200")
    return trainer


def write_config(tmp_path: Path, perception_steps: int = 3, expression_steps: int = 2, draws: int = 2) -> Path:
    path = tmp_path / "train.toml"
    text = CONFIG.format(
        output=tmp_path / "out", perception_steps=perception_steps, expression_steps=expression_steps, draws=draws
    )
    path.write_text(text)
    return path


def train(path: Path) -> Any:
    result = CliRunner().invoke(app, ["train", "confidence", str(path)])
    assert "Traceback" not in result.output
    return result


def test_the_recipe_runs_its_stages_in_order_then_resumes(tmp_path: Path, fakes: FakeTrainer) -> None:
    path = write_config(tmp_path)
    result = train(path)
    assert result.exit_code == 0, result.output + repr(result.exception)
    out = tmp_path / "out"
    rows = [json.loads(line) for line in (out / "targets.jsonl").read_text().splitlines()]
    in_band = [r["question_id"] for r in rows if 0.2 <= r["accuracy"] <= 0.8]
    assert len(rows) == 8 and in_band

    expression, perception = fakes.calls
    assert expression["model"] == "qwen2.5-0.5b" and expression["init_adapter"] is None
    assert expression["output_dir"] == out / "expression"
    assert [e.question_id for e in expression["examples"]] == in_band
    assert {e.stage for e in expression["examples"]} == {"expression"}
    assert [(p.name, p.weight) for p in expression["rewards"]] == [("correctness", 1.0), ("calibration", 1.0)]
    assert expression["settings"].steps == 2 and expression["settings"].lora_rank == 8
    assert perception["init_adapter"] == out / "expression" / "adapter"  # stage 2 continues stage 1's adapter
    assert len(perception["examples"]) == 2 * len(in_band)  # two draws per question
    assert all(len(e.peer_answers) == 2 for e in perception["examples"])
    assert [p.name for p in perception["rewards"]] == ["correctness", "calibration", "engagement"]
    assert perception["settings"].steps == 3 and perception["settings"].lora_rank == 64
    assert (out / "expression.jsonl").read_text().count("\n") == len(in_band)

    text = " ".join(result.output.split())
    assert f"harder subset: {len(in_band)} question" in text
    assert "expression: trained 2 steps · last reward 0.200 (correctness 0.100, calibration 0.100)" in text
    assert f"adapter {out / 'perception' / 'adapter'}" in text and "reward curve" in text
    stores = sorted(out.glob("evaluation-*.sqlite"))
    assert len(stores) == 1 and f"moot report {stores[0]}" in text
    # Table 6 by hand, over 3 questions x 3 agents x 2 rounds: the trained model (always right at 9/10): Brier
    # (0.9 - 1)^2, ECE |1 - 0.9|, no AUROC (no wrong answer); the base (right at 7/10, wrong at 3/10): Brier
    # 0.3^2 either way, ECE 0.3, AUROC 1 (every right answer is more confident than every wrong one)
    assert "evaluation trained: turns 18 · missing 0 · accuracy 1.000 · brier 0.010 · ece 0.100 · auroc —" in text
    assert "evaluation base: turns 18 · missing 0 · accuracy " in text
    assert "· brier 0.090 · ece 0.300 · auroc 1.000 evaluation trained" in text

    again = train(path)
    assert again.exit_code == 0 and len(fakes.calls) == 2  # both stages complete: skipped
    assert again.output.count("complete earlier, skipped") == 2
    assert "this session 0 model calls" in " ".join(again.output.split())

    more = train(write_config(tmp_path, perception_steps=5))
    assert more.exit_code == 0 and len(fakes.calls) == 3  # only the changed stage trains again
    assert fakes.calls[2]["settings"].steps == 5 and fakes.calls[2]["output_dir"] == out / "perception"
    assert len(sorted(out.glob("evaluation-*.sqlite"))) == 2  # a new adapter: a new evaluation run

    # perception was trained on the old expression adapter, or on other examples: refused, not mixed
    for changed, what in (
        ({"expression_steps": 4}, "starting adapter"),
        ({"expression_steps": 4, "draws": 1}, "examples"),
    ):
        refused = train(write_config(tmp_path, perception_steps=5, **changed))
        assert refused.exit_code == 2, refused.output
        assert f"moot: error: {out / 'perception'} holds a training on other {what}" in " ".join(refused.output.split())
    assert [c["output_dir"].name for c in fakes.calls] == ["expression", "perception", "perception", "expression"]


def test_held_out_questions_follow_the_training_ones(tmp_path: Path) -> None:
    config: TrainConfig = load_train_config(write_config(tmp_path))
    task = config.load_task()
    training = {q.id for q in task.questions(8, 0)}
    heldout = pipeline.heldout_questions(config, task)
    assert [q.id for q in heldout] == [q.id for q in task.questions(11, 0)[8:]]
    assert not training & {q.id for q in heldout}


def test_no_question_in_the_band_is_one_clear_error(tmp_path: Path, fakes: FakeTrainer) -> None:
    path = write_config(tmp_path)
    path.write_text(path.read_text().replace('model = "half-right"', 'model = "always-right"'))
    result = train(path)
    assert result.exit_code == 2 and fakes.calls == []
    assert "moot: error: subset: no question of 8 has a self-consistency accuracy in [0.2, 0.8]" in result.output
    assert "(mean accuracy 1.00, from 1.00 to 1.00)" in result.output


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('model = "qwen2.5-0.5b"', 'model = "qwen2.5-05b"'), "model: unknown model 'qwen2.5-05b'"),
        (('task = "arithmetic"', 'task = "mmlu"'), "targets: task mmlu has no training split 'train'"),
        (("samples = 4", "sample = 4"), "targets.sample: unknown key"),
    ],
)
def test_bad_config_is_one_line(tmp_path: Path, change: tuple[str, str], message: str, fakes: FakeTrainer) -> None:
    path = write_config(tmp_path)
    path.write_text(path.read_text().replace(*change))
    result = train(path)
    assert result.exit_code == 2
    assert result.output.startswith("moot: error: ") and message in result.output
    assert not (tmp_path / "out").exists()  # nothing is created


def test_a_missing_output_parent_is_refused(tmp_path: Path, fakes: FakeTrainer) -> None:
    path = write_config(tmp_path)
    path.write_text(path.read_text().replace(str(tmp_path / "out"), str(tmp_path / "no" / "out")))
    result = train(path)
    assert result.exit_code == 2 and "does not exist (create it first)" in result.output


def test_help() -> None:
    result = CliRunner().invoke(app, ["train", "confidence", "--help"])
    assert result.exit_code == 0 and "GRPO" in result.output


def test_the_evaluation_pairs_the_base_and_trained_models_on_the_hf_backend(tmp_path: Path) -> None:
    config = load_train_config(write_config(tmp_path))
    questions = pipeline.heldout_questions(config, config.load_task())
    adapter = tmp_path / "out" / "perception" / "adapter"
    experiment = pipeline.evaluation_experiment(config, questions, adapter)
    base, trained = experiment.conditions
    assert (base.name, trained.name, base.protocol, trained.protocol) == ("base", "trained", "confidence", "confidence")
    assert isinstance(base.agents, list) and isinstance(trained.agents, list) and len(base.agents) == 3  # the preset's
    assert {a.backend for a in base.agents} == {pipeline.evaluation_backend(config, None)}
    (backend,) = {a.backend for a in trained.agents}
    assert backend is not None and backend.kind == "hf" and backend.model == "qwen2.5-0.5b"
    assert getattr(backend, "adapter", None) == str(adapter)
    assert experiment.tasks[0].ids == tuple(q.id for q in questions)
    assert experiment.agent.sampling is not None and (
        experiment.agent.sampling.temperature,
        experiment.agent.sampling.top_p,
    ) == (1.0, 0.9)
    assert [c.name for c in pipeline.evaluation_experiment(config, questions, None).conditions] == ["base"]


def test_a_bad_evaluation_backend_option_is_named(tmp_path: Path) -> None:
    path = write_config(tmp_path)
    path.write_text(path.read_text().replace("questions = 3\n", 'questions = 3\nbackend = { dtyp = "float32" }\n'))
    config = load_train_config(path)
    with pytest.raises(ConfigError, match=r"^evaluation.backend: dtyp: unknown key"):
        pipeline.evaluation_backend(config, None)


def test_grpo_progress_prints_a_line_per_step_when_piped() -> None:
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from moot.training.grpo import RewardProgress

    out = io.StringIO()
    bar = RewardProgress(["correctness", "calibration"], Console(file=out, force_terminal=False, width=80))
    state = SimpleNamespace(log_history=[], max_steps=4, global_step=0)
    bar.begin(state)
    state.global_step = 1
    state.log_history.append({"step": 1, "reward": 0.5})
    bar.log(state, {"reward": 0.5, "rewards/correctness/mean": 0.25, "rewards/calibration/mean": -0.125})
    bar.stop()
    (line,) = out.getvalue().splitlines()
    assert line.startswith("GRPO step 1/4  reward 0.500  correctness 0.250  calibration -0.125  ")
    assert line.endswith(" s")
