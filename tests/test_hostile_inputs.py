"""Hostile inputs of issue 59: a resamples count or a console width without a bound, a named pipe with no
reader as the trace, an empty file named as the store. Each runs `moot` as a user does (a subprocess), on a
real store made with the scripted backend."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moot.analysis.cli import MAX_RESAMPLES
from moot.cli import app
from moot.cli_output import MAX_CONSOLE_WIDTH, MIN_CONSOLE_WIDTH, make_console
from tests.fixtures.analysis_run import MODELS, experiment
from tests.helpers import WriteRun, query


def moot(*args: str, cwd: Path, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m moot ARGS`, its output piped (as in a log); TimeoutExpired when it runs past ``timeout``."""
    return subprocess.run(
        [sys.executable, "-m", "moot", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=os.environ | env,
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one `moot: error:` line a refused command printed (exit 2), and nothing else."""
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("moot: error: "), result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def store(write_run: WriteRun) -> Path:
    """A stored run of 12 questions and 3 conditions (single, vote, society)."""
    return write_run("run", experiment(), MODELS)


# -- 2. --resamples has a documented maximum, checked before any work ----------------------------------------
@pytest.mark.parametrize(
    "command",
    [
        ["report", "{store}", "--no-html", "-q"],
        ["compare", "{store}", "single", "society"],
        ["compare", "{store}", "society", "--budget", "calls"],
    ],
)
def test_resamples_beyond_the_maximum_are_refused_at_once(store: Path, command: list[str]) -> None:
    args = [a.replace("{store}", str(store)) for a in command]
    started = time.monotonic()
    result = moot(*args, "--resamples", "1000000000", cwd=store.parent, timeout=30)
    assert time.monotonic() - started < 15  # the interpreter's start; no bootstrap was drawn
    line = one_error_line(result)
    assert line == "moot: error: --resamples is at most 1,000,000 (got 1,000,000,000)"
    assert MAX_RESAMPLES == 1_000_000
    assert not (store.parent / "run.report.html").exists()


def test_resamples_below_the_minimum_are_one_line_too(store: Path) -> None:
    line = one_error_line(moot("report", str(store), "--no-html", "-q", "--resamples", "99", cwd=store.parent))
    assert line == "moot: error: --resamples is at least 100 (got 99)"


def test_the_maximum_resamples_is_accepted() -> None:
    """The bound itself is allowed: it only refuses beyond it (checked on a missing store, so no work is done)."""
    result = CliRunner().invoke(app, ["report", "no-such.sqlite", "--no-html", "--resamples", str(MAX_RESAMPLES)])
    assert result.exit_code == 2 and "--resamples" not in result.output, result.output


# -- 3. the console width is bounded -----------------------------------------------------------------------
def test_a_huge_columns_is_taken_as_the_maximum_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100000000")
    assert MAX_CONSOLE_WIDTH == 1_000
    assert make_console(piped=140).width == 1_000
    monkeypatch.setenv("COLUMNS", "999")
    assert make_console(piped=140).width == 999  # below the maximum: as COLUMNS says
    monkeypatch.setenv("COLUMNS", "0")
    assert make_console(piped=140).width == MIN_CONSOLE_WIDTH == 20  # not 0, which printed nothing at all


def test_a_report_with_a_huge_columns_prints_a_small_output(store: Path) -> None:
    result = moot("report", str(store), "--no-html", "--resamples", "100", cwd=store.parent, COLUMNS="100000000")
    assert result.returncode == 0, result.stderr
    widest = max(len(line) for line in result.stdout.splitlines())
    assert 100 < widest <= MAX_CONSOLE_WIDTH, widest
    assert len(result.stdout) < 400_000, len(result.stdout)
    assert "Accuracy and cost" in result.stdout


# -- 4. a named pipe with no reader as --trace -------------------------------------------------------------
RUN = ["run", "-b", "scripted", "-m", "numbers", "-p", "single", "-q", "1"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_trace_pipe_without_a_reader_is_refused_at_once(tmp_path: Path) -> None:
    pipe = tmp_path / "trace.pipe"
    os.mkfifo(pipe)
    result = moot(*RUN, "-o", str(tmp_path / "run.sqlite"), "--trace", str(pipe), cwd=tmp_path, timeout=30)
    line = one_error_line(result)
    assert line == f"moot: error: --trace: {pipe} is a named pipe with no reader; start its reader first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.pipe"]  # no store was made


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_trace_pipe_with_a_reader_is_written_into(tmp_path: Path) -> None:
    pipe = tmp_path / "trace.pipe"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)  # a reader, as `cat PIPE &` is
    try:
        result = moot(*RUN, "-o", str(tmp_path / "run.sqlite"), "--trace", str(pipe), cwd=tmp_path, timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
        data = b""
        while chunk := os.read(reader, 65536):  # the run wrote and closed it: read to its end
            data += chunk
    finally:
        os.close(reader)
    kinds = [line.split('"kind": "')[1].split('"')[0] for line in data.decode().splitlines()]
    assert kinds[0] == "run" and kinds[-1] == "end" and kinds.count("call") == 1, data
    assert query(tmp_path / "run.sqlite", "SELECT COUNT(*) FROM results") == [(1,)]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_report_into_a_pipe_without_a_reader_is_refused_at_once(tmp_path: Path) -> None:
    """`moot report --markdown PIPE` (and every output file written through moot.outputs) waits for no reader."""
    store = tmp_path / "run.sqlite"
    assert moot(*RUN, "-o", str(store), cwd=tmp_path, timeout=120).returncode == 0
    pipe = tmp_path / "report.pipe"
    os.mkfifo(pipe)
    result = moot("report", str(store), "--no-html", "--markdown", str(pipe), cwd=tmp_path, timeout=60)
    assert one_error_line(result) == f"moot: error: {pipe} is a named pipe with no reader; start its reader first"


# -- 5. an empty file named as the store is taken over, as documented ----------------------------------------
def test_run_help_says_an_empty_file_is_taken_over_as_the_store() -> None:
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    shown = " ".join(result.output.replace("│", " ").split())
    assert "An existing empty file there is taken over as the new store" in shown, shown


def test_an_empty_file_named_as_the_store_becomes_the_store(tmp_path: Path) -> None:
    empty = tmp_path / "run.sqlite"
    empty.touch()
    result = moot(*RUN, "-o", str(empty), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert query(empty, "SELECT COUNT(*) FROM results") == [(1,)]
    readme = " ".join((Path(__file__).parents[1] / "docs" / "experiments.md").read_text().split())
    assert "An existing empty file named as the store (`--output`, `output`) is taken over as a new store" in readme
