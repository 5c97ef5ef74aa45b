"""``moot view``: the live view's JSON endpoints on a real HTTP server on 127.0.0.1, over a real store.

The store is the analysis fixture's run (12 arithmetic questions; single, vote of 3 and society of 3 x 3 rounds;
priced at $0.15 / $0.60 per million tokens), and a slow scripted run that a ``moot run`` subprocess is writing.
Counts are checked by hand: single makes 12 calls (one agent), vote 36 of which its agent-1's round 0 is single's
(24 paid), society 108 of which its round 0 is vote's (72 paid); 108 calls in all.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from moot.analysis.live import LiveRun, LiveServer, ViewError, _eta
from moot.runner.store import RunStore, StoreError
from moot.runner.summary import summarize
from tests.fixtures.analysis_run import MODELS, PAYLOAD, QUESTIONS, experiment, make_run
from tests.fixtures.live import get, serving, slow_run
from tests.helpers import WriteRun


@pytest.fixture(scope="module")
def store(write_run: WriteRun) -> Path:
    return write_run("live", experiment(), MODELS)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_progress_counts_every_condition(store: Path) -> None:
    with serving(store) as server:
        status, p = get(server, "/api/progress")
    assert status == 200
    assert (p["name"], p["status"], p["priced"], p["seeds"]) == ("analysis", "complete", True, 1)
    rows = {c["name"]: c for c in p["conditions"]}
    assert list(rows) == ["single", "vote", "society"]
    assert [(c["planned"], c["done"]) for c in rows.values()] == [(QUESTIONS, QUESTIONS)] * 3
    assert [rows[n]["calls"] for n in rows] == [12, 24, 72]
    assert p["total"]["calls"] == 108 and p["total"]["planned"] == p["total"]["done"] == 36
    # single: 9 of 12 right; Wilson's 95% interval (z = 1.96): (0.75 + z²/24 ± z·sqrt(0.1875/12 + z²/576)) / (1 + z²/12)
    assert rows["single"]["correct"] == 9 and rows["single"]["accuracy"] == 0.75
    assert round(rows["single"]["low"], 4) == 0.4677 and round(rows["single"]["high"], 4) == 0.9111
    assert rows["single"]["interval"] == "Wilson"
    # single's cost: 612 prompt tokens x $0.15 + 242 completion tokens x $0.60 per million
    assert (rows["single"]["prompt_tokens"], rows["single"]["completion_tokens"]) == (612, 242)
    assert rows["single"]["cost"] == pytest.approx(612 * 0.15e-6 + 242 * 0.60e-6)
    # the same as moot's one accounting of a run (moot run's totals, the report)
    with _reader(store) as reader:
        summaries, total = summarize(reader)
    for s in summaries:
        row = rows[s.name]
        assert (row["done"], row["correct"], row["unparsed"], row["errors"]) == (
            s.questions,
            s.correct,
            s.unparsed,
            s.errors,
        )
        assert (row["calls"], row["prompt_tokens"], row["completion_tokens"]) == (
            s.usage.calls,
            s.usage.prompt_tokens,
            s.usage.completion_tokens,
        )
        assert row["cost"] == pytest.approx(s.usage.cost)
        assert row["eta_s"] is None  # no run is going
    assert p["total"]["cost"] == pytest.approx(total.usage.cost)
    assert p["total"]["correct"] == 28  # 9 + 10 + 9


class _reader:
    """A read-only store, closed after the block."""

    def __init__(self, path: Path):
        self.store = RunStore.read(path)

    def __enter__(self) -> RunStore:
        return self.store

    def __exit__(self, *_: object) -> None:
        self.store.close()


def test_results_are_paged_newest_first_filtered_and_searched(store: Path) -> None:
    with serving(store) as server:
        _, first = get(server, "/api/results", limit=10)
        _, last = get(server, "/api/results", limit=10, offset=30)
        _, right = get(server, "/api/results", outcome="right", limit=200)
        _, wrong = get(server, "/api/results", outcome="wrong", condition="vote")
        _, found = get(server, "/api/results", q="2+23*26+12-22*26")
        _, by_id = get(server, "/api/results", q="S0-11", condition="society")
        _, literal = get(server, "/api/results", q="%")
        bad, error = get(server, "/api/results", outcome="maybe")
        too_many, _ = get(server, "/api/results", limit=201)
        pages_of = [get(server, "/api/results", limit=10, offset=k)[1] for k in (0, 10, 20, 30)]
    assert (first["total"], len(first["items"]), len(last["items"])) == (36, 10, 6)
    with _reader(store) as reader:
        every = {(r.condition, r.result.question.id) for r in reader.results()}
    pages = [(i["condition"], i["question_id"]) for page in pages_of for i in page["items"]]
    assert len(pages) == 36 and set(pages) == every  # the pages hold every result once
    # newest first: the result stored last (the largest rowid) opens the first page
    db = sqlite3.connect(store.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
    newest = db.execute("SELECT condition, question_id FROM results ORDER BY rowid DESC LIMIT 1").fetchone()
    db.close()
    assert pages[0] == newest
    assert right["total"] == 28 and all(i["correct"] for i in right["items"])
    assert wrong["total"] == 2 and all(i["condition"] == "vote" and not i["correct"] for i in wrong["items"])
    assert found["total"] == 3 and {i["question_id"] for i in found["items"]} == {"arithmetic-s0-11"}
    assert found["items"][0]["gold"] == "40" and found["items"][0]["prompt"] == "2+23*26+12-22*26"
    assert by_id["total"] == 1 and by_id["items"][0]["condition"] == "society"
    assert literal["total"] == 0  # a % is searched for, not a wildcard
    assert bad == 400 and "outcome 'maybe'" in error["error"]
    assert too_many == 400


def test_a_transcript_shows_each_round_with_what_each_agent_was_shown(store: Path) -> None:
    with serving(store) as server:
        status, t = get(
            server, "/api/transcript", condition="society", task="arithmetic", question_id="arithmetic-s0-11", seed=0
        )
        missing, _ = get(server, "/api/transcript", condition="society", task="arithmetic", question_id="x", seed=0)
    assert status == 200 and missing == 404
    assert (t["prompt"], t["gold"], t["final_answer"], t["correct"]) == ("2+23*26+12-22*26", "40", "40", True)
    assert [r["index"] for r in t["rounds"]] == [0, 1, 2]
    assert all([x["agent"] for x in r["turns"]] == ["agent-1", "agent-2", "agent-3"] for r in t["rounds"])
    first = t["rounds"][0]["turns"][0]
    assert [role for role, _ in first["shown_new"]] == ["system", "user"]
    assert PAYLOAD in first["text"]  # the reply as stored: the page shows it as text
    later = t["rounds"][1]["turns"][0]
    # round 1: shown the peers' round-0 replies (its own reply is its context, not new)
    assert later["shown_count"] == 4 and len(later["shown_new"]) == 1
    assert "So the answer is" in later["shown_new"][0][1] and later["shown_new"][0][0] == "user"


def test_the_store_is_never_written(store: Path) -> None:
    before = sha256(store)
    beside = sorted(p.name for p in store.parent.iterdir())
    with serving(store) as server:
        for path in ("/", "/api/progress", "/api/results", "/api/progress"):
            request = urllib.request.urlopen(server.url + path.lstrip("/"), timeout=30)
            request.read()
        get(server, "/api/transcript", condition="single", task="arithmetic", question_id="arithmetic-s0-0", seed=0)
    assert sha256(store) == before
    assert sorted(p.name for p in store.parent.iterdir()) == beside  # no -wal, -shm or lock file either


def test_the_page_allows_only_its_own_script(store: Path) -> None:
    with serving(store) as server:
        with urllib.request.urlopen(server.url, timeout=30) as response:
            policy = response.headers["Content-Security-Policy"]
            page = response.read().decode()
        request = urllib.request.Request(server.url + "api/progress", headers={"Host": f"evil.example:{server.port}"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
    assert "script-src 'sha256-" in policy and "connect-src 'self'" in policy and "default-src 'none'" in policy
    assert "innerHTML" not in page and "textContent" in page
    assert refused.value.code == 403  # a page of another host (DNS rebinding) reads nothing


def test_a_running_store_shows_progress_rising(tmp_path: Path) -> None:
    with slow_run(tmp_path) as (path, process), serving(path) as server:
        _, p = get(server, "/api/progress")
        assert p["status"] == "running" and p["session"]["running"]
        assert p["total"]["planned"] == 12  # 6 questions x 2 conditions
        done = p["total"]["done"]
        deadline = time.monotonic() + 60
        while get(server, "/api/progress")[1]["total"]["done"] <= done:
            assert time.monotonic() < deadline, "no result was stored in 60 s"
            time.sleep(0.2)
        _, later = get(server, "/api/progress")
        assert later["total"]["eta_s"] is not None and later["total"]["eta_s"] > 0
        assert process.wait(120) == 0
        deadline = time.monotonic() + 10
        while (final := get(server, "/api/progress")[1])["status"] == "running":  # the view opens it again
            assert time.monotonic() < deadline
            time.sleep(0.2)
    assert final["status"] == "complete" and final["total"]["done"] == 12
    assert [c["done"] for c in final["conditions"]] == [6, 6]


def test_eta_is_the_questions_left_at_this_sessions_rate() -> None:
    assert _eta(10, 5, 20.0) == 40.0  # 5 results in 20 s: 4 s each
    assert _eta(0, 5, 20.0) == 0.0
    assert _eta(10, 0, 20.0) is None


def moot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "moot", *args], capture_output=True, text=True, timeout=120)


def test_a_path_that_is_not_a_store_is_one_line(tmp_path: Path) -> None:
    missing = moot("view", str(tmp_path / "nothing.sqlite"))
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == [f"moot: error: no run store at {tmp_path / 'nothing.sqlite'}"]
    text = tmp_path / "notes.txt"
    text.write_text("not a store\n")
    other = moot("view", str(text))
    assert other.returncode == 2 and len(other.stderr.splitlines()) == 1
    assert "is not a moot run store: it is not an SQLite database" in other.stderr
    with pytest.raises(StoreError):
        LiveRun(text)
    for folder in (tmp_path, Path(".")):  # "." has no name of its own: it once raised a ValueError's traceback
        shown = moot("view", str(folder))
        assert shown.returncode == 2
        assert shown.stderr.splitlines() == [
            f"moot: error: {folder} is a folder, not a run store (a .sqlite file moot run wrote)"
        ]


def test_a_port_in_use_is_one_line(store: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = moot("view", str(store), "--port", str(port))
        live = LiveRun(store)
        try:
            with pytest.raises(ViewError, match=f"port {port} is in use"):
                LiveServer(live, port)
        finally:
            live.close()
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"moot: error: port {port} is in use; choose another with --port or leave it out"
    ]


def test_ctrl_c_stops_it_cleanly(store: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "moot", "view", str(store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a suite started in the background (nohup, a script's job) passes SIGINT on ignored, and Python then
        # never raises KeyboardInterrupt: Ctrl-C reaches moot view as it does from a terminal
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("moot view: http://127.0.0.1:") and "Ctrl-C stops it" in line
        url = line.split()[2]
        with urllib.request.urlopen(url + "api/progress", timeout=30) as response:
            assert response.status == 200
        os.kill(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert out.strip() == "moot view: stopped" and err == ""


def test_repeated_seeds_take_the_question_as_the_unit(tmp_path: Path) -> None:
    path = make_run(
        tmp_path / "seeds.sqlite", questions=4, conditions=[{"name": "single", "protocol": "single"}], seeds=[0, 1]
    )
    with serving(path) as server:
        _, p = get(server, "/api/progress")
    (row,) = p["conditions"]
    assert (row["planned"], row["done"], row["interval"]) == (8, 8, "cluster bootstrap")
    with _reader(path) as reader:
        by_question: dict[str, list[bool]] = {}
        for r in reader.results():
            by_question.setdefault(r.result.question.id, []).append(r.result.correct)
    means = [sum(v) / len(v) for v in by_question.values()]
    assert len(means) == 4 and row["accuracy"] == pytest.approx(sum(means) / 4)
    assert row["low"] <= row["accuracy"] <= row["high"]
