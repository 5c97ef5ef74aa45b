"""A GRPO smoke run on the real 0.5B model (CPU, tiny batch): two steps, then a rerun asking for three that
resumes from the last checkpoint and trains one more; the reward table and plot; the adapter loads
through the hf backend and changes the model's output.

The GGUF is dequantised once and saved as a Hugging Face folder, which the four loads here read in
seconds (each GGUF load converts the tokenizer and dequantises again: over a minute on 2 cores)."""

from __future__ import annotations

import asyncio
import csv
import time
from pathlib import Path

import pytest
from rich.console import Console

from moot.backends.base import GenerationRequest, Message
from moot.backends.config import HFBackendConfig
from moot.backends.factory import make_backend
from moot.hf import load_model
from moot.models import TEST_MODEL
from moot.training.grpo import train_grpo
from moot.training.types import GRPOSettings, TrainingExample

pytestmark = [pytest.mark.model, pytest.mark.hf]

ASK = "Answer with the number only, then 'Confidence: N/10'."
EXAMPLES = tuple(
    TrainingExample(f"q{i}", "arithmetic", "expression", (Message("user", f"What is {a} + {b}? {ASK}"),), str(a + b))
    for i, (a, b) in enumerate([(2, 3), (7, 5), (12, 9), (4, 4)])
)
SETTINGS = GRPOSettings(
    steps=2,
    learning_rate=2e-3,  # large, so that two steps of a rank-8 adapter visibly move the model
    lora_rank=8,
    lora_alpha=16,
    prompts_per_step=2,
    generations=2,
    max_completion_tokens=16,
    save_steps=1,
    seed=0,
)


class Correct:
    """1 when the gold answer appears in the completion."""

    name = "correct"
    weight = 1.0

    def __call__(self, example: TrainingExample, completion: str) -> float:
        return float(example.gold in completion)


class Short:
    """Shorter is better: 1 - characters / 64, at least 0 (never the same for two different completions)."""

    name = "short"
    weight = 0.5

    def __call__(self, example: TrainingExample, completion: str) -> float:
        return max(0.0, 1.0 - len(completion) / 64)


@pytest.fixture(scope="module")
def hf_folder(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The 0.5B model as a Hugging Face folder (float32 safetensors and tokenizer.json)."""
    from transformers.trainer_utils import validate_quantization_for_training

    loaded = load_model(TEST_MODEL)
    # the GGUF is dequantised into plain tensors and unmarked: transformers' Trainer takes it as it is
    assert not loaded.model.is_quantized and getattr(loaded.model, "hf_quantizer", None) is None
    validate_quantization_for_training(loaded.model)
    folder = tmp_path_factory.mktemp("qwen2.5-0.5b-hf")
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return str(folder)


async def _greedy(config: HFBackendConfig) -> tuple[str, list[float]]:
    backend = make_backend(config)
    try:
        request = GenerationRequest(EXAMPLES[0].messages, temperature=0.0, max_tokens=8, logprobs=True)
        sample = (await backend.generate(request)).samples[0]
        assert sample.logprobs is not None
        return sample.text, [t.logprob for t in sample.logprobs]
    finally:
        await backend.aclose()


def test_grpo_smoke_run_resumes_and_its_adapter_changes_the_model(hf_folder: str, tmp_path: Path) -> None:
    out = tmp_path / "stage"
    console = Console(file=open(tmp_path / "progress.txt", "w"), width=120)  # noqa: SIM115 (closed below)
    rewards = [Correct(), Short()]
    start = time.perf_counter()
    first = train_grpo(
        model=hf_folder, examples=EXAMPLES, rewards=rewards, settings=SETTINGS, output_dir=out, console=console
    )
    first_s = time.perf_counter() - start
    assert first.steps == 2 and [r.step for r in first.history] == [1, 2]
    assert sorted(p.name for p in (out / "checkpoints").glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]

    start = time.perf_counter()
    more = SETTINGS.model_copy(update={"steps": 3})
    second = train_grpo(
        model=hf_folder, examples=EXAMPLES, rewards=rewards, settings=more, output_dir=out, console=console
    )
    second_s = time.perf_counter() - start
    console.file.close()
    # resumed, not restarted: the first two steps are the first run's, and one more was trained
    assert second.steps == 3 and second.history[:2] == first.history and second.history[2].step == 3
    assert sorted(p.name for p in (out / "checkpoints").glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-3"]
    assert second.history[2].elapsed_s > second.history[1].elapsed_s

    with (out / "reward_curve.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["step"] for r in rows] == ["1", "2", "3"]
    for row, record in zip(rows, second.history):
        assert float(row["correct"]) == pytest.approx(record.parts["correct"], abs=1e-5)
        assert 0 <= float(row["correct"]) <= 1 and 0 <= float(row["short"]) <= 1
        # the total is the weighted sum of the parts' means
        assert float(row["reward"]) == pytest.approx(float(row["correct"]) + 0.5 * float(row["short"]), abs=1e-4)
    assert (out / "reward_curve.png").stat().st_size > 1000
    progress = (tmp_path / "progress.txt").read_text()
    assert "GRPO" in progress and "3/3" in progress and "correct" in progress

    adapter = second.adapter_dir
    assert (adapter / "adapter_config.json").is_file() and (adapter / "adapter_model.safetensors").is_file()
    base_text, base_logprobs = asyncio.run(_greedy(HFBackendConfig(model=hf_folder)))
    tuned_text, tuned_logprobs = asyncio.run(_greedy(HFBackendConfig(model=hf_folder, adapter=str(adapter))))
    assert tuned_text != base_text or max(abs(a - b) for a, b in zip(base_logprobs, tuned_logprobs)) > 1e-3
    print(f"\nGRPO smoke run: 2 steps in {first_s:.0f} s, 1 resumed step in {second_s:.0f} s; rewards {second.history}")
