"""An output moot cannot write (a full disk, a closed stdout) or an encoding that cannot show a character
gives a clean outcome: one line on stderr and a non-zero status, or the character's escape; never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

FULL = Path("/dev/full")


def moot(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    kwargs.setdefault("stdout", subprocess.PIPE)
    return subprocess.run(
        [sys.executable, "-m", "moot", *args], stderr=subprocess.PIPE, text=True, timeout=120, **kwargs
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("moot: error: "), result.stderr


@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full here")
@pytest.mark.parametrize("args", [["--help"], ["--version"], ["tasks"]])
def test_a_full_stdout_is_one_line_on_stderr(args: list[str]) -> None:
    """--version's one line is written only when Python flushes at exit; the others' while printing."""
    with FULL.open("w") as full:
        result = moot(*args, stdout=full)
    assert_one_line_error(result)
    assert "No space left on device" in result.stderr


@pytest.mark.parametrize("args", ["--help", "tasks"])
def test_a_closed_stdout_is_one_line_on_stderr(args: str) -> None:
    """`moot --help >&-`: Python starts with no sys.stdout at all."""
    result = subprocess.run(
        ["sh", "-c", f'"$0" -m moot {args} >&-', sys.executable], capture_output=True, text=True, timeout=120
    )
    assert_one_line_error(result)
    assert "standard output is closed" in result.stderr


@pytest.mark.parametrize(("args", "escape"), [(["--help"], "\\xa7"), (["protocols"], "\\xd7")])
def test_an_ascii_terminal_gets_escapes(args: list[str], escape: str) -> None:
    """PYTHONIOENCODING=ascii (an old terminal, a C locale): "×" and "§" are printed as their escapes."""
    result = moot(*args, env=os.environ | {"PYTHONIOENCODING": "ascii", "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert escape in result.stdout, result.stdout
