"""The durable runner with the scripted backend: store, cache and replay, shared round 0, resume, errors."""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from moot.backends.base import GenerationRequest
from moot.backends.scripted import ScriptedBackend, seeded_numbers
from moot.errors import BackendError, ConfigError
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import Experiment
from moot.runner.export import export_table
from moot.runner.session import RunOptions
from moot.runner.store import SCHEMA_VERSION, RunStore, StoreError
from moot.runner.summary import question_rows, summarize
from tests.helpers import arithmetic_experiment, run

# the module (moot.runner re-exports a function of the same name)
evaluate_module = importlib.import_module("moot.runner.evaluate")

SCRIPTED = {"backend": {"kind": "scripted", "model": "numbers"}}


def experiment(conditions: list[dict[str, Any]], count: int = 4, seeds: tuple[int, ...] = (0,), **extra: Any) -> Any:
    return parse_experiment(arithmetic_experiment("t", conditions, count, seeds=list(seeds), **extra))


THREE = [
    {"name": "single", "protocol": "single"},
    {"name": "vote", "protocol": "vote", "agents": 3},
    {"name": "society", "protocol": "society", "agents": 3, "rounds": 3},
]


def stored(path: Path, table: str = "results") -> list[dict[str, Any]]:
    store = RunStore.open(path)
    try:
        rows = list(store.rows(table))
    finally:
        store.close()
    drop = {"session", "call_key"}
    return sorted(({k: v for k, v in r.items() if k not in drop} for r in rows), key=json.dumps)


