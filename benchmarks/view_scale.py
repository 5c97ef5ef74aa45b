"""How fast `moot view` answers on a large store (run by hand; the numbers go into the issue notes).

Builds a store of QUESTIONS arithmetic questions under two conditions (single, and society with 3 agents and 2
rounds) as benchmarks/report_size.py does: a real scripted run of 50 questions whose rows are copied under new
question ids straight in SQLite; its experiment is then made to plan QUESTIONS questions and priced, so that the
view reads it as a run that planned them all and computes a cost. Then serves the live view on 127.0.0.1 and times
each JSON endpoint over HTTP, as the page calls them (median and slowest of REPEAT requests; the first progress
request apart, as it sums every stored call once; later polls read only the calls added since).

    python benchmarks/view_scale.py                   # 20,000 questions, 40,000 results
    python benchmarks/view_scale.py --questions 2000 --repeat 10
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_size import TEMPLATE, grow, template_run  # beside this file


def plan(path: Path, questions: int) -> None:
    """Make the store's experiment plan ``questions`` questions and price every model it called."""
    db = sqlite3.connect(path)
    try:
        with db:
            config = json.loads(db.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
            config["tasks"][0]["count"] = questions
            models = [m for (m,) in db.execute("SELECT DISTINCT model_name FROM calls")]
            config["prices"] = {m: {"prompt": 0.15, "completion": 0.6} for m in models}
            db.execute("UPDATE meta SET value = ? WHERE key = 'config'", (json.dumps(config),))
    finally:
        db.close()


def timed(url: str, repeat: int) -> dict[str, float]:
    """Median and slowest wall time (ms) of ``repeat`` GETs of ``url``, and the body's size (kB)."""
    times, size = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        with urllib.request.urlopen(url, timeout=120) as response:
            size = len(response.read())
        times.append((time.perf_counter() - start) * 1000)
    return {"median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1), "kB": round(size / 1e3, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    from moot.analysis.live import LiveRun, LiveServer

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "large.sqlite"
        start = time.perf_counter()
        template_run(path, min(TEMPLATE, args.questions))
        grow(path, args.questions)
        plan(path, args.questions)
        made = time.perf_counter() - start
        live = LiveRun(path)
        server = LiveServer(live, 0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        base = server.url
        try:
            first = timed(base + "api/progress", 1)
            progress = json.loads(urllib.request.urlopen(base + "api/progress", timeout=120).read())
            some = json.loads(
                urllib.request.urlopen(base + f"api/results?limit=1&offset={args.questions // 2}", timeout=120).read()
            )
            item = some["items"][0]
            one = {k: item[k] for k in ("condition", "task", "question_id", "seed")}
            endpoints = {
                "page": "",
                "progress (a poll)": "api/progress",
                "results, first page": "api/results?limit=50",
                "results, last page": f"api/results?limit=50&offset={2 * args.questions - 50}",
                "results, one condition, wrong": "api/results?limit=50&condition=society&outcome=wrong",
                "results, searched (question text)": "api/results?limit=50&q=" + urllib.parse.quote("copy-1999"),
                "results, searched, no match": "api/results?limit=50&q=nothing-matches-this",
                "transcript (society, 2 rounds)": "api/transcript?" + urllib.parse.urlencode(one),
            }
            times = {"progress, first request (sums every call)": first}
            times |= {name: timed(base + url, args.repeat) for name, url in endpoints.items()}
        finally:
            server.shutdown()
            server.server_close()
            live.close()
        report = {
            "questions": args.questions,
            "results": progress["total"]["done"],
            "calls": progress["total"]["calls"],
            "store_mb": round(path.stat().st_size / 1e6, 1),
            "store_s": round(made, 1),
            "endpoints": times,
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
