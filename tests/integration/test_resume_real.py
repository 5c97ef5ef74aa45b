"""Resume with the real 0.5B model on the in-process engine (exact seeds): a `moot run` killed mid-run and rerun reproduces the
uninterrupted run's replies exactly (seeded sampling, calls replayed from the store)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_resume import count_results, table

pytestmark = pytest.mark.model

EXPERIMENT = """
name = "resume-real"

[[tasks]]
name = "arithmetic"
count = 3

[agent]
backend = { kind = "llama-cpp", model = "qwen2.5-0.5b", n_ctx = 4096 }
sampling = { temperature = 1.0, max_tokens = 48 }

[[conditions]]
name = "vote"
protocol = "vote"
agents = 2

[[conditions]]
name = "society"
protocol = "society"
agents = 2
rounds = 2
"""


def moot_run(config: Path, output: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "moot", "run", str(config), "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_killed_real_run_resumes_to_identical_replies(tiny_model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "exp.toml"
    config.write_text(EXPERIMENT)
    reference = tmp_path / "reference.sqlite"
    assert moot_run(config, reference).returncode == 0

    killed = tmp_path / "killed.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-m", "moot", "run", str(config), "--output", str(killed)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while count_results(killed) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stored_at_kill = count_results(killed)
    assert 2 <= stored_at_kill < 6

    final = moot_run(config, killed)
    assert final.returncode == 0, final.stderr
    assert f"questions run {6 - stored_at_kill}, already stored {stored_at_kill}" in final.stdout
    assert table(killed, "results") == table(reference, "results")
    timeless = lambda rows: [{k: v for k, v in r.items() if k != "latency_s"} for r in rows]  # noqa: E731
    # the same texts, answers and tokens in every turn (latency is the only thing a machine varies)
    assert timeless(table(killed, "turns")) == timeless(table(reference, "turns"))
