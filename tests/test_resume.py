"""Resume after SIGKILL: a real `moot run` subprocess killed at several points, then rerun, ends with
exactly the results of an uninterrupted run (scripted backend with a delay, so kills land mid-run)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

EXPERIMENT = """
name = "resume"
seeds = [0, 1]
concurrency = 2

[[tasks]]
name = "arithmetic"
count = 8

[agent]
backend = { kind = "scripted", model = "numbers", delay_s = 0.05 }

[[conditions]]
name = "single"
protocol = "single"

[[conditions]]
name = "vote"
protocol = "vote"

[[conditions]]
name = "society"
protocol = "society"
rounds = 3
"""
UNITS = 8 * 2 * 3


def start(config: Path, output: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "moot", "run", str(config), "--output", str(output)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def table(path: Path, name: str) -> list[Any]:
    db = sqlite3.connect(path)
    try:
        cursor = db.execute(f"SELECT * FROM {name}")
        columns = [c[0] for c in cursor.description]
        rows = [dict(zip(columns, r)) for r in cursor]
    finally:
        db.close()
    return sorted(({k: v for k, v in r.items() if k != "session"} for r in rows), key=json.dumps)


def count_results(path: Path) -> int:
    try:
        db = sqlite3.connect(path)
        try:
            return int(db.execute("SELECT COUNT(*) FROM results").fetchone()[0])
        finally:
            db.close()
    except sqlite3.DatabaseError:
        return 0


def test_killed_runs_resume_to_identical_results(tmp_path: Path) -> None:
    config = tmp_path / "exp.toml"
    config.write_text(EXPERIMENT)
    reference = tmp_path / "reference.sqlite"
    done = subprocess.run(
        [sys.executable, "-m", "moot", "run", str(config), "--output", str(reference)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr

    killed = tmp_path / "killed.sqlite"
    progress = []
    # kill points: during start-up (store creation), then after 1, 4 and 9 more stored questions
    for more in (0, 1, 4, 9):
        before = count_results(killed) if killed.exists() else 0
        proc = start(config, killed)
        if more == 0:
            time.sleep(0.25)
        else:
            deadline = time.monotonic() + 60
            while count_results(killed) < before + more and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        progress.append(count_results(killed) if killed.exists() else 0)
    print("stored results at each kill:", progress)
    assert progress[-1] < UNITS, "the last kill should land before the run ends"
    assert progress == sorted(progress) and progress[1] >= 1

    final = subprocess.run(
        [sys.executable, "-m", "moot", "run", str(config), "--output", str(killed)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert final.returncode == 0, final.stderr
    assert count_results(killed) == UNITS
    assert table(killed, "results") == table(reference, "results")
    assert table(killed, "turns") == table(reference, "turns")
    calls = table(killed, "calls")
    assert len({c["key"] for c in calls}) == len(calls)
    assert {c["key"] for c in calls} == {c["key"] for c in table(reference, "calls")}
    sessions = table(killed, "sessions")
    assert sessions[-1]["status"] == "complete" and len(sessions) >= 2
    assert os.path.getsize(killed) > 0


def test_sigterm_stops_a_run_as_ctrl_c_does(tmp_path: Path) -> None:
    """`kill PID`: moot ends with status 130 and says so, the store records the run and its session as
    interrupted (not left "running"), and rerunning finishes it."""
    config = tmp_path / "exp.toml"
    config.write_text(EXPERIMENT)
    path = tmp_path / "run.sqlite"
    proc = start(config, path)
    deadline = time.monotonic() + 60
    while count_results(path) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "moot: interrupted" in stderr.decode()
    db = sqlite3.connect(path)
    try:
        status = db.execute("SELECT value FROM meta WHERE key = 'status'").fetchone()[0]
        sessions = [row[0] for row in db.execute("SELECT status FROM sessions")]
    finally:
        db.close()
    assert json.loads(status) == "interrupted" and sessions == ["interrupted"]
    assert 2 <= count_results(path) < UNITS
    final = subprocess.run(
        [sys.executable, "-m", "moot", "run", str(config), "--output", str(path)], capture_output=True, timeout=300
    )
    assert final.returncode == 0 and count_results(path) == UNITS
