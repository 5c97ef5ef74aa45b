"""Stores are never overwritten, rewritten or shared (issue 14, items 1-4 and 11's store faults).

Output files never replace a run store or a file moot did not write; ``--no-cache`` adds calls beside
the stored ones; a run holds its store exclusively and a killed run's store reads as interrupted;
every store fault is one ``moot: error:`` line; reading a store changes nothing on disk.
"""

from __future__ import annotations

import hashlib
import importlib
import itertools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moot.backends.base import GenerationRequest
from moot.backends.scripted import ScriptedBackend, seeded_numbers
from moot.runner.config_files import parse_experiment
from moot.runner.store import RunStore, lock_path
from tests.helpers import WriteRun, arithmetic_experiment, run

evaluate_module = importlib.import_module("moot.runner.evaluate")

THREE: list[dict[str, Any]] = [
    {"name": "single", "protocol": "single"},
    {"name": "vote", "protocol": "vote", "agents": 3},
    {"name": "society", "protocol": "society", "agents": 3, "rounds": 3},
]


def experiment(count: int = 4, delay_s: float = 0.0, **extra: Any) -> Any:
    agent = {"backend": {"kind": "scripted", "model": "numbers", "delay_s": delay_s}}
    return parse_experiment(arithmetic_experiment("t", THREE, count, seeds=[0], agent=agent, **extra))


def rows(path: Path, table: str, where: str = "") -> list[dict[str, Any]]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cursor = db.execute(f"SELECT * FROM {table} {where}")
        names = [c[0] for c in cursor.description]
        return [dict(zip(names, r)) for r in cursor]
    finally:
        db.close()


# root ignores file permissions: a run bound by them drops root's capabilities first
UNPRIVILEGED = ["setpriv", "--inh-caps=-all", "--bounding-set=-all"] if os.geteuid() == 0 else []


