"""Replies cut off by the token limit (finish reason "length") and replies without a stated confidence:
marked on the turn and the result, stored, exported, and counted in the report and the run summary."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from moot.analysis import build_report
from moot.analysis.records import ReplyCounts
from moot.analysis.render import report_markdown
from moot.analysis.report_sections import sections
from moot.backends.base import GenerationRequest, Message
from moot.backends.scripted import ScriptedBackend, ScriptedReply
from moot.calls import Caller
from moot.debate import resolve_protocol, run_debate
from moot.debate.agents import Agent, AgentSpec
from moot.runner.export import export_table
from moot.runner.store import RunStore
from moot.runner.summary import summarize
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.base import ParseStatus, Question
from tests.helpers import SCRIPTED, WriteRun, arithmetic_experiment, write_store

TASK = ArithmeticTask()
QUESTION = Question(id="q1", prompt="1+2*3+4-5*6", gold="-19")


def request(max_tokens: int = 512) -> GenerationRequest:
    return GenerationRequest(messages=(Message("user", "hi"),), max_tokens=max_tokens)


async def test_the_scripted_backend_plays_a_reply_cut_off_by_the_token_limit() -> None:
    backend = ScriptedBackend([ScriptedReply("So the answer", "length"), "So the answer is 7.", "one two\nthree four"])
    cut = (await backend.generate(request())).samples[0]
    assert (cut.text, cut.finish_reason) == ("So the answer", "length")
    whole = (await backend.generate(request())).samples[0]
    assert whole.finish_reason == "stop"
    # longer than max_tokens words: cut to that many, as a model's reply would be
    long = (await backend.generate(request(max_tokens=3))).samples[0]
    assert (long.text, long.finish_reason, long.completion_tokens) == ("one two\nthree", "length", 3)


async def test_a_truncated_reply_is_marked_on_the_turn_and_the_result() -> None:
    agents = [
        Agent(AgentSpec(name="agent-1", backend=SCRIPTED), ScriptedBackend(["the answer is -19", "-19"])),
        Agent(AgentSpec(name="agent-2", backend=SCRIPTED), ScriptedBackend(["-19", ScriptedReply("so it", "length")])),
    ]
    result = await run_debate(QUESTION, TASK, resolve_protocol("society", agents=2), agents, caller=Caller())
    flags = [[t.truncated for t in r.turns] for r in result.rounds]
    assert flags == [[False, False], [False, True]]
    cut = result.rounds[1].turns[1]
    assert cut.finish_reason == "length" and cut.parse_status == ParseStatus.UNPARSED
    assert result.truncated == 1


def quiet_or_confident(req: GenerationRequest, index: int) -> str:
    """Agents sampling at temperature 0.5 state no confidence; the others state 8."""
    if req.temperature == 0.5:
        return "So the answer is 7."
    return "So the answer is 7.\nConfidence: 8"


QUESTIONS = 2
AGENTS = [
    {"name": "agent-1", "sampling": {"temperature": 0.5}},  # never states a confidence
    {"name": "agent-2"},
    {"name": "agent-3", "sampling": {"max_tokens": 3}},  # every reply cut to "So the answer"
]


@pytest.fixture(scope="module")
def run(write_run: WriteRun) -> Path:
    conditions = [
        {"name": "society", "protocol": "society", "agents": AGENTS, "rounds": 2},
        {"name": "confidence", "protocol": "confidence", "agents": AGENTS, "rounds": 2},
    ]
    experiment = arithmetic_experiment("replies", conditions, QUESTIONS, "quiet")
    return write_run("replies", experiment, {"quiet": quiet_or_confident})


def test_truncated_replies_are_stored_and_read_back(run: Path) -> None:
    store = RunStore.open(run)
    try:
        turns = list(store.rows("turns"))
        assert len(turns) == 2 * QUESTIONS * 3 * 2
        assert all((t["finish_reason"] == "length") == (t["agent"] == "agent-3") for t in turns)
        assert all(t["text"] == "So the answer" for t in turns if t["agent"] == "agent-3")
        results = store.results()
        assert all(r.result.truncated == 2 for r in results)  # agent-3 in each of the 2 rounds
        assert all(t.truncated == (t.agent == "agent-3") for r in results for rd in r.result.rounds for t in rd.turns)
    finally:
        store.close()


def test_truncated_is_exported_with_turns_and_results(run: Path, tmp_path: Path) -> None:
    turns_csv = export_table(run, "turns", "csv", tmp_path / "turns.csv")
    with turns_csv.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    header = list(rows[0])
    assert header[header.index("finish_reason") + 1] == "truncated"
    assert all(r["truncated"] == ("1" if r["agent"] == "agent-3" else "0") for r in rows)
    results = [json.loads(line) for line in export_table(run, "results", "jsonl").read_text().splitlines()]
    assert len(results) == 2 * QUESTIONS and all(r["truncated"] == 2 for r in results)


def test_the_report_counts_truncated_and_missing_confidence_beside_unparsed(run: Path) -> None:
    report = build_report(run, resamples=200)
    (task,) = report.tasks
    counts = {c.name: c.replies for c in task.conditions}
    replies = QUESTIONS * 3 * 2  # questions x agents x rounds
    # agent-3's replies are cut before the answer: truncated and unparsed; in "confidence" agent-1
    # states none and agent-3 is cut before it: 2 of 3 agents, every round
    assert counts == {
        "society": ReplyCounts(replies, unparsed=QUESTIONS * 2, truncated=QUESTIONS * 2, confidence_missing=None),
        "confidence": ReplyCounts(replies, unparsed=QUESTIONS * 2, truncated=QUESTIONS * 2, confidence_missing=8),
    }
    assert counts["confidence"].confidence_text == "confidence missing in 8 of 12 replies"
    (section,) = sections(report)
    (table,) = [t for t in section.tables if t.key == "replies"]
    assert table.columns == (
        "condition",
        "replies",
        "unparsed",
        "truncated",
        "confidence missing",
        "rulings unreadable",
    )
    assert table.rows == (("society", "12", "4", "4", "—", "—"), ("confidence", "12", "4", "4", "8 of 12", "—"))
    assert "weight 0" in table.note
    assert "| confidence | 12 | 4 | 4 | 8 of 12 | — |" in report_markdown(report)
    truncated_views = [t for tr in report.transcripts for r in tr.rounds for t in r.turns if t.truncated]
    assert len(truncated_views) == 2 * QUESTIONS * 2 and {t.agent for t in truncated_views} == {"agent-3"}


def test_the_run_summary_counts_them_per_condition(run: Path) -> None:
    store = RunStore.open(run)
    try:
        conditions, total = summarize(store)
    finally:
        store.close()
    by_name = {c.name: c for c in conditions}
    assert (by_name["society"].replies, by_name["society"].truncated, by_name["society"].confidence_missing) == (
        12,
        4,
        None,
    )
    assert (by_name["confidence"].truncated, by_name["confidence"].confidence_missing) == (4, 8)
    assert (total.replies, total.truncated, total.confidence_missing, total.confidence_replies) == (24, 8, 8, 12)


def test_moot_run_prints_the_counts_with_its_totals(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from moot.commands import run as cli

    store = RunStore.open(run)
    try:
        conditions, total = summarize(store)
    finally:
        store.close()
    console = Console(record=True, width=200)
    monkeypatch.setattr(cli, "console", console)
    cli._print_summary(conditions, total)
    text = console.export_text()
    assert "truncated" in text and "4/12" in text and "8/24" in text
    assert "confidence: confidence missing in 8 of 12 replies" in text
    assert "society: confidence missing" not in text


def test_rulings_no_reader_can_read_are_counted(tmp_path: Path) -> None:
    """A moderator's JSON with LaTeX escapes and a Python dict are read (Liang's code reads them with eval);
    prose and a ruling cut off inside its object are not. They are counted from the stored verdicts' texts,
    which the report's lean copies of its transcripts no longer hold."""
    import sqlite3

    experiment = arithmetic_experiment("rulings", [{"name": "liang", "protocol": "liang", "rounds": 1}], 4)
    store = write_store(tmp_path / "rulings.sqlite", experiment)
    texts = (
        '```json\n{"Supported Side": "Affirmative", "Reason": "it is \\(155\\)", "debate_answer": "155"}\n```',
        "{'Whether there is a preference': 'Yes', 'debate_answer': '-332'}",
        "The affirmative side is right: 155.",
        '{"Reason": "The value of 12 + 18 * 9 is',
    )
    db = sqlite3.connect(store)  # each question's ruling replaced by one of the texts, as a store would hold it
    rows = db.execute("SELECT question_id, votes FROM results ORDER BY question_id").fetchall()
    for (qid, votes), text in zip(rows, texts, strict=True):
        rounds = json.loads(votes)
        rounds[0]["judge"]["text"] = text
        db.execute("UPDATE results SET votes = ?, final_judge = NULL WHERE question_id = ?", (json.dumps(rounds), qid))
    db.commit()
    db.close()
    (task,) = build_report(store, resamples=100).tasks
    (liang,) = task.conditions
    assert liang.replies is not None
    assert (liang.replies.rulings, liang.replies.rulings_unreadable) == (4, 2)
