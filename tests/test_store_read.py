"""The store's typed read side: it returns the records it writes, and migrates older stores when opened."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from moot.analysis import build_report
from moot.analysis.render import report_markdown
from moot.backends.base import Message, TokenLogprob
from moot.debate.agents import Sampling
from moot.debate.protocol_presets import PRESETS
from moot.debate.records import (
    DebateResult,
    FinalStatus,
    JudgeVerdict,
    PoolRecord,
    RetentionRecord,
    RoundRecord,
    Turn,
    Vote,
)
from moot.errors import ConfigError
from moot.runner import config_resolve as config_module
from moot.runner.config import ResolvedCondition
from moot.runner.config_files import parse_experiment
from moot.runner.config_resolve import fingerprint_hash, resolve, results_fingerprint
from moot.runner.records import StoredResult
from moot.runner.store import SCHEMA_VERSION, RunStore, StoreError
from moot.runner.summary import question_rows, summarize, summary_json
from moot.tasks import get_task
from moot.tasks.base import ParseStatus, Question
from tests import helpers
from tests.fixtures.analysis_run import MODELS, PRICE, experiment
from tests.helpers import WriteRun

FIXTURES = Path(__file__).parent / "fixtures"


def _turn(agent: str, round_: int, answer: str | None, confidence: float) -> Turn:
    return Turn(
        agent=agent,
        round=round_,
        text=f"<b>so</b> the answer is {answer}",
        answer=answer,
        parse_status=ParseStatus.PARSED if answer is not None else ParseStatus.UNPARSED,
        correct=answer == "7",
        finish_reason="stop",
        prompt_tokens=11,
        completion_tokens=5,
        latency_s=0.25,
        seed=1234 + round_,
        shown=(Message("system", "be brief"), Message("user", "What is 3+4?")),
        logprobs=(TokenLogprob("7", -0.5), TokenLogprob(".", -0.125)),
        confidence=confidence,
        nll=0.625,
        anll=0.3125,
        perplexity=1.366,
    )


def full_result() -> DebateResult:
    """A result with every optional part set: confidences, log-probabilities, weights, a judge with a
    preference, a diversity pool, retention and a final judge."""
    judge = JudgeVerdict("judged: 7", "7", 80.0, 30, 9, 0.5, preference=True, calls=2)
    round0 = RoundRecord(
        index=0,
        turns=(_turn("agent-1", 0, "7", 6.0), _turn("agent-2", 0, None, 2.0)),
        vote=Vote((("7", 1),), "7", ("7",), 1, weights=(("7", 6.0),)),
        judge=judge,
        pool=PoolRecord(
            ("a 7", "b 8", "c"), ("7", "8", None), ("agent-1", "agent-2", "agent-1"), (0, 2), 0.5, 0.75, 33, 12
        ),
    )
    round1 = RoundRecord(
        index=1,
        turns=(_turn("agent-1", 1, "7", 8.0), _turn("agent-2", 1, "8", 4.0)),
        vote=Vote((("7", 1), ("8", 1)), "7", ("7", "8"), 0, weights=(("7", 8.0), ("8", 4.0))),
        judge=dataclasses.replace(judge, preference=None, calls=1),
        retention=RetentionRecord("dar", ("agent-2",), False, 2, "[2]", 1, 40, 3, 0.4, "token Jaccard"),
    )
    return DebateResult(
        question=Question("q-1", "What is 3+4?", "7", {"level": 2, "source": ["made", "up"]}),
        protocol="mine",
        rounds=(round0, round1),
        final_answer="7",
        status=FinalStatus.ANSWERED,
        correct=True,
        stop_reason="judge_confident",
        error="a note",
        final_judge=JudgeVerdict("final: 7", "7", None, 20, 4, 0.125, preference=False, calls=3),
    )


def test_a_result_reads_back_as_the_records_written(tmp_path: Path) -> None:
    store = RunStore.create(tmp_path / "run.sqlite", {}, {})
    try:
        result = full_result()
        store.add_questions("arithmetic", [result.question])
        keys = {(0, "agent-1"): "k0", (0, "agent-2"): "k1", (1, "agent-1"): "k2"}
        store.add_result("c", "arithmetic", 3, result, keys, 0.5, {"agent-1": {"calls": 4}})
        (stored,) = store.results()
        assert stored == StoredResult(
            "c", "arithmetic", 3, result, 0, 0.5, {"agent-1": {"calls": 4}}, keys | {(1, "agent-2"): ""}
        )
        assert stored.result.question.metadata == result.question.metadata  # not part of Question's equality
        assert stored.key == ("c", "arithmetic", "q-1", 3) and stored.scorer_calls == 4
    finally:
        store.close()


def dumps(conditions: dict[str, ResolvedCondition]) -> dict[str, object]:
    """Conditions as stored (fields excluded from the dump, such as a preset's fixed agent count, aside)."""
    return {name: c.model_dump(mode="json") for name, c in conditions.items()}


@pytest.fixture(scope="module")
def run(write_run: WriteRun) -> Path:
    return write_run("typed", experiment(questions=2), MODELS)


def test_calls_sessions_meta_and_conditions_are_typed(run: Path) -> None:
    store = RunStore.open(run)
    try:
        meta = store.run_meta()
        assert (meta.name, meta.status, meta.schema_version, meta.migrated_from) == (
            "analysis",
            "complete",
            SCHEMA_VERSION,
            None,
        )
        assert meta.config.prices["debater"].prompt == PRICE["prompt"] and meta.summary == summary_json(store)
        assert meta.round0_sharing["vote"] == ("single", "society") and meta.models["debater"].backend == "scripted"
        conditions = store.conditions()
        assert list(conditions) == ["single", "vote", "society"]
        assert dumps(conditions) == dumps({c.name: c for c in resolve(meta.config)})
        assert meta.fingerprint_hash == fingerprint_hash(results_fingerprint(meta.config, resolve(meta.config)))
        calls = store.calls()
        assert [c.key for c in calls] == [r["key"] for r in store.rows("calls")]
        assert {c.model_name for c in calls} == {"debater"} and all(c.prompt_tokens > 0 for c in calls)
        (session,) = store.sessions()
        assert session.status == "complete" and session.calls == len(calls) and session.wall_s >= 0
        assert store.call_errors() == []
        results = store.results()
        assert [(r.result.question.id, r.condition) for r in results[:3]] == [
            (results[0].result.question.id, c) for c in conditions
        ]
        assert all(r.result.protocol == conditions[r.condition].protocol.name for r in results)
        assert [r.result.question.id for r in results] == [row.question_id for row in question_rows(store)]
    finally:
        store.close()


# -- schema 1 -> 2 -------------------------------------------------------------------------------------------
# tests/fixtures/store_v1.sqlite was written by moot's schema-1 code (before the typed read side) with the
# experiment below; store_v1.report.md and store_v1.summary.json are what that code reported from it.
# Since then one figure was corrected (issue 14): "dc" (a diverse round 0: 6 candidate calls, 3 kept) used 9
# calls, not the 6 kept turns, so its and the total's used calls and tokens count its whole pool; and the
# report gained tables (issue 37: the replies table counts unreadable rulings, reader sensitivity) and a
# line naming the model that answered (issue 42), and the pairs what else their arms differ in (issue 55).
V1_EXPERIMENT = {
    "name": "store-v1",
    "seeds": [0],
    "tasks": [{"name": "arithmetic", "count": 1, "seed": 0}],
    "agent": {"backend": {"kind": "scripted", "model": "numbers"}},
    "conditions": [
        {"name": "single", "protocol": "single"},
        {"name": "society", "protocol": "society", "agents": 3, "rounds": 2},
        {"name": "adaptive", "protocol": "du-adaptive", "rounds": 2},
        {"name": "dar", "protocol": "dar", "rounds": 2},
        {"name": "dc", "protocol": "diverse-confidence", "rounds": 2},
        {"name": "liang", "protocol": "liang", "rounds": 2},
    ],
    "prices": {"numbers": {"prompt": 1.0, "completion": 2.0}},
}


def v1_store(tmp_path: Path) -> Path:
    path = tmp_path / "v1.sqlite"
    shutil.copy(FIXTURES / "store_v1.sqlite", path)
    return path


# Presets whose components changed since moot 0.1 wrote the fixture (issue 13, fidelity to the papers:
# Zhu's majority, DAR's setting, Liang's break). The store keeps what they meant when it was written.
CHANGED_PRESETS = {"dar", "diverse-confidence", "liang"}


@pytest.fixture
def v1_presets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Today's presets, but those that changed as the fixture stored them, so that the v1 experiment
    resolves to the run that wrote the fixture."""
    folder = tmp_path / "presets"
    folder.mkdir()
    store = RunStore.open(v1_store(folder))
    try:
        stored = {c.protocol.name: c.protocol for c in store.conditions().values()}
    finally:
        store.close()
    today = {c.protocol.name: c.protocol for c in resolve(parse_experiment(V1_EXPERIMENT))}
    assert {name for name in stored if stored[name].model_dump() != today[name].model_dump()} == CHANGED_PRESETS
    for name in CHANGED_PRESETS:
        monkeypatch.setitem(PRESETS, name, stored[name])
    # and a helper's default sampling as it was then: temperature 0 (issue 37: now the agents')
    monkeypatch.setattr(config_module, "helper_sampling", lambda protocol, first: Sampling(temperature=0.0))


def schema_version(path: Path) -> object:
    db = sqlite3.connect(path)
    try:
        return json.loads(db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
    finally:
        db.close()


def _close(a: object, b: object) -> bool:
    """Equal JSON, floats to 1e-9 (sums may add in another order)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-9)
    return a == b


