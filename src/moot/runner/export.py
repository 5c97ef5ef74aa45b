"""Export a run's tables as JSON lines, CSV or Parquet."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from moot.errors import ConfigError
from moot.runner.store import RunStore

FORMATS = ("jsonl", "csv", "parquet")


def export_table(run: Path, table: str, fmt: str, out: Path | None = None) -> Path:
    """Write ``table`` of the run at ``run`` to ``out`` (default: <run>.<table>.<fmt>); return the path."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; choose {', '.join(FORMATS)}")
    store = RunStore.open(run)
    try:
        rows = list(store.rows(table))
    finally:
        store.close()
    target = out or run.with_name(f"{run.stem}.{table}.{fmt}")
    if fmt == "jsonl":
        with target.open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    elif fmt == "csv":
        with target.open("w", encoding="utf-8", newline="") as f:
            if rows:
                writer = csv.DictWriter(f, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
    else:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ConfigError("Parquet export needs pyarrow: pip install 'moot[parquet]'") from None
        pq.write_table(pa.Table.from_pylist(rows), target)
    return target
