"""Hostile input neither crashes a run nor gives silently wrong numbers (issue 42).

1. A lone surrogate in a reply is stored as U+FFFD, and the run finishes; a data file row holding one
   is refused, naming the row.
2. Names equal after NFC, or holding invisible format characters, are refused; two ``[[tasks]]``
   tables of one task are refused; an existing file holding anything but a moot store is never taken over.
3. Plug-in files run only once the rest of the experiment validates, only from the experiment file's
   folder, and a plug-in that exits while loading is a ConfigError naming it.
4. A refused run changes nothing in the store; a killed session reads as interrupted; an export
   killed mid-write leaves nothing behind for long; store errors say what the file is.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import unicodedata
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from moot.analysis import build_report
from moot.analysis.html import write_html
from moot.backends.base import GenerationRequest
from moot.backends.config import BACKEND_KINDS
from moot.backends.scripted import register_scripted_model
from moot.errors import ConfigError
from moot.limits import name_problem
from moot.plugins import _load
from moot.runner.config import ExperimentConfig, load_experiment, parse_experiment, resolve
from moot.runner.experiment import RunOptions, run_experiment
from moot.runner.export import export_table
from moot.runner.store import SCHEMA_VERSION, RunStore, StoreError, StoreLock
from moot.runner.summary import summary_json
from moot.tasks.datafile import data_file_task
from tests.helpers import query

FIXTURES = Path(__file__).parent / "fixtures"
LONE = "\ud800"


def _lone_reply(request: GenerationRequest, index: int) -> str:
    return f"I think {LONE} the answer is 7"


register_scripted_model("lone-surrogate", _lone_reply)


def experiment_table(model: str = "numbers", **extra: Any) -> dict[str, Any]:
    return {
        "name": "t",
        "tasks": [{"name": "arithmetic", "count": 2}],
        "agent": {"backend": {"kind": "scripted", "model": model}},
        "conditions": [{"name": "vote", "protocol": "vote", "agents": 2}],
        **extra,
    }


def experiment(model: str = "numbers", **extra: Any) -> ExperimentConfig:
    return parse_experiment(experiment_table(model, **extra))


def run(config: ExperimentConfig, path: Path) -> Any:
    return asyncio.run(run_experiment(config, path, RunOptions()))


def schema_version(path: Path) -> Any:
    return json.loads(query(path, "SELECT value FROM meta WHERE key = 'schema_version'")[0][0])


# -- 1. a poisoned reply or row ---------------------------------------------------------------------


def test_a_reply_with_a_lone_surrogate_is_stored_as_a_replacement_character_and_the_run_finishes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.sqlite"
    first = run(experiment("lone-surrogate"), path)
    assert (first.ran, first.errors) == (2, 0)
    texts = [t for (t,) in query(path, "SELECT text FROM turns")]
    assert len(texts) == 4 and all(t == "I think \ufffd the answer is 7" for t in texts)
    for (reply,) in query(path, "SELECT reply FROM calls"):  # the call keeps the reply as given, escaped
        assert reply.isascii() and json.loads(reply)["samples"][0]["text"] == _lone_reply(None, 0)  # type: ignore[arg-type]
    again = run(experiment("lone-surrogate"), path)  # a rerun replays the stored run
    assert (again.ran, again.calls, again.skipped) == (0, 0, 2)
    reader = RunStore.read(path)
    try:
        assert {r.result.final_answer for r in reader.results()} == {"7"}
    finally:
        reader.close()


def test_a_question_stopped_after_a_lone_surrogate_reply_resumes_with_the_very_calls(tmp_path: Path) -> None:
    """Round 2 shows round 1's replies: replayed as the model gave them, its requests (call keys) are those of
    the run that was stopped, so the resumed question calls no model."""
    path = tmp_path / "run.sqlite"
    debate = {"conditions": [{"name": "society", "protocol": "society", "agents": 2, "rounds": 2}]}
    first = run(experiment("lone-surrogate", **debate), path)
    assert (first.ran, first.calls) == (2, 8)
    db = sqlite3.connect(path)
    db.execute("DELETE FROM turns")  # as a kill before a question's results are committed leaves it
    db.execute("DELETE FROM results")
    db.commit()
    db.close()
    resumed = run(experiment("lone-surrogate", **debate), path)
    assert (resumed.ran, resumed.calls, resumed.replayed) == (2, 0, 8)


def test_a_data_file_row_with_a_lone_surrogate_is_refused_naming_the_row(tmp_path: Path) -> None:
    data = tmp_path / "sums.jsonl"
    data.write_text('{"q": "2 + 3?", "a": 5}\n{"q": "bad \\ud800 text", "a": 6}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"sums.jsonl: row 2: field 'q' holds a lone surrogate \(U\+D800\)"):
        data_file_task("sums", data, "number", {"question": "q", "answer": "a"})
    array = tmp_path / "sums.json"
    array.write_text('[{"q": "ok", "a": 1}, {"q": "ok", "a": 2, "x": ["\\udfff"]}]', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"sums.json: row 2: field 'x\[0\]' holds a lone surrogate"):
        data_file_task("sums", array, "number", {"question": "q", "answer": "a"})
    paired = tmp_path / "emoji.jsonl"  # an escaped pair is one character, not a surrogate
    paired.write_text('{"q": "\\ud83d\\ude00 2 + 2?", "a": 4}\n', encoding="utf-8")
    (question,) = data_file_task("emoji", paired, "number", {"question": "q", "answer": "a"}).items()
    assert question.prompt == "\U0001f600 2 + 2?"


# -- 2. silent wrong numbers ------------------------------------------------------------------------


def conditions(*names: str) -> dict[str, Any]:
    return {
        "tasks": [{"name": "arithmetic", "count": 1}],
        "conditions": [{"name": n, "protocol": "single"} for n in names],
    }


def test_condition_names_equal_after_nfc_are_duplicates_and_names_are_stored_in_nfc() -> None:
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    with pytest.raises(ConfigError, match="duplicate condition name 'café'"):
        parse_experiment(conditions(nfc, nfd))
    (condition,) = parse_experiment(conditions(nfd)).conditions
    assert condition.name == nfc == unicodedata.normalize("NFC", nfd)
    data = conditions("v")
    data["conditions"][0] |= {"protocol": "vote", "agents": [{"name": nfc}, {"name": nfd}]}
    with pytest.raises(ConfigError, match="agent names must be unique"):
        resolve(parse_experiment(data))
    presets = conditions("p") | {"presets": {nfc: {"base": "vote"}, nfd: {"base": "vote"}}}
    with pytest.raises(ConfigError, match="duplicate preset name 'café'"):
        parse_experiment(presets)
    found = conditions("p") | {"presets": {nfd: {"base": "vote"}}}
    found["conditions"][0]["protocol"] = nfd  # a reference finds its preset, however either is spelled
    (resolved,) = resolve(parse_experiment(found))
    assert resolved.protocol.name == nfc


@pytest.mark.parametrize(
    ("key", "bad", "problem"),
    [
        ("conditions", {"agnets": 2}, "conditions.0.agnets: unknown key"),
        ("conditions", {"rounds": "many"}, "conditions.0.rounds: Input should be a valid integer"),
        ("tasks", {"cuont": 1}, "tasks.0.cuont: unknown key"),
    ],
)
def test_a_lone_invalid_condition_or_task_is_named_and_the_list_is_not_called_empty(
    key: str, bad: dict[str, Any], problem: str
) -> None:
    """pydantic counts the items that validated: one bad condition of one is also "conditions: Tuple should
    have at least 1 item", a consequence; only the cause is named."""
    data = conditions("single")
    data[key][0] |= bad
    with pytest.raises(ConfigError) as refused:
        parse_experiment(data)
    assert problem in str(refused.value) and "at least 1 item" not in str(refused.value)
    with pytest.raises(ConfigError, match="conditions: Tuple should have at least 1 item"):
        parse_experiment(conditions())  # a list that is empty is still said to be


