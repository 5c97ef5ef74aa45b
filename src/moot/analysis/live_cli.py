"""``moot view``: the command over ``moot.analysis.live`` (imported when it runs, so that the command line
starts without the HTTP server's modules)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from moot.cli_output import printable
from moot.cli_support import reports_errors


@reports_errors
def view(
    run: Annotated[Path, typer.Argument(help="A run's SQLite store (see `moot runs`), running or finished.")],
    port: Annotated[
        int,
        typer.Option(min=0, max=65535, help="The port to serve on, on 127.0.0.1 (default: a free one)."),
    ] = 0,
) -> None:
    """Serve a live view of a run in the browser, while it runs and after: per condition, questions done of
    planned, accuracy so far with its interval, calls, tokens, cost, errors and an ETA; the finished questions'
    transcripts, searchable and filterable, round by round with what each agent was shown.

    Listens on 127.0.0.1 only and prints the URL; the page updates itself every 2 seconds as `moot run` writes
    the store. The store is read, never written. Ctrl-C stops it.
    """
    from moot.analysis.live import serve

    def say(line: str) -> None:
        print(printable(line), flush=True)

    serve(run, port, say)
