"""Batch mode: each round of every question in flight goes out as one provider batch, through the real
openai SDK's Files and Batches calls, to a real HTTP server that implements them
(tests.integration.servers.BatchServer, answering canned chat completions); the store, resume, failures and
prices. The same against a real llama-server: tests/integration/test_batches_real.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from moot.backends import batches, openai_api
from moot.backends.batches import custom_id
from moot.runner.config import Price
from moot.runner.config_files import parse_experiment
from moot.runner.records import StoredCall
from moot.runner.summary import usage
from tests.helpers import query, run
from tests.integration.servers import CANNED_MODEL, BatchServer

ANSWERED = {"answered"}


@pytest.fixture
def server() -> Iterator[BatchServer]:
    made = BatchServer()
    yield made
    made.close()


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batches, "GATHER_S", 0.3)


def table(url: str, protocol: str = "vote", count: int = 4, **backend: Any) -> dict[str, Any]:
    return {
        "name": "batched",
        "tasks": [{"name": "arithmetic", "count": count}],
        "agent": {
            "backend": {"kind": "openai", "base_url": url, "model": CANNED_MODEL, "batch_poll_s": 0.05} | backend,
            "sampling": {"temperature": 1.0, "max_tokens": 24},
        },
        "conditions": [{"name": protocol, "protocol": protocol}],
    }


def failed_questions(path: Path) -> int:
    return int(query(path, "SELECT count(*) FROM results WHERE status = 'error'")[0][0])


def recorded(path: Path) -> list[str]:
    """The batches a run's store holds (none before its first)."""
    if not query(path, "SELECT name FROM sqlite_master WHERE name = 'batches'"):
        return []
    return [batch for (batch,) in query(path, "SELECT id FROM batches ORDER BY created_at")]


def stored(path: Path) -> list[tuple[Any, ...]]:
    """Results, turns and calls as a run stores them, without what differs between any two runs by nature."""
    results = query(
        path, "SELECT condition, question_id, final_answer, status, correct, votes FROM results ORDER BY 1, 2"
    )
    turns = query(
        path, "SELECT condition, question_id, round, agent, call_key, text, answer FROM turns ORDER BY 1, 2, 3, 4"
    )
    calls = query(path, "SELECT key, round, agent, request, prompt_tokens, completion_tokens FROM calls ORDER BY key")
    return [*results, *turns, *calls]


def test_each_round_of_every_question_is_one_batch_and_the_store_is_a_live_runs(
    server: BatchServer, tmp_path: Path
) -> None:
    batched, live = tmp_path / "batched.sqlite", tmp_path / "live.sqlite"
    outcome = run(table(server.url, "society", batch=True), batched)
    assert outcome.errors == 0 and outcome.ran == 4
    assert server.created == 2  # round 0 of the 4 questions (12 requests), then round 1 (12)
    sizes = [b["request_counts"]["total"] for b in server.batches.values()]
    assert sizes == [12, 12] and server.executed == 24
    run(table(server.url, "society"), live)
    assert stored(batched) == stored(live)  # the same requests, replies, answers and results
    replies = [json.loads(r) for (r,) in query(batched, "SELECT reply FROM calls")]
    assert {s["batch"] for r in replies for s in r["samples"]} == set(server.batches)
    assert all("batch" not in s for (r,) in query(live, "SELECT reply FROM calls") for s in json.loads(r)["samples"])
    ledger = query(batched, "SELECT status, (SELECT count(*) FROM batch_requests WHERE batch_id = id) FROM batches")
    assert ledger == [("completed", 12), ("completed", 12)]


def test_the_run_option_batches_every_openai_backend_and_is_not_part_of_the_results(
    server: BatchServer, tmp_path: Path
) -> None:
    data = table(server.url)
    from moot.runner.store_paths import default_output

    assert default_output(parse_experiment(data)) == default_output(parse_experiment(data | {"batch": True}))
    outcome = run(data | {"batch": True}, tmp_path / "run.sqlite")
    assert outcome.errors == 0 and server.created == 1 and server.executed == 12


