"""The CLI end to end with the real 0.5B model: `moot run` and `moot ask`, local and over HTTP."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from tests.integration.servers import SERVER_KEY, SERVER_KEY_ENV

pytestmark = pytest.mark.model

SMALL = ["--model", "qwen2.5-0.5b", "--agents", "2", "--rounds", "2", "--max-tokens", "96", "--context", "4096"]


def moot(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "moot", *args], capture_output=True, text=True, timeout=600, env=env
    )


def test_run_prints_answers_per_round_final_and_totals(tiny_model) -> None:  # type: ignore[no-untyped-def]
    result = moot("run", "--protocol", "society", "--questions", "2", "--seed", "3", *SMALL)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "protocol society (2 agents × 2 rounds)" in out and "model qwen2.5-0.5b" in out
    progress = re.findall(r"^\s+\d\. (\S+) = (-?\d+)\s+r0: (.+?)\s{2,}r1: (.+?)\s+→ (\S+) (right|wrong)", out, re.M)
    assert len(progress) == 2, out
    for _, _, round0, round1, final, _ in progress:
        assert len(round0.split()) == 2 and len(round1.split()) == 2
        assert final == "—" or final in round1.split()
    assert "round 0" in out and "round 1" in out and "final" in out and "correct" in out
    totals = re.search(r"model calls (\d+) · prompt tokens ([\d,]+) · completion tokens ([\d,]+) · wall time", out)
    assert totals is not None
    assert int(totals.group(1)) == 2 * 2 * 2
    assert int(totals.group(2).replace(",", "")) > 0 and int(totals.group(3).replace(",", "")) > 0
    assert re.search(r"accuracy \d/2 \(\d+%\) · unparsed \d · abstained 0 · errors 0", out)


def test_ask_shows_each_round_as_it_happens(tiny_model) -> None:  # type: ignore[no-untyped-def]
    result = moot("ask", "What is 2+3*4?", *SMALL)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.index("round 0") < out.index("round 1") < out.index("final answer:")
    assert len(re.findall(r"agent-[12] → ", out)) == 4
    assert out.count("vote: ") == 2
    assert "model calls 4" in out


def test_run_over_http_against_a_real_server(llama_server: str) -> None:
    env = dict(os.environ, **{SERVER_KEY_ENV: SERVER_KEY})
    result = moot(
        "run", "--backend", "openai", "--base-url", llama_server, "--api-key-env", SERVER_KEY_ENV,
        "--protocol", "vote", "--agents", "3", "--questions", "2", "--max-tokens", "96", env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "model calls 6" in result.stdout
    assert SERVER_KEY not in result.stdout + result.stderr
