"""moot.open, moot.compare and moot.run: stored runs as typed DataFrames, read-only, while a run writes them; the
comparison the command line prints; a synchronous run from a script and from inside a running event loop."""

from __future__ import annotations

import asyncio
import hashlib
import re
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import moot
from moot.analysis.report import AnalysisError
from moot.cli import app
from moot.errors import ConfigError, MootError
from moot.frames import COLUMNS, SETTINGS, columns
from moot.runner.config_files import load_experiment
from moot.runner.store import RunStore, StoreError
from tests.fixtures.analysis_run import MODELS, PRICE, QUESTIONS, experiment
from tests.helpers import WriteRun

ROOT = Path(__file__).parent.parent
RESAMPLES = 300


@pytest.fixture(scope="module")
def store(write_run: WriteRun) -> Path:
    """The analysis fixture's run: single, vote (3 agents) and society (3 agents, 3 rounds) on 12 questions."""
    return write_run("frames", experiment(), MODELS, file="analysis.sqlite")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _usd(prompt: int, completion: int) -> float:
    """The fixture's price, by hand: US dollars per million tokens."""
    return (prompt * PRICE["prompt"] + completion * PRICE["completion"]) / 1e6


def test_every_frame_has_its_documented_columns_and_dtypes(store: Path) -> None:
    run = moot.open(store)
    frames = {"results": run.results(), "turns": run.turns(), "calls": run.calls(), "questions": run.questions()}
    for table, frame in frames.items():
        assert list(frame.columns) == list(COLUMNS[table]), table
        assert {c: str(t) for c, t in frame.dtypes.items()} == {c: d for c, (d, _) in COLUMNS[table].items()}, table
        assert all(meaning for _, meaning in COLUMNS[table].values())
        assert list(columns(table)["column"]) == list(COLUMNS[table])
    for table in ("results", "turns"):
        assert list(frames[table].columns)[-len(SETTINGS) :] == list(SETTINGS)
    with pytest.raises(MootError, match="no table 'votes'; tables: results, turns, calls, questions"):
        columns("votes")


def test_results_one_row_per_unit_with_hand_checked_values(store: Path) -> None:
    results = moot.open(store).results()
    assert len(results) == 3 * QUESTIONS
    assert not results.duplicated(["condition", "task", "question", "seed"]).any()
    assert set(results["run"]) == {"analysis"}
    first = results[results["question"] == "arithmetic-s0-0"].set_index("condition")
    # 27+12*24+28-13*1 = 330
    assert first.loc["single", "gold"] == "330"
    single, vote, society = first.loc["single"], first.loc["vote"], first.loc["society"]
    # one agent, one call; a vote of three: three calls of the same round-0 request; a society of 3 x 3 rounds: 9
    assert (single["calls"], vote["calls"], society["calls"]) == (1, 3, 9)
    assert (single["rounds_used"], vote["rounds_used"], society["rounds_used"]) == (1, 1, 3)
    assert single["cost"] == pytest.approx(_usd(single["prompt_tokens"], single["completion_tokens"]))
    assert vote["prompt_tokens"] == 3 * single["prompt_tokens"]  # the same round-0 prompt, three times
    assert vote["cost"] == pytest.approx(_usd(vote["prompt_tokens"], vote["completion_tokens"]))
    # the deciding round's votes: the parsed answers of the vote's three agents, counted
    turns = moot.open(store).turns()
    mine = turns[(turns["condition"] == "vote") & (turns["question"] == "arithmetic-s0-0")]
    assert vote["votes"] == dict(Counter(mine["answer"].dropna()))
    # the settings of each condition, from the stored resolved conditions
    assert (society["protocol"], society["agents"], society["rounds"], society["topology"]) == ("society", 3, 3, "full")
    assert (single["protocol"], single["agents"], single["rounds"], single["topology"]) == ("single", 1, 1, "none")
    assert (society["model"], society["backend"], society["temperature"], society["max_tokens"]) == (
        "debater",
        "scripted",
        0.7,
        512,
    )
    assert not society["confidence_asked"]
    conditions = moot.open(store).conditions()
    assert list(conditions) == ["single", "vote", "society"] and conditions["society"].protocol.rounds == 3
    # correct is the final answer scored against the gold answer; an unparsed result has none and is wrong
    answered = results[results["status"] == "answered"]
    assert (answered["correct"] == (answered["answer"] == answered["gold"])).all()
    unparsed = results[results["status"] == "unparsed"]
    assert unparsed["answer"].isna().all() and not unparsed["correct"].any()
    # the same accuracies the report gives
    from moot.analysis import build_report

    report = build_report(store, resamples=RESAMPLES)
    for condition in report.tasks[0].conditions:
        assert results[results["condition"] == condition.name]["correct"].sum() == condition.accuracy.successes


