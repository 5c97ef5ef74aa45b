"""Shared test helpers: scripted agents for protocol-logic tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from moot.backends.config import ScriptedBackendConfig
from moot.backends.scripted import ScriptedBackend
from moot.debate.agents import Agent, AgentSpec

SCRIPTED = ScriptedBackendConfig()


def scripted_agents(*replies: Sequence[str], persona: str | None = None) -> list[Agent]:
    """One agent per reply list; agent i answers its list in order, one reply per round."""
    return [
        Agent(AgentSpec(name=f"agent-{i}", backend=SCRIPTED, persona=persona), ScriptedBackend(list(r)))
        for i, r in enumerate(replies, 1)
    ]


def query(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on the SQLite file at ``path``, read directly (to check the store by hand), read-only:
    a missing file is an error, never created empty."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()
