"""A mixed-fault run (run by hand; the counts go into the issue notes).

A real llama-server serving the 0.5B test model, behind the test suite's fault proxy
(tests.integration.servers.FaultProxy), which spoils a share of the chat-completion requests
(evenly spread: at 20 %, every fifth) with every fault kind in turn: a truncated body, invalid UTF-8, a 200 text/html page, wrong-typed
fields (choices, usage, content), a null content, a 401 that echoes the API key, HTTP 500, 503 and
429, a dropped connection. A society debate (2 agents x 2 rounds) on arithmetic questions runs
through it to the end; then a `--retry-errors` rerun without faults. Printed: the faults injected,
requests, calls, retries, call errors, results by status, and whether the key reached the store.

    python benchmarks/faults.py                       # 15 questions, 20 % of requests faulty
    python benchmarks/faults.py --questions 10 --rate 0.2 --seed 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' fault proxy

from moot.models import REGISTRY, TEST_MODEL, assemble
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from moot.runner.session import RunOptions
from tests.integration.servers import (
    FAULT_KINDS,
    SERVER_KEY,
    SERVER_KEY_ENV,
    FaultProxy,
    mixed_faults,
    start_llama_server,
    stop_server,
)


def counts(path: Path) -> dict[str, object]:
    db = sqlite3.connect(path)
    try:
        statuses = Counter(status for (status,) in db.execute("SELECT status FROM results"))
        errors = [e for (e,) in db.execute("SELECT error FROM results WHERE status = 'error'")]
        return {
            "results": sum(statuses.values()),
            "by_status": dict(sorted(statuses.items())),
            "correct": db.execute("SELECT COUNT(*) FROM results WHERE correct").fetchone()[0],
            "stored_calls": db.execute("SELECT COUNT(*) FROM calls").fetchone()[0],
            "call_errors": db.execute("SELECT COUNT(*) FROM call_errors").fetchone()[0],
            "status": json.loads(db.execute("SELECT value FROM meta WHERE key = 'status'").fetchone()[0]),
            "question_errors": errors,
        }
    finally:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=15)
    parser.add_argument("--rate", type=float, default=0.2, help="share of chat-completion requests spoilt")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-retries", type=int, default=2)
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="moot-faults-"))
    os.environ[SERVER_KEY_ENV] = SERVER_KEY
    # one thread, so that moot's own work is not starved
    server, upstream = start_llama_server(assemble(REGISTRY[TEST_MODEL]), folder / "llama-server.log", threads=1)
    proxy = FaultProxy(upstream, mixed_faults(args.rate, 100_000, args.seed))
    try:
        config = parse_experiment(
            {
                "name": "faults",
                "tasks": [{"name": "arithmetic", "count": args.questions}],
                "agent": {
                    "backend": {
                        "kind": "openai",
                        "base_url": proxy.url,
                        "model": "qwen-test",
                        "api_key_env": SERVER_KEY_ENV,
                        "max_retries": args.max_retries,
                    },
                    "sampling": {"temperature": 0.7, "max_tokens": 48},
                },
                "conditions": [{"name": "society", "protocol": "society", "agents": 2, "rounds": 2}],
            }
        )
        path = folder / "run.sqlite"
        start = time.monotonic()
        outcome = asyncio.run(run_experiment(config, path))
        wall = time.monotonic() - start
        first = counts(path)
        requests = proxy.seen
        injected = sum(proxy.injected.values())
        report = {
            "questions": args.questions,
            "fault_kinds": ", ".join(str(k) for k in FAULT_KINDS),
            "every_kind_injected": set(proxy.injected) == {str(k) for k in FAULT_KINDS},
            "requests": requests,
            "faults_injected": injected,
            "fault_rate": round(injected / requests, 3) if requests else 0.0,
            "faults_by_kind": dict(sorted(proxy.injected.items())),
            "calls_made": outcome.calls,
            "failed_calls": outcome.errors,
            "retries": requests - first["stored_calls"] - first["call_errors"],  # type: ignore[operator]
            **first,
            "wall_s": round(wall, 1),
            "key_in_store": SERVER_KEY.encode() in path.read_bytes(),
        }
        print(json.dumps(report, indent=2))

        proxy.faults = []
        seen_before = proxy.seen
        retry = asyncio.run(run_experiment(config, path, RunOptions(retry_errors=True)))
        after = counts(path)
        print(
            json.dumps(
                {
                    "retry_errors_rerun": {
                        "questions_rerun": retry.ran,
                        "calls_made": retry.calls,
                        "replayed": retry.replayed,
                        "requests": proxy.seen - seen_before,
                        "by_status": after["by_status"],
                        "status": after["status"],
                    }
                },
                indent=2,
            )
        )
    finally:
        proxy.close()
        stop_server(server)
    print(f"store and server log in {folder}")


if __name__ == "__main__":
    main()
