"""Export a run's tables as JSON lines, CSV or Parquet.

Tables are written as stored, plus derived columns: ``turns.truncated`` (1 when the reply was cut off by
the token limit, finish reason "length") and ``results.truncated`` (how many of the result's agent
replies were).

The store is read read-only (``RunStore.read``); the output file follows ``moot.outputs``: it is
written whole (beside, then moved into place), never over the run or another store, and over
an existing file other than the default one only with ``force``. The part file an export killed
mid-write left beside its output is removed by the next export of that output
(``moot.outputs.clear_stale_parts``).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from moot.debate.records import TRUNCATED
from moot.errors import ConfigError
from moot.outputs import check_output, write_output
from moot.runner.store import RunStore

FORMATS = ("jsonl", "csv", "parquet")


def default_export_path(run: Path, table: str, fmt: str) -> Path:
    """runs/NAME.sqlite -> runs/NAME.TABLE.FORMAT"""
    return run.with_name(f"{run.stem}.{table}.{fmt}")


def export_table(run: Path, table: str, fmt: str, out: Path | None = None, force: bool = False) -> Path:
    """Write ``table`` of the run at ``run`` to ``out`` (default: <run>.<table>.<fmt>); return the path.

    An existing ``out`` is replaced only with ``force`` (the default path always is); the run itself or
    any other store never is (``moot.outputs.check_output``)."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; choose {', '.join(FORMATS)}")
    target = out or default_export_path(run, table, fmt)
    check_output(target, force=force, default=out is None, reading=run, stream=out is not None)
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ConfigError("Parquet export needs pyarrow: pip install 'moot[parquet]'") from None
    store = RunStore.read(run)
    try:
        rows = derived_columns(table, list(store.rows(table)), store.rows("turns") if table == "results" else ())
    finally:
        store.close()

    def write(path: Path) -> None:
        if fmt == "jsonl":
            with path.open("w", encoding="utf-8") as f:
                for row in rows:
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
        elif fmt == "csv":
            with path.open("w", encoding="utf-8", newline="") as f:
                if rows:
                    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                    writer.writeheader()
                    writer.writerows(rows)
        else:
            pq.write_table(pa.Table.from_pylist(rows), path)

    # written beside as .NAME.XXXX.part (created O_EXCL | O_NOFOLLOW), then renamed over ``target``
    # itself: a link at ``target`` is refused, never written through (moot.outputs, moot.safe_files); a stale
    # part file a killed export left beside it is removed first (moot.outputs.clear_stale_parts)
    return write_output(target, write, stream=out is not None)


def _after(row: dict[str, Any], key: str, name: str, value: Any) -> dict[str, Any]:
    """``row`` with column ``name`` inserted after column ``key``."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        out[k] = v
        if k == key:
            out[name] = value
    return out


def derived_columns(
    table: str, rows: list[dict[str, Any]], turns: Iterable[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
    """The stored ``rows`` of ``table`` with the derived columns (``turns`` are the turns rows, for results)."""
    if table == "turns":
        return [_after(r, "finish_reason", "truncated", int(r["finish_reason"] == TRUNCATED)) for r in rows]
    if table == "results":
        unit = ("condition", "task", "question_id", "seed")
        cut = Counter(tuple(t[k] for k in unit) for t in turns if t["finish_reason"] == TRUNCATED)
        return [_after(r, "status", "truncated", cut[tuple(r[k] for k in unit)]) for r in rows]
    return rows
