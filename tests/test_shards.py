"""Shards (`moot run FILE --shard I/N`) and their merge (`moot merge OUT STORE...`): a 4-shard run of a small
experiment merged equals a single run of it row for row, each shard holds whole questions, and a bad shard
spec or a bad merge is one line that writes nothing and changes no store."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import sqlite3
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moot.analysis import build_report
from moot.cli import app
from moot.errors import ConfigError
from moot.runner.config import ExperimentConfig
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from moot.runner.session import RunOptions
from moot.runner.shards import Shard, _Calls, merge_shards, parse_shard
from moot.runner.store import RunStore
from moot.runner.store_paths import store_path

QUESTIONS, SEEDS, CONDITIONS, N = 8, (0, 1), ("vote", "society"), 4
EXPERIMENT: dict[str, Any] = {
    "name": "sharded",
    "seeds": list(SEEDS),
    "tasks": [{"name": "arithmetic", "count": QUESTIONS}],
    "agent": {"backend": {"kind": "scripted", "model": "numbers"}},
    "conditions": [{"name": "vote", "protocol": "vote"}, {"name": "society", "protocol": "society", "rounds": 2}],
}
# what differs between two runs of one experiment by nature: which session stored a row, and when
DIFFERS = {"results": {"session"}, "turns": set(), "calls": {"session", "created_at"}}


def config(**changes: Any) -> ExperimentConfig:
    return parse_experiment(EXPERIMENT | changes)


@dataclass(frozen=True)
class Runs:
    folder: Path
    single: Path
    shards: tuple[Path, ...]  # shard 1 to N
    merged: Path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """One run of the experiment, its N shards run apart, and their merge."""
    folder = tmp_path_factory.mktemp("shards")
    single = folder / "single.sqlite"
    asyncio.run(run_experiment(config(), single))
    shards = []
    for i in range(1, N + 1):
        path = folder / f"part.shard-{i}-of-{N}.sqlite"
        asyncio.run(run_experiment(config(), path, shard=Shard(i, N)))
        shards.append(path)
    merged = folder / "merged.sqlite"
    merge_shards(merged, [shards[2], shards[0], shards[3], shards[1]])  # in any order
    return Runs(folder, single, tuple(shards), merged)


def rows(path: Path, table: str, leave_out: Collection[str] = ()) -> list[str]:
    """A table's rows, each as canonical JSON without the columns ``leave_out``, sorted (row order is when
    each was stored, which concurrency decides)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cursor = db.execute(f"SELECT * FROM {table}")
        names = [c[0] for c in cursor.description]
        return sorted(
            json.dumps({k: v for k, v in zip(names, row) if k not in leave_out}, sort_keys=True) for row in cursor
        )
    finally:
        db.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the shard spec -------------------------------------------------------------------------------------
def test_shard_specs_count_from_one() -> None:
    assert parse_shard("1/4") == Shard(1, 4)
    assert parse_shard("4/4") == Shard(4, 4) and parse_shard(" 1/1 ") == Shard(1, 1)
    assert str(Shard(2, 4)) == "2/4"
    assert [k for k in range(10) if Shard(2, 4).holds(k)] == [1, 5, 9]
    assert [Shard(i, 4).size(10) for i in range(1, 5)] == [3, 3, 2, 2]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("0/4", "option --shard: shards count from 1, so I must be 1 to 4, got '0/4'"),
        ("5/4", "option --shard: shards count from 1, so I must be 1 to 4, got '5/4'"),
        ("a/b", "option --shard: expected I/N, shard I of N counting from 1 (e.g. 1/4), got 'a/b'"),
        ("1/0", "option --shard: N, the number of shards, must be at least 1, got '1/0'"),
        ("", "option --shard: expected I/N, shard I of N counting from 1 (e.g. 1/4), got ''"),
    ],
)
def test_a_bad_shard_spec_is_one_line(spec: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "--shard", spec])
    assert result.exit_code == 2
    assert result.stderr == f"moot: error: {message}\n"
    assert not (tmp_path / "runs").exists()  # refused before anything else


def test_more_shards_than_questions_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    with pytest.raises(ConfigError, match="the experiment has 8 questions, so at most 8 shards"):
        asyncio.run(run_experiment(config(), shard=Shard(9, 9)))
    assert not any(p.suffix == ".sqlite" for p in (tmp_path / "runs").iterdir())


def test_a_shards_store_is_the_runs_with_its_shard_before_the_suffix(tmp_path: Path) -> None:
    assert store_path(config(output="runs/x.sqlite"), None, Shard(2, 4)) == Path("runs/x.shard-2-of-4.sqlite")
    default = store_path(config())
    assert store_path(config(), None, Shard(1, 2)) == default.with_name(default.stem + ".shard-1-of-2.sqlite")
    assert store_path(config(), tmp_path / "mine.sqlite", Shard(1, 2)) == tmp_path / "mine.sqlite"


