"""BatchServer (tests/integration/servers.py), OpenAI's Files and Batches API on 127.0.0.1, driven by the real
openai SDK: uploads, batches through every status, output and error files, the test controls."""

import json
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.types import Batch, FileObject

from tests.integration.servers import BATCH_ENDPOINT, EXPIRED_MESSAGE, BatchServer, FaultProxy

ROOT = Path(__file__).resolve().parents[1]
TERMINAL = ("completed", "failed", "expired", "cancelled")


@pytest.fixture
def server() -> Iterator[BatchServer]:
    batch_server = BatchServer()
    yield batch_server
    batch_server.close()


@pytest.fixture
def client(server: BatchServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)


def request_line(custom_id: str, **change: Any) -> dict[str, Any]:
    body = {"model": "canned", "messages": [{"role": "user", "content": f"What is 2 + 2? ({custom_id}, é✓)"}]}
    return {"custom_id": custom_id, "method": "POST", "url": BATCH_ENDPOINT, "body": body} | change


def jsonl(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()


def submit(client: openai.OpenAI, lines: list[dict[str, Any]] | bytes, **metadata: str) -> Batch:
    data = lines if isinstance(lines, bytes) else jsonl(lines)
    uploaded = client.files.create(file=("requests.jsonl", data, "application/jsonl"), purpose="batch")
    return client.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h", metadata=metadata or None
    )


def wait(client: openai.OpenAI, batch_id: str, until: tuple[str, ...] = TERMINAL, timeout: float = 15.0) -> Batch:
    deadline = time.monotonic() + timeout
    while True:
        batch = client.batches.retrieve(batch_id)
        if batch.status in until:
            return batch
        assert time.monotonic() < deadline, f"batch still {batch.status}"
        time.sleep(0.05)


