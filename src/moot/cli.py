"""The ``moot`` command line: thin subcommands over library functions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from moot import __version__
from moot.analysis.cli import compare as _compare
from moot.analysis.cli import readers_app
from moot.analysis.cli import report as _report
from moot.analysis.cli import results as _results
from moot.analysis.cli import rounds as _rounds
from moot.analysis.live_cli import view as _view
from moot.cli_support import guarded_output, print_error, reflow_help, reports_errors
from moot.commands.ask import ask
from moot.commands.catalog import backends, extensions, models_app, protocols_app, tasks
from moot.commands.catalog import shared_notes as shared_notes  # re-exported: tests import it from here
from moot.commands.console import console
from moot.commands.run import run
from moot.commands.stores import export, merge, runs
from moot.errors import MootError
from moot.gate_cli import gate_app
from moot.launch_cli import launch as _launch
from moot.theory.cli import theory_app
from moot.training.cli import train_app

app = typer.Typer(
    name="moot",
    help="Multi-agent debate with language models: run published debate protocols on benchmarks.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(models_app, name="models")
app.command("report")(_report)
app.command("compare")(_compare)
app.command("results")(_results)
app.command("rounds")(_rounds)
app.command("view")(_view)
app.command("launch")(_launch)
app.add_typer(readers_app, name="readers")
app.add_typer(theory_app, name="theory")
app.add_typer(train_app, name="train")
app.add_typer(gate_app, name="gate")

# moot.commands' commands, in the order `moot --help` lists them (after the groups' above)
app.command()(run)
app.command()(ask)
app.add_typer(protocols_app, name="protocols")
app.command()(tasks)
app.command()(backends)
app.command()(extensions)
app.command()(merge)
app.command()(runs)
app.command()(export)


def version_callback(value: bool) -> None:
    if value:
        console.print(f"moot {__version__}")
        raise typer.Exit()


@app.callback()
@reports_errors
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Print the version.")
    ] = False,
    plugin: Annotated[
        list[Path] | None,
        typer.Option(
            "--plugin",
            metavar="<file>",
            help="A Python file of your own rules or tasks to load first (repeatable): `moot --plugin mine.py "
            "run ...`. Installed packages that declare moot entry points need none.",
        ),
    ] = None,
) -> None:
    """Multi-agent debate with language models."""
    if plugin:
        from moot.debate.registry import load_plugin

        for path in plugin:
            load_plugin(path)


reflow_help(app)


def _terminated(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main() -> None:
    import signal

    # `moot run ... | head`: a closed pipe ends moot quietly, as it ends any Unix tool (a run stopped
    # so resumes like any other)
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # `kill PID` (a job scheduler, a session's end) stops moot as Ctrl-C does: the run says it was
    # interrupted, its managed server is stopped, and rerunning resumes
    signal.signal(signal.SIGTERM, _terminated)
    try:
        with guarded_output():
            app()
    except MootError as exc:  # a command without its own reporting (a plug-in failing to load in any command)
        print_error(str(exc))
        sys.exit(2)