def moot(*args: object, cwd: Path | None = None, unprivileged: bool = False) -> subprocess.CompletedProcess[str]:
    """``moot ARGS`` in a subprocess (bound by file permissions, even as root, when ``unprivileged``)."""
    env = os.environ | {"MPLCONFIGDIR": tempfile.mkdtemp(), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [*(UNPRIVILEGED if unprivileged else []), sys.executable, "-m", "moot", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
        env=env,
    )


def one_error_line(result: subprocess.CompletedProcess[str], *parts: str) -> str:
    """The single ``moot: error:`` line of a refused command (exit 2), holding every one of ``parts``."""
    assert result.returncode == 2, result.stderr + result.stdout
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("moot: error: "), result.stderr
    for part in parts:
        assert part in lines[0], lines[0]
    return lines[0]


def snapshot(folder: Path) -> dict[str, str]:
    """Every file in ``folder`` (recursively) and the sha256 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def finished(write_run: WriteRun) -> Path:
    """A finished run of three conditions on two questions (copy it before changing it)."""
    return write_run("finished", experiment(count=2))


def copy_of(store: Path, folder: Path, name: str = "run.sqlite") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    target.write_bytes(store.read_bytes())
    return target


# -- 1. outputs never replace a store or a file moot did not write ---------------------------------
@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["export", "{run}", "--out", "{run}"], "{run} is the run being read"),
        (["export", "{run}", "--out", "{run}", "--force"], "{run} is the run being read"),
        (["export", "{run}", "--format", "csv", "--out", "{other}", "--force"], "{other} is a run store"),
        (["report", "{run}", "--html", "{run}"], "{run} is the run being read"),
        (["report", "{run}", "--html", "{run}", "--force"], "{run} is the run being read"),
        (["report", "{run}", "--no-html", "--markdown", "{run}", "--force"], "{run} is the run being read"),
        (["report", "{run}", "--html", "{other}", "--force"], "{other} is a run store"),
        (["theory", "plot", "--output", "{run}", "--force"], "{run} is a run store"),
        (["export", "{run}", "--out", "{run}-wal", "--force"], "{run}-wal belongs to the run store beside it"),
    ],
)
def test_no_command_writes_over_a_run_store_even_with_force(
    finished: Path, tmp_path: Path, args: list[str], why: str
) -> None:
    path, other = copy_of(finished, tmp_path), copy_of(finished, tmp_path, "other.sqlite")
    before = snapshot(tmp_path)
    result = moot(*(a.format(run=path, other=other) for a in args), cwd=tmp_path)
    one_error_line(result, why.format(run=path, other=other), "moot never writes over a run store, even with --force")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("args", "default"),
    [
        (["export", "{run}", "--out", "{file}"], "run.results.jsonl"),
        (["report", "{run}", "-q", "--html", "{file}"], "run.report.html"),
        (["report", "{run}", "-q", "--no-html", "--markdown", "{file}"], None),
    ],
)
def test_an_existing_file_is_replaced_only_with_force(
    finished: Path, tmp_path: Path, args: list[str], default: str | None
) -> None:
    path = copy_of(finished, tmp_path)
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes")
    command = [a.format(run=path, file=mine) for a in args]
    one_error_line(moot(*command, cwd=tmp_path), f"{mine} exists and moot did not write it there; pass --force")
    assert mine.read_text() == "my notes"
    assert moot(*command, "--force", cwd=tmp_path).returncode == 0
    assert mine.read_text() != "my notes" and mine.stat().st_size > 0
    if default is not None:  # moot's own default name is replaced without --force
        plain = [a for a in command if a not in ("--out", "--html", str(mine))]
        assert moot(*plain, cwd=tmp_path).returncode == 0
        first = (tmp_path / default).read_bytes()
        assert moot(*plain, cwd=tmp_path).returncode == 0
        assert (tmp_path / default).read_bytes() == first


def test_theory_plot_refuses_an_existing_file_before_any_work(tmp_path: Path) -> None:
    picture = tmp_path / "mine.png"
    picture.write_bytes(b"not moot's")
    started = time.monotonic()
    one_error_line(moot("theory", "plot", "--output", picture, cwd=tmp_path), "exists", "--force")
    assert picture.read_bytes() == b"not moot's" and time.monotonic() - started < 60


# -- 2 and 3. --no-cache adds calls beside the stored ones, and shares round 0 without a crash -------
def test_no_cache_on_an_unfinished_store_rewrites_no_stored_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model whose every reply differs (temperature > 0): the fresh calls of the unfinished
    condition (vote, whose round 0 is society's) are stored beside society's, which keep theirs."""
    counter = itertools.count()

    def varying(request: GenerationRequest, index: int) -> str:
        n = next(counter)
        return seeded_numbers(request, index) + " " + "".join(chr(ord("a") + int(d)) for d in str(n))

    monkeypatch.setattr(evaluate_module, "make_backend", lambda cfg: ScriptedBackend(varying, "scripted:numbers"))
    path = tmp_path / "run.sqlite"
    config = experiment()
    run(config, path)
    before = {c["key"]: c for c in rows(path, "calls")}
    db = sqlite3.connect(path)
    db.execute("DELETE FROM results WHERE condition = 'vote'")
    db.execute("DELETE FROM turns WHERE condition = 'vote'")
    db.commit()
    db.close()

    fresh = run(config, path, use_cache=False)
    assert fresh.ran == 4 and fresh.calls == 4 * 3
    calls = {c["key"]: c for c in rows(path, "calls")}
    assert {k: calls[k] for k in before} == before  # nothing stored was rewritten
    assert len(calls) == len(before) + 4 * 3  # the fresh calls, beside
    for turn in rows(path, "turns"):  # every turn points to the call it used
        reply = json.loads(calls[turn["call_key"]]["reply"])
        assert reply["samples"][0]["text"] == turn["text"]
    vote = rows(path, "turns", "WHERE condition = 'vote'")
    assert all(t["call_key"].endswith(f"~{fresh_session(path)}") for t in vote)


def fresh_session(path: Path) -> int:
    return max(s["id"] for s in rows(path, "sessions"))


def test_no_cache_with_shared_round0_and_overlapping_identical_calls(tmp_path: Path) -> None:
    """Conditions sharing round 0 ask for it at the same moment (delay, concurrency): today a KeyError."""
    path = tmp_path / "run.sqlite"
    outcome = run(experiment(count=4, delay_s=0.02, concurrency=6), path, use_cache=False)
    results = rows(path, "results")
    assert len(results) == 12 and all(r["status"] != "error" for r in results)
    assert outcome.calls == 4 * 9  # round 0 is still shared: single's and vote's calls are society's
    turns = {(t["condition"], t["question_id"], t["round"], t["agent"]): t for t in rows(path, "turns")}
    for (_, qid, round_, agent), turn in turns.items():
        if round_ == 0:
            assert turn["call_key"] == turns[("society", qid, 0, agent)]["call_key"]


# -- 4. one run per store; a killed run's store is free and reads as interrupted ---------------------
SLOW = """
name = "held"
concurrency = 1

[[tasks]]
name = "arithmetic"
count = {count}

[agent]
backend = {{ kind = "scripted", model = "numbers", delay_s = {delay} }}

[[conditions]]
name = "single"
protocol = "single"

[[conditions]]
name = "society"
protocol = "society"
agents = 3
rounds = 2
"""


def _hear_ctrl_c() -> None:
    # a suite started as a background job of a script inherits SIGINT ignored, and so would moot: Ctrl-C
    # reaches moot as it does from a terminal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(config: Path, store: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "moot", "run", str(config), "--output", str(store)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_hear_ctrl_c,
    )