def read_lines(client: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    assert file_id is not None
    return [json.loads(line) for line in client.files.content(file_id).text.splitlines()]


def test_round_trip(server: BatchServer, client: openai.OpenAI) -> None:
    server.delay_s = 0.5
    lines = [request_line(f"q{i}") for i in range(3)]
    created = submit(client, lines, run="r1")
    assert created.status == "validating" and created.request_counts is not None
    assert created.request_counts.total == 3
    statuses: list[str] = [created.status]
    while statuses[-1] not in TERMINAL:
        statuses.append(client.batches.retrieve(created.id).status)
        time.sleep(0.05)
    order = ["validating", "in_progress", "finalizing", "completed"]
    assert [order.index(s) for s in statuses] == sorted(order.index(s) for s in statuses)
    assert statuses.count("validating") >= 2 and statuses[-1] == "completed"  # validating for delay_s
    batch = client.batches.retrieve(created.id)
    assert batch.metadata == {"run": "r1"} and batch.model == "canned"
    assert batch.request_counts is not None and batch.request_counts.model_dump() == {
        "total": 3,
        "completed": 3,
        "failed": 0,
    }
    assert batch.in_progress_at and batch.finalizing_at and batch.completed_at and batch.error_file_id is None
    assert batch.usage is not None and batch.usage.input_tokens == 21
    output = read_lines(client, batch.output_file_id)
    assert sorted(line["custom_id"] for line in output) == ["q0", "q1", "q2"]
    for line in output:
        assert line["id"].startswith("batch_req_") and line["error"] is None
        assert line["response"]["status_code"] == 200 and line["response"]["request_id"]
        assert line["response"]["body"]["choices"][0]["message"]["content"] == "The answer is 4."
    assert server.executed == 3 and sorted(server.executed_ids) == ["q0", "q1", "q2"]
    assert server.created == 1 and server.retrieved >= len(statuses)
    # every object the server holds validates as the SDK's own model, not just as its lenient construct()
    Batch.model_validate(server.batches[batch.id])
    for file in server.files.values():
        FileObject.model_validate(file)
    assert client.files.retrieve(batch.output_file_id or "").purpose == "batch_output"
    assert client.files.content(created.input_file_id).content == jsonl(lines)  # the upload, byte for byte
    assert [b.id for b in client.batches.list()] == [batch.id]


def test_upstream_error_lands_in_error_file() -> None:
    upstream = FaultProxy(None, faults=[500], props={"model_path": "canned.gguf"})
    server = BatchServer(upstream.url, workers=2)
    client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
    try:
        batch = wait(client, submit(client, [request_line(f"q{i}") for i in range(3)]).id)
        assert batch.status == "completed"
        assert batch.request_counts is not None and (batch.request_counts.completed, batch.request_counts.failed) == (
            2,
            1,
        )
        [failed] = read_lines(client, batch.error_file_id)
        assert failed["response"]["status_code"] == 500 and failed["error"] is None
        assert failed["response"]["body"]["error"]["message"] == "injected 500"
        answered = read_lines(client, batch.output_file_id)
        assert sorted([failed["custom_id"], *(line["custom_id"] for line in answered)]) == ["q0", "q1", "q2"]
        assert server.executed == 3 and upstream.seen == 3
        # anything else goes to the upstream: the batch server can be a client's only base URL
        assert [m.id for m in client.models.list()] == ["canned"]
        reply = client.chat.completions.create(model="canned", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "The answer is 4."
        assert server.forwarded == 1 and upstream.seen == 4 and server.executed == 3
        with urllib.request.urlopen(server.url.removesuffix("/v1") + "/props", timeout=5) as response:
            assert json.load(response) == {"model_path": "canned.gguf"}  # beside /v1, as llama-server's
    finally:
        server.close()
        upstream.close()


@pytest.mark.parametrize(
    ("lines", "code", "line"),
    [
        ([request_line("a"), request_line("b"), request_line("a")], "duplicate_custom_id", 3),
        ([request_line("a"), request_line("b", url="/v1/embeddings")], "invalid_url", 2),
        ([request_line("a", method="GET")], "invalid_method", 1),
        ([request_line("a"), {"method": "POST"}], "missing_required_parameter", 2),
        (
            b'{"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m"}}\n{nope\n',
            "invalid_json_line",
            2,
        ),
        (b"\n", "empty_file", None),
        ([request_line("a"), request_line("b", body={"model": "other", "messages": []})], "mismatched_model", 2),
    ],
)
def test_validation_failure(
    server: BatchServer, client: openai.OpenAI, lines: list[dict[str, Any]] | bytes, code: str, line: int | None
) -> None:
    batch = submit(client, lines)
    assert batch.status == "failed" and batch.failed_at and batch.errors and batch.errors.data
    assert (code, line) in [(e.code, e.line) for e in batch.errors.data]
    assert wait(client, batch.id).status == "failed"
    time.sleep(0.1)
    assert server.executed == 0 and batch.output_file_id is None


def test_batch_level_validation(client: openai.OpenAI) -> None:
    small = BatchServer(max_requests=2)
    try:
        limited = openai.OpenAI(base_url=small.url, api_key="x", max_retries=0)
        batch = submit(limited, [request_line(f"q{i}") for i in range(3)])
        assert batch.status == "failed" and batch.errors and batch.errors.data
        assert batch.errors.data[0].code == "too_many_requests"
    finally:
        small.close()
    other = client.files.create(file=("notes.jsonl", b"{}\n", "application/jsonl"), purpose="user_data")
    wrong = client.batches.create(input_file_id=other.id, endpoint="/v1/chat/completions", completion_window="24h")
    assert (
        wrong.status == "failed" and wrong.errors and wrong.errors.data and wrong.errors.data[0].code == "invalid_file"
    )
    missing = client.batches.create(input_file_id="file-nope", endpoint="/v1/chat/completions", completion_window="24h")
    assert missing.status == "failed"
    with pytest.raises(openai.BadRequestError):
        client.files.create(file=("requests.txt", b"{}\n", "text/plain"), purpose="batch")  # batch input is .jsonl
    with pytest.raises(openai.BadRequestError):
        client.batches.create(input_file_id=other.id, endpoint="/v1/chat/completions", completion_window="1h")  # type: ignore[arg-type]


def test_hold_then_release(server: BatchServer, client: openai.OpenAI) -> None:
    server.hold()
    assert server.held
    batch = wait(client, submit(client, [request_line(f"q{i}") for i in range(3)]).id, until=("in_progress",))
    time.sleep(0.3)
    assert client.batches.retrieve(batch.id).status == "in_progress" and server.executed == 0
    server.release()
    assert wait(client, batch.id).status == "completed" and server.executed == 3


def test_expire_next(server: BatchServer, client: openai.OpenAI) -> None:
    server.expire_next = 1
    batch = wait(client, submit(client, [request_line(f"q{i}") for i in range(2)]).id)
    assert batch.status == "expired" and batch.expired_at and batch.output_file_id is None
    errors = read_lines(client, batch.error_file_id)
    assert sorted(line["custom_id"] for line in errors) == ["q0", "q1"]
    for line in errors:
        assert line["response"] is None
        assert line["error"] == {"code": "batch_expired", "message": EXPIRED_MESSAGE}
    assert server.executed == 0 and server.expire_next == 0
    assert wait(client, submit(client, [request_line("q9")]).id).status == "completed"  # only the next one
    assert server.executed_ids == ["q9"]


def test_fail_next(server: BatchServer, client: openai.OpenAI) -> None:
    server.fail_next = 1
    batch = wait(client, submit(client, [request_line("q0")]).id)
    assert batch.status == "failed" and batch.errors and batch.errors.data
    assert batch.errors.data[0].code == "token_limit_exceeded"
    assert (batch.errors.data[0].message or "").startswith("Enqueued token limit reached")
    assert wait(client, submit(client, [request_line("q0")]).id).status == "completed"
    assert server.executed == 1 and server.created == 2


def test_reject_upload(server: BatchServer, client: openai.OpenAI) -> None:
    server.reject_upload = 413
    with pytest.raises(openai.APIStatusError) as raised:
        client.files.create(file=("requests.jsonl", jsonl([request_line("q0")]), "application/jsonl"), purpose="batch")
    assert raised.value.status_code == 413 and server.files == {}
    assert isinstance(raised.value.body, dict) and raised.value.body["type"] == "invalid_request_error"


def test_cancel_while_held(server: BatchServer, client: openai.OpenAI) -> None:
    server.hold()
    batch = wait(client, submit(client, [request_line(f"q{i}") for i in range(3)]).id, until=("in_progress",))
    cancelling = client.batches.cancel(batch.id)
    assert cancelling.status in ("cancelling", "cancelled") and cancelling.cancelling_at
    cancelled = wait(client, batch.id)
    assert cancelled.status == "cancelled" and cancelled.cancelled_at
    server.release()
    time.sleep(0.2)
    assert server.executed == 0 and client.batches.retrieve(batch.id).status == "cancelled"
    assert client.batches.cancel(batch.id).status == "cancelled"  # cancelling twice is harmless
    done = wait(client, submit(client, [request_line("q0")]).id)
    with pytest.raises(openai.ConflictError):
        client.batches.cancel(done.id)


def test_cancel_mid_batch_keeps_what_ran() -> None:
    upstream = FaultProxy(None, faults=["slow:0.15"] * 20)
    server = BatchServer(upstream.url, workers=1)
    client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
    try:
        batch = submit(client, [request_line(f"q{i}") for i in range(20)])
        while server.executed < 2:
            time.sleep(0.02)
        client.batches.cancel(batch.id)
        batch = wait(client, batch.id)
        assert batch.status == "cancelled" and 2 <= server.executed < 20
        answered = read_lines(client, batch.output_file_id)
        assert [line["custom_id"] for line in answered] == server.executed_ids
        assert batch.request_counts is not None and batch.request_counts.completed == server.executed
    finally:
        server.close()
        upstream.close()


def test_unknown_ids(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as raised:
        client.batches.retrieve("batch_nope")
    assert isinstance(raised.value.body, dict) and "batch_nope" in raised.value.body["message"]
    with pytest.raises(openai.NotFoundError):
        client.batches.cancel("batch_nope")
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve("file-nope")
    with pytest.raises(openai.NotFoundError):
        client.files.content("file-nope")


def test_list_pages_newest_first(server: BatchServer, client: openai.OpenAI) -> None:
    ids = [submit(client, [request_line("q0")]).id for _ in range(3)]
    assert [b.id for b in client.batches.list(limit=2)] == ids[::-1]  # the SDK follows `after` to page 2
    first = client.batches.list(limit=2)
    assert first.has_more and [b.id for b in first.data] == ids[:0:-1]


CLIENT = """
import json, sys, time, openai
client = openai.OpenAI(base_url=sys.argv[1], api_key="x", max_retries=0)
if sys.argv[2] == "submit":
    line = {"custom_id": "q0", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "canned"}}
    uploaded = client.files.create(file=("r.jsonl", json.dumps(line).encode(), "application/jsonl"), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    print(batch.id, flush=True)
    batch_id = batch.id
else:
    batch_id = sys.argv[2]
while (batch := client.batches.retrieve(batch_id)).status != "completed":
    time.sleep(0.05)
print(json.loads(client.files.content(batch.output_file_id).text)["custom_id"], flush=True)
"""


def test_client_killed_mid_poll_then_another_process_polls(server: BatchServer, tmp_path: Path) -> None:
    script = tmp_path / "client.py"
    script.write_text(textwrap.dedent(CLIENT))
    server.hold()
    first = subprocess.Popen(
        [sys.executable, str(script), server.url, "submit"], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert first.stdout is not None
        batch_id = first.stdout.readline().strip()
        assert batch_id.startswith("batch_")
        polled, deadline = server.retrieved, time.monotonic() + 30
        while server.retrieved < polled + 3:  # it is polling the held batch
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        first.kill()
        first.wait()
    server.release()
    second = subprocess.run(
        [sys.executable, str(script), server.url, batch_id], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["q0"] and server.executed == 1