def test_a_schema_1_store_is_migrated_and_reports_as_before(tmp_path: Path, v1_presets: None) -> None:
    path = v1_store(tmp_path)
    assert schema_version(path) == 1
    store = RunStore.open(path)
    try:
        meta = store.run_meta()
        assert (meta.schema_version, meta.migrated_from) == (SCHEMA_VERSION, 1)
        config = parse_experiment(V1_EXPERIMENT)
        assert dumps(store.conditions()) == dumps({c.name: c for c in resolve(config)})
        assert meta.fingerprint_hash == fingerprint_hash(results_fingerprint(config, resolve(config)))
        expected = json.loads((FIXTURES / "store_v1.summary.json").read_text())
        assert _close(summary_json(store), expected)
        report = report_markdown(build_report(store, resamples=200)).replace(str(path), "RUN")
        assert report == (FIXTURES / "store_v1.report.md").read_text()
    finally:
        store.close()
    assert schema_version(path) == SCHEMA_VERSION
    RunStore.open(path).close()  # opening a migrated store again changes nothing


def test_reading_a_schema_1_store_migrates_a_copy_in_memory_and_leaves_the_file(
    tmp_path: Path, v1_presets: None
) -> None:
    """``moot report`` / ``export`` read an old store as a migrated one without changing the file."""
    path = v1_store(tmp_path)
    before = path.read_bytes()
    store = RunStore.read(path)
    try:
        meta = store.run_meta()
        assert (meta.schema_version, meta.migrated_from) == (SCHEMA_VERSION, 1)
        assert store.results() and all(r.result.protocol for r in store.results())
        with pytest.raises(StoreError, match=f"cannot write {path}: it or its folder is read-only"):
            store.set_meta("status", "tampered")
    finally:
        store.close()
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.glob("v1*")) == ["v1.sqlite"]
    assert schema_version(path) == 1