@pytest.mark.parametrize("name", ["vo\u200bte", "\ufeffvote", "vo\u00adte", "a\u2060b"])
def test_names_with_invisible_format_characters_are_refused(name: str) -> None:
    assert name_problem(name) is not None and "invisible format character" in str(name_problem(name))
    with pytest.raises(ConfigError, match="conditions.1.name: a name must not hold invisible format character"):
        parse_experiment(conditions("vote", name))


def test_two_task_tables_of_one_task_are_refused_naming_it() -> None:
    data = conditions("single")
    data["tasks"] = [{"name": "arithmetic", "count": 5}, {"name": "arithmetic", "count": 3}]
    with pytest.raises(ConfigError, match=r"tasks: task 'arithmetic' is selected by tasks.0 and tasks.1"):
        parse_experiment(data)


def test_an_existing_file_that_is_not_a_moot_store_is_never_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_bytes(b"some notes\n")
    with pytest.raises(StoreError, match="not a moot run store: it is not an SQLite database"):
        run(experiment(), path)
    assert path.read_bytes() == b"some notes\n"
    proc = Path("/proc/self/status")  # its size reads as 0, but it holds text
    assert proc.stat().st_size == 0 and not RunStore.is_blank(proc)


# -- 3. plug-ins ------------------------------------------------------------------------------------

