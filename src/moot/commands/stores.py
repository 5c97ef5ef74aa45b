"""The commands over run stores: `moot runs` lists a folder's, `moot merge` joins a run's shards, `moot export`
writes a table of one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from moot.cli_output import fit_table, plural
from moot.cli_support import reports_errors
from moot.commands.console import console
from moot.errors import MootError


@reports_errors
def merge(
    out: Annotated[Path, typer.Argument(help="The merged store to write (a new file, in an existing folder).")],
    stores: Annotated[list[Path], typer.Argument(help="The store of every shard (`moot run FILE --shard I/N`).")],
) -> None:
    """Merge the N shards of a run into one store: the results, turns and calls one run writes.

    Refused with one line, writing nothing: OUT exists, a store that is not a shard, shards of different
    experiments or of different N, a shard missing, given twice, not complete, or overlapping another. The
    shards are only read."""
    from moot.runner.shards import merge_shards

    done = merge_shards(out, stores)
    console.print(
        f"merged {plural(done.shards, 'shard')} of {done.name}: {plural(done.results, 'result')}, "
        f"{plural(done.turns, 'turn')}, {plural(done.calls, 'call')}, {plural(done.sessions, 'session')}",
        markup=False,
    )
    console.print(f"run stored in {done.path}", markup=False, soft_wrap=True)


@reports_errors
def runs(
    directory: Annotated[Path, typer.Argument(help="Folder holding run stores.")] = Path("runs"),
) -> None:
    """List the runs in a folder with their status and progress (read-only: nothing is written).

    A run killed before it ended is shown as interrupted; rerun it to resume."""
    from moot.runner.store import RunStore, StoreError

    if not directory.is_dir():
        raise MootError(f"{directory} is not a folder")
    table = Table()
    for column in ("run", "name", "status", "results", "errors", "model calls", "created", "moot"):
        table.add_column(column)
    import datetime

    for path in sorted(directory.glob("*.sqlite")):
        try:
            store = RunStore.read(path)
        except StoreError as exc:
            table.add_row(escape(str(path)), "", f"[red]unreadable[/]: {escape(str(exc))}", "", "", "", "", "")
            continue
        try:
            meta = store.listing()  # no validation of the experiment: listing loads no config code
            done = store.done()
            created = datetime.datetime.fromtimestamp(meta.created_at).strftime("%Y-%m-%d %H:%M")
            table.add_row(
                escape(str(path)),
                escape(meta.name),
                meta.status,
                f"{len(done)}/{meta.planned_units}",
                str(sum(s == "error" for s in done.values())),
                str(store.count("calls")),
                created,
                meta.moot_version,
            )
        except StoreError as exc:
            table.add_row(escape(str(path)), "", f"[red]unreadable[/]: {escape(str(exc))}", "", "", "", "", "")
        finally:
            store.close()
    # a run's path is never cut: it wraps within its column, and a narrow terminal leaves out these first
    dropped = fit_table(table, console, ("moot", "created", "model calls", "errors", "name"), flexible=("status",))
    console.print(table)
    if dropped:
        console.print(f"[dim]not shown at this width: {', '.join(dropped)}[/]")


@reports_errors
def export(
    run_path: Annotated[Path, typer.Argument(metavar="RUN", help="A run's SQLite store.")],
    format: Annotated[str, typer.Option("--format", "-f", help="jsonl, csv or parquet.")] = "jsonl",
    table: Annotated[
        str, typer.Option(help="results, turns, calls, call_errors, questions, sessions or conditions.")
    ] = "results",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Output file (default: next to the run, RUN.TABLE.FORMAT, replaced when it exists). "
            "An existing file is replaced only with --force; a run store never is.",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing --out file (never a run store or the run).")
    ] = False,
) -> None:
    """Export a table of a run as JSON lines, CSV or Parquet (the run is read, never written)."""
    from moot.runner.export import export_table

    target = export_table(run_path, table, format, out, force=force)
    console.print(f"wrote {target}", markup=False, soft_wrap=True)