def test_a_migrated_store_reads_as_a_new_run_and_resumes(tmp_path: Path, v1_presets: None) -> None:
    """The migrated records equal a fresh run's, but for what schema 1 did not keep (call seeds and
    log-probabilities); rerunning the experiment on it replays everything and calls no model."""
    config = parse_experiment(V1_EXPERIMENT)
    fresh = tmp_path / "fresh.sqlite"
    helpers.run(config, fresh)
    path = v1_store(tmp_path)
    outcome = helpers.run(config, path)
    assert (outcome.ran, outcome.calls) == (0, 0)

    def known(r: StoredResult) -> tuple[str, DebateResult]:
        # nor the kept replies' diversity, which schema 1's debates measured and debates no longer do (a
        # report measures it from the stored texts)
        rounds = tuple(
            dataclasses.replace(
                rec,
                turns=tuple(dataclasses.replace(t, seed=None, logprobs=None) for t in rec.turns),
                retention=rec.retention and dataclasses.replace(rec.retention, diversity=None, diversity_measure=None),
            )
            for rec in r.result.rounds
        )
        return r.condition, dataclasses.replace(r.result, rounds=rounds)

    old, new = RunStore.open(path), RunStore.open(fresh)
    try:
        pairs = list(zip(old.results(), new.results(), strict=True))
        # DAR's round message and Liang's prompts now follow their releases word for word (issue 13), so
        # the scripted model, which answers from the prompt, answers those two differently
        reworded = {"dar", "liang"}
        assert {a.condition for a, b in pairs if known(a) != known(b)} == reworded
        assert all(a.result.rounds_used == b.result.rounds_used for a, b in pairs)
        same = [s for s in summarize(old)[0] if s.name not in reworded]
        assert same == [s for s in summarize(new)[0] if s.name not in reworded] and len(same) == 4
    finally:
        old.close()
        new.close()