def wait_for(check: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def results_of(store: Path) -> int:
    try:
        return len(rows(store, "results"))
    except sqlite3.Error:
        return 0


def status_of(store: Path) -> Any:
    return json.loads(rows(store, "meta", "WHERE key = 'status'")[0]["value"])


@pytest.fixture
def slow(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    config = tmp_path / "held.toml"
    config.write_text(SLOW.format(count=8, delay=0.15))
    yield config, tmp_path / "runs" / "held.sqlite"


def test_a_second_run_is_refused_naming_the_holder_and_a_killed_run_frees_its_store(
    slow: tuple[Path, Path],
) -> None:
    config, store = slow
    store.parent.mkdir()
    first = start(config, store)
    try:
        wait_for(lambda: results_of(store) >= 1)
        second = moot("run", config, "--output", store)
        one_error_line(second, f"{store} is in use by another moot run (PID {first.pid})")
        assert first.poll() is None  # the holder runs on
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    finally:
        first.kill()
    assert status_of(store) == "running"  # as the killed run left it
    listing = moot("runs", store.parent)
    assert listing.returncode == 0 and "interrupted" in listing.stdout and "running" not in listing.stdout
    resumed = moot("run", config, "--output", store)
    assert resumed.returncode == 0, resumed.stderr
    assert results_of(store) == 16 and status_of(store) == "complete"
    assert not lock_path(store).exists()  # let go at the end


def test_two_runs_started_together_one_runs_one_is_refused(slow: tuple[Path, Path]) -> None:
    config, store = slow
    config.write_text(SLOW.format(count=4, delay=0.15))
    store.parent.mkdir()
    runs = [start(config, store), start(config, store)]
    try:
        errors = [p.communicate(timeout=120)[1] for p in runs]
    finally:
        for p in runs:
            p.kill()
    assert sorted(p.returncode for p in runs) == [0, 2], errors
    refused = errors[[p.returncode for p in runs].index(2)].strip().splitlines()
    winner = runs[[p.returncode for p in runs].index(0)]
    assert refused == [
        f"moot: error: {store} is in use by another moot run (PID {winner.pid}); wait for it to end, or stop it"
    ]
    assert results_of(store) == 8 and len(rows(store, "calls")) == 4 * 6  # no question run twice


def test_ctrl_c_leaves_the_store_interrupted_and_free(tmp_path: Path) -> None:
    config, store = tmp_path / "held.toml", tmp_path / "runs" / "held.sqlite"
    # slower than `slow`: on a loaded machine the whole run must not end before the signal arrives
    config.write_text(SLOW.format(count=8, delay=0.5))
    store.parent.mkdir()
    process = start(config, store)
    try:
        wait_for(lambda: results_of(store) >= 1)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130 and "Traceback" not in err, err
    assert status_of(store) == "interrupted" and not lock_path(store).exists()
    assert "interrupted" in moot("runs", store.parent).stdout
    assert moot("run", config, "--output", store).returncode == 0
    assert results_of(store) == 16


# -- 11. store faults are one line; reading changes nothing -------------------------------------------
def damage(path: Path, how: str) -> None:
    db = sqlite3.connect(path)
    if how == "page":  # garbage over the root page of the turns table, in the middle of the file
        root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'turns'").fetchone()[0]
        size = db.execute("PRAGMA page_size").fetchone()[0]
        db.close()
        with path.open("r+b") as f:
            f.seek((root - 1) * size)
            f.write(b"\xa5" * size)
        return
    if how == "meta":
        db.execute("UPDATE meta SET value = '{\"name\": oops' WHERE key = 'config'")
    elif how == "table":
        db.execute("DROP TABLE turns")
    db.commit()
    db.close()


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("page", "is damaged and cannot be read (database disk image is malformed)"),
        ("meta", "is damaged: a stored value is not valid JSON"),
        ("table", "is not a complete moot run store: no table turns"),
    ],
)
def test_a_damaged_store_is_one_line_for_every_command(finished: Path, tmp_path: Path, how: str, message: str) -> None:
    path = copy_of(finished, tmp_path / "runs")
    damage(path, how)
    one_error_line(moot("report", path, "--no-html", cwd=tmp_path), str(path), message)
    if how != "meta":  # an export reads the table as stored, not the metadata
        one_error_line(moot("export", path, "--table", "turns", "--out", tmp_path / "t.jsonl"), message)
    config = tmp_path / "t.toml"
    config.write_text(
        'name = "t"\nseeds = [0]\n[[tasks]]\nname = "arithmetic"\ncount = 2\nseed = 0\n'
        '[agent]\nbackend = { kind = "scripted", model = "numbers" }\n'
        + "".join(f"[[conditions]]\n{_toml(c)}" for c in THREE)
    )
    one_error_line(moot("run", config, "--output", path, cwd=tmp_path), message)
    listing = moot("runs", path.parent)  # a listing reads the metadata and counts rows, not every page
    assert listing.returncode == 0 and "Traceback" not in listing.stderr
    assert ("unreadable" in listing.stdout) == (how != "page")


