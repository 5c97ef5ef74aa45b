"""The demo workload on llama-server and on vLLM, side by side in one run (issue 57; run by hand, the table goes
into docs/engine.md).

The workload is the README's first command: Society of Mind, 3 agents x 2 rounds, on 5 arithmetic questions
with moot's default sampling, the embedded 1.5B model. Each engine is started by its managed backend
(``local``: llama-server on the GGUF; ``vllm``: the CPU build on the GGUF dequantised into a Hugging Face
folder, bfloat16), each with the same threads (vLLM's CPU build would otherwise leave a core to its API
process), and timed apart from its run: the start (to healthy), then the run into a fresh store with
that backend already up. Printed per engine: start time, run wall time, completion and prompt tokens, tokens
per second of wall time, and vLLM's prefix-cache hit rate from its metrics; then vLLM's time over
llama-server's. Both engines batch the same requests (slots = agents x 2 questions, as moot sizes them).

    .venv/bin/python benchmarks/vllm_side_by_side.py                     # needs make setup-vllm
    .venv/bin/python benchmarks/vllm_side_by_side.py --model qwen2.5-0.5b --questions 3

Timings on a shared machine are contended: run it alone, and read the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from moot.backends.base import Backend
from moot.backends.vllm_server import VLLMBackend
from moot.models import DEFAULT_MODEL
from moot.runner.config import ExperimentConfig
from moot.runner.experiment import run_experiment
from moot.runner.options import AgentOptions
from moot.runner.store import RunStore

# the module (moot.runner's ``evaluate`` attribute is its function of that name)
building = importlib.import_module("moot.runner.evaluate")
VLLM_PYTHON = Path(__file__).resolve().parents[1] / ".venv-vllm" / "bin" / "python"


@dataclass(frozen=True)
class Measured:
    engine: str
    start_s: float
    run_s: float
    prompt_tokens: int
    completion_tokens: int
    accuracy: float
    hit_rate: float | None

    @property
    def tokens_per_s(self) -> float:
        return self.completion_tokens / self.run_s


def experiment(model: str, questions: int, backend: dict[str, Any]) -> ExperimentConfig:
    """The README's demo command as an experiment, on ``backend``."""
    config = AgentOptions.of(model=model, agents=3, rounds=2).experiment(["society"], "arithmetic", questions)
    data = config.model_dump(mode="json")
    data["agent"]["backend"] = {"model": model, **backend}
    return ExperimentConfig.model_validate(data)


async def measure(name: str, config: ExperimentConfig, folder: Path) -> Measured:
    backend = config.agent.backend.build()
    backend.plan(3)  # as the runner sizes it: 3 agents x 2 questions
    began = time.perf_counter()
    await backend.check()
    start_s = time.perf_counter() - began
    path = folder / f"{name}.sqlite"

    def built(_config: object) -> Backend:
        return backend

    # the run closes its backends when it ends: read vLLM's prefix-cache counters just before
    hit_rates: list[float | None] = []
    close = backend.aclose

    async def closing() -> None:
        if isinstance(backend, VLLMBackend):
            hit_rates.append(backend.prefix_cache_hit_rate())
        await close()

    began = time.perf_counter()
    with mock.patch.object(building, "make_backend", built), mock.patch.object(backend, "aclose", closing):
        await run_experiment(config, path)
    run_s = time.perf_counter() - began
    hit_rate = hit_rates[0] if hit_rates else None
    store = RunStore.read(path)
    try:
        calls = store.calls()
        results = store.results()
    finally:
        store.close()
    prompt = sum(c.prompt_tokens for c in calls)
    completion = sum(c.completion_tokens for c in calls)
    right = sum(r.result.correct for r in results) / len(results)
    return Measured(name, start_s, run_s, prompt, completion, right, hit_rate)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--python", default=str(VLLM_PYTHON), help="the Python with vLLM (default .venv-vllm's)")
    parser.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count() or 1,
        help="threads of both engines (default all cores; left to itself, vLLM's CPU build takes one less)",
    )
    args = parser.parse_args()
    arms = {
        "llama-server": {"kind": "local", "n_threads": args.threads},
        "vllm": {
            "kind": "vllm",
            "python": args.python,
            "dtype": "bfloat16",
            "cpu_kv_cache_gib": 2,
            "n_threads": args.threads,
        },
    }
    measured = []
    with tempfile.TemporaryDirectory(prefix="moot-side-by-side-") as tmp:
        for name, backend in arms.items():
            config = experiment(args.model, args.questions, backend)
            measured.append(asyncio.run(measure(name, config, Path(tmp))))
            print(f"  {name}: done", flush=True)
    print(f"\n{args.model}, society 3 x 2, {args.questions} arithmetic questions, {args.threads} threads each\n")
    print(
        "| engine | start (s) | run (s) | prompt tokens | completion tokens | completion tokens/s | accuracy | prefix-cache hits |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for m in measured:
        hits = "—" if m.hit_rate is None else f"{m.hit_rate:.1%}"
        print(
            f"| {m.engine} | {m.start_s:.1f} | {m.run_s:.1f} | {m.prompt_tokens:,} | {m.completion_tokens:,} | "
            f"{m.tokens_per_s:.1f} | {m.accuracy:.0%} | {hits} |"
        )
    llama, vllm = measured
    print(
        f"\nvLLM / llama-server: run time x{vllm.run_s / llama.run_s:.2f}, start x{vllm.start_s / llama.start_s:.1f}, "
        f"completion tokens/s x{vllm.tokens_per_s / llama.tokens_per_s:.2f}"
    )


if __name__ == "__main__":
    main()