def test_moot_run_shows_each_batch_as_it_is_sent_and_ends(server: BatchServer, tmp_path: Path) -> None:
    """`moot run --batch` prints a line when a batch is sent (its id, its requests) and when it ends, so a run
    that waits hours on a provider says what it waits for; a rerun that finds a batch still open says it
    polls it again."""
    from typer.testing import CliRunner

    from moot.cli import app

    experiment = tmp_path / "batched.toml"
    experiment.write_text(
        f"""name = "batched"
[[tasks]]
name = "arithmetic"
count = 2
[agent]
backend = {{ kind = "openai", base_url = "{server.url}", model = "{CANNED_MODEL}", batch_poll_s = 0.05 }}
sampling = {{ temperature = 1.0, max_tokens = 24 }}
[[conditions]]
name = "vote"
protocol = "vote"
""",
        encoding="utf-8",
    )
    store = tmp_path / "run.sqlite"
    result = CliRunner().invoke(app, ["run", str(experiment), "--batch", "--output", str(store)])
    assert result.exit_code == 0, result.output
    (batch,) = server.batches
    assert f"batch {batch}: 6 requests sent to {server.url}; polling every 0.05 s" in result.output
    assert f"batch {batch} ended completed: 6 replies" in result.output
    assert result.output.index("requests sent") < result.output.index("ended completed")


def test_an_adaptive_protocol_sends_only_the_questions_still_running(server: BatchServer, tmp_path: Path) -> None:
    # the canned replies all agree: every debate stops at consensus after round 0, so no second wave
    data = table(server.url, "society", batch=True)
    data["conditions"][0] |= {"stopping": {"kind": "consensus"}}
    outcome = run(data, tmp_path / "run.sqlite")
    assert outcome.errors == 0 and server.created == 1 and server.executed == 12


def test_an_expired_batch_is_question_errors_that_retry_errors_sends_again(server: BatchServer, tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    server.expire_next = 1
    run(table(server.url, batch=True), path)
    assert failed_questions(path) == 4 and server.executed == 0
    errors = query(path, "SELECT DISTINCT error FROM results")
    assert len(errors) == 1 and "could not be executed before the completion window expired" in errors[0][0]
    again = run(table(server.url, batch=True), path, retry_errors=True)
    assert again.errors == 0 and server.created == 2 and server.executed == 12
    assert {s for (s,) in query(path, "SELECT status FROM results")} == ANSWERED
    assert query(path, "SELECT status FROM batches ORDER BY created_at") == [("expired",), ("completed",)]


def test_a_failed_or_refused_batch_is_one_line_per_question(server: BatchServer, tmp_path: Path) -> None:
    server.fail_next = 1
    run(table(server.url, batch=True), tmp_path / "failed.sqlite")
    assert failed_questions(tmp_path / "failed.sqlite") == 4 and server.executed == 0
    (error,) = query(tmp_path / "failed.sqlite", "SELECT DISTINCT error FROM results")
    assert "ended failed" in error[0] and "token_limit_exceeded" in error[0]
    server.reject_upload = 413
    run(table(server.url, batch=True), tmp_path / "refused.sqlite")
    assert failed_questions(tmp_path / "refused.sqlite") == 4
    (error,) = query(tmp_path / "refused.sqlite", "SELECT DISTINCT error FROM results")
    assert "refused a batch of 12 requests: HTTP 413" in error[0]
    assert query(tmp_path / "refused.sqlite", "SELECT name FROM sqlite_master WHERE name = 'batches'") == []


def test_a_batch_past_its_deadline_is_cancelled(server: BatchServer, tmp_path: Path) -> None:
    server.hold()
    path = tmp_path / "run.sqlite"
    run(table(server.url, batch=True, batch_deadline_s=0.5), path)
    server.release()
    assert failed_questions(path) == 4 and server.executed == 0
    (error,) = query(path, "SELECT DISTINCT error FROM results")
    assert "did not finish within 0.5 s" in error[0]
    assert query(path, "SELECT status FROM batches") == [("cancelled",)]
    assert [b["status"] for b in server.batches.values()] in (["cancelled"], ["cancelling"])


def test_a_run_killed_while_its_batch_is_pending_polls_it_again_and_pays_nothing_twice(
    server: BatchServer, tmp_path: Path
) -> None:
    path = tmp_path / "run.sqlite"
    experiment = tmp_path / "batched.toml"
    lines = [
        'name = "batched"',
        f'output = "{path}"',
        "[[tasks]]",
        'name = "arithmetic"',
        "count = 4",
        "[agent]",
        f'backend = {{ kind = "openai", base_url = "{server.url}", model = "{CANNED_MODEL}", batch = true, '
        "batch_poll_s = 0.05 }",
        "sampling = { temperature = 1.0, max_tokens = 24 }",
        "[[conditions]]",
        'name = "society"',
        'protocol = "society"',
    ]
    experiment.write_text("\n".join(lines) + "\n")
    command = [sys.executable, "-m", "moot", "run", str(experiment)]
    server.hold()
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    deadline = time.monotonic() + 60
    while server.created < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    while not recorded(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    polled = server.retrieved
    while server.retrieved == polled and time.monotonic() < deadline:
        time.sleep(0.05)  # it is polling
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    assert server.created == 1 and server.executed == 0
    (batch_id,) = recorded(path)
    server.release()  # the batch runs while no moot is there; then moot starts again
    while server.batches[batch_id]["status"] != "completed" and time.monotonic() < deadline:
        time.sleep(0.05)
    second = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert server.created == 2  # round 0's batch polled again and read; only round 1 sent anew
    assert f"batch {batch_id}: sent by an earlier session; polling it again" in second.stdout
    assert f"batch {batch_id} ended completed: 12 replies" in second.stdout
    assert server.executed == 24 and len(set(server.executed_ids)) == 24  # no request paid twice
    assert {s for (s,) in query(path, "SELECT status FROM results")} == ANSWERED


def test_identical_requests_in_flight_are_sent_once() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "2+2?"}], "seed": 1}
    assert custom_id(body) == custom_id(dict(reversed(body.items())))  # key order does not matter
    assert custom_id(body) != custom_id(body | {"seed": 2})


