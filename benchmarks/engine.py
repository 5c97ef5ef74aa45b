"""Engine benchmark (run by hand; the table goes into the issue notes).

One workload, Du et al.'s society of mind on arithmetic (3 agents x 2 rounds, max 256 tokens, the
embedded 0.5B model), driven five ways side by side on this machine:

- moot, ``llama-cpp`` backend: llama.cpp in-process, one call at a time (the default before 0.3);
- moot, ``openai`` backend on a llama-server with 4 slots that this script starts;
- a hand-written driver on that server, one request at a time (Du et al.'s loop);
- a hand-written driver on that server, all requests of a round in flight;
- moot, ``local`` backend (the default): the llama-server that moot starts and sizes itself.

Every driver runs in its own process (moot's through its command line, with whatever extras are
installed), one after the other, so they never share the 2 cores. Printed: wall time (process start
to exit, model load included), completion tokens, completion tokens per second, calls, and each
driver's speed relative to moot's old in-process engine.

    python benchmarks/engine.py                        # 12 questions, the 0.5B model
    python benchmarks/engine.py --questions 5 --model qwen2.5-1.5b --demo   # the README demo before/after
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

AGENTS, ROUNDS, MAX_TOKENS, TEMPERATURE = 3, 2, 256, 0.7
SERVER_SLOTS = 4
NEUTRAL = {"top_k": 0, "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0}
MOOT_DRIVERS = {"moot-llama-cpp": "llama-cpp", "moot-openai": "openai", "moot-local": "local"}
SCRIPT_DRIVERS = ("script-sequential", "script-round")
DRIVERS = ("moot-llama-cpp", "moot-openai", "script-sequential", "script-round", "moot-local")


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


async def script_driver(base_url: str, questions: list[tuple[str, str, str | None]], in_flight: bool) -> dict:
    import openai

    from moot.seeds import derive_seed

    client = openai.AsyncOpenAI(base_url=base_url, api_key="no-key", max_retries=0, timeout=600)
    totals = {"calls": 0, "completion_tokens": 0}

    async def ask(messages: list[dict], seed: int) -> str:
        reply = await client.chat.completions.create(
            model="bench",
            messages=messages,  # type: ignore[arg-type]
            temperature=TEMPERATURE,
            top_p=1.0,
            max_tokens=MAX_TOKENS,
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
    from moot.runner.experiment import select_questions
    from moot.tasks import get_task

    task = get_task("arithmetic")
    chosen = select_questions(task, TaskSelection(name="arithmetic", count=count), "tasks.0")
    return [(q.id, q.prompt, task.system_prompt) for q in chosen]


# -- the parent: runs each driver in a child process and prints the table ---------------------------
def child(args: argparse.Namespace) -> None:
    questions = questions_of(args.questions)
    totals = asyncio.run(script_driver(args.base_url, questions, in_flight=args.driver == "script-round"))
    print(json.dumps(totals))


def experiment_file(folder: Path, name: str, args: argparse.Namespace, slots: int) -> Path:
    """The moot-local workload as an experiment file, with the managed server's slots set."""
    path = folder / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\n[[tasks]]\nname = "arithmetic"\ncount = {args.questions}\n'
        f'[agent]\nbackend = {{ kind = "local", model = "{args.model}", slots = {slots} }}\n'
        f"sampling = {{ temperature = {TEMPERATURE}, top_p = 1.0, max_tokens = {MAX_TOKENS} }}\n"
        f'[[conditions]]\nname = "society"\nprotocol = "society"\nagents = {AGENTS}\nrounds = {ROUNDS}\n'
    )
    return path


