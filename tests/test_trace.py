"""``moot.trace``: the breakdown of a traced run against hand-computed values, and bad trace files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moot.errors import ConfigError
from moot.trace import Trace, breakdown, describe, read_trace, sample_record


def call(agent: str, round: int, queued: float, done: float, *samples: dict[str, object]) -> dict[str, object]:
    place = {"condition": "society", "task": "arithmetic", "question_id": "q1", "seed": 0}
    return {"kind": "call", **place, "agent": agent, "round": round, "queued": queued, "done": done,
            "samples": list(samples), "error": None}  # fmt: skip


def server(prompt_ms: float, predicted_ms: float, prompt_n: int, cache_n: int) -> dict[str, float]:
    return {"prompt_ms": prompt_ms, "predicted_ms": predicted_ms, "prompt_n": prompt_n, "cache_n": cache_n}


# Two slots. Round 0: agent 1 holds slot 0 from 0 to 4 s (1 s reading its prompt, 2 s generating), agent 2
# asks at 0 but is sent at 1 and holds slot 1 until 10 (2 s prompt, 6 s generating). Round 1: agent 1
# holds slot 0 from 10 to 11.8, without server timings; its call is back at 12.
LINES = [
    {"kind": "run", "started": 0.0, "slots": 2},
    call("agent-1", 0, 0.0, 4.0, {"sent": 0.0, "done": 4.0, "slot": 0, "server": server(1000, 2000, 10, 5),
                                  "completion_tokens": 20}),
    call("agent-2", 0, 0.0, 10.0, {"sent": 1.0, "done": 10.0, "slot": 1, "server": server(2000, 6000, 40, 0),
                                   "completion_tokens": 30}),
    call("agent-1", 1, 10.0, 12.0, {"sent": 10.0, "done": 11.8, "slot": 0, "completion_tokens": 5}),
    {"kind": "end", "at": 12.5},
]  # fmt: skip


def test_the_breakdown_of_a_small_trace_matches_the_hand_computed_values() -> None:
    b = breakdown(LINES)
    assert (b.wall_s, b.slots, b.slot_s, b.calls, b.samples) == (12.0, 2, 24.0, 3, 3)
    assert (b.completion_tokens, b.prompt_tokens, b.cached_tokens) == (55, 50, 5)
    assert b.generating_s == pytest.approx(8.0)  # 2 + 6
    assert b.prompt_s == pytest.approx(3.0)  # 1 + 2
    assert b.other_busy_s == pytest.approx(3.8)  # (4 - 3) + (9 - 8) + 1.8 untimed
    assert b.idle_s == pytest.approx(9.2)  # 24 - 8 - 3 - 3.8
    assert b.waiting_for_slot_s == pytest.approx(1.0)  # agent 2 asked at 0, sent at 1
    assert b.slowest_agent_s == pytest.approx(6.0)  # agent 1 done at 4 waits for agent 2 done at 10
    # in flight: 1 request for 1 + 6 + 1.8 s, 2 for 3 s, none for the last 0.2 s
    assert b.busy_shares == pytest.approx((0.2 / 12, 8.8 / 12, 3 / 12))
    assert b.mean_busy == pytest.approx(14.8 / 12)
    assert b.per_slot_generating == pytest.approx((2 / 12, 6 / 12))
    assert b.tokens_per_s == pytest.approx(55 / 12)
    text = "\n".join(describe(b))
    assert "wall 12.0 s x 2 slots = 24.0 slot-s" in text and "idle                  9.2 slot-s   38.3%" in text


def test_slots_default_to_the_most_requests_ever_in_flight() -> None:
    assert breakdown([line for line in LINES if line["kind"] != "run"]).slots == 2
    assert breakdown(LINES, slots=4).slot_s == 48.0


def test_a_trace_without_calls_and_a_line_that_is_not_json_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no traced model call"):
        breakdown([{"kind": "run"}])
    path = tmp_path / "trace.jsonl"
    path.write_text('{"kind": "run"}\nnot json\n')
    with pytest.raises(ConfigError, match=r"trace.jsonl:2: not a trace line"):
        read_trace(path)


def test_a_trace_records_the_samples_its_backend_notes_and_only_inside_a_call(tmp_path: Path) -> None:
    assert sample_record() is None  # nothing traced: backends record nothing
    trace = Trace(tmp_path / "t.jsonl", {"slots": 3})
    place = {"condition": "c", "task": "t", "question_id": "q", "seed": 1, "agent": "a", "round": 0, "other": 1}
    with trace.call(place):
        record = sample_record()
        assert record is not None
        record |= {"slot": 2}
    with pytest.raises(RuntimeError), trace.call(place):
        raise RuntimeError("refused")
    assert sample_record() is None
    trace.close()
    run, ok, failed, end = read_trace(tmp_path / "t.jsonl")
    assert run["kind"] == "run" and run["slots"] == 3 and end["kind"] == "end"
    assert ok["samples"] == [{"slot": 2}] and ok["error"] is None and "other" not in ok
    assert ok["queued"] <= ok["done"] and failed["error"] == "RuntimeError: refused"


def test_a_trace_file_that_cannot_be_written_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--trace: cannot write"):
        Trace(tmp_path / "missing" / "t.jsonl")
    assert json.loads((Trace(tmp_path / "t.jsonl").path).read_text())["kind"] == "run"
