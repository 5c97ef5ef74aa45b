"""The task catalogue behind `moot tasks`."""

from __future__ import annotations

from moot.tasks import TASKS, get_task
from moot.tasks.catalog import catalog


def test_catalog_lists_every_task_with_sizes_licences_and_metrics() -> None:
    rows = {row.name.split(" ")[0]: row for row in catalog()}
    assert set(rows) == set(TASKS)
    assert rows["gsm8k"].offline == "test 1,319"
    assert rows["mmlu"].offline == "test 14,042; validation 1,531; dev 285"
    assert rows["mmlu-pro-med"].offline.startswith("test 272;")
    assert rows["arc-challenge"].offline == "test 1,172; validation 299"
    assert rows["gpqa"].offline.startswith("not shipped") and "gated" in rows["gpqa"].licence
    assert rows["chess-move"].offline == "generated" and "Stockfish" in rows["chess-move"].metric
    assert "fact precision" in rows["biographies"].metric
    assert rows["knights"].offline.startswith("generated") and "Smullyan" in rows["knights"].source
    assert [row.name for row in catalog() if row.name.startswith("knights")] == ["knights (or knights:<n>)"]
    for row in rows.values():
        assert row.licence and row.metric and row.source and row.offline


def test_every_registered_task_builds() -> None:
    for name in TASKS:
        task = get_task(name)
        assert task.name == name and task.splits and task.answer_instruction
