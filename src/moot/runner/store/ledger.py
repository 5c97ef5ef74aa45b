"""The batch ledger: the provider batches a run has sent, kept in its store (moot.backends.batches).

Two tables, made when a run first sends a batch (a store without them has sent none; they are not part
of ``TABLES``, so a store from before them is complete, and older moot reads a store that has them):
``batches`` (id, model, status, created and closed times) and ``batch_requests`` (which batch holds which
request, by its custom id, and whether the batch failed it). Each write is its own transaction, made
before the batch is polled: a killed run's batches are found again by the next.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moot.runner.store.run_store import RunStore

LEDGER_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS batches (id TEXT PRIMARY KEY, model TEXT NOT NULL, status TEXT NOT NULL, "
    "created_at REAL NOT NULL, closed_at REAL)",
    "CREATE TABLE IF NOT EXISTS batch_requests (custom_id TEXT NOT NULL, batch_id TEXT NOT NULL, "
    "failed INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (custom_id, batch_id))",
)


class BatchLedger:
    """A run store's batches (``moot.backends.batches.Ledger``)."""

    def __init__(self, store: RunStore):
        self._store = store
        self._made = self._exists()

    def _exists(self) -> bool:
        rows = self._store._select("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'batches'")
        return any(True for _ in rows)

    def record_batch(self, batch_id: str, model: str, custom_ids: Iterable[str]) -> None:
        with self._store._transaction() as db:
            if not self._made:
                for statement in LEDGER_SCHEMA:
                    db.execute(statement)
            db.execute("INSERT OR REPLACE INTO batches VALUES (?, ?, 'sent', ?, NULL)", (batch_id, model, time.time()))
            db.executemany(
                "INSERT OR REPLACE INTO batch_requests VALUES (?, ?, 0)", ((key, batch_id) for key in custom_ids)
            )
        self._made = True

    def open_batch(self, custom_id: str) -> str | None:
        if not self._made:
            return None
        rows = self._store._select(
            "SELECT b.id FROM batch_requests r JOIN batches b ON b.id = r.batch_id "
            "WHERE r.custom_id = ? AND r.failed = 0 ORDER BY b.created_at DESC LIMIT 1",
            custom_id,
        )
        row = next(iter(rows), None)
        return None if row is None else str(row["id"])

    def batch_requests(self, batch_id: str) -> frozenset[str]:
        if not self._made:
            return frozenset()
        rows = self._store._select("SELECT custom_id FROM batch_requests WHERE batch_id = ?", batch_id)
        return frozenset(str(row["custom_id"]) for row in rows)

    def close_batch(self, batch_id: str, status: str, failed: Iterable[str]) -> None:
        if not self._made:
            return
        with self._store._transaction() as db:
            db.execute("UPDATE batches SET status = ?, closed_at = ? WHERE id = ?", (status, time.time(), batch_id))
            db.executemany(
                "UPDATE batch_requests SET failed = 1 WHERE batch_id = ? AND custom_id = ?",
                ((batch_id, key) for key in failed),
            )

    def batches(self) -> list[dict[str, object]]:
        """Every batch, oldest first, with how many requests it held and failed."""
        if not self._made:
            return []
        rows = self._store._select(
            "SELECT b.id, b.model, b.status, b.created_at, b.closed_at, count(r.custom_id) AS requests, "
            "coalesce(sum(r.failed), 0) AS failed FROM batches b LEFT JOIN batch_requests r ON r.batch_id = b.id "
            "GROUP BY b.id ORDER BY b.created_at"
        )
        return [dict(row) for row in rows]
