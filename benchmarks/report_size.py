"""Report size and memory of a large run (run by hand; numbers go into the issue notes).

Builds a synthetic store of QUESTIONS arithmetic questions under two conditions (single, and society
with 3 agents and 2 rounds): a real scripted run of TEMPLATE questions, whose questions, results,
turns and calls are then copied under new question ids straight in SQLite (a real run of 20,000
questions takes most of an hour here). Then, in a child process (so that its peak RSS is the
report's alone), builds the report and writes its HTML, and prints as JSON: the report page's
size, the transcript pages' count and largest size, the wall times and the peak memory
(the process's peak RSS, and with ``--tracemalloc`` the peak of Python's allocations).

    python benchmarks/report_size.py                     # 20,000 questions, 40,000 transcripts
    python benchmarks/report_size.py --questions 2000 --tracemalloc
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

CONDITIONS = [
    {"name": "single", "protocol": "single"},
    {"name": "society", "protocol": "society", "agents": 3, "rounds": 2},
]
TEMPLATE = 50  # questions run for real; the others are copies of them


def template_run(path: Path, questions: int) -> None:
    from moot.runner.config_files import parse_experiment
    from moot.runner.experiment import run_experiment

    config = parse_experiment(
        {
            "name": "report-size",
            "tasks": [{"name": "arithmetic", "count": questions, "seed": 0}],
            "agent": {"backend": {"kind": "scripted", "model": "numbers"}},
            "conditions": CONDITIONS,
        }
    )
    asyncio.run(run_experiment(config, path))  # type: ignore[arg-type]


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def grow(path: Path, questions: int) -> None:
    """Copy the template's questions (with their results, turns and calls) under new ids up to ``questions``:
    the template's rows are read once, then written again with the question id (and the call keys, which
    turns point to) made new for each copy, in one transaction."""
    db = sqlite3.connect(path)
    try:
        ids = [q for (q,) in db.execute("SELECT question_id FROM questions ORDER BY rowid")]
        with db:
            for table in ("questions", "results", "turns", "calls"):
                columns = _columns(db, table)
                rows: dict[str, list[tuple[object, ...]]] = {}
                for row in db.execute(f"SELECT {', '.join(columns)} FROM {table}"):
                    rows.setdefault(row[columns.index("question_id")], []).append(row)
                insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
                for i in range(len(ids), questions):
                    old = ids[i % len(ids)]
                    new = f"{old}-copy-{i}"
                    db.executemany(insert, (_renamed(columns, row, table, new) for row in rows.get(old, [])))
    finally:
        db.close()


def _renamed(columns: list[str], row: tuple[object, ...], table: str, new: str) -> tuple[object, ...]:
    out = list(row)
    for i, c in enumerate(columns):
        if c == "question_id":
            out[i] = new
        elif c in ("key", "call_key") and out[i]:
            out[i] = f"{out[i]}:{new}"
        elif c == "prompt" and table == "questions":
            out[i] = f"{out[i]} (copy {new})"
    return tuple(out)


def peak_rss_mb() -> float:
    """This process's peak resident memory: VmHWM of /proc/self/status on Linux (``ru_maxrss`` would
    count the parent's peak, inherited across fork and exec), else ``resource.getrusage``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def measure(path: Path, out: Path, page_size: int, trace: bool) -> dict[str, object]:
    """Build the report of ``path`` and write its HTML to ``out`` (in this process: its peak is measured)."""
    import tracemalloc

    if trace:
        tracemalloc.start()
    from moot.analysis import build_report
    from moot.analysis.html import pages_folder, write_html

    start = time.perf_counter()
    report = build_report(path, resamples=1000)
    built = time.perf_counter()
    write_html(report, out, page_size=page_size)
    written = time.perf_counter()
    pages = sorted(pages_folder(out).glob("transcripts-*.html")) if pages_folder(out).is_dir() else []
    sizes = [p.stat().st_size for p in pages]
    result: dict[str, object] = {
        "transcripts": len(report.transcripts),
        "report_page_mb": round(out.stat().st_size / 1e6, 2),
        "transcript_pages": len(pages),
        "largest_transcript_page_mb": round(max(sizes, default=0) / 1e6, 2),
        "all_pages_mb": round((out.stat().st_size + sum(sizes)) / 1e6, 1),
        "build_s": round(built - start, 1),
        "write_html_s": round(written - built, 1),
        "peak_rss_mb": peak_rss_mb(),
    }
    if trace:
        result["tracemalloc_peak_mb"] = round(tracemalloc.get_traced_memory()[1] / 1e6, 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=20_000)
    parser.add_argument("--page-size", type=int, default=500, help="transcripts per page (moot's default: 500)")
    parser.add_argument("--tracemalloc", action="store_true", help="also trace Python's allocations (slower)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.child.with_suffix(".report.html"), args.page_size, args.tracemalloc)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "large.sqlite"
        start = time.perf_counter()
        template_run(path, min(TEMPLATE, args.questions))
        grow(path, args.questions)
        made = time.perf_counter() - start
        command = [sys.executable, __file__, "--child", str(path), "--page-size", str(args.page_size)]
        child = subprocess.run(
            command + (["--tracemalloc"] if args.tracemalloc else []), capture_output=True, text=True
        )
        if child.returncode != 0:
            sys.exit(child.stderr)
        report = {
            "questions": args.questions,
            "conditions": len(CONDITIONS),
            "store_mb": round(path.stat().st_size / 1e6, 1),
            "store_s": round(made, 1),
        }
        report |= json.loads(child.stdout.strip().splitlines()[-1])
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