def test_a_run_stores_everything_and_an_identical_rerun_makes_no_call(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    first = run(experiment(THREE, seeds=(0, 1)), path)
    assert (first.units, first.ran, first.skipped) == (24, 24, 0)
    # calls: round 0 is 3 agents per (question, seed) shared by all; society adds 2 rounds of 3
    assert first.calls == 8 * 3 + 8 * 3 * 2
    store = RunStore.open(path)
    meta = store.meta()
    assert meta["status"] == "complete" and meta["schema_version"] == SCHEMA_VERSION
    assert meta["round0_sharing"] == {
        "single": ["vote", "society"],
        "vote": ["single", "society"],
        "society": ["single", "vote"],
    }
    assert meta["models"] == {"numbers": {"backend": "scripted", "model_id": "scripted:numbers"}}
    assert meta["topology_density"] == {"single": 0.0, "vote": 0.0, "society": 1.0}
    templates = {
        "debate.prompts.initial_messages",
        "debate.prompts.debate_message",
        "debate.prompts.reflection_message",
        "debate.prompts.fresh_message",
        "debate.components.stopping.judge.judge_messages",
        # Liang's, the retention filter's and the cues' wording are hashed too, wherever they live
        "debate.schedules.liang.moderator_prompt",
        "debate.schedules.liang.judge_decision_prompt",
        "debate.components.retention.filter.filter_messages",
        "debate.components.cues.VoteCue.prefix",
        "debate.components.cues.ConfidenceCue.label",
        "retention:dar",
        "stopping:judge",
        "cue:confidence",
    }
    assert templates <= set(meta["prompt_templates"])
    assert all(len(digest) == 64 for digest in meta["prompt_templates"].values())
    assert store.conditions()["society"].protocol.rounds == 3
    assert store.count("results") == 24 and store.count("turns") == 8 * (1 + 3 + 9)
    assert store.count("calls") == first.calls
    call = next(store.rows("calls"))
    assert json.loads(call["request"])["messages"] and json.loads(call["reply"])["samples"][0]["text"]
    store.close()
    before = stored(path)

    again = run(experiment(THREE, seeds=(0, 1)), path)
    assert (again.calls, again.replayed, again.ran, again.skipped) == (0, 0, 0, 24)
    assert stored(path) == before


def test_replay_from_the_store_reproduces_results_without_calls(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    run(experiment(THREE), path)
    before = stored(path)
    db = sqlite3.connect(path)
    db.execute("DELETE FROM results")
    db.execute("DELETE FROM turns")
    db.commit()
    db.close()
    replay = run(experiment(THREE), path)
    assert replay.calls == 0 and replay.ran == 12
    assert stored(path) == before

    fresh = run(experiment(THREE), path, use_cache=False, retry_errors=True)
    assert fresh.calls == 0  # every question is stored: nothing to run
    db = sqlite3.connect(path)
    db.execute("DELETE FROM results")
    db.commit()
    db.close()
    fresh = run(experiment(THREE), path, use_cache=False)
    # no replay from the store, but round 0 is still shared (single's and vote's calls are society's)
    assert fresh.calls == 4 * 9 and fresh.replayed == 4 * (1 + 3)
    assert stored(path) == before  # the scripted model is deterministic


def test_shared_round0_costs_no_more_than_society_alone(tmp_path: Path) -> None:
    together = run(experiment(THREE, count=6), tmp_path / "all.sqlite")
    alone = run(experiment([THREE[2]], count=6), tmp_path / "society.sqlite")

    def round0_calls(path: Path) -> int:
        return sum(1 for c in stored(path, "calls") if c["round"] == 0)

    assert round0_calls(tmp_path / "all.sqlite") == round0_calls(tmp_path / "society.sqlite") == 6 * 3
    assert together.calls == alone.calls
    # the starting points are identical: single is agent-1's round 0, vote is the round-0 majority
    rows = {(r.condition, r.question_id): r for r in question_rows(RunStore.open(tmp_path / "all.sqlite"))}
    for qid in {q for _, q in rows}:
        assert rows[("single", qid)].answers[0] == rows[("society", qid)].answers[0][:1]
        assert rows[("vote", qid)].answers[0] == rows[("society", qid)].answers[0]

    unshared = run(experiment(THREE, count=6, share_round0=False), tmp_path / "unshared.sqlite")
    assert unshared.calls == together.calls + 6 * (1 + 3)
    assert RunStore.open(tmp_path / "unshared.sqlite").meta()["round0_sharing"]["vote"] == []


def test_a_store_of_another_experiment_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    run(experiment(THREE), path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(ConfigError, match="holds a run of a different experiment"):
        run(experiment(THREE, count=5), path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


def test_unreadable_and_incompatible_stores_are_clear_errors(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="is not a moot run store: it is not an SQLite database"):
        run(experiment(THREE), junk)
    assert junk.read_bytes() == b"this is not a database" * 100

    path = tmp_path / "old.sqlite"
    run(experiment(THREE), path)
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match=r"written by moot .* with store schema 99; this moot .* reads schema 4"):
        RunStore.open(path)


def test_failed_questions_are_stored_as_errors_and_retried_on_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = {"on": True}

    def flaky(request: GenerationRequest, index: int) -> str:
        if broken["on"] and "8+16*15" in request.messages[-1].content:
            raise BackendError("server answered HTTP 500: boom")
        return seeded_numbers(request, index)

    monkeypatch.setattr(evaluate_module, "make_backend", lambda cfg: ScriptedBackend(flaky, "scripted:numbers"))
    path = tmp_path / "run.sqlite"
    config = experiment(THREE)
    first = run(config, path)
    results = {(r["condition"], r["question_id"]): r for r in stored(path)}
    errors = [r for r in results.values() if r["status"] == "error"]
    assert len(errors) == 3 and all(r["question_id"] == "arithmetic-s0-1" for r in errors)
    assert all(r["error"] == "server answered HTTP 500: boom" and r["correct"] == 0 for r in errors)
    assert len(results) == 12  # the run went on; no question was substituted
    assert first.errors >= 1 and stored(path, "call_errors")
    summary = summarize(RunStore.open(path))[1]
    assert summary.errors == 3

    broken["on"] = False
    assert run(config, path).ran == 0  # errors are kept unless asked
    retry = run(config, path, retry_errors=True)
    assert retry.ran == 3
    assert all(r["status"] != "error" for r in stored(path))


def test_export_formats(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    run(experiment(THREE, count=2), path)
    jsonl = export_table(path, "results", "jsonl")
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert len(rows) == 6 and {r["condition"] for r in rows} == {"single", "vote", "society"}
    csv_path = export_table(path, "turns", "csv", tmp_path / "turns.csv")
    assert csv_path.read_text().splitlines()[0].startswith("condition,task,question_id,seed,round,agent")
    import pyarrow.parquet as pq

    table = pq.read_table(export_table(path, "calls", "parquet"))
    assert table.num_rows == 2 * (3 + 6) and "reply" in table.column_names
    with pytest.raises(ConfigError, match="unknown export format 'xml'"):
        export_table(path, "results", "xml")


def test_accounting_with_prices(tmp_path: Path) -> None:
    config = experiment(THREE, count=2, prices={"numbers": {"prompt": 1.0, "completion": 2.0}})
    path = tmp_path / "run.sqlite"
    run(config, path)
    conditions, total = summarize(RunStore.open(path))
    calls = stored(path, "calls")
    expected = sum(c["prompt_tokens"] * 1.0 + c["completion_tokens"] * 2.0 for c in calls) / 1e6
    assert total.usage.cost == pytest.approx(expected)
    assert sum(c.usage.cost for c in conditions) == pytest.approx(expected)
    assert sum(c.usage.calls for c in conditions) == total.usage.calls == len(calls)
    stored_summary = RunStore.open(path).meta()["summary"]  # accounting is stored with the run
    assert stored_summary["total"]["cost"] == pytest.approx(expected)
    assert [c["name"] for c in stored_summary["conditions"]] == ["single", "vote", "society"]
    assert {c.name: c.usage.used_calls for c in conditions} == {"single": 2, "vote": 6, "society": 18}


def test_judge_calls_are_stored_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    config = experiment([{"name": "adaptive", "protocol": "du-adaptive", "rounds": 3}], count=2)
    outcome = run(config, path)
    calls = stored(path, "calls")
    judge_calls = [c for c in calls if c["agent"] == "judge"]
    assert len(judge_calls) == 2 * 3 and outcome.calls == 2 * 3 * 3 + 2 * 3
    for result in stored(path):
        votes = json.loads(result["votes"])
        assert [v["judge"]["confidence"] for v in votes] == [None, None, None]  # "numbers" gives none
        assert result["stop_reason"] == "max_rounds" and result["rounds_used"] == 3
    assert {t["agent"] for t in stored(path, "turns")} == {"agent-1", "agent-2", "agent-3"}
    conditions, _ = summarize(RunStore.open(path))
    assert conditions[0].usage.calls == conditions[0].usage.used_calls == len(calls)


def test_confidences_pools_and_weights_are_stored(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    run(experiment([{"name": "dc", "protocol": "diverse-confidence-weighted"}], count=2), path)
    turns = stored(path, "turns")
    assert all(t["confidence"] is None for t in turns)  # "numbers" states no confidence: missing, not 0
    for result in stored(path):
        votes = json.loads(result["votes"])
        pool = votes[0]["pool"]
        assert len(pool["texts"]) == 6 and len(pool["selected"]) == 3
        assert votes[1]["pool"] is None and votes[1]["weights"] is None  # all-zero weights: plain majority
    calls = stored(path, "calls")
    assert sum(1 for c in calls if c["round"] == 0) == 2 * 6  # the extra samples are paid for


def test_dar_runs_store_uncertainty_retention_and_filter_calls(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    outcome = run(experiment([{"name": "dar", "protocol": "dar"}], count=2), path)
    turns = stored(path, "turns")
    assert all(t["anll"] is not None and t["perplexity"] == pytest.approx(2.718281828 ** t["anll"]) for t in turns)
    calls = stored(path, "calls")
    assert sum(1 for c in calls if c["agent"] == "filter") == 2 * 2  # rounds 1 and 2 of each question
    for result in stored(path):
        retention = [v["retention"] for v in json.loads(result["votes"])]
        assert retention[0] is None and all(r["rule"] == "dar" for r in retention[1:])
        # the "numbers" model never answers with a list of ids: every selection falls back to all
        assert all(r["fallback"] and r["forwarded"] == 4 * 3 for r in retention[1:])
    conditions, _ = summarize(RunStore.open(path))
    assert conditions[0].usage.used_calls == conditions[0].usage.calls == len(calls) == outcome.calls


def test_biographies_are_scored_fact_by_fact_by_the_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    people = tmp_path / "people.jsonl"
    people.write_text(
        '{"name": "Ada Quill", "facts": ["Ada Quill was born in 1901.", "She built clocks.", "She lived in Oslo."]}\n'
    )

    def model(request: GenerationRequest, index: int) -> str:
        prompt = request.messages[-1].content
        if "Consider the following biography" in prompt:
            fact = prompt.split("consistent with the fact below?")[1].split("Give a single word")[0]
            return "Uncertain." if "Oslo" in fact else ("No." if "clocks" in fact else "Yes.")
        return "- Ada Quill was born in 1901.\n- She repaired watches."

    monkeypatch.setattr(evaluate_module, "make_backend", lambda cfg: ScriptedBackend(model, "scripted:bio"))
    config = parse_experiment(
        {
            "tasks": [{"name": "biographies", "count": 1, "data": str(people)}],
            "agent": SCRIPTED,
            "conditions": [{"name": "society", "protocol": "society", "agents": 2}],
        }
    )
    path = tmp_path / "run.sqlite"
    outcome = run(config, path)
    (result,) = stored(path)
    detail = json.loads(result["metric_detail"])
    assert set(detail) == {"agent-1", "agent-2", "skipped_replies"}
    assert detail["agent-1"]["verdicts"] == ["consistent", "inconsistent", "uncertain"]
    assert result["metric"] == pytest.approx(2 / 4)  # pooled: 2 consistent, 2 inconsistent
    judge_calls = [c for c in stored(path, "calls") if c["agent"].startswith("judge/")]
    assert len(judge_calls) == 2 * 3 and outcome.calls == 2 * 2 + 6  # the judge's calls are counted
    conditions, _ = summarize(RunStore.open(path))
    assert conditions[0].metric == pytest.approx(0.5)


def test_a_finished_run_replays_without_building_or_checking_a_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing pending: no backend is built or checked (a local model would load, a server be asked),
    nothing is written (the file is byte for byte as it was: no session row for a rerun that computed
    nothing), and `moot run` prints its summary."""
    from typer.testing import CliRunner

    from moot.cli import app

    path = tmp_path / "run.sqlite"
    config = experiment(THREE)
    run(config, path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    store = RunStore.open(path)
    models, totals = store.meta()["models"], summarize(store)
    store.close()

    def refuse(*_: Any) -> Any:
        raise BackendError("no backend may be built or checked when nothing is pending")

    monkeypatch.setattr(evaluate_module, "make_backend", refuse)
    monkeypatch.setattr(ScriptedBackend, "check", refuse)
    again = run(config, path, retry_errors=True)  # no stored error: nothing to retry either
    assert (again.ran, again.skipped, again.calls, again.replayed, again.errors) == (0, 12, 0, 0, 0)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    store = RunStore.open(path)
    try:
        meta = store.meta()
        assert (meta["status"], meta["models"]) == ("complete", models)
        assert summarize(store) == totals
    finally:
        store.close()

    file = tmp_path / "run.toml"
    file.write_text(
        'name = "t"\nseeds = [0]\n[[tasks]]\nname = "arithmetic"\ncount = 4\nseed = 0\n'
        '[agent]\nbackend = { kind = "scripted", model = "numbers" }\n'
        + "".join(
            f'[[conditions]]\nname = "{c["name"]}"\nprotocol = "{c["protocol"]}"\n'
            + "".join(f"{k} = {v}\n" for k, v in c.items() if k not in ("name", "protocol"))
            for c in THREE
        )
    )
    done = CliRunner().invoke(app, ["run", str(file), "--output", str(path)])
    assert done.exit_code == 0, done.output
    assert "resuming" in done.output and "totals" in done.output and "questions run 0, already stored 12" in done.output
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


def test_a_grown_run_replays_the_calls_of_the_smaller_one_and_leaves_it_untouched(tmp_path: Path) -> None:
    """calls_from: the same experiment on more questions makes calls only for the new ones; the first
    questions end exactly as in the smaller run, their calls are copied in (the grown store stands alone),
    and the smaller store is not written."""
    small, grown = tmp_path / "small.sqlite", tmp_path / "grown.sqlite"
    run(experiment(THREE, count=4), small)
    digest = hashlib.sha256(small.read_bytes()).hexdigest()
    config = experiment(THREE, count=7, calls_from=[str(small)])
    outcome = run(config, grown)
    per_question = 3 + 2 * 3  # round 0, then society's rounds 1 and 2
    uses = 1 + 3 + per_question  # single's turn, vote's three and society's nine each point to a call
    assert (outcome.calls, outcome.copied) == (3 * per_question, 4 * per_question)
    assert outcome.replayed == 7 * uses - outcome.calls  # the copied ones among them
    assert hashlib.sha256(small.read_bytes()).hexdigest() == digest
    first = {r["question_id"] for r in stored(small)}
    assert len(first) == 4 and first < {r["question_id"] for r in stored(grown)}  # the seeded draw grows
    assert [r for r in stored(grown) if r["question_id"] in first] == stored(small)
    assert RunStore.open(grown).count("calls") == 7 * per_question
    assert RunStore.open(grown).meta()["copied_calls"] == 4 * per_question  # the run records what it copied
    # the grown store needs its source no more: rerun without it, nothing is called
    small.unlink()
    again = run(experiment(THREE, count=7), grown, retry_errors=True)
    assert (again.calls, again.ran) == (0, 0)


def test_replay_only_stores_what_the_stored_calls_answer_and_calls_nothing(tmp_path: Path) -> None:
    """--replay-only: the grown run of 7 questions over the store of 4 makes no call: the 4 questions whose calls
    are all stored end exactly as in the smaller run, the 3 others are left unstored (none of their rounds is
    kept), and a later run without the flag makes their calls."""
    small, grown = tmp_path / "small.sqlite", tmp_path / "grown.sqlite"
    run(experiment(THREE, count=4), small)
    config = experiment(THREE, count=7, calls_from=[str(small)])
    outcome = run(config, grown, replay_only=True)
    per_question = 3 + 2 * 3
    assert (outcome.calls, outcome.copied, outcome.left, outcome.ran) == (0, 4 * per_question, 3 * 3, 4 * 3)
    first = {r["question_id"] for r in stored(small)}
    assert [r for r in stored(grown)] == stored(small) and len(first) == 4
    assert RunStore.open(grown).count("calls") == 4 * per_question
    rest = run(config, grown)
    assert (rest.calls, rest.ran, rest.left) == (3 * per_question, 3 * 3, 0)


def test_calls_from_copies_only_the_very_same_requests(tmp_path: Path) -> None:
    """Another experiment's calls answer only what they asked: another temperature shares nothing, a
    condition of the other run is still shared (round 0 of vote is society's); --no-cache ignores sources."""
    society = tmp_path / "society.sqlite"
    run(experiment([THREE[2]], count=4), society)
    hotter = experiment(THREE, count=4, calls_from=[str(society)], agent=SCRIPTED | {"sampling": {"temperature": 0.3}})
    other = run(hotter, tmp_path / "hotter.sqlite")
    assert (other.copied, other.calls) == (0, 4 * 9)

    vote = run(experiment([THREE[1]], count=4, calls_from=[str(society)]), tmp_path / "vote.sqlite")
    assert (vote.calls, vote.copied) == (0, 4 * 3)
    run(experiment([THREE[1]], count=4), tmp_path / "vote-alone.sqlite")
    assert stored(tmp_path / "vote.sqlite") == stored(tmp_path / "vote-alone.sqlite")

    fresh = run(experiment([THREE[1]], count=4, calls_from=[str(society)]), tmp_path / "fresh.sqlite", use_cache=False)
    assert (fresh.calls, fresh.copied) == (4 * 3, 0)


def test_calls_from_a_missing_store_is_noted_and_a_foreign_file_refused(tmp_path: Path) -> None:
    from moot.runner.config_resolve import experiment_hash

    missing = tmp_path / "none.sqlite"
    config = experiment(THREE, calls_from=[str(missing)])
    assert experiment_hash(config) == experiment_hash(experiment(THREE))  # results do not depend on it
    exp = Experiment(config, tmp_path / "run.sqlite")
    try:
        assert exp.missing_sources == (missing,) and exp.sources == ()
    finally:
        exp.close()
    assert run(config, tmp_path / "run.sqlite").calls == 4 * 9 and not missing.exists()

    foreign = tmp_path / "notes.sqlite"
    foreign.write_text("not a database")
    with pytest.raises(StoreError, match="notes.sqlite"):
        Experiment(experiment(THREE, calls_from=[str(foreign)]), tmp_path / "other.sqlite")
    assert foreign.read_text() == "not a database" and not (tmp_path / "other.sqlite").exists()


def test_moot_run_calls_from_says_what_it_copied_and_what_it_could_not_find(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from moot.cli import app

    file = tmp_path / "single.toml"
    body = '[[tasks]]\nname = "arithmetic"\ncount = {}\nseed = 0\n[agent]\nbackend = {{ kind = "scripted", model = "numbers" }}\n'
    body += '[[conditions]]\nname = "single"\nprotocol = "single"\n'
    file.write_text('name = "t"\n' + body.format(2))
    small, grown = tmp_path / "small.sqlite", tmp_path / "grown.sqlite"
    assert CliRunner().invoke(app, ["run", str(file), "-o", str(small)]).exit_code == 0
    file.write_text(f'name = "t"\ncalls_from = ["{tmp_path / "gone.sqlite"}"]\n' + body.format(3))
    done = CliRunner().invoke(app, ["run", str(file), "-o", str(grown), "--calls-from", str(small)])
    assert done.exit_code == 0, done.output
    assert f"calls_from: {tmp_path / 'gone.sqlite'} does not exist: its calls are made afresh" in done.output
    assert "model calls 1 · replayed from the store 2 (2 from other runs' stores) · questions run 3" in done.output


def test_questions_in_flight_are_sized_by_the_arms_this_session_runs(tmp_path: Path) -> None:
    """A wide arm that is not chosen, or has finished, does not size the run: the scripted backend serves 64
    requests at once, so 16 agents leave room for 4 questions and 3 agents for 22."""
    wide = experiment([*THREE, {"name": "vote-16", "protocol": "vote", "agents": 16}])

    def sized(path: Path, **options: Any) -> int:
        exp = Experiment(wide, path)
        try:
            asyncio.run(exp.run(RunOptions(**options)))
            return exp.concurrency()
        finally:
            exp.close()

    assert sized(tmp_path / "all.sqlite") == 4
    assert sized(tmp_path / "some.sqlite", conditions=("society",)) == 22
    assert sized(tmp_path / "some.sqlite", conditions=("vote-16",)) == 4
    # resumed with only single's and vote's questions left: sized by vote's 3 agents
    assert sized(tmp_path / "some.sqlite") == 22


def test_a_session_can_run_some_arms_and_a_later_one_the_rest(tmp_path: Path) -> None:
    """``--condition``: only the named arms run (their calls stored once); the store stays the whole
    experiment's, so the next session runs the others, replaying the shared round 0."""
    path = tmp_path / "run.sqlite"
    first = run(experiment(THREE), path, conditions=("vote",))
    assert (first.units, first.ran, first.skipped, first.calls) == (12, 4, 0, 4 * 3)
    assert {r["condition"] for r in stored(path)} == {"vote"}
    assert RunStore.open(path).meta()["status"] == "incomplete"
    again = run(experiment(THREE), path, conditions=("vote", "single"))
    assert (again.ran, again.skipped, again.calls) == (4, 4, 0)  # single is agent-1's round 0 of the vote
    rest = run(experiment(THREE), path)
    assert (rest.ran, rest.skipped, rest.calls) == (4, 8, 4 * 3 * 2)  # society's two debate rounds only
    assert RunStore.open(path).meta()["status"] == "complete"
    # each session records the arms it ran (all of them: no list)
    db = sqlite3.connect(path)
    options = [json.loads(o) for (o,) in db.execute("SELECT options FROM sessions ORDER BY id")]
    db.close()
    assert [o.get("conditions") for o in options] == [["vote"], ["single", "vote"], None]
    with pytest.raises(ConfigError, match=r"condition 'liang' is not in this experiment; its conditions: single, vote"):
        run(experiment(THREE), path, conditions=("liang",))