def run_moot(
    backend: str, args: argparse.Namespace, base_url: str | None, folder: Path, name: str, slots: int | None = None
) -> dict:
    store = folder / f"{name}.sqlite"
    command = [str(Path(sys.executable).with_name("moot")), "run", "--output", str(store)]
    if slots is not None:
        command.append(str(experiment_file(folder, name, args, slots)))
    else:
        command += [
            *("--protocol", "society", "--agents", str(AGENTS), "--rounds", str(ROUNDS)),
            *("--task", "arithmetic", "--questions", str(args.questions), "--max-tokens", str(MAX_TOKENS)),
            *("--backend", backend),
        ]
        if backend == "openai":
            command += ["--base-url", str(base_url), "--model", "bench"]
        else:
            command += ["--model", args.model]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    db = sqlite3.connect(store)
    calls, tokens = db.execute("SELECT COUNT(*), COALESCE(SUM(completion_tokens), 0) FROM calls").fetchone()
    db.close()
    return {"wall_s": wall, "calls": calls, "completion_tokens": tokens}


def run_script(driver: str, args: argparse.Namespace, base_url: str) -> dict:
    command = [sys.executable, __file__, "--child", "--driver", driver, "--base-url", base_url]
    command += ["--questions", str(args.questions)]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--model", default="qwen2.5-0.5b")
    parser.add_argument("--drivers", default=",".join(DRIVERS), help="comma-separated, from: " + ", ".join(DRIVERS))
    parser.add_argument(
        "--local-slots", default="", help="comma-separated slot counts: one more moot-local row for each (e.g. 3,4)"
    )
    parser.add_argument("--server-slots", type=int, default=SERVER_SLOTS, help="slots of the server the scripts use")
    parser.add_argument("--demo", action="store_true", help="also time the README demo (1.5B, 5 questions) both ways")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--driver", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    from moot.models import REGISTRY, assemble, resolve_model_path

    model = assemble(REGISTRY[args.model]) if args.model in REGISTRY else resolve_model_path(args.model)
    drivers = [d.strip() for d in args.drivers.split(",") if d.strip()]
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="moot-engine-") as tmp:
        folder = Path(tmp)
        proc = base_url = None
        if any(d in SCRIPT_DRIVERS or d == "moot-openai" for d in drivers):
            proc, base_url = start_server(model, folder / "server.log", args.server_slots)
        try:
            for slots in [int(n) for n in args.local_slots.split(",") if n.strip()]:
                driver = f"moot-local-{slots}-slots"
                rows[driver] = run_moot("local", args, None, folder, driver, slots=slots)
                print(f"{driver}: {rows[driver]}", file=sys.stderr, flush=True)
            for driver in drivers:
                if driver in MOOT_DRIVERS:
                    rows[driver] = run_moot(MOOT_DRIVERS[driver], args, base_url, folder, driver)
                else:
                    assert base_url is not None
                    rows[driver] = run_script(driver, args, base_url)
                print(f"{driver}: {rows[driver]}", file=sys.stderr, flush=True)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait()
        demo = {}
        if args.demo:
            demo_args = argparse.Namespace(questions=5, model="qwen2.5-1.5b")
            for backend in ("llama-cpp", "local"):
                demo[backend] = run_moot(backend, demo_args, None, folder, f"demo-{backend}")
                print(f"demo {backend}: {demo[backend]}", file=sys.stderr, flush=True)

    base = rows.get("moot-llama-cpp")
    print(
        f"\n{args.questions} arithmetic questions, society {AGENTS} agents x {ROUNDS} rounds, {args.model}, "
        f"max {MAX_TOKENS} tokens, {os.cpu_count()} cores"
    )
    print(f"{'driver':<20}{'wall s':>8}{'calls':>7}{'tokens':>8}{'tok/s':>7}{'vs llama-cpp':>14}")
    for driver, row in rows.items():
        rate = row["completion_tokens"] / row["wall_s"]
        ratio = f"{base['wall_s'] / row['wall_s']:.2f}x" if base else "-"
        print(f"{driver:<20}{row['wall_s']:>8.1f}{row['calls']:>7}{row['completion_tokens']:>8}{rate:>7.1f}{ratio:>14}")
    for backend, row in demo.items():
        print(f"README demo, {backend}: {row['wall_s']:.1f} s ({row['calls']} calls)")


if __name__ == "__main__":
    main()