# -- the shards -----------------------------------------------------------------------------------------
def test_shards_hold_whole_questions_dealt_round_robin(runs: Runs) -> None:
    db = sqlite3.connect(runs.single)
    order = [q for (q,) in db.execute("SELECT question_id FROM questions ORDER BY rowid")]
    db.close()
    assert len(order) == QUESTIONS
    held: list[set[str]] = []
    for i, path in enumerate(runs.shards, start=1):
        store = RunStore.read(path)
        try:
            done = store.done()
            assert store.meta()["shard"] == {"index": i, "count": N}
            assert store.run_meta().status == "complete"
            assert store.listing().planned_units == len(done)  # `moot runs`: a shard plans its own questions
            assert [s.options["shard"] for s in store.sessions()] == [f"{i}/{N}"]
        finally:
            store.close()
        questions = {q for _, _, q, _ in done}
        assert questions == {q for k, q in enumerate(order) if k % N == i - 1}  # round-robin, from shard 1
        # whole questions: every seed and every condition of each
        assert set(done) == {(c, "arithmetic", q, s) for c in CONDITIONS for q in questions for s in SEEDS}
        held.append(questions)
    assert all(held) and set().union(*held) == set(order) and sum(map(len, held)) == QUESTIONS


def test_the_merge_equals_a_single_run(runs: Runs) -> None:
    """results, turns and calls row for row, but for the session that stored a row and when (the scripted
    model's latency is 0, so every other column, latencies and reply JSON included, is compared)."""
    for table, leave_out in DIFFERS.items():
        single, merged = rows(runs.single, table, leave_out), rows(runs.merged, table, leave_out)
        assert len(single) > 0 and merged == single, table
    for table in ("questions", "conditions"):
        assert rows(runs.merged, table) == rows(runs.single, table)
    # every turn points to a stored call; round 0 is shared between the conditions as in the single run
    assert rows(runs.merged, "call_errors") == rows(runs.single, "call_errors") == []
    single_meta, merged_meta = RunStore.read(runs.single).meta(), RunStore.read(runs.merged).meta()
    assert "shard" not in merged_meta
    assert {k: v for k, v in merged_meta.items() if k != "created_at"} == {
        k: v for k, v in single_meta.items() if k != "created_at"
    }
    store = RunStore.read(runs.merged)
    try:
        assert [s.options["shard"] for s in store.sessions()] == [f"{i}/{N}" for i in range(1, N + 1)]
        assert store.count("results") == QUESTIONS * len(SEEDS) * len(CONDITIONS)
    finally:
        store.close()


def test_the_merged_store_reports_as_the_single_run(runs: Runs) -> None:
    merged, single = build_report(runs.merged, resamples=50), build_report(runs.single, resamples=50)
    assert merged.status == "complete"
    assert merged.tasks == single.tasks


def test_the_merged_store_resumes_as_the_single_run_without_a_call(runs: Runs, tmp_path: Path) -> None:
    copy = tmp_path / "merged.sqlite"
    shutil.copy(runs.merged, copy)
    before = digest(copy)
    outcome = asyncio.run(run_experiment(config(), copy))
    assert (outcome.ran, outcome.calls) == (0, 0) and digest(copy) == before


