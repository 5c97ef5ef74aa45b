"""Prefix affinity benchmark (run by hand; the table goes into the issue notes).

Two llama-servers on this machine serve the same model; moot's ``openai`` backend lists both as
endpoints and runs Du et al.'s society (3 agents x 3 rounds) on arithmetic, once per routing:

- ``least-loaded``: every request to the endpoint with the least outstanding work;
- ``affinity``: an agent's next turn to the endpoint that answered its last one (moot's default).

Each arm starts two fresh servers (no cache carried over from the other arm), with ``--metrics``, and
reads from each server how many prompt tokens it actually evaluated (``llamacpp:prompt_tokens_total``:
tokens it did not find in its cache) against the prompt tokens the run sent (the calls' usage). Printed per
arm: wall time, calls, prompt tokens sent and evaluated, the share served from cache, the turns after the
first that reached the endpoint of the agent's previous turn, and the ratios affinity / least-loaded.

    python benchmarks/affinity.py                       # 6 questions, the 0.5B model, 2 slots a server
    python benchmarks/affinity.py --questions 12 --slots 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sqlite3
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from moot.backends.llama_server import ALIAS, ManagedServer
from moot.models import resolve_model_path
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment

ROUTINGS = ("least-loaded", "affinity")
METRIC = re.compile(r"^llamacpp:(prompt_tokens_total|tokens_predicted_total)\s+([0-9.e+]+)$", re.MULTILINE)


def metrics(server: ManagedServer) -> dict[str, float]:
    """The server's counters (its /metrics, beside /v1)."""
    url = server.base_url.removesuffix("/v1") + "/metrics"
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    return {name: float(value) for name, value in METRIC.findall(text)}


def experiment(urls: list[str], routing: str, questions: int, rounds: int, slots: int) -> Any:
    return parse_experiment(
        {
            "name": f"affinity-{routing}",
            "tasks": [{"name": "arithmetic", "count": questions}],
            "agent": {
                "backend": {
                    "kind": "openai",
                    "base_url": urls,
                    "model": ALIAS,
                    "routing": routing,
                    "max_concurrency": slots,
                },
                "sampling": {"temperature": 1.0, "max_tokens": 256},
            },
            "conditions": [{"name": "society", "protocol": "society", "agents": 3, "rounds": rounds}],
        }
    )


def stays(store: Path) -> tuple[int, int]:
    """Turns after an agent's first that reached the endpoint of its previous turn, and all such turns."""
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT question_id, seed, agent, round, reply FROM calls ORDER BY round").fetchall()
    last: dict[tuple[str, int, str], str] = {}
    stayed = later = 0
    for question, seed, agent, _, reply in rows:
        endpoint = json.loads(reply)["samples"][0]["endpoint"]
        key = (question, seed, agent)
        if key in last:
            later += 1
            stayed += endpoint == last[key]
        last[key] = endpoint
    return stayed, later


def sent_prompt_tokens(store: Path) -> int:
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        return int(db.execute("SELECT coalesce(sum(prompt_tokens), 0) FROM calls").fetchone()[0])


async def arm(routing: str, args: argparse.Namespace, folder: Path) -> dict[str, float]:
    model = resolve_model_path(args.model)
    servers = [
        ManagedServer(model, slots=args.slots, n_ctx=4096, n_threads=args.threads, extra_args=("--metrics",))
        for _ in range(2)
    ]
    try:
        for server in servers:
            await server.start()
        config = experiment([s.base_url for s in servers], routing, args.questions, args.rounds, args.slots)
        store = folder / f"{routing}.sqlite"
        start = time.perf_counter()
        outcome = await run_experiment(config, store)
        wall = time.perf_counter() - start
        evaluated = sum(metrics(s).get("prompt_tokens_total", 0.0) for s in servers)
        generated = sum(metrics(s).get("tokens_predicted_total", 0.0) for s in servers)
    finally:
        for server in servers:
            server.stop()
    stayed, later = stays(store)
    sent = sent_prompt_tokens(store)
    return {
        "wall_s": wall,
        "calls": outcome.calls,
        "errors": outcome.errors,
        "sent": sent,
        "evaluated": evaluated,
        "generated": generated,
        "cached": 1 - evaluated / sent if sent else float("nan"),
        "stayed": stayed / later if later else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--slots", type=int, default=2, help="slots per server (and its max_concurrency)")
    parser.add_argument("--threads", type=int, default=1, help="threads per server (2 servers share the cores)")
    parser.add_argument("--model", default="qwen2.5-0.5b")
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for routing in ROUTINGS:
            results[routing] = asyncio.run(arm(routing, args, Path(tmp)))
            print(routing, json.dumps(results[routing]), flush=True)
    base, new = results["least-loaded"], results["affinity"]
    print()
    print(
        f"society 3 x {args.rounds}, {args.questions} arithmetic questions, {args.model}, 2 servers x {args.slots} slots"
    )
    print(f"{'':26} {'least-loaded':>14} {'affinity':>14} {'ratio':>8}")
    rows = [
        ("wall time (s)", "wall_s", "{:.1f}"),
        ("prompt tokens sent", "sent", "{:.0f}"),
        ("prompt tokens evaluated", "evaluated", "{:.0f}"),
        ("completion tokens", "generated", "{:.0f}"),
        ("share from cache", "cached", "{:.3f}"),
        ("turns on the last endpoint", "stayed", "{:.3f}"),
        ("question errors", "errors", "{:.0f}"),
    ]
    for label, key, form in rows:
        ratio = new[key] / base[key] if base[key] else float("nan")
        print(f"{label:26} {form.format(base[key]):>14} {form.format(new[key]):>14} {ratio:>8.3f}")


if __name__ == "__main__":
    main()
