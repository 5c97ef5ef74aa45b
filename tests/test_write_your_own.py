"""The manual's "Write your own" page (docs/extending.md, once the README's section) works as written: each
Python block is, whole, an example file under examples/plugins, every example file there is shown, and each
experiment snippet runs with `moot run` in a folder that holds the example files beside it (completed, where it
gives none, by the arithmetic task, the scripted backend and a society condition), does what its section says,
and reads back with `moot report`."""

from __future__ import annotations

import re
import shutil
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moot.backends.config import BACKEND_KINDS, backend_kinds
from moot.backends.scripted import SCRIPTED_MODELS, scripted_models
from moot.cli import app
from moot.debate.registry import _REGISTRY, rules
from moot.runner.records import StoredResult
from moot.runner.store import RunStore
from moot.tasks import TASKS, load_installed

ROOT = Path(__file__).parent.parent
PLUGINS = ROOT / "examples/plugins"
SECTION = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
EXAMPLES = {path: path.read_text(encoding="utf-8") for path in PLUGINS.rglob("*.py") if path.name != "__init__.py"}


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", SECTION, re.S)


SNIPPETS = [block for block in blocks("toml") if "[project." not in block]  # the experiment files' parts


def test_every_python_block_is_an_example_file_and_every_example_file_is_shown() -> None:
    shown = {text: path for path, text in EXAMPLES.items()}
    for block in blocks("python"):
        assert block in shown, f"a Python block of docs/extending.md is no example file as it stands:\n{block[:300]}"
    assert {shown[block] for block in blocks("python")} == set(EXAMPLES)
    assert len({path.name for path in EXAMPLES}) == len(EXAMPLES)  # a snippet names each by its file name


def test_the_installed_packages_entry_points_are_as_shown() -> None:
    pyproject = tomllib.loads((PLUGINS / "installed/pyproject.toml").read_text(encoding="utf-8"))
    (shown,) = [tomllib.loads(block) for block in blocks("toml") if "[project." in block]
    assert shown == {"project": {"entry-points": pyproject["project"]["entry-points"]}}


def experiment(snippet: str) -> str:
    """The snippet as a whole experiment file: what it leaves out, the test's defaults."""
    given = tomllib.loads(snippet)
    parts = [*([] if "name" in given else ['name = "example"']), snippet]
    if "tasks" not in given:
        parts.append('[[tasks]]\nname = "arithmetic"\ncount = 3\n')
    if "agent" not in given:
        parts.append('[agent]\nbackend = { kind = "scripted", model = "numbers" }\n')
    if "conditions" not in given:
        parts.append('[[conditions]]\nname = "society"\nprotocol = "society"\n')
    return "\n".join(parts)


def _asked(results: list[StoredResult]) -> None:  # a data file's rows, asked through its prompt template
    assert all(r.result.rounds[0].turns[0].shown[-1].content.startswith("What is the capital of") for r in results)


def _capitals(results: list[StoredResult]) -> None:
    assert {r.task for r in results} == {"capitals"} and len(results) == 5


def _paris(results: list[StoredResult]) -> None:
    assert {r.result.final_answer for r in results} == {"Paris"}
    assert [r.result.question.id for r in results if r.result.correct] == ["capitals-france"]


def _parsed_only(results: list[StoredResult]) -> None:
    kept = [round.retention for r in results for round in r.result.rounds[1:]]
    assert kept and all(k is not None and k.rule == "parsed-only" for k in kept)


def _plateau(results: list[StoredResult]) -> None:  # it stops at the first majority answer repeated
    for r in results:
        winners = [debate_round.vote.winner for debate_round in r.result.rounds]
        repeated = [i for i in range(1, len(winners)) if winners[i] is not None and winners[i] == winners[i - 1]]
        assert (r.result.stop_reason, r.result.rounds_used) == (
            ("plateau", repeated[0] + 1) if repeated else ("max_rounds", 4)
        )


def _tally(results: list[StoredResult]) -> None:
    for r in results:
        for debate_round in r.result.rounds[1:]:
            assert all(t.shown[-1].content.startswith("Last round's answers: ") for t in debate_round.turns)


def _relay(results: list[StoredResult]) -> None:
    heard_last_rounds = []
    for r in results:
        for before, debate_round in zip(r.result.rounds, r.result.rounds[1:]):
            # the last agent hears the first agent's reply of this round, not of the round before
            first, last = debate_round.turns[0].text, debate_round.turns[-1].shown[-1].content
            assert first in last
            heard_last_rounds.append(before.turns[0].text in last and before.turns[0].text != first)
    assert heard_last_rounds and not any(heard_last_rounds)


def _echo(results: list[StoredResult]) -> None:
    assert all(t.text.startswith("Heard: ") for r in results for rec in r.result.rounds for t in rec.turns)


# What each snippet's extension shows in its stored run, found by a text that only its snippet holds.
CHECKS: dict[str, Callable[[list[StoredResult]], None]] = {
    'format = "text"': _asked,
    'plugins = ["capitals.py"]': _capitals,
    'model = "paris"': _paris,
    'retention = "parsed-only"': _parsed_only,
    'kind = "plateau"': _plateau,
    'kind = "tally"': _tally,
    'style = "relay"': _relay,
    'kind = "echo"': _echo,
}


def test_every_extension_kind_has_a_snippet() -> None:
    assert sorted(sum(marker in s for s in SNIPPETS) for marker in CHECKS) == [1] * len(CHECKS)
    assert len(SNIPPETS) == len(CHECKS)


@pytest.fixture
def registries() -> Iterator[None]:
    """The registries as they were: the rules, tasks, backend kinds and scripted models an example registers
    are forgotten after it (built-ins and installed plug-ins are loaded first, so they stay)."""
    rules("cue"), backend_kinds(), scripted_models(), load_installed()
    saved = [(_REGISTRY[family], dict(_REGISTRY[family])) for family in _REGISTRY]
    saved += [(TASKS, dict(TASKS)), (BACKEND_KINDS, dict(BACKEND_KINDS)), (SCRIPTED_MODELS, dict(SCRIPTED_MODELS))]
    try:
        yield
    finally:
        for live, before in saved:
            live.clear()
            live.update(before)  # type: ignore[attr-defined]


def _name(snippet: str) -> str:
    return next(marker for marker in CHECKS if marker in snippet)


@pytest.mark.usefixtures("registries")
@pytest.mark.parametrize("snippet", SNIPPETS, ids=_name)
def test_each_snippet_runs_beside_its_example_and_reports(snippet: str, tmp_path: Path) -> None:
    for path in EXAMPLES:
        shutil.copy(path, tmp_path / path.name)
    shutil.copytree(ROOT / "examples/data", tmp_path / "data")
    file, store = tmp_path / "example.toml", tmp_path / "example.sqlite"
    file.write_text(experiment(snippet), encoding="utf-8")
    runner = CliRunner()
    ran = runner.invoke(app, ["run", str(file), "--output", str(store)])
    assert ran.exit_code == 0, ran.output
    reader = RunStore.read(store)
    try:
        results = reader.results()
        conditions = list(reader.conditions())
    finally:
        reader.close()
    assert results
    CHECKS[_name(snippet)](results)
    report = runner.invoke(app, ["report", str(store), "--no-html", "--resamples", "100"])
    assert report.exit_code == 0, report.output
    assert all(name in report.output for name in conditions)