PLANTING = "import pathlib\npathlib.Path(__file__).with_name('ran').write_text('x')\n"


def plugin_experiment(plugins: list[str], **extra: Any) -> dict[str, Any]:
    return {"plugins": plugins, **conditions("single"), **extra}


def test_no_plugin_code_runs_when_the_rest_of_the_experiment_is_invalid(tmp_path: Path) -> None:
    (tmp_path / "plant.py").write_text(PLANTING)
    invalid: list[dict[str, Any]] = [{"seeds": []}, {"unknown_key": 1}, {"conditions": []}]
    for bad in invalid:
        with pytest.raises(ConfigError):
            parse_experiment(plugin_experiment(["plant.py"], **bad), base=tmp_path)
        assert not (tmp_path / "ran").exists(), bad
    parse_experiment(plugin_experiment(["plant.py"]), base=tmp_path)
    assert (tmp_path / "ran").exists()


def test_a_plugin_backend_kind_validates_once_its_plugin_is_loaded(tmp_path: Path) -> None:
    (tmp_path / "kind.py").write_text(
        "from typing import Literal\n"
        "from moot.backends.config import ScriptedBackendConfig, register_backend\n"
        "@register_backend\n"
        "class Mine(ScriptedBackendConfig):\n"
        "    kind: Literal['hostile-test-kind'] = 'hostile-test-kind'\n"
    )
    data = plugin_experiment(["kind.py"], agent={"backend": {"kind": "hostile-test-kind"}})
    try:
        assert parse_experiment(data, base=tmp_path).agent.backend.kind == "hostile-test-kind"  # type: ignore[union-attr]
        with pytest.raises(ConfigError, match="unknown backend kind nowhere"):
            parse_experiment(plugin_experiment(["kind.py"], agent={"backend": {"kind": "nowhere"}}), base=tmp_path)
    finally:
        BACKEND_KINDS.pop("hostile-test-kind", None)  # other tests list the registered kinds


@pytest.mark.parametrize("where", ["../outside.py", "ABSOLUTE", "link/inside.py"])
def test_a_plugin_outside_the_experiment_files_folder_is_refused(tmp_path: Path, where: str) -> None:
    folder = tmp_path / "experiment"
    folder.mkdir()
    (tmp_path / "outside.py").write_text(PLANTING)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "inside.py").write_text(PLANTING)
    (folder / "link").symlink_to(tmp_path / "elsewhere")
    plugin = str(tmp_path / "outside.py") if where == "ABSOLUTE" else where
    toml = folder / "exp.toml"
    toml.write_text(
        f"plugins = [{json.dumps(plugin)}]\n"
        '[[tasks]]\nname = "arithmetic"\ncount = 1\n[[conditions]]\nname = "single"\nprotocol = "single"\n'
    )
    with pytest.raises(ConfigError, match=r"plugins: .* is outside the experiment file's folder"):
        load_experiment(toml)
    assert not list(tmp_path.rglob("ran"))