def test_turns_calls_and_questions(store: Path) -> None:
    run = moot.open(store)
    turns, calls, questions = run.turns(), run.calls(), run.questions()
    assert len(turns) == QUESTIONS * (1 + 3 + 3 * 3)  # single, vote, society's three rounds of three agents
    assert not turns.duplicated(["condition", "task", "question", "seed", "round", "agent"]).any()
    # round 0 is shared: agent-1's call serves all three arms, agents 2 and 3's vote and society; later rounds are
    # society's own
    assert len(calls) == QUESTIONS * (1 + 2 + 2 * 3)
    assert (calls.groupby("condition").size().to_dict()) == {
        "single": QUESTIONS,
        "vote": 2 * QUESTIONS,
        "society": 6 * QUESTIONS,
    }
    assert set(turns["call_key"]) == set(calls["key"])
    for row in calls.itertuples():
        assert row.cost == pytest.approx(_usd(row.prompt_tokens, row.completion_tokens))
    for row in turns.itertuples():
        assert row.cost == pytest.approx(_usd(row.prompt_tokens, row.completion_tokens))
    assert set(calls["model"]) == {"debater"} and set(calls["served_model"]) == {"scripted:debater"}
    assert not calls["batched"].any() and (calls["cached_tokens"] == 0).all()
    # a result's tokens are its turns' tokens
    results = run.results()
    per_result = turns.groupby(["condition", "question"])[["prompt_tokens", "completion_tokens"]].sum()
    by_result = results.set_index(["condition", "question"])[["prompt_tokens", "completion_tokens"]]
    assert per_result.sort_index().equals(by_result.sort_index())
    # a turn's answer and correctness
    first = turns[(turns["condition"] == "single") & (turns["question"] == "arithmetic-s0-0")].iloc[0]
    assert first["round"] == 0 and first["agent"] == "agent-1" and first["call_model"] == "debater"
    assert first["text"].endswith(f"So the answer is {first['answer']}.")
    assert first["correct"] == (first["answer"] == "330")
    assert len(questions) == QUESTIONS
    q = questions.iloc[0]
    assert (q["task"], q["question"], q["prompt"], q["gold"]) == (
        "arithmetic",
        "arithmetic-s0-0",
        "27+12*24+28-13*1",
        "330",
    )
    assert q["metadata"] == {"terms": [27, 12, 24, 28, 13, 1]}


def test_several_stores_concatenate_with_a_unique_run_name(store: Path, tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    twin = shutil.copy(store, tmp_path / "other" / "analysis.sqlite")
    run = moot.open([store, twin])
    assert run.names == ("analysis", "analysis-2")
    results = run.results()
    assert len(results) == 2 * 3 * QUESTIONS
    assert results.groupby("run").size().to_dict() == {"analysis": 3 * QUESTIONS, "analysis-2": 3 * QUESTIONS}
    assert list(results.columns) == list(COLUMNS["results"]) and str(results["run"].dtype) == "string"
    assert len(run.questions()) == 2 * QUESTIONS
    with pytest.raises(MootError, match="this run is 2 stores"):
        moot.compare(run, "vote", "society")


def test_reading_changes_no_byte(store: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copy(store, tmp_path / "copy.sqlite"))
    before, listing = _digest(copy), sorted(p.name for p in tmp_path.iterdir())
    run = moot.open(copy)
    run.results(), run.turns(), run.calls(), run.questions()
    moot.compare(run, "vote", "society", resamples=RESAMPLES)
    assert _digest(copy) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == listing  # no -wal, -shm or lock file left beside it


def test_reads_a_store_while_it_is_written(store: Path, tmp_path: Path) -> None:
    path = Path(shutil.copy(store, tmp_path / "live.sqlite"))
    run = moot.open(path)
    assert len(run.results()) == 3 * QUESTIONS
    writer = RunStore.open(path)  # a run resuming the store holds it for writing
    try:
        stored = next(r for r in writer.iter_results() if r.condition == "single")
        writer.session = writer.start_session({})
        writer.add_result("single", stored.task, 7, stored.result, dict(stored.call_keys))
        assert path.with_name(path.name + "-wal").exists()  # the write is in the write-ahead log
        results = run.results()
        assert len(results) == 3 * QUESTIONS + 1
        added = results[results["seed"] == 7].iloc[0]
        assert (added["condition"], added["question"], added["answer"]) == (
            "single",
            stored.key[2],
            stored.result.final_answer,
        )
        # a transaction in progress in another connection: the reader sees the last commit, without waiting
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        other.execute("DELETE FROM results WHERE seed = 7")
        assert len(run.results()) == 3 * QUESTIONS + 1
        other.execute("COMMIT")
        other.close()
        assert len(run.results()) == 3 * QUESTIONS
    finally:
        writer.close()


def test_bad_input_is_one_line_errors(store: Path, tmp_path: Path) -> None:
    text = tmp_path / "notes.sqlite"
    text.write_text("not a store")
    with pytest.raises(StoreError, match="is not a moot run store"):
        moot.open(text)
    with pytest.raises(StoreError, match="no run store at"):
        moot.open(tmp_path / "missing.sqlite")
    with pytest.raises(MootError, match="name at least one run store"):
        moot.open([])
    with pytest.raises(AnalysisError, match="no condition 'debate'"):
        moot.compare(store, "vote", "debate")


def _cli_values(output: str) -> dict[str, str]:
    """The measure -> value rows of ``moot compare``'s accuracy table."""
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in re.split(r"[│|]", line) if c.strip()]
        if len(cells) == 2:
            rows[cells[0]] = cells[1]
    return rows


