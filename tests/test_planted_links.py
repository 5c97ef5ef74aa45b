"""Issue 42, item 1: no data lost through planted links.

A symbolic link at a name moot writes (a report's transcript page, the default report or export,
STORE.lock) is refused with one line, its target unchanged byte for byte; a hard link at STORE.lock
too. A run's lock is on the store's identity: a second run through a symbolic link or a hard link to a
held store is refused before any call."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moot.runner.store import RunStore, StoreError, StoreLock, lock_holder, lock_path

CONFIG = """
name = "planted"
seeds = [0]

[[tasks]]
name = "arithmetic"
count = 2
seed = 0

[agent]
backend = { kind = "scripted", model = "numbers" }

[[conditions]]
name = "single"
protocol = "single"

[[conditions]]
name = "society"
protocol = "society"
agents = 3
rounds = 2
"""

PRECIOUS = b"not moot's: a file a planted link points to\n"


def moot(*args: object) -> Any:
    from moot.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


def refused(result: Any, *parts: str) -> str:
    """The single ``moot: error:`` line of a refused command (exit 2), holding every one of ``parts``."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("moot: error: "), result.stderr
    for part in parts:
        assert part in lines[0], lines[0]
    return str(lines[0])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def count(store: Path, table: str) -> int:
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        db.close()


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "planted.toml"
    path.write_text(CONFIG)
    return path


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run: 2 questions, 2 conditions, so 4 transcripts (copy it before changing it)."""
    folder = tmp_path_factory.mktemp("finished")
    (folder / "planted.toml").write_text(CONFIG)
    store = folder / "run.sqlite"
    assert moot("run", folder / "planted.toml", "--output", store).exit_code == 0
    return store


@pytest.fixture
def run(finished: Path, tmp_path: Path) -> Path:
    store = tmp_path / "run.sqlite"
    store.write_bytes(finished.read_bytes())
    return store


@pytest.fixture
def precious(tmp_path: Path) -> Path:
    path = tmp_path / "elsewhere" / "precious.txt"
    path.parent.mkdir()
    path.write_bytes(PRECIOUS)
    return path


# -- a plain `moot report RUN` (no --force) never writes through a link -------------------------------
@pytest.fixture
def paged(monkeypatch: pytest.MonkeyPatch) -> None:
    """A report of one transcript a page: a small run writes transcripts-0002.html and further pages."""
    from moot.analysis import html

    monkeypatch.setattr(html, "write_html", functools.partial(html.write_html, page_bytes=1))


@pytest.mark.parametrize("to", ["the store", "another file"])
def test_a_link_at_a_transcript_page_is_refused_and_its_target_unchanged(
    run: Path, precious: Path, paged: None, to: str
) -> None:
    folder = run.with_name("run.report-files")
    folder.mkdir()
    target = run if to == "the store" else precious
    before = digest(target)
    (folder / "transcripts-0002.html").symlink_to(target)
    refused(
        moot("report", run, "-q", "--resamples", 100),
        f"{folder / 'transcripts-0002.html'} is a symbolic link; moot never writes through a link",
    )
    assert digest(target) == before
    assert not run.with_name("run.report.html").exists()  # refused before any work
    # the link removed, the report is written, its pages too
    (folder / "transcripts-0002.html").unlink()
    assert moot("report", run, "-q", "--resamples", 100).exit_code == 0
    assert (folder / "transcripts-0002.html").is_file() and digest(target) == before


def test_a_link_at_the_pages_folder_is_refused(run: Path, precious: Path, paged: None) -> None:
    (precious.parent / "transcripts-0002.html").write_bytes(PRECIOUS)
    folder = run.with_name("run.report-files")
    folder.symlink_to(precious.parent, target_is_directory=True)
    refused(moot("report", run, "-q", "--resamples", 100), f"{folder} is a symbolic link")
    assert (precious.parent / "transcripts-0002.html").read_bytes() == PRECIOUS
    assert sorted(p.name for p in precious.parent.iterdir()) == ["precious.txt", "transcripts-0002.html"]


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["report", "{run}", "-q", "--resamples", "100"], "run.report.html"),  # the default report
        (["report", "{run}", "-q", "--resamples", "100", "--html", "{out}", "--force"], "out.html"),
        (["report", "{run}", "-q", "--no-html", "--markdown", "{out}", "--force"], "out.html"),
        (["export", "{run}"], "run.results.jsonl"),  # the default export
        (["export", "{run}", "--out", "{out}", "--force"], "out.html"),
    ],
)
def test_a_link_at_an_output_file_is_refused_even_with_force(
    run: Path, precious: Path, args: list[str], name: str
) -> None:
    link = run.with_name(name)
    link.symlink_to(precious)
    result = moot(*(a.format(run=run, out=run.with_name("out.html")) for a in args))
    refused(result, f"{link} is a symbolic link; moot never writes through a link")
    assert precious.read_bytes() == PRECIOUS and link.is_symlink()


def test_a_pipe_or_device_named_by_the_user_is_still_written_into(run: Path) -> None:
    assert moot("export", run, "--out", "/dev/null", "--force").exit_code == 0


# -- STORE.lock: never written through a link -------------------------------------------------------
@pytest.mark.parametrize("planted", ["a link to another file", "a link to the store", "a hard link to the store"])
def test_a_link_at_the_lock_file_is_refused_and_its_target_unchanged(
    run: Path, precious: Path, config: Path, planted: str
) -> None:
    lock = lock_path(run)
    target = precious if planted == "a link to another file" else run
    before = digest(target)
    if planted.startswith("a hard link"):
        os.link(target, lock)
        why = f"cannot lock {run}: {lock} has other hard links, not moot's own lock file"
    else:
        lock.symlink_to(target)
        why = f"cannot lock {run}: {lock} is a symbolic link; moot never writes through a link"
    refused(moot("run", config, "--output", run), why)
    assert digest(target) == before
    assert os.path.lexists(lock)  # left for the user to look at


def test_a_link_at_the_lock_file_of_a_new_store_is_refused(tmp_path: Path, precious: Path, config: Path) -> None:
    store = tmp_path / "new.sqlite"
    lock_path(store).symlink_to(precious)
    refused(moot("run", config, "--output", store), f"{lock_path(store)} is a symbolic link")
    assert precious.read_bytes() == PRECIOUS and not store.exists()


# -- the lock is on the store's identity, not its name ----------------------------------------------
@pytest.fixture
def unfinished(config: Path, tmp_path: Path) -> Path:
    """A store of CONFIG with only its 'single' condition run: the 'society' calls are still to pay."""
    store = tmp_path / "unfinished.sqlite"
    assert moot("run", config, "--output", store, "--condition", "single").exit_code == 0
    return store


@pytest.mark.parametrize("name", ["a symbolic link", "a hard link"])
def test_a_second_run_through_another_name_of_a_held_store_is_refused_before_any_call(
    unfinished: Path, config: Path, tmp_path: Path, name: str
) -> None:
    other = tmp_path / "other" / "same.sqlite"
    other.parent.mkdir()
    if name == "a symbolic link":
        other.symlink_to(unfinished)
        holder = f"PID {os.getpid()}"
    else:
        os.link(unfinished, other)
        holder = "another process"
    calls, before = count(unfinished, "calls"), digest(unfinished)
    held = StoreLock(unfinished)
    held.acquire()  # a first run holds the store by its own name
    try:
        refused(moot("run", config, "--output", other), f"{other} is in use by another moot run ({holder}")
        assert count(unfinished, "calls") == calls and digest(unfinished) == before  # no call paid
        assert lock_holder(unfinished) == os.getpid()
        if name == "a symbolic link":
            assert lock_holder(other) == os.getpid()  # a reader through the link sees the holder too
        else:
            assert not lock_path(other).exists()  # the refused run left no lock file
    finally:
        held.release()
    # and the other way round: the first run holds it by the other name
    held = StoreLock(other)
    held.acquire()
    try:
        refused(moot("run", config, "--output", unfinished), f"{unfinished} is in use by another moot run")
        assert count(unfinished, "calls") == calls
    finally:
        held.release()
    assert moot("run", config, "--output", other).exit_code == 0  # free: the run goes ahead
    assert count(unfinished, "calls") > calls


def test_a_store_a_run_creates_is_held_under_a_hard_link_made_while_it_runs(tmp_path: Path) -> None:
    store = tmp_path / "new.sqlite"
    lock = StoreLock(store)
    created = RunStore.create(store, {}, {}, lock=lock)  # the lock taken before the file existed
    try:
        os.link(store, tmp_path / "linked.sqlite")
        with pytest.raises(StoreError, match="is in use by another moot run"):
            StoreLock(tmp_path / "linked.sqlite", wait_s=0.1).acquire()
    finally:
        created.close()
        lock.release()
    second = StoreLock(tmp_path / "linked.sqlite", wait_s=0.1)
    second.acquire()  # let go: free
    second.release()


# -- a run's --trace file: never a store, a link or a file that is not a trace ---------------------------
@pytest.mark.parametrize("to", ["the store", "another file"])
def test_a_link_at_the_trace_file_is_refused_before_any_work(run: Path, precious: Path, config: Path, to: str) -> None:
    target = run if to == "the store" else precious
    before = digest(target)
    link = run.with_name("trace.jsonl")
    link.symlink_to(target)
    new = run.with_name("new.sqlite")
    why = "is a run store" if to == "the store" else "is a symbolic link; moot never writes through a link"
    refused(moot("run", config, "--output", new, "--trace", link), f"--trace: {link} {why}")
    assert digest(target) == before and not new.exists()


def test_the_trace_file_is_never_a_store(run: Path, config: Path) -> None:
    """The old code opened the trace with "w": ``--trace`` naming a store truncated it."""
    before = digest(run)
    new = run.with_name("new.sqlite")
    refused(moot("run", config, "--output", new, "--trace", run), f"--trace: {run} is a run store")
    refused(moot("run", config, "--output", run, "--trace", run), f"--trace: {run} is this run's store")
    assert digest(run) == before and not new.exists()
    # a new run's own store and the log SQLite keeps beside it, which do not exist yet
    for name in ("new.sqlite", "new.sqlite-wal"):
        refused(moot("run", config, "--output", new, "--trace", new.with_name(name)), "is this run's store")
    assert sorted(p.name for p in run.parent.iterdir()) == ["planted.toml", "run.sqlite"]


def test_a_trace_is_written_new_or_over_an_earlier_trace_only(config: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    first, second = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    refused(moot("run", config, "--output", first, "--trace", notes), f"--trace: {notes} exists and is not a trace")
    assert notes.read_text() == "mine\n" and not first.exists()
    trace = tmp_path / "trace.jsonl"
    for store in (first, second):  # the second run rewrites the first's trace
        assert moot("run", config, "--output", store, "--trace", trace).exit_code == 0
        lines = [json.loads(line) for line in trace.read_text().splitlines()]
        assert lines[0]["kind"] == "run" and lines[0]["output"] == str(store) and lines[-1]["kind"] == "end"
        assert sum(line["kind"] == "call" for line in lines) == count(store, "calls") > 0


@pytest.mark.parametrize("command", ["report", "export", "run"])
def test_a_pipe_the_user_named_is_written_into_not_read(run: Path, config: Path, command: str) -> None:
    """Looking for an SQLite header at ``/dev/stdout`` read the pipe, waiting for input that never came:
    the command hung. Now the pipe is written into."""
    args = {
        "report": ["report", run, "-q", "--no-html", "--markdown", "/dev/stdout"],
        "export": ["export", run, "--out", "/dev/stdout"],
        "run": ["run", config, "--output", run.with_name("new.sqlite"), "--trace", "/dev/stdout"],
    }[command]
    done = subprocess.run(
        [sys.executable, "-m", "moot", *map(str, args)], capture_output=True, timeout=120, stdin=subprocess.PIPE
    )
    assert done.returncode == 0, done.stderr
    expected = {"report": b"# moot report", "export": b'"question_id"', "run": b'"kind": "call"'}[command]
    assert expected in done.stdout


def test_training_outputs_are_never_written_through_a_link(precious: Path, tmp_path: Path) -> None:
    """The training tables and the reward curve were opened with "w" (a partial name beside, then moved):
    a link at the partial name was written through."""
    from moot.errors import ConfigError
    from moot.training.data import write_examples
    from moot.training.grpo import CURVE_CSV, write_curve
    from moot.training.targets import write_table
    from moot.training.types import StepRecord

    for write in (write_table, write_examples):
        link = tmp_path / f"{write.__name__}.jsonl"
        link.symlink_to(precious)
        with pytest.raises(ConfigError, match="is a symbolic link; moot never writes through a link"):
            write([], link)
    (tmp_path / CURVE_CSV).symlink_to(precious)
    with pytest.raises(ConfigError, match=f"{CURVE_CSV} is a symbolic link"):
        write_curve(tmp_path, [StepRecord(1, 0.5, {"format": 0.5}, 1.0)], ["format"])
    assert precious.read_bytes() == PRECIOUS
    # without links they are written whole
    write_table([], tmp_path / "targets.jsonl")
    (tmp_path / "stage").mkdir()
    csv_path, png_path = write_curve(tmp_path / "stage", [StepRecord(1, 0.5, {"format": 0.5}, 1.0)], ["format"])
    assert (tmp_path / "targets.jsonl").read_text() == ""
    assert csv_path.read_text().splitlines() == ["step,reward,format,elapsed_s", "1,0.5,0.5,1.0"]
    assert png_path.read_bytes().startswith(b"\x89PNG")