@pytest.mark.parametrize("raised", ["SystemExit(0)", "SystemExit('bye')", "GeneratorExit()"])
def test_a_plugin_that_exits_while_loading_is_a_config_error_naming_it(tmp_path: Path, raised: str) -> None:
    (tmp_path / "quits.py").write_text(f"raise {raised}\n")
    with pytest.raises(ConfigError, match=r"plugins: plugin .*quits.py: (SystemExit|GeneratorExit)"):
        parse_experiment(plugin_experiment(["quits.py"]), base=tmp_path)


def test_an_installed_plugin_that_exits_while_loading_is_a_config_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hostile_quitting_plugin.py").write_text("raise SystemExit(0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = metadata.EntryPoint(name="quits", value="hostile_quitting_plugin", group="moot.components")
    with pytest.raises(ConfigError, match="plug-in 'quits' .* failed to load: SystemExit"):
        _load(entry)


# -- 4. stores: refusals change nothing, killed sessions, exports, messages --------------------------


def v1_store(tmp_path: Path) -> Path:
    path = tmp_path / "v1.sqlite"
    shutil.copy(FIXTURES / "store_v1.sqlite", path)
    return path


def test_a_store_refused_by_its_opener_is_not_migrated(tmp_path: Path) -> None:
    path = v1_store(tmp_path)
    before = path.read_bytes()

    def refuse(store: RunStore) -> None:
        assert store.run_meta().schema_version == SCHEMA_VERSION  # the store as it will read once migrated
        raise ConfigError("a different experiment")

    with pytest.raises(ConfigError, match="a different experiment"):
        RunStore.open(path, accept=refuse)
    assert schema_version(path) == 1 and path.read_bytes() == before
    RunStore.open(path, accept=lambda store: None).close()
    assert schema_version(path) == SCHEMA_VERSION


def test_a_run_of_another_experiment_does_not_migrate_the_store_it_refuses(tmp_path: Path) -> None:
    path = v1_store(tmp_path)
    with pytest.raises(ConfigError, match="holds a run of a different experiment"):
        run(experiment(), path)
    assert schema_version(path) == 1


def test_a_run_refused_by_the_lock_does_not_migrate_the_store(tmp_path: Path) -> None:
    path = v1_store(tmp_path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from moot.runner.store import StoreLock\n"
            "StoreLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)",
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreError, match=f"in use by another moot run \\(PID {holder.pid}\\)"):
            RunStore.open(path)
        with pytest.raises(StoreError, match="in use by another moot run"):
            run(experiment(), path)
    finally:
        holder.kill()
        holder.wait()
    assert schema_version(path) == 1


def test_a_session_left_running_by_a_killed_run_reads_as_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    run(experiment(), path)
    db = sqlite3.connect(path)
    db.execute("UPDATE sessions SET status = 'running', finished_at = NULL")  # as a SIGKILL leaves it
    db.commit()
    db.close()
    reader = RunStore.read(path)
    try:
        assert [s.status for s in reader.sessions()] == ["interrupted"]
    finally:
        reader.close()
    lock = StoreLock(path)
    store = RunStore.open(path)
    try:
        lock.acquire()  # a run holds the store: its own new session runs, the killed one stays interrupted
        store.start_session({})
        assert [s.status for s in store.sessions()] == ["interrupted", "running"]
    finally:
        store.close()
        lock.release()
    assert [s for (s,) in query(path, "SELECT status FROM sessions ORDER BY id")] == ["interrupted", "running"]


def test_an_export_clears_the_part_files_a_killed_export_left(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    run(experiment(), path)
    stale = tmp_path / ".run.turns.jsonl.k1ll3d_x.part"
    fresh = tmp_path / ".run.turns.jsonl.wr1t1ng_.part"  # another export's, being written now
    other = tmp_path / ".notes.txt.abcdefgh.part"
    for part in (stale, fresh, other):
        part.write_text("half")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    out = export_table(path, "turns", "jsonl")
    assert out.is_file() and not stale.exists() and fresh.exists() and other.exists()


def test_a_report_clears_the_part_files_a_killed_report_left(tmp_path: Path) -> None:
    path = tmp_path / "run.sqlite"
    run(experiment(), path)
    stale = tmp_path / ".run.report.html.k1ll3d_x.part"
    fresh = tmp_path / ".run.report.html.wr1t1ng_.part"  # another report's, being written now
    for part in (stale, fresh):
        part.write_text("half")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    out = tmp_path / "run.report.html"
    assert write_html(build_report(path, resamples=200), out) == out
    assert out.is_file() and not stale.exists() and fresh.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".part")) == [fresh.name]