def _toml(condition: dict[str, Any]) -> str:
    return "".join(f"{k} = {json.dumps(v)}\n" for k, v in condition.items())


def test_a_full_disk_is_one_line_and_the_run_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's own limit on the file's size stands in for a full disk (SQLITE_FULL, as ENOSPC gives)."""
    from moot.cli import app

    config = tmp_path / "t.toml"
    config.write_text(SLOW.format(count=6, delay=0))
    store = tmp_path / "run.sqlite"
    start_session = RunStore.start_session

    def small_disk(self: RunStore, options: dict[str, Any]) -> int:
        """The session starts on a disk with room for a few more pages."""
        session = start_session(self, options)
        pages = self._db.execute("PRAGMA page_count").fetchone()[0]
        self._db.execute(f"PRAGMA max_page_count = {pages + 8}")
        return session

    monkeypatch.setattr(RunStore, "start_session", small_disk)
    result = CliRunner().invoke(app, ["run", str(config), "--output", str(store)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.strip().splitlines() == [
        f"moot: error: cannot write {store}: the disk is full; free some space and rerun to resume"
    ]
    assert 0 < results_of(store) < 12
    monkeypatch.setattr(RunStore, "start_session", start_session)
    assert CliRunner().invoke(app, ["run", str(config), "--output", str(store)]).exit_code == 0
    assert results_of(store) == 12

    full = moot("export", store, "--out", "/dev/full", "--force")  # a device that is always full (ENOSPC)
    one_error_line(full, "cannot write /dev/full: No space left on device")


@pytest.mark.skipif(bool(UNPRIVILEGED) and not shutil.which("setpriv"), reason="root, and no setpriv")
def test_a_read_only_store_or_folder_is_one_line_and_reading_still_works(finished: Path, tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    try:
        store = copy_of(finished, folder / "runs")
        store.chmod(0o444)
        (folder / "runs").chmod(0o555)
        config = folder / "t.toml"
        config.write_text(
            'name = "t"\nseeds = [0]\n[[tasks]]\nname = "arithmetic"\ncount = 2\nseed = 0\n'
            '[agent]\nbackend = { kind = "scripted", model = "numbers" }\n'
            + "".join(f"[[conditions]]\n{_toml(c)}" for c in THREE)
        )
        before = snapshot(folder)
        one_error_line(
            moot("run", config, "--output", store, unprivileged=True), f"cannot write {store}: its folder is read-only"
        )
        new = folder / "runs" / "new.sqlite"
        one_error_line(moot("run", config, "--output", new, unprivileged=True), str(new))
        report = moot("report", store, "--no-html", "-q", unprivileged=True)
        assert report.returncode == 0, report.stderr
        one_error_line(moot("report", store, "-q", unprivileged=True), "cannot write", "report.html")
        assert snapshot(folder) == before
        (folder / "runs").chmod(0o755)  # a writable folder, a read-only store
        one_error_line(
            moot("run", config, "--output", store, unprivileged=True), f"cannot write {store}: the store is read-only"
        )
        assert snapshot(folder) == before and sorted(p.name for p in (folder / "runs").iterdir()) == ["run.sqlite"]
    finally:
        (folder / "runs").chmod(0o755)


def foreign(folder: Path, mode: str) -> Path:
    path = folder / f"other-{mode}.sqlite"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA journal_mode={mode}")
    db.execute("CREATE TABLE notes (text TEXT)")
    db.execute("INSERT INTO notes VALUES ('mine')")
    db.commit()
    db.close()
    return path


REFUSING = [("report", "--no-html"), ("export", "--out", "/dev/null", "--force")]


def test_reading_a_store_changes_no_byte_and_no_file(finished: Path, tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    store = copy_of(finished, folder)
    others = [foreign(folder, "delete"), foreign(folder, "wal")]
    out = tmp_path / "out"
    out.mkdir()
    before = snapshot(folder)
    done = [
        moot("report", store, "--no-html", "-q", "--markdown", out / "r.md"),
        moot("report", store, "-q", "--html", out / "r.html"),
        moot("export", store, "--table", "calls", "--out", out / "calls.jsonl"),
        moot("compare", store, "single", "society"),
    ]
    listing = moot("runs", folder)
    refused = [moot(command, other, *extra) for other in others for command, *extra in REFUSING]
    assert snapshot(folder) == before  # not a byte, not a file (-wal, -shm, .lock) more
    assert all(r.returncode == 0 for r in [*done, listing]), [r.stderr for r in done]
    assert "complete" in listing.stdout and "unreadable" in listing.stdout
    for result, other in zip(refused, [o for o in others for _ in REFUSING], strict=True):
        one_error_line(result, f"{other} is not a moot run store")  # not a moot store: refused by name
    assert sorted(p.name for p in out.iterdir()) == ["calls.jsonl", "r.html", "r.md"]
