"""How tight is `moot run --dry-run`'s bound? Plan an experiment, run it on the embedded model, and print the
bound beside what the run spent (calls, prompt and completion tokens, cost at a notional price), as ratios.

    python benchmarks/dry_run_bound.py                     # society and vote, 3 arithmetic questions, qwen2.5-0.5b
    python benchmarks/dry_run_bound.py --questions 5 --max-tokens 256 --model qwen2.5-0.5b

A ratio >= 1 means the bound held; the run goes to a fresh store in a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
from pathlib import Path

from moot.runner.config_files import parse_experiment
from moot.runner.experiment import Experiment, run_experiment
from moot.runner.plan import plan_experiment
from moot.runner.session import RunOptions

PRICE = {"prompt": 0.15, "completion": 0.60}  # notional US dollars per million tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-0.5b")
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--protocol", action="append", default=None, help="repeatable (default: society, vote)")
    args = parser.parse_args()
    protocols = args.protocol or ["society", "vote"]
    config = parse_experiment(
        {
            "name": "dry-run-bound",
            "tasks": [{"name": "arithmetic", "count": args.questions}],
            "agent": {
                "backend": {"kind": "local", "model": args.model},
                "sampling": {"max_tokens": args.max_tokens},
            },
            "conditions": [{"name": p, "protocol": p} for p in protocols],
            "prices": {args.model: PRICE},
        }
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.sqlite"
        exp = Experiment(config, path)
        try:
            plan = asyncio.run(plan_experiment(exp))
        finally:
            exp.close()
        outcome = asyncio.run(run_experiment(config, path, RunOptions()))
        db = sqlite3.connect(path)
        spent = {
            c: (n, p, k)
            for c, n, p, k in db.execute(
                "SELECT condition, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM calls GROUP BY condition"
            )
        }
        largest = db.execute("SELECT MAX(prompt_tokens), MAX(completion_tokens) FROM calls").fetchone()
        db.close()
    print(
        f"model {args.model}, {args.questions} arithmetic questions, max_tokens {args.max_tokens}, "
        f"{outcome.calls} calls in {outcome.wall_s:.0f} s; largest call: {largest[0]} prompt, {largest[1]} completion"
    )
    print(f"{'condition':<10} {'':>6} {'calls':>8} {'prompt':>10} {'completion':>11} {'cost $':>10}")
    rows = [(c.name, c.bound) for c in plan.conditions] + [("total", plan.total)]
    for name, bound in rows:
        n, p, k = spent.get(name, (0, 0, 0)) if name != "total" else tuple(map(sum, zip(*spent.values())))
        cost = (p * PRICE["prompt"] + k * PRICE["completion"]) / 1e6
        assert bound.cost is not None
        print(
            f"{name:<10} {'bound':>6} {bound.calls:>8,} {bound.prompt_tokens:>10,} {bound.completion_tokens:>11,} "
            f"{bound.cost:>10.6f}"
        )
        print(f"{'':<10} {'spent':>6} {n:>8,} {p:>10,} {k:>11,} {cost:>10.6f}")
        if not n:  # every call of this condition is an earlier one's (shared round 0): nothing to compare
            print(f"{'':<10} {'ratio':>6} {'(its calls are shared, counted above)':>41}")
            continue
        ratio = [bound.calls / n, bound.prompt_tokens / p, bound.completion_tokens / k, bound.cost / cost]
        print(f"{'':<10} {'ratio':>6} " + " ".join(f"{r:>{w}.2f}" for r, w in zip(ratio, (8, 10, 11, 10))))


if __name__ == "__main__":
    main()
