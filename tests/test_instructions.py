"""Every arm of a comparison is instructed alike: within one replication file, the task's instruction (its
system prompt) reaches every condition's agents or none's, and anything else in an agent's system message is
its protocol's own (Liang's debater meta prompt). Checked on what the files send (run with the scripted
backend) and on what the shipped stores recorded."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from moot.backends.scripted import seeded_numbers
from moot.runner.config_files import parse_experiment, read_toml
from moot.runner.config_resolve import resolve
from moot.tasks import get_task
from tests.helpers import write_store

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / "examples/replicate").glob("*.toml"))
LIANG_META = "You are a debater. Hello and welcome to the debate."
OTHER = {"kind": "scripted", "model": "numbers-other"}  # an agent's own backend, scripted


def first_system_messages(store: Path) -> dict[tuple[str, str], list[str | None]]:
    """(condition, task) -> the system message of each agent's round-0 prompt on the store's first question."""
    db = sqlite3.connect(store)
    try:
        rows = db.execute(
            "SELECT condition, task, agent, shown FROM turns WHERE round = 0 AND seed = "
            "(SELECT MIN(seed) FROM turns) AND question_id IN (SELECT MIN(question_id) FROM turns GROUP BY task) "
            "ORDER BY condition, task, agent"
        ).fetchall()
    finally:
        db.close()
    out: dict[tuple[str, str], list[str | None]] = {}
    for condition, task, _agent, shown in rows:
        messages = json.loads(shown)
        system = messages[0]["content"] if messages and messages[0]["role"] == "system" else None
        out.setdefault((condition, task), []).append(system)
    return out


def instruction_problems(systems: dict[tuple[str, str], list[str | None]], styles: dict[str, str]) -> list[str]:
    """Why these arms are not instructed alike (empty when they are)."""
    problems = []
    tasks = {task for _, task in systems}
    for task in sorted(tasks):
        instruction = get_task(task).system_prompt
        received = {}
        for (condition, t), messages in systems.items():
            if t != task:
                continue
            got = {instruction is not None and m is not None and instruction in m for m in messages}
            if len(got) != 1:
                problems.append(f"{task}: the agents of {condition} are instructed differently")
            received[condition] = got.pop()
            for m in messages:
                rest = (m or "").replace(instruction or "\0", "").strip()
                if rest and not (styles[condition] == "liang" and rest.startswith(LIANG_META)):
                    problems.append(f"{task}: {condition} sends a system message that is not its protocol's own")
        if len(set(received.values())) > 1:
            given = sorted(c for c, r in received.items() if r)
            problems.append(f"{task}: only {', '.join(given)} receive the task's instruction")
    return problems


def scripted(file: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The replication file run on its first question of each task with the scripted backend. A condition's
    agent with a backend of its own (heter-mad's second model) answers as another scripted model, so that no
    arm runs a real model and each keeps its number of models."""
    data: dict[str, Any] = read_toml(file)
    data["agent"] = {**data["agent"], "backend": {"kind": "scripted", "model": "numbers"}}
    for condition in data["conditions"]:
        if isinstance(condition.get("agents"), list):
            condition["agents"] = [{**a, "backend": OTHER} if "backend" in a else a for a in condition["agents"]]
    data["tasks"] = [{**t, "count": 1} for t in data["tasks"]]
    data["seeds"] = data["seeds"][:1]
    for key in ("output", "calls_from", "prices"):
        data.pop(key, None)
    config = parse_experiment(data, str(file), file.parent)
    store = write_store(tmp_path / f"{file.stem}.sqlite", config, {OTHER["model"]: seeded_numbers})
    return store, {c.name: c.protocol.style.kind for c in resolve(config)}


@pytest.mark.parametrize("file", FILES, ids=[f.stem for f in FILES])
def test_every_arm_of_a_replication_file_is_instructed_alike(file: Path, tmp_path: Path) -> None:
    store, styles = scripted(file, tmp_path)
    systems = first_system_messages(store)
    assert {c for c, _ in systems} == set(styles)
    assert instruction_problems(systems, styles) == []


@pytest.mark.parametrize("file", FILES, ids=[f.stem for f in FILES])
def test_the_shipped_stores_recorded_arms_instructed_alike(file: Path) -> None:
    store = ROOT / "runs/replicate" / f"{file.stem}.sqlite"
    if not store.exists():
        pytest.skip(f"{store} is not shipped")
    config = parse_experiment(read_toml(file), str(file), file.parent)
    styles = {c.name: c.protocol.style.kind for c in resolve(config)}
    assert instruction_problems(first_system_messages(store), styles) == []


def test_an_arm_without_the_instruction_is_caught() -> None:
    """The check itself: Liang's meta prompt alone beside arms that get arithmetic's instruction fails, and
    a system message a protocol does not own fails."""
    instruction = get_task("arithmetic").system_prompt
    assert instruction is not None
    styles = {"vote": "peers", "liang": "liang"}
    alike = {("vote", "arithmetic"): [instruction], ("liang", "arithmetic"): [f"{instruction}\n\n{LIANG_META} ..."]}
    assert instruction_problems(alike, styles) == []
    apart = {("vote", "arithmetic"): [instruction], ("liang", "arithmetic"): [f"{LIANG_META} ..."]}
    assert instruction_problems(apart, styles) == ["arithmetic: only vote receive the task's instruction"]
    stray = {("vote", "arithmetic"): [f"{instruction} Be brief."], ("liang", "arithmetic"): [instruction]}
    assert instruction_problems(stray, styles) == [
        "arithmetic: vote sends a system message that is not its protocol's own"
    ]
