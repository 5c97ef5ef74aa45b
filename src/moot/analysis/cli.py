"""``moot report``, ``moot compare`` and ``moot results``: thin commands over ``moot.analysis``.

Mounted on the main app with ``app.command("report")(report)`` and so on; ``app`` here is a standalone
Typer app with the same commands (for tests and ``python -m``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import typer

from moot.cli_support import reports_errors

F = TypeVar("F", bound=Callable[..., Any])

app = typer.Typer(
    name="moot",
    help="Reports and paired comparisons of stored runs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

Run = Annotated[Path, typer.Argument(help="A run's SQLite store (see `moot runs`).")]
Seed = Annotated[int, typer.Option(help="Seed of every bootstrap resampling.")]
Resamples = Annotated[int, typer.Option(min=100, help="Bootstrap resamples.")]
Reader = Annotated[
    str,
    typer.Option(
        "--reader",
        help="Score the final answers of the main tables as this reader reads the stored replies: moot (its own "
        "reading), paper (the paper's own parser) or strict (only the format asked for). The reader-sensitivity "
        "tables show every reader either way.",
    ),
]


def _console() -> Any:
    from moot.cli_output import make_console

    return make_console(piped=160)  # COLUMNS, when set, wins


def default_html_path(run: Path) -> Path:
    """runs/NAME.sqlite -> runs/NAME.report.html"""
    return run.with_name(run.stem + ".report.html")


def write_figures(result: Any, folder: Path, force: bool = False, reading: Path | None = None) -> list[Path]:
    """Every plot of the report ``result`` as ``folder``/KEY.png and the frontier's points as frontier.csv
    (where a task is scored by accuracy); every path checked before any is written (``moot.outputs``)."""
    from moot.analysis.frontier import frontier, frontier_csv
    from moot.analysis.plots import plots
    from moot.errors import ConfigError
    from moot.outputs import check_output, write_output

    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--figures {folder} is a file; name a folder")
    files: dict[Path, bytes] = {folder / f"{plot.key}.png": plot.png for plot in plots(result)}
    if points := frontier(result):
        files[folder / "frontier.csv"] = frontier_csv(points).encode("utf-8")
    for path in files:
        check_output(path, force=force, reading=reading)
    folder.mkdir(parents=True, exist_ok=True)
    for path, data in files.items():

        def write(target: Path, data: bytes = data) -> None:
            target.write_bytes(data)

        write_output(path, write)
    return list(files)


@reports_errors
def report(
    run: Run,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Where to write the HTML report (default: next to the run, RUN.report.html, replaced when it "
            "exists). An existing file is replaced only with --force; a run store never is.",
        ),
    ] = None,
    no_html: Annotated[bool, typer.Option("--no-html", help="Write no HTML file.")] = False,
    markdown: Annotated[
        Path | None,
        typer.Option(
            "--markdown",
            "--md",
            help="Also write the tables as Markdown to this file ('-': stdout); an existing file only with --force.",
        ),
    ] = None,
    figures: Annotated[
        Path | None,
        typer.Option(
            "--figures",
            help="Also write every plot as FOLDER/KEY.png (accuracy, by-round, stopping, cost, frontier, ...) and, "
            "the accuracy-cost frontier's points (every condition and, with a vote pool, vote@k) as "
            "FOLDER/frontier.csv; existing files only with --force.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Replace an existing --html, --markdown or --figures file (never a run store or the run)."
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print no tables in the terminal.")] = False,
    seed: Seed = 0,
    resamples: Resamples = 10_000,
    reader: Reader = "moot",
) -> None:
    """Accuracy with intervals, paired tests, rounds, transitions, oracles, task metrics and calibration of a run.

    The question is the unit: repeated seeds are combined per question (per-seed figures and mean ± std
    over seeds are shown beside). Prints the tables and writes one self-contained HTML file: tables,
    plots, every debate's transcript. The run is read, never written.
    """
    from moot.analysis.readers import get_reader
    from moot.analysis.render import print_report, report_markdown
    from moot.analysis.report import build_report
    from moot.errors import MootError
    from moot.outputs import check_output, write_output

    get_reader(reader)  # an unknown reader: one error line, before any work

    to_stdout = markdown is not None and str(markdown) == "-"
    html_path = None if no_html else html or default_html_path(run)
    if html_path is not None:  # checked before any work
        from moot.analysis.html import check_pages

        check_output(html_path, force=force, default=html is None, reading=run)
        check_pages(html_path)  # its pages' folder and files: no link planted there
    if markdown is not None and not to_stdout:
        check_output(markdown, force=force, reading=run, stream=True)
    result = build_report(run, seed=seed, resamples=resamples, reader=reader)
    console = _console()

    def say(message: str) -> None:
        if to_stdout:
            print(message, file=sys.stderr)
        else:
            console.print(message, markup=False, soft_wrap=True)  # a path whole, on one line

    if to_stdout:
        sys.stdout.write(report_markdown(result))
    elif not quiet:
        print_report(result, console)
    if markdown is not None and not to_stdout:
        text = report_markdown(result)
        markdown.parent.mkdir(parents=True, exist_ok=True)
        write_output(markdown, lambda path: path.write_text(text, encoding="utf-8"), stream=True)
        say(f"Markdown written to {markdown}")
    if figures is not None:
        for path in write_figures(result, figures, force=force, reading=run):
            say(f"written: {path}")
    if html_path is not None:
        from moot.analysis.html import write_html

        try:
            written = write_html(result, html_path)
        except OSError as exc:
            raise MootError(f"cannot write {html_path}: {exc.strerror or exc}") from None
        say(f"HTML report written to {written}")


@reports_errors
def compare(
    run: Run,
    a: Annotated[str, typer.Argument(help="Condition A (with --budget: the debate).")],
    b: Annotated[str | None, typer.Argument(help="Condition B (none with --budget).")] = None,
    task: Annotated[str | None, typer.Option("--task", "-t", help="Only this task (default: every task).")] = None,
    seed: Seed = 0,
    resamples: Resamples = 10_000,
    reader: Reader = "moot",
    budget: Annotated[
        str | None,
        typer.Option(
            "--budget",
            help="Compare A with the vote@k of the pool at equal cost per question: tokens or calls.",
        ),
    ] = None,
    pool: Annotated[
        str | None,
        typer.Option(
            "--pool",
            help="With --budget: the condition whose round-0 answers are voted on (default: the 1-round "
            "condition with the most agents).",
        ),
    ] = None,
) -> None:
    """The paired comparison of two conditions on the questions both answered.

    Exact McNemar test (a sign test on questions with repeated seeds), matched odds ratio, bootstrap
    interval of the difference; a task metric's paired tests; sign test of rounds used. With --budget,
    the pool's vote@k table and A against the vote@k of the same budget (paired bootstrap, sign-flip test).
    """
    from moot.analysis.render import print_comparison
    from moot.analysis.report import AnalysisError, compare_conditions

    if budget is not None:
        _compare_budget(run, a, b, budget, pool, task, seed, resamples)
        return
    if b is None:
        raise AnalysisError("compare needs two conditions, A and B (or one debate with --budget tokens|calls)")
    pairs = compare_conditions(run, a, b, task=task, seed=seed, resamples=resamples, reader=reader)
    print_comparison(pairs, _console())


def _compare_budget(
    run: Path, debate: str, b: str | None, budget: str, pool: str | None, task: str | None, seed: int, resamples: int
) -> None:
    """``moot compare RUN DEBATE --budget tokens|calls [--pool NAME]``: vote@k tables and the equal-budget test."""
    from moot.analysis.budget import MEASURES, equal_budget, vote_at_k
    from moot.analysis.render import print_table
    from moot.analysis.report import AnalysisError
    from moot.analysis.tables import equal_budget_rows_table, vote_at_k_table

    if b is not None:
        raise AnalysisError("--budget compares one debate with the pool's vote@k: give one condition, not two")
    if budget not in MEASURES:
        raise AnalysisError(f"--budget {budget!r}: one of {', '.join(MEASURES)}")
    measure: Literal["tokens", "calls"] = "tokens" if budget == "tokens" else "calls"
    pools = vote_at_k(run, pool, task)
    rows = equal_budget(run, debate, pools[0].condition, measure, task=task, seed=seed, resamples=resamples)
    console = _console()
    for p in pools:
        print_table(vote_at_k_table(p), console)
    print_table(equal_budget_rows_table(rows), console)
    for r in rows:
        if r.pool_too_small:
            console.print(
                f"{r.task}: the pool is smaller than the debate's budget ({r.debate} uses {r.debate_cost:.1f} "
                f"{measure}/q; vote@{r.k} {r.vote_cost:.1f}); compared with k = K = {r.k}",
                markup=False,
                highlight=False,
            )


@reports_errors
def results(
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Write nothing; fail (exit 1) if docs/results.md or a summary is out of date, or a picture missing.",
        ),
    ] = False,
) -> None:
    """Regenerate docs/results.md, the replications: papers' figures beside moot's stored runs.

    Run from the repository root. Summarises each store runs/replicate/NAME.sqlite (the output of
    examples/replicate/NAME.toml) into docs/results/NAME.csv and NAME.json and draws its accuracy-cost frontier
    as docs/results/NAME-frontier.png, then writes docs/results.md from those summaries and
    docs/results/papers.toml (the papers' figures). Stores are read, never written.
    """
    from moot.analysis.results import check as check_results
    from moot.analysis.results import update

    console = _console()
    if check:
        problems = check_results()
        for line in problems:
            console.print(f"out of date: {line}", markup=False, highlight=False)
        if problems:
            console.print("run `moot results` to regenerate", markup=False, highlight=False)
            raise typer.Exit(1)
        console.print("docs/results.md agrees with its summaries", markup=False, highlight=False)
        return
    for path in update():
        console.print(f"wrote {path}", markup=False, highlight=False)


app.command("report")(report)
app.command("compare")(compare)
app.command("results")(results)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