KILLED_AT_COMPLETION = """
import asyncio, json, os, signal, sys
from pathlib import Path
import moot.runner.experiment as experiment
from moot.runner.config import parse_experiment

def killed(store):  # SIGKILL as the finished run records its status and summary
    os.kill(os.getpid(), signal.SIGKILL)

experiment.summary_json = killed
config = parse_experiment(json.loads(sys.argv[1]))
asyncio.run(experiment.run_experiment(config, Path(sys.argv[2]), experiment.RunOptions()))
"""


def test_a_run_killed_while_it_records_its_completion_is_completed_by_a_rerun(tmp_path: Path) -> None:
    """The status and the summary are written in one transaction: a kill between them cannot leave a store
    that reads as complete without its summary (which a rerun, having nothing to do, would never write)."""
    path = tmp_path / "run.sqlite"
    command = [sys.executable, "-c", KILLED_AT_COMPLETION, json.dumps(experiment_table()), str(path)]
    killed = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    assert query(path, "SELECT count(*) FROM results") == [(2,)]  # every result was stored before the kill
    reader = RunStore.read(path)
    try:
        assert (reader.run_meta().status, reader.run_meta().summary) == ("interrupted", None)
    finally:
        reader.close()
    assert build_report(path, resamples=200).status == "interrupted"  # a report reads it as it is
    again = run(experiment(), path)
    assert (again.ran, again.calls, again.skipped) == (0, 0, 2)  # nothing to compute again
    reader = RunStore.read(path)
    try:
        meta = reader.run_meta()
        assert (meta.status, meta.summary) == ("complete", summary_json(reader))
        assert [s.status for s in reader.sessions()] == ["interrupted", "complete"]
    finally:
        reader.close()


@pytest.mark.parametrize("path", ["/proc/self/status", "EMPTY"])
def test_a_file_that_is_not_sqlite_is_not_called_an_sqlite_database(tmp_path: Path, path: str) -> None:
    file = Path(path) if path != "EMPTY" else tmp_path / "empty.sqlite"
    if path == "EMPTY":
        file.write_bytes(b"")
    for opener in (RunStore.read, RunStore.open):
        with pytest.raises(StoreError) as refused:
            opener(file)
        assert "not an SQLite database" in str(refused.value) and "SQLite database without" not in str(refused.value)


def test_a_schema_version_stored_as_text_is_not_said_to_be_the_one_moot_reads(tmp_path: Path) -> None:
    path = v1_store(tmp_path)
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (json.dumps(str(SCHEMA_VERSION)),))
    db.commit()
    db.close()
    with pytest.raises(StoreError) as refused:
        RunStore.read(path)
    message = str(refused.value)
    assert f"store schema {SCHEMA_VERSION};" not in message and f"'{SCHEMA_VERSION}' (text" in message
