"""Runner benchmarks (run by hand; numbers go into the issue notes).

(a) an identical rerun of a finished 50-question, 3-condition run makes 0 model calls;
(b) {single, vote, society} together make no more round-0 calls than society alone;
(c) a 10,000-question society run against the scripted backend: peak RSS of the runner
    process and the store's cost (seconds and bytes) per 1,000 calls.

    python benchmarks/runner.py                # all three, scripted backend
    python benchmarks/runner.py --model qwen2.5-0.5b --questions 10   # (a) and (b) on a real model
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment

CONDITIONS = [
    {"name": "single", "protocol": "single"},
    {"name": "vote", "protocol": "vote", "agents": 3},
    {"name": "society", "protocol": "society", "agents": 3, "rounds": 2},
]


def experiment(conditions: list[dict], questions: int, agent: dict) -> object:
    return parse_experiment(
        {
            "name": "bench",
            "tasks": [{"name": "arithmetic", "count": questions}],
            "agent": agent,
            "conditions": conditions,
        }
    )


def round0_calls(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT COUNT(*) FROM calls WHERE round = 0").fetchone()[0])
    finally:
        db.close()


def rerun_and_sharing(agent: dict, questions: int, folder: Path) -> dict:
    three = experiment(CONDITIONS, questions, agent)
    first = asyncio.run(run_experiment(three, folder / "three.sqlite"))
    again = asyncio.run(run_experiment(three, folder / "three.sqlite"))
    alone = asyncio.run(run_experiment(experiment(CONDITIONS[2:], questions, agent), folder / "society.sqlite"))
    return {
        "a_first_run_calls": first.calls,
        "a_identical_rerun_calls": again.calls,
        "b_round0_calls_three_conditions": round0_calls(folder / "three.sqlite"),
        "b_round0_calls_society_alone": round0_calls(folder / "society.sqlite"),
        "b_total_calls_three_conditions": first.calls,
        "b_total_calls_society_alone": alone.calls,
    }


def large_run(questions: int, folder: Path) -> dict:
    """Runs in a child process so that its peak RSS is the runner's alone."""
    path = folder / "large.sqlite"
    config = experiment(CONDITIONS[2:], questions, {"backend": {"kind": "scripted", "model": "numbers"}})
    start = time.perf_counter()
    outcome = asyncio.run(run_experiment(config, path))
    wall = time.perf_counter() - start
    return {
        "questions": questions,
        "calls": outcome.calls,
        "wall_s": round(wall, 1),
        "seconds_per_1000_calls": round(wall / outcome.calls * 1000, 3),
        "store_bytes": path.stat().st_size,
        "store_bytes_per_1000_calls": round(path.stat().st_size / outcome.calls * 1000),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="run (a) and (b) on this local model instead of the scripted backend")
    parser.add_argument("--questions", type=int, default=50, help="questions for (a) and (b)")
    parser.add_argument("--large", type=int, default=10_000, help="questions for (c); 0 skips it")
    parser.add_argument("--child-large", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_large:
        print(json.dumps(large_run(args.child_large, args.folder)))
        return
    agent = (
        {"backend": {"kind": "local", "model": args.model}, "sampling": {"max_tokens": 128}}
        if args.model
        else {"backend": {"kind": "scripted", "model": "numbers"}}
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        report = {"backend": args.model or "scripted", "questions": args.questions}
        report |= rerun_and_sharing(agent, args.questions, folder)
        if args.large:
            child = subprocess.run(
                [sys.executable, __file__, "--child-large", str(args.large), "--folder", str(folder)],
                capture_output=True,
                text=True,
                check=True,
            )
            report["c_large_run"] = json.loads(child.stdout)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