def test_compare_gives_what_the_command_line_prints(store: Path) -> None:
    comparison = moot.compare(moot.open(store), "society", "single", resamples=RESAMPLES)
    assert comparison.tasks == ("arithmetic",)
    pair = comparison["arithmetic"]
    s = pair.accuracy
    result = CliRunner().invoke(
        app, ["compare", str(store), "society", "single", "--resamples", str(RESAMPLES)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    printed = _cli_values(result.output)
    assert printed["accuracy A = society"] == f"{s.accuracy_a:.3f}"
    assert printed["accuracy B = single"] == f"{s.accuracy_b:.3f}"
    assert printed["accuracy A - B (95% CI)"] == (
        f"{s.difference:+.3f} [{s.difference_ci.low:.3f}, {s.difference_ci.high:.3f}]"
    )
    counts = f"{s.both_right} / {s.a_only} / {s.b_only} / {s.both_wrong}"
    assert printed["both right / A only / B only / both wrong"] == counts
    assert printed["exact McNemar p"] == f"{s.mcnemar_p:.3f}"
    # and the counts are the results frame's, by hand
    results = moot.open(store).results().pivot(index="question", columns="condition", values="correct")
    a, b = results["society"], results["single"]
    assert (s.both_right, s.a_only, s.b_only, s.both_wrong) == (
        int((a & b).sum()),
        int((a & ~b).sum()),
        int((~a & b).sum()),
        int((~a & ~b).sum()),
    )
    frame = comparison.frame()
    assert frame.loc[0, "accuracy_a"] == pytest.approx(a.mean()) and frame.loc[0, "mcnemar_p"] == s.mcnemar_p
    assert "society vs single on arithmetic: accuracy" in comparison._repr_markdown_()
    with pytest.raises(KeyError, match="no task 'gsm8k'"):
        comparison["gsm8k"]


def test_run_from_a_script_with_an_experiment_file(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()  # no loop runs here: moot.run uses asyncio.run
    output = tmp_path / "smoke.sqlite"
    run = moot.run(ROOT / "examples" / "scripted-smoke.toml", output=output)
    assert run.paths == (output,)
    results = run.results()
    assert len(results) == 4 * 2 * 3  # 4 questions x 2 seeds x 3 conditions
    assert set(results["protocol"]) == {"single", "vote", "society"}
    calls = len(run.calls())
    again = moot.run(load_experiment(ROOT / "examples" / "scripted-smoke.toml"), output=output)  # resumes
    assert len(again.calls()) == calls and len(again.results()) == len(results)
    with pytest.raises(ConfigError, match="task cannot be combined with an experiment"):
        moot.run(ROOT / "examples" / "scripted-smoke.toml", "gsm8k", output=output)


async def test_run_inside_a_running_event_loop(tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()  # as in a Jupyter cell
    ticks = []
    loop.call_soon(ticks.append, 1)
    run = moot.run(["single", "vote"], "arithmetic", questions=2, backend="scripted", output=tmp_path / "r.sqlite")
    results = run.results()
    assert len(results) == 2 * 2
    assert results.groupby("condition").size().to_dict() == {"single": 2, "vote": 2}
    assert set(results["backend"]) == {"scripted"} and set(results["agents"]) == {1, 3}
    assert ticks == []  # the call blocked: the loop ran nothing meanwhile
    await asyncio.sleep(0)
    assert ticks == [1]
    with pytest.raises(ConfigError, match="--protocol"):
        moot.run("no-such-protocol", backend="scripted", output=tmp_path / "x.sqlite")


def test_moot_imports_no_pandas_until_asked() -> None:
    import subprocess
    import sys

    code = "import sys, moot; assert 'pandas' not in sys.modules and 'moot.frames' not in sys.modules; moot.open"
    subprocess.run([sys.executable, "-c", code + "; assert 'moot.frames' in sys.modules"], check=True)
