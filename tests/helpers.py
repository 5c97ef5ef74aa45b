"""Shared test helpers: scripted agents for protocol-logic tests; stored runs (``arithmetic_experiment``'s table,
run by ``run``, or by ``write_store`` with scripted models registered meanwhile; tests/conftest.py's ``write_run``
fixture writes one per module); and a direct read of a store (``query``)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from moot.backends.config import ScriptedBackendConfig
from moot.backends.scripted import SCRIPTED_MODELS, Responder, ScriptedBackend
from moot.debate.agents import Agent, AgentSpec
from moot.runner.config import ExperimentConfig
from moot.runner.config_files import parse_experiment
from moot.runner.experiment import run_experiment
from moot.runner.session import RunOptions, RunOutcome

SCRIPTED = ScriptedBackendConfig()


def scripted_agents(*replies: Sequence[str], persona: str | None = None) -> list[Agent]:
    """One agent per reply list; agent i answers its list in order, one reply per round."""
    return [
        Agent(AgentSpec(name=f"agent-{i}", backend=SCRIPTED, persona=persona), ScriptedBackend(list(r)))
        for i, r in enumerate(replies, 1)
    ]


def arithmetic_experiment(
    name: str,
    conditions: list[dict[str, Any]],
    questions: int,
    model: str = "numbers",
    *,
    seeds: list[int] | None = None,
    agent: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The experiment table (for ``parse_experiment``) of ``conditions`` on ``questions`` arithmetic questions
    (task seed 0) answered by the scripted ``model``; ``seeds`` only where given, ``agent`` (the whole agent
    table) in place of the scripted model's, and ``extra`` top-level keys."""
    data: dict[str, Any] = {"name": name}
    if seeds is not None:
        data["seeds"] = seeds
    data["tasks"] = [{"name": "arithmetic", "count": questions, "seed": 0}]
    data["agent"] = agent if agent is not None else {"backend": {"kind": "scripted", "model": model}}
    return data | {"conditions": conditions, **extra}


@contextlib.contextmanager
def scripted_models(models: Mapping[str, Responder] | None) -> Iterator[None]:
    """``models`` registered as scripted models (by name) for the block only, whatever they replace."""
    with pytest.MonkeyPatch.context() as patch:
        for name, responder in (models or {}).items():
            patch.setitem(SCRIPTED_MODELS, name, responder)
        yield


def run(config: ExperimentConfig | dict[str, Any], path: Path, **options: Any) -> RunOutcome:
    """Run ``config`` (or the experiment table, parsed) into the store ``path``, with ``RunOptions(**options)``."""
    if isinstance(config, dict):
        config = parse_experiment(config)
    return asyncio.run(run_experiment(config, path, RunOptions(**options)))


def write_store(
    path: Path,
    experiment: ExperimentConfig | dict[str, Any],
    models: Mapping[str, Responder] | None = None,
    **options: Any,
) -> Path:
    """``path``, a store written by running ``experiment`` with the scripted ``models`` registered meanwhile."""
    with scripted_models(models):
        run(experiment, path, **options)
    return path


class WriteRun:
    """tests/conftest.py's ``write_run`` fixture: ``write_store`` into a new temporary folder ``folder``N."""

    def __init__(self, folders: pytest.TempPathFactory) -> None:
        self.folders = folders

    def __call__(
        self,
        folder: str,
        experiment: ExperimentConfig | dict[str, Any],
        models: Mapping[str, Responder] | None = None,
        *,
        file: str = "run.sqlite",
        **options: Any,
    ) -> Path:
        return write_store(self.folders.mktemp(folder) / file, experiment, models, **options)


def query(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on the SQLite file at ``path``, read directly (to check the store by hand), read-only:
    a missing file is an error, never created empty."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()