def test_a_shard_resumes_and_refuses_another_shard(runs: Runs, tmp_path: Path) -> None:
    copy = tmp_path / "part.sqlite"
    shutil.copy(runs.shards[1], copy)
    before = digest(copy)
    outcome = asyncio.run(run_experiment(config(), copy, shard=Shard(2, N)))
    assert (outcome.ran, outcome.calls, outcome.skipped) == (0, 0, QUESTIONS // N * len(SEEDS) * len(CONDITIONS))
    assert digest(copy) == before
    with pytest.raises(
        ConfigError, match="holds shard 2/4 of this experiment, not shard 3/4; resume it with --shard 2/4"
    ):
        asyncio.run(run_experiment(config(), copy, shard=Shard(3, N)))
    with pytest.raises(ConfigError, match="holds shard 2/4 of this experiment, not the whole run"):
        asyncio.run(run_experiment(config(), copy))
    with pytest.raises(ConfigError, match="holds the whole run of this experiment, not shard 1/4"):
        asyncio.run(run_experiment(config(), runs.single, shard=Shard(1, N)))
    assert digest(copy) == before


def test_an_interrupted_shard_resumes_to_its_results(runs: Runs, tmp_path: Path) -> None:
    """A shard run one condition at a time (as a killed one is left part-done) ends with the same rows."""
    path = tmp_path / "part.sqlite"
    asyncio.run(run_experiment(config(), path, RunOptions(conditions=("vote",)), shard=Shard(3, N)))
    assert RunStore.read(path).run_meta().status == "incomplete"
    asyncio.run(run_experiment(config(), path, shard=Shard(3, N)))
    for table, leave_out in DIFFERS.items():
        assert rows(path, table, leave_out) == rows(runs.shards[2], table, leave_out)


# -- refusals ---------------------------------------------------------------------------------------------
def refused(runs: Runs, stores: list[Path], message: str, out: Path | None = None) -> None:
    """merge_shards refuses with ``message``, writes nothing and changes no store."""
    out = out or runs.folder / "refused.sqlite"
    before = {p: digest(p) for p in {*stores, *runs.shards}}
    listing = sorted(runs.folder.iterdir())
    existed = out.exists()
    with pytest.raises(ConfigError, match=message) as caught:
        merge_shards(out, stores)
    assert "\n" not in str(caught.value)
    assert {p: digest(p) for p in before} == before
    assert sorted(runs.folder.iterdir()) == listing  # no OUT, no temporary file left
    assert out.exists() == existed


def test_merge_refuses_a_missing_shard(runs: Runs) -> None:
    refused(runs, [runs.shards[0], runs.shards[1], runs.shards[3]], "^missing shard 3 of 4: ")
    refused(runs, [runs.shards[1]], "^missing shards 1, 3, 4 of 4: ")


def test_merge_refuses_a_shard_given_twice(runs: Runs) -> None:
    refused(runs, [*runs.shards, runs.shards[2]], "^shard 3/4 is given twice ")


def test_merge_refuses_a_shard_of_another_experiment(runs: Runs, tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    asyncio.run(run_experiment(config(seeds=[0]), other, shard=Shard(2, N)))
    refused(runs, [runs.shards[0], other, runs.shards[2], runs.shards[3]], "is a shard of another experiment than")
    halves = tmp_path / "halves.sqlite"
    asyncio.run(run_experiment(config(), halves, shard=Shard(2, 2)))
    refused(runs, [runs.shards[0], halves], "is shard 2/2 and .* shard 1/4: the shards of one merge share N")


def test_merge_refuses_a_whole_run_an_incomplete_shard_and_overlapping_shards(runs: Runs, tmp_path: Path) -> None:
    refused(runs, [*runs.shards[:3], runs.single], "single.sqlite is not a shard: it holds a whole run")
    part = tmp_path / "part.sqlite"
    asyncio.run(run_experiment(config(), part, RunOptions(conditions=("vote",)), shard=Shard(4, N)))
    refused(runs, [*runs.shards[:3], part], "shard 4/4 is not complete \\(status incomplete\\)")
    # a store that says it is shard 2 but holds shard 1's questions
    forged = tmp_path / "forged.sqlite"
    shutil.copy(runs.shards[0], forged)
    db = sqlite3.connect(forged)
    db.execute("UPDATE meta SET value = ? WHERE key = 'shard'", (json.dumps({"index": 2, "count": N}),))
    db.commit()
    db.close()
    refused(runs, [runs.shards[0], forged, *runs.shards[2:]], "both hold .*: overlapping shards cannot be merged")


def test_merge_refuses_an_existing_out(runs: Runs) -> None:
    refused(runs, list(runs.shards), "already exists; merge writes a new store", out=runs.merged)
    refused(runs, list(runs.shards), "already exists", out=runs.shards[0])


def test_moot_merge_on_the_command_line(runs: Runs, tmp_path: Path) -> None:
    out = tmp_path / "merged.sqlite"
    result = CliRunner().invoke(app, ["merge", str(out), *map(str, runs.shards)])
    assert result.exit_code == 0, result.output
    assert "merged 4 shards of sharded: 32 results, 144 turns, 96 calls, 4 sessions" in result.stdout
    assert rows(out, "results", {"session"}) == rows(runs.single, "results", {"session"})
    result = CliRunner().invoke(app, ["merge", str(tmp_path / "again.sqlite"), *map(str, runs.shards[:3])])
    assert result.exit_code == 2
    assert result.stderr == "moot: error: missing shard 4 of 4: a merge needs the store of every shard\n"
    assert not (tmp_path / "again.sqlite").exists()


# -- calls two shards both made ----------------------------------------------------------------------------
def call(key: str, text: str, session: int = 1) -> dict[str, Any]:
    reply = {"model": "m", "samples": [{"text": text, "latency_s": 0.5 * session, "endpoint": f"e{session}"}]}
    return {"key": key, "reply": json.dumps(reply), "session": session}


def test_a_call_two_shards_made_is_kept_once_or_beside() -> None:
    """One run makes a request that two questions send once; two shards each make it. The same reply
    (latency and endpoint aside) is kept once; another is kept beside it under KEY~SESSION."""
    calls = _Calls()
    assert [r["key"] for r in calls.take([call("a", "1"), call("b", "2")], {1: 1})] == ["a", "b"]
    kept = list(calls.take([call("a", "1"), call("b", "3"), call("c", "4")], {1: 2}))
    assert [r["key"] for r in kept] == ["b~2", "c"]
    assert calls.moved == {"a": "a", "b": "b~2"}
    kept = list(calls.take([call("b", "3"), call("b~1", "5")], {1: 3}))
    assert [r["key"] for r in kept] == ["b~1"]  # b's second reply again: kept once; b~1 is no other's key
    assert calls.moved == {"b": "b~2"}
