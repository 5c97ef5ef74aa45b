"""``ResultTables``: the part of ``RunStore`` that writes and reads the ``questions``, ``turns`` and ``results``
tables: a run's questions, and each question's turns and result, stored together and read back as the engine's
records (``StoredResult``, ``DebateResult``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from moot.runner.records import StoredResult
from moot.runner.store.codec import _record, _turn, _turn_row, _vote, _vote_json, to_json
from moot.runner.store.connection import StoreConnection
from moot.runner.store.errors import _guarded

if TYPE_CHECKING:
    # imported where they are used, so that opening a store and listing it (`moot runs`) loads no pydantic
    # model, protocol, backend or task code
    from moot.debate.records import DebateResult, Turn
    from moot.tasks.base import Question


class ResultTables(StoreConnection):
    """A run store's questions, turns and results (``RunStore`` inherits it)."""

    # -- questions --------------------------------------------------------------------
    @_guarded
    def add_questions(self, task: str, questions: Sequence[Any]) -> None:
        with self._transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO questions VALUES (?, ?, ?, ?, ?)",
                [(task, q.id, q.prompt, q.gold, to_json(q.metadata)) for q in questions],
            )

    @_guarded
    def questions(self) -> dict[tuple[str, str], Question]:
        """(task, question id) -> question, in the run's question order."""
        from moot.tasks.base import Question

        return {
            (r["task"], r["question_id"]): Question(r["question_id"], r["prompt"], r["gold"], json.loads(r["metadata"]))
            for r in self._select("SELECT * FROM questions ORDER BY rowid")
        }

    # -- results ----------------------------------------------------------------------
    @_guarded
    def done(self) -> dict[tuple[str, str, str, int], str]:
        """(condition, task, question id, seed) -> status of every stored result."""
        rows = self._db.execute("SELECT condition, task, question_id, seed, status FROM results")
        return {(c, t, q, s): status for c, t, q, s, status in rows}

    @_guarded
    def add_result(
        self,
        condition: str,
        task: str,
        seed: int,
        result: DebateResult,
        call_keys: dict[tuple[int, str], str],
        metric: float | None = None,
        metric_detail: Any = None,
    ) -> None:
        """Store a question's turns and result in one transaction (replacing an earlier error result).

        ``metric`` is a task's own score where accuracy does not apply (biographies: fact precision),
        with ``metric_detail`` (JSON-serialisable) behind it."""
        q = result.question
        where = (condition, task, q.id, seed)
        with self._transaction() as db:
            db.execute("DELETE FROM turns WHERE condition=? AND task=? AND question_id=? AND seed=?", where)
            db.execute("DELETE FROM results WHERE condition=? AND task=? AND question_id=? AND seed=?", where)
            for record in result.rounds:
                for t in record.turns:
                    db.execute(
                        "INSERT INTO turns VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        _turn_row(where, t, call_keys.get((t.round, t.agent), "")),
                    )
            final_judge = to_json(asdict(result.final_judge)) if result.final_judge else None
            db.execute(
                "INSERT INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    *where,
                    result.final_answer,
                    result.status.value,
                    int(result.correct),
                    result.rounds_used,
                    str(result.stop_reason),  # its plain name, as every store holds it
                    result.error,
                    to_json([_vote_json(r) for r in result.rounds]),
                    final_judge,
                    self.session,
                    metric,
                    to_json(metric_detail) if metric_detail is not None else None,
                    result.protocol,
                ),
            )

    @_guarded
    def results(self) -> list[StoredResult]:
        """Every stored result with its rounds, in the run's order: question, seed, then condition.

        A result whose question or condition the store does not list (a hand-edited store) comes
        after those it lists, with an empty prompt and gold."""
        return list(self.iter_results())

    @_guarded
    def iter_results(self) -> Iterator[StoredResult]:
        """``results()`` one at a time, in the same order, each read with its own turns: memory stays that
        of one result however large the run (a report of a 20,000-question run)."""
        from moot.tasks.base import Question

        questions = self.questions()
        ordered = (
            "SELECT r.* FROM results r"
            " LEFT JOIN questions q ON q.task = r.task AND q.question_id = r.question_id"
            " LEFT JOIN conditions c ON c.name = r.condition"
            " ORDER BY q.rowid IS NULL, q.rowid, r.seed, c.rowid IS NULL, c.rowid, r.rowid"
        )
        for row in self._select(ordered):
            question = questions.get((row["task"], row["question_id"])) or Question(row["question_id"], "", "")
            yield self._stored_result(row, question)

    @_guarded
    def result(self, condition: str, task: str, question_id: str, seed: int) -> StoredResult | None:
        """One stored result with its rounds, as ``iter_results`` reads it; None if it is not stored."""
        from moot.tasks.base import Question

        where = "condition = ? AND task = ? AND question_id = ? AND seed = ?"
        row = next(self._select(f"SELECT * FROM results WHERE {where}", condition, task, question_id, seed), None)
        if row is None:
            return None
        q = next(self._select("SELECT * FROM questions WHERE task = ? AND question_id = ?", task, question_id), None)
        question = (
            Question(question_id, q["prompt"], q["gold"], json.loads(q["metadata"]))
            if q is not None
            else Question(question_id, "", "")
        )
        return self._stored_result(row, question)

    def _stored_result(self, row: sqlite3.Row, question: Question) -> StoredResult:
        """A results row read with its turns and rounds."""
        from moot.debate.records import (
            DebateResult,
            FinalStatus,
            JudgeVerdict,
            PoolRecord,
            RetentionRecord,
            RoundRecord,
            StopReason,
        )

        unit = (row["condition"], row["task"], row["question_id"], row["seed"])
        turns: dict[int, list[Turn]] = {}
        keys: dict[tuple[int, str], str] = {}
        where = "condition = ? AND task = ? AND question_id = ? AND seed = ?"
        for t in self._select(f"SELECT * FROM turns WHERE {where} ORDER BY rowid", *unit):
            turns.setdefault(t["round"], []).append(_turn(t))
            keys[(t["round"], t["agent"])] = t["call_key"]
        votes = {v["round"]: v for v in json.loads(row["votes"])}
        rounds = tuple(
            RoundRecord(
                index=i,
                turns=tuple(ts),
                vote=_vote(votes[i]),
                judge=_record(JudgeVerdict, votes[i]["judge"]) if votes[i]["judge"] else None,
                pool=_record(PoolRecord, votes[i]["pool"]) if votes[i]["pool"] else None,
                retention=_record(RetentionRecord, votes[i]["retention"]) if votes[i]["retention"] else None,
            )
            for i, ts in sorted(turns.items())
        )
        result = DebateResult(
            question=question,
            protocol=row["protocol"],
            rounds=rounds,
            final_answer=row["final_answer"],
            status=FinalStatus(row["status"]),
            correct=bool(row["correct"]),
            stop_reason=StopReason(row["stop_reason"]),  # stored as its plain name
            error=row["error"],
            final_judge=_record(JudgeVerdict, json.loads(row["final_judge"])) if row["final_judge"] else None,
        )
        detail = json.loads(row["metric_detail"]) if row["metric_detail"] is not None else None
        return StoredResult(
            row["condition"], row["task"], row["seed"], result, row["session"], row["metric"], detail, keys
        )
