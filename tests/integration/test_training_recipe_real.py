"""The recipe's model-side stages with the real 0.5B model (llama.cpp's server, as `moot train` samples by
default): stage 1 samples real answers, the examples are built from them, the rewards read the real
completions exactly as the debate read them, and a rerun replays without starting the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from moot.tasks import get_task
from moot.training.config import parse_train_config
from moot.training.data import expression_examples, perception_examples
from moot.training.rewards import Calibration, Correctness, ReplyReader
from moot.training.targets import run_targets

pytestmark = [pytest.mark.model, pytest.mark.server]


def test_real_targets_examples_and_rewards(tmp_path: Path, tiny_model: Path) -> None:
    config = parse_train_config(
        {
            "model": "qwen2.5-0.5b",
            "task": "arithmetic",
            "output": str(tmp_path),
            "targets": {"questions": 3, "samples": 3, "max_tokens": 160},
        }
    )
    first = run_targets(config)
    assert first.calls == 9 and first.failed == 0 and len(first.targets) == 3
    task = get_task("arithmetic")
    questions = {t.question.id: t.question for t in first.targets}
    reader = ReplyReader(task, questions)
    stated = 0
    for target in first.targets:
        example = expression_examples(task, [target])[0]
        assert example.messages == target.samples[0].shown  # stage 1 asked exactly the expression prompt
        for sample in target.samples:
            # the rewards read a completion as the debate read it: same answer, confidence and correctness
            reading = reader.read(example, sample.text)
            assert reading.answer == sample.answer and reading.correct == bool(sample.correct)
            assert reading.confidence == (None if sample.confidence is None else sample.confidence / 10)
            assert Correctness(reader)(example, sample.text) == float(bool(sample.correct))
            if sample.confidence is not None:
                stated += 1
                y = 1.0 if sample.correct else 0.0
                assert Calibration(reader)(example, sample.text) == pytest.approx(-((sample.confidence / 10 - y) ** 2))
        (perception,) = perception_examples(task, [target], agents=3, draws=1, seed=0)
        assert perception.messages[-1].content.count("One agent response (confidence") == 2
    print(
        f"real stage 1: 9 samples, {stated} with a stated confidence; accuracies {[t.accuracy for t in first.targets]}"
    )
    again = run_targets(config)
    assert (again.calls, again.replayed) == (0, 0) and again.targets == first.targets