def test_a_failed_migration_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    path = v1_store(tmp_path)
    db = sqlite3.connect(path)
    db.execute("UPDATE conditions SET config = '{\"name\": \"single\"}' WHERE name = 'single'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="cannot migrate its store schema 1 to 2"):
        RunStore.open(path)
    assert schema_version(path) == 1
    db = sqlite3.connect(path)
    try:
        assert "call_seed" not in [c[1] for c in db.execute("PRAGMA table_info(turns)")]
        assert db.execute("SELECT config FROM conditions WHERE name = 'single'").fetchone()[0] == '{"name": "single"}'
    finally:
        db.close()


@pytest.mark.parametrize("version", [99, "null", '"two"'])
def test_a_store_from_a_newer_or_unknown_moot_is_refused_by_name(tmp_path: Path, version: object) -> None:
    path = v1_store(tmp_path)
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
    db.commit()
    db.close()
    shown = {"null": "None", '"two"': "two"}.get(str(version), str(version))
    with pytest.raises(
        StoreError,
        match=rf"written by moot \S+ with store schema {shown}; this moot \(\S+\) reads "
        rf"schema {SCHEMA_VERSION}$",
    ):
        RunStore.open(path)


def test_a_schema_2_store_names_each_arms_instruction_and_stays_resumable(tmp_path: Path) -> None:
    """Schema 3 records what every arm's agents were instructed: a schema-2 Liang arm sent its debater meta
    prompt alone (instruction none), every other arm the task's instruction (task). The migrated store
    resumes under the file that says so, and is refused under today's Liang default (task), whose
    debaters now also get the task's instruction: its requests differ."""
    experiment = {
        "name": "v2",
        "tasks": [{"name": "arithmetic", "count": 2, "seed": 0}],
        "agent": {"backend": {"kind": "scripted", "model": "numbers"}},
        "conditions": [
            {"name": "vote", "protocol": "vote", "agents": 3},
            {"name": "liang", "protocol": "liang", "rounds": 2, "instruction": "none"},
        ],
    }
    config = parse_experiment(experiment)
    path = tmp_path / "v2.sqlite"
    helpers.run(config, path)
    db = sqlite3.connect(path)  # written back as moot's schema-2 code wrote it: no instruction anywhere
    old_forms = {}
    for name, text in db.execute("SELECT name, config FROM conditions").fetchall():
        condition = json.loads(text)
        del condition["protocol"]["instruction"]
        old_forms[name] = condition
        db.execute("UPDATE conditions SET config = ? WHERE name = ?", (json.dumps(condition), name))
    fingerprint = results_fingerprint(config, resolve(config)) | {"conditions": list(old_forms.values())}
    db.execute("UPDATE meta SET value = ? WHERE key = 'fingerprint_hash'", (json.dumps(fingerprint_hash(fingerprint)),))
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db.execute("DELETE FROM meta WHERE key = 'instructions'")
    db.commit()
    db.close()

    store = RunStore.open(path)
    try:
        assert {n: c.protocol.instruction for n, c in store.conditions().items()} == {"vote": "task", "liang": "none"}
        assert store.meta()["instructions"] == {"arithmetic": get_task("arithmetic").system_prompt}
    finally:
        store.close()
    outcome = helpers.run(config, path)
    assert (outcome.ran, outcome.calls) == (0, 0)
    today = parse_experiment(
        {
            **experiment,
            "conditions": [*experiment["conditions"][:1], {"name": "liang", "protocol": "liang", "rounds": 2}],
        }
    )  # type: ignore[index]
    with pytest.raises(ConfigError, match="holds a run of a different experiment"):
        helpers.run(today, path)
