"""Simulator benchmark (run by hand; the number goes into the issue notes).

Times moot.theory.model.simulate on 100,000 debates of 5 agents, 5 rounds (counting round 0) and
4 answers, fully connected: unweighted with random initialisation (the target: under 10 s), and
for reference confidence-weighted and diversity-aware (pool 10). Each is timed ``--repeats`` times
(a fresh seed each) and the best and worst wall times are reported, with the debates per second.

    python benchmarks/theory.py
    python benchmarks/theory.py --debates 1000000 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace

from moot.theory.model import DebateModel, simulate

BASE = DebateModel(agents=5, rounds=5, prior=(2.0, 1.0, 1.0, 1.0))
VARIANTS = {
    "unweighted": BASE,
    "confidence-weighted": replace(BASE, weighting="confidence"),
    "diverse init (pool 10)": replace(BASE, init="diverse", pool=10),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debates", type=int, default=100_000, help="debates per simulation")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per variant")
    args = parser.parse_args()
    report: dict[str, object] = {
        "debates": args.debates,
        "agents": BASE.agents,
        "rounds": BASE.rounds,
        "answers": BASE.answers,
        "cpus": os.cpu_count(),
    }
    for name, model in VARIANTS.items():
        times = []
        for seed in range(args.repeats):
            start = time.perf_counter()
            simulate(model, args.debates, seed)
            times.append(time.perf_counter() - start)
        report[name] = {
            "best_s": round(min(times), 3),
            "worst_s": round(max(times), 3),
            "debates_per_s": round(args.debates / min(times)),
        }
    print(json.dumps(report, indent=2))
    unweighted = report["unweighted"]
    assert isinstance(unweighted, dict)
    verdict = "meets" if unweighted["worst_s"] < 10 else "MISSES"
    print(f"{args.debates:,} debates (unweighted): {unweighted['worst_s']} s at worst, {verdict} the 10 s target")


if __name__ == "__main__":
    main()
