"""Does a rerun without the store give the same run? (issue 59, reruns; run by hand, the numbers go into README.md)

A run's store replays exactly. This measures what a rerun from an empty store gives: the same small experiment
(society of 3 agents x 2 rounds on arithmetic questions, seeded sampling at temperature 0.7) is run twice, each
time into a fresh store, on the managed llama-server (the ``local`` backend), and the two stores are compared:
final results equal per question (answer and correctness), and replies equal per call key (a call's key hashes
its request, so a reply that differs in round 0 makes round 1's requests differ: those calls count as
unequal). Two arms: the default parallel slots, and ``deterministic = true`` (one slot, fixed batch sizes);
the wall time of each run and the deterministic arm's time over the parallel one's are printed.

    python benchmarks/rerun.py                       # qwen2.5-0.5b, 6 questions, max_tokens 128
    python benchmarks/rerun.py --questions 4 --arm deterministic

Timings on a shared machine are contended: read the ratio, not the seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moot.backends.engine_record import read_engines
from moot.runner.config import ExperimentConfig
from moot.runner.experiment import run_experiment
from moot.runner.store import RunStore


@dataclass(frozen=True)
class Run:
    wall_s: float
    finals: dict[tuple[str, str, str, int], tuple[str | None, bool]]  # by unit key: (final answer, correct)
    replies: dict[str, str]  # by call key: the reply's text (sample 0)
    engine: str


def config(model: str, questions: int, max_tokens: int, deterministic: bool) -> ExperimentConfig:
    backend: dict[str, Any] = {"kind": "local", "model": model, "n_ctx": 4096}
    if deterministic:
        backend["deterministic"] = True
    return ExperimentConfig.model_validate(
        {
            "name": "rerun",
            "seeds": [0],
            "tasks": [{"name": "arithmetic", "count": questions, "seed": 0}],
            "agent": {"backend": backend, "sampling": {"temperature": 0.7, "max_tokens": max_tokens}},
            "conditions": [{"name": "society", "protocol": "society", "agents": 3, "rounds": 2}],
        }
    )


def run_once(experiment: ExperimentConfig, folder: Path, name: str) -> Run:
    path = folder / f"{name}.sqlite"
    start = time.perf_counter()
    asyncio.run(run_experiment(experiment, path))
    wall_s = time.perf_counter() - start
    store = RunStore.read(path)
    try:
        finals = {r.key: (r.result.final_answer, r.result.correct) for r in store.iter_results()}
        replies: dict[str, str] = {}
        for call in store.iter_calls():
            reply = store.cached_reply(call.key)
            replies[call.key] = reply.samples[0].text if reply is not None else ""
        engines = read_engines(store.meta())
        engine = "; ".join(f"{n}: {e.describe()}" for n, e in engines.items())
    finally:
        store.close()
    return Run(wall_s, finals, replies, engine)


def percent(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f} %)" if whole else "0/0"


def compare(first: Run, second: Run) -> tuple[str, str]:
    """(finals equal, replies equal) as counts and percentages."""
    units = first.finals.keys() | second.finals.keys()
    same_finals = sum(1 for u in units if u in first.finals and first.finals.get(u) == second.finals.get(u))
    keys = first.replies.keys() | second.replies.keys()
    same_replies = sum(1 for k in keys if k in first.replies and first.replies.get(k) == second.replies.get(k))
    return percent(same_finals, len(units)), percent(same_replies, len(keys))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-0.5b")
    parser.add_argument("--questions", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--arm", choices=("parallel", "deterministic"), action="append", help="default: both")
    args = parser.parse_args()
    arms = args.arm or ["parallel", "deterministic"]
    print(
        f"{args.model}: society 3 agents x 2 rounds, {args.questions} arithmetic questions, max_tokens "
        f"{args.max_tokens}, temperature 0.7, seed 0; each arm run twice from empty stores"
    )
    walls: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="moot-rerun-") as tmp:
        for arm in arms:
            experiment = config(args.model, args.questions, args.max_tokens, arm == "deterministic")
            first = run_once(experiment, Path(tmp), f"{arm}-1")
            second = run_once(experiment, Path(tmp), f"{arm}-2")
            finals, replies = compare(first, second)
            walls[arm] = first.wall_s + second.wall_s
            print(f"[{arm}] engine {first.engine}")
            print(f"[{arm}] wall time {first.wall_s:.0f} s and {second.wall_s:.0f} s")
            print(f"[{arm}] final results equal: {finals}; replies equal (per call key): {replies}", flush=True)
    if len(walls) == 2:
        print(f"wall time deterministic / parallel: {walls['deterministic'] / walls['parallel']:.2f}")


if __name__ == "__main__":
    main()
