"""Batch mode against live calls, side by side (run by hand; the table goes into the issue notes).

A llama-server (the 0.5B model, 4 slots) serves the model; the tests' BatchServer implements OpenAI's Files
and Batches endpoints in front of it (running each batch's requests 4 at a time, as the server's slots
allow). moot runs the same experiment twice, into two stores: live calls to the server, and ``--batch``
through the batch endpoints. Printed: wall time, calls, batches and the requests of each, calls per round,
and how many results, final answers and replies agree.

    python benchmarks/batch.py                    # society 3 x 2, 10 arithmetic questions, greedy
    python benchmarks/batch.py --protocol du-adaptive --questions 6
    python benchmarks/batch.py --control          # two live runs: what differs between any two runs
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' servers

from moot.backends.llama_server import ALIAS, ManagedServer
from moot.models import resolve_model_path
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from tests.helpers import query
from tests.integration.servers import BatchServer


def experiment(url: str, args: argparse.Namespace, batch: bool) -> Any:
    return parse_experiment(
        {
            "name": "batch-bench",
            "tasks": [{"name": "arithmetic", "count": args.questions}],
            "agent": {
                "backend": {"kind": "openai", "base_url": url, "model": ALIAS, "batch_poll_s": 0.5},
                "sampling": {"temperature": args.temperature, "max_tokens": 256},
            },
            "conditions": [{"name": args.protocol, "protocol": args.protocol}],
            "batch": batch,
        }
    )


async def main_async(args: argparse.Namespace) -> None:
    server = ManagedServer(resolve_model_path(args.model), slots=4, n_ctx=4096, n_threads=args.threads)
    await server.start()
    batches = BatchServer(server.base_url, workers=4)
    rows: dict[str, dict[str, Any]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            arms = ("live", "live again") if args.control else ("live", "batch")
            stores = {arm: Path(tmp) / f"{arm.replace(' ', '-')}.sqlite" for arm in arms}
            for arm, store in stores.items():
                before = set(batches.batches)
                start = time.perf_counter()
                outcome = await run_experiment(experiment(batches.url, args, arm == "batch"), store)
                wall = time.perf_counter() - start
                made = [b for b in batches.batches if b not in before]
                rows[arm] = {
                    "wall_s": wall,
                    "calls": outcome.calls,
                    "errors": outcome.errors,
                    "batches": len(made),
                    "per_batch": [batches.batches[b]["request_counts"]["total"] for b in made],
                    "per_round": query(store, "SELECT round, count(*) FROM calls GROUP BY round ORDER BY round"),
                    "results": query(
                        store, "SELECT question_id, final_answer, correct, status FROM results ORDER BY question_id"
                    ),
                    "replies": dict(query(store, "SELECT key, json_extract(reply, '$.samples[0].text') FROM calls")),
                }
                print(arm, {k: v for k, v in rows[arm].items() if k not in ("results", "replies")}, flush=True)
    finally:
        batches.close()
        server.stop()
    live, batch = (rows[arm] for arm in arms)
    same_results = sum(a == b for a, b in zip(live["results"], batch["results"], strict=True))
    shared = live["replies"].keys() & batch["replies"].keys()
    same_replies = sum(live["replies"][k] == batch["replies"][k] for k in shared)
    print()
    print(f"{args.protocol}, {args.questions} arithmetic questions, {args.model}, temperature {args.temperature}")
    print(f"{'':24} {arms[0]:>10} {arms[1]:>10}")
    print(f"{'wall time (s)':24} {live['wall_s']:>10.1f} {batch['wall_s']:>10.1f}")
    print(f"{'calls':24} {live['calls']:>10} {batch['calls']:>10}")
    print(f"{'batches':24} {live['batches']:>10} {batch['batches']:>10}")
    print(f"requests per batch: {batch['per_batch']}")
    print(f"calls per round: {arms[0]} {live['per_round']}, {arms[1]} {batch['per_round']}")
    print(f"results equal (answer, correct, status): {same_results} of {len(live['results'])}")
    print(
        f"calls with the same key (request): {len(shared)} of {len(live['replies'])}; same reply text: {same_replies}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--protocol", default="society")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", default="qwen2.5-0.5b")
    parser.add_argument(
        "--control", action="store_true", help="two live runs instead: how much the server itself varies"
    )
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