def test_a_batched_call_pays_the_prices_batch_share() -> None:
    def call(batched: bool) -> StoredCall:
        return StoredCall("k", "c", "t", "q", 0, 0, "a", 1, "openai", "m", "m", 1000, 500, 1.0, 1, 0.0, batched)

    prices = {"m": Price(prompt=2.0, completion=8.0)}  # per million: 1000 x 2 + 500 x 8 = 6000 / 1e6
    live = usage([call(False)], [], prices, lambda unit: None)[None]
    batched = usage([call(True)], [], prices, lambda unit: None)[None]
    assert live.cost == pytest.approx(0.006) and batched.cost == pytest.approx(0.003)
    third = usage([call(True)], [], {"m": Price(prompt=2.0, completion=8.0, batch=1 / 3)}, lambda unit: None)[None]
    assert third.cost == pytest.approx(0.002)


def test_a_batch_whose_files_expired_is_closed_and_sent_again(
    server: BatchServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch left open (its output unread) whose files the provider has since deleted: the rerun that finds
    them gone closes it ("files-gone") with one clear line a question, and the next --retry-errors sends its
    requests again. Before, the batch stayed open and every rerun failed on it."""
    monkeypatch.setattr(openai_api, "BATCH_FILE_BYTES", 1024)  # the first run cannot read the output: left open
    path = tmp_path / "run.sqlite"
    run(table(server.url, batch=True), path)
    assert failed_questions(path) == 4 and query(path, "SELECT status FROM batches") == [("sent",)]
    monkeypatch.setattr(openai_api, "BATCH_FILE_BYTES", 2**20)
    with server.lock:
        (batch,) = server.batches.values()
        output = batch["output_file_id"]
        del server.files[output]  # expired at the provider
    run(table(server.url, batch=True), path, retry_errors=True)
    assert failed_questions(path) == 4 and server.created == 1
    (error,) = query(path, "SELECT DISTINCT error FROM results")
    assert f"no longer has {output} of batch {batch['id']} (its files expired)" in error[0]
    assert query(path, "SELECT status FROM batches") == [("files-gone",)]
    again = run(table(server.url, batch=True), path, retry_errors=True)
    assert again.errors == 0 and failed_questions(path) == 0 and server.created == 2 and server.executed == 24
    assert query(path, "SELECT status FROM batches ORDER BY created_at") == [("files-gone",), ("completed",)]


def test_a_batch_file_larger_than_one_replys_bound_is_read(server: BatchServer, tmp_path: Path) -> None:
    # 12 replies of ~350 bytes: an output file of ~4 KB, where one reply may be 1 KB at most
    outcome = run(table(server.url, batch=True, max_reply_bytes=1024), tmp_path / "run.sqlite")
    assert outcome.errors == 0 and failed_questions(tmp_path / "run.sqlite") == 0 and server.created == 1


def test_an_output_file_past_its_bound_is_question_errors_and_the_batch_stays_open(
    server: BatchServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openai_api, "BATCH_FILE_BYTES", 1024)
    path = tmp_path / "run.sqlite"
    run(table(server.url, batch=True), path)
    assert failed_questions(path) == 4
    (error,) = query(path, "SELECT DISTINCT error FROM results")
    assert "cannot read file-" in error[0] and "sent a reply larger than 1 KiB" in error[0]
    assert query(path, "SELECT status FROM batches") == [("sent",)]  # open: a rerun reads it again
    monkeypatch.setattr(openai_api, "BATCH_FILE_BYTES", 2**20)
    again = run(table(server.url, batch=True), path, retry_errors=True)
    assert failed_questions(path) == 0 and server.created == 1 and server.executed == 12  # nothing sent again
    assert again.calls == 12
