"""The CLI end to end with the real 0.5B model: `moot run` and `moot ask`, local and over HTTP."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.servers import SERVER_KEY, SERVER_KEY_ENV

pytestmark = pytest.mark.model

SMALL = ["--model", "qwen2.5-0.5b", "--agents", "2", "--rounds", "2", "--max-tokens", "96", "--context", "4096"]


def moot(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "moot", *args], capture_output=True, text=True, timeout=600, env=env, cwd=cwd
    )


def test_run_prints_answers_per_round_final_and_totals(tiny_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    wide = dict(os.environ, COLUMNS="200")  # every column of the totals (80 columns leave some out)
    result = moot("run", "--protocol", "society", "--questions", "2", "--seed", "3", *SMALL, cwd=tmp_path, env=wide)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "society (2×2)" in out and "arithmetic (2 questions)" in out and "model qwen2.5-0.5b" in out
    progress = re.findall(
        r"^  society · (\S+) · gold (-?\d+) · r0: (.+?)\s{2,}r1: (.+?) → (\S+) (right|wrong)", out, re.M
    )
    assert len(progress) == 2, out
    for _, _, round0, round1, final, _ in progress:
        assert len(round0.split()) == 2 and len(round1.split()) == 2
        assert final == "—" or final in round1.split()
    assert "answers per round" in out and " r0 " in out and " r1 " in out and "final" in out and "correct" in out
    totals = out[out.index("totals") :]
    (society_row,) = [line for line in totals.splitlines() if line.startswith("│ society")]
    cells = [c.strip() for c in society_row.strip("│").split("│")]
    assert re.fullmatch(r"\d/2 \(\d+%\)", cells[1]), society_row
    assert re.fullmatch(r"\d/8", cells[3]), society_row  # replies cut off by the token limit, of 8
    assert cells[4:9] == ["0", "0", "2.00", "8", "0"]  # abstained, errors, mean rounds, calls paid, shared
    assert "this session: model calls 8 · replayed from the store 0 · questions run 2, already stored 0" in out
    (store,) = (tmp_path / "runs").glob("society-arithmetic-*.sqlite")

    again = moot("run", "--protocol", "society", "--questions", "2", "--seed", "3", *SMALL, cwd=tmp_path, env=wide)
    assert again.returncode == 0, again.stderr
    assert f"resuming runs/{store.name}" in again.stdout
    assert "this session: model calls 0 · replayed from the store 0 · questions run 0, already stored 2" in again.stdout
    table = lambda text: text[text.index("answers per round") : text.index("totals")]  # noqa: E731
    assert table(again.stdout) == table(out)


def test_ask_shows_each_round_as_it_happens(tiny_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = moot("ask", "What is 2+3*4?", *SMALL, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.index("round 0") < out.index("round 1") < out.index("final answer:")
    assert len(re.findall(r"agent-[12] → ", out)) == 4
    assert out.count("vote: ") == 2
    assert "model calls 4" in out


def test_run_over_http_against_a_real_server(llama_server: str, tmp_path: Path) -> None:
    env = dict(os.environ, **{SERVER_KEY_ENV: SERVER_KEY})
    result = moot(
        "run",
        "--backend",
        "openai",
        "--base-url",
        llama_server,
        "--api-key-env",
        SERVER_KEY_ENV,
        "--protocol",
        "vote",
        "--agents",
        "3",
        "--questions",
        "2",
        "--max-tokens",
        "96",
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "this session: model calls 6" in result.stdout
    assert SERVER_KEY not in result.stdout + result.stderr
