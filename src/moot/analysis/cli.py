"""``moot report``, ``moot compare`` and ``moot results``: thin commands over ``moot.analysis``.

Mounted on the main app with ``app.command("report")(report)`` and so on; ``app`` here is a standalone
Typer app with the same commands (for tests and ``python -m``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

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
# bootstrap resamples: a documented range (docs/reports.md), checked before any work. A million draws of a
# 200-question, 3-condition run take minutes already; 10^9 ran for hours with nothing said.
MIN_RESAMPLES = 100
MAX_RESAMPLES = 1_000_000
Resamples = Annotated[int, typer.Option(help=f"Bootstrap resamples ({MIN_RESAMPLES:,} to {MAX_RESAMPLES:,}).")]
Reader = Annotated[
    str,
    typer.Option(
        "--reader",
        help="Score the final answers of the main tables as this reader reads the stored replies: moot (its own "
        "reading), paper (the paper's own parser) or strict (only the format asked for). The reader-sensitivity "
        "tables show every reader either way.",
    ),
]
Labels = Annotated[
    Path | None,
    typer.Option(
        "--labels",
        help="A hand-labelled sample of the run's replies (JSON lines; see `moot readers check`): a reader whose "
        "accuracy on it is below 95% marks no verdict fragile, and the readers column gives its accuracy.",
    ),
]


def check_resamples(resamples: int) -> None:
    """Refuse (ConfigError, one line naming the option) a ``--resamples`` outside its documented range."""
    from moot.errors import ConfigError

    if resamples < MIN_RESAMPLES:
        raise ConfigError(f"--resamples is at least {MIN_RESAMPLES:,} (got {resamples:,})")
    if resamples > MAX_RESAMPLES:
        raise ConfigError(f"--resamples is at most {MAX_RESAMPLES:,} (got {resamples:,})")


def _console() -> Any:
    from moot.cli_output import make_console

    return make_console(piped=160)  # COLUMNS, when set, wins


def _accuracies(labels: Path | None, run: Path, say: Callable[[str], None]) -> dict[str, float] | None:
    """The readers' validated accuracies on ``run`` from the sample ``labels`` (None without one), said in a line."""
    if labels is None:
        return None
    from moot.analysis.reader_check import accuracies, reader_accuracy

    validated = accuracies(reader_accuracy(labels, run))
    shown = ", ".join(f"{r} {a:.0%}" for r, a in validated.items())
    say(f"readers' accuracy on the labelled replies of {labels} (moot's: its stored answers): {shown}")
    return validated


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
    labels: Labels = None,
) -> None:
    """Accuracy with intervals, paired tests, rounds, transitions, oracles, task metrics and calibration of a run.

    The question is the unit: repeated seeds are combined per question (per-seed figures and mean ± std
    over seeds are shown beside). Wherever a debate is compared with a single agent, its difference is
    split into voting (the vote of its own round-0 answers - single) and exchange (debate - that vote), each
    with its interval and Holm p. Every paired row names what else its two arms differ in besides the
    protocol ("also differs": model, sampling, seeds, system message, template, agents, tie rule, helper
    model), read from their stored round-0 requests. Prints the tables and writes one self-contained HTML
    file: tables, plots, every debate's transcript. The run is read, never written.
    """
    from moot.analysis.readers import get_reader
    from moot.analysis.render import print_report, report_markdown
    from moot.analysis.report import build_report
    from moot.errors import MootError
    from moot.outputs import check_output, write_output

    check_resamples(resamples)  # before any work: 10^9 resamples would run for hours
    get_reader(reader)  # an unknown reader: one error line, before any work

    to_stdout = markdown is not None and str(markdown) == "-"
    html_path = None if no_html else html or default_html_path(run)
    if html_path is not None:  # checked before any work
        from moot.analysis.html import check_pages

        check_output(html_path, force=force, default=html is None, reading=run)
        check_pages(html_path)  # its pages' folder and files: no link planted there
    if markdown is not None and not to_stdout:
        check_output(markdown, force=force, reading=run, stream=True)
    console = _console()

    def say(message: str) -> None:
        if to_stdout:
            print(message, file=sys.stderr)
        else:
            console.print(message, markup=False, soft_wrap=True)  # a path whole, on one line

    accuracies = _accuracies(labels, run, say)
    result = build_report(run, seed=seed, resamples=resamples, reader=reader, accuracies=accuracies)

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
            help="Compare A with the vote@k of the pool sampled with A's own round-0 request, at equal cost per "
            "question in this unit: tokens (prompt + completion), completion (tokens), calls, or cost (US dollars "
            "at the run's \\[prices]).",
        ),
    ] = None,
    pool: Annotated[
        str | None,
        typer.Option(
            "--pool",
            help="With --budget: the condition whose round-0 answers are voted on (default: the pool sampled "
            "with A's own round-0 request, the one with the most agents; none matched: the row says so).",
        ),
    ] = None,
    labels: Labels = None,
) -> None:
    """The paired comparison of two conditions on the questions both answered.

    Exact McNemar test (a sign test on questions with repeated seeds), matched odds ratio, bootstrap
    interval of the difference; a task metric's paired tests; sign test of rounds used. When one side is a
    single agent, the debate's gain is split into voting (the vote of its own round-0 answers - single) and
    exchange (debate - that vote), each with its interval and Holm p. With --budget, the pool's vote@k table
    and A against the vote@k of the same budget (paired bootstrap, sign-flip test). Each comparison names
    what else its two arms differ in besides the protocol ("also differs": model, sampling, seeds, system
    message, template, agents, tie rule, helper model), read from their stored round-0 requests.
    """
    from moot.analysis.render import print_comparison
    from moot.analysis.report import AnalysisError, compare_conditions

    check_resamples(resamples)  # before any work
    if budget is not None:
        _compare_budget(run, a, b, budget, pool, task, seed, resamples, labels)
        return
    if b is None:
        raise AnalysisError("compare needs two conditions, A and B (or one debate with --budget UNIT)")
    console = _console()
    accuracies = _accuracies(labels, run, lambda line: console.print(line, markup=False, highlight=False))
    pairs = compare_conditions(
        run, a, b, task=task, seed=seed, resamples=resamples, reader=reader, accuracies=accuracies
    )
    print_comparison(pairs, console)


def _compare_budget(
    run: Path,
    debate: str,
    b: str | None,
    budget: str,
    pool: str | None,
    task: str | None,
    seed: int,
    resamples: int,
    labels: Path | None = None,
) -> None:
    """``moot compare RUN DEBATE --budget UNIT [--pool NAME]``: vote@k tables and the equal-budget test."""
    from moot.analysis.budget import equal_budget
    from moot.analysis.budget_costs import MEASURES
    from moot.analysis.budget_pools import vote_at_k
    from moot.analysis.render import print_table
    from moot.analysis.report import AnalysisError
    from moot.analysis.tables import equal_budget_rows_table, vote_at_k_table

    if b is not None:
        raise AnalysisError("--budget compares one debate with the pool's vote@k: give one condition, not two")
    if budget not in MEASURES:
        raise AnalysisError(f"--budget {budget!r}: one of {', '.join(MEASURES)}")
    measure = budget  # narrowed to a Measure by the check above
    console = _console()
    accuracies = _accuracies(labels, run, lambda line: console.print(line, markup=False, highlight=False))
    rows = equal_budget(run, debate, pool, measure, task=task, seed=seed, resamples=resamples, accuracies=accuracies)
    for name in dict.fromkeys(r.pool for r in rows if not r.unmatched):
        for p in vote_at_k(run, name, task):
            if any(r.pool == name and r.task == p.task for r in rows):
                print_table(vote_at_k_table(p), console)
    print_table(equal_budget_rows_table(rows), console)
    for r in rows:
        if r.unmatched:
            line = (
                f"{r.task}: no pool was sampled with {r.debate}'s round-0 request; add a vote condition of K agents "
                "with its settings, or name one with --pool (the comparison then also measures what differs)"
            )
        elif r.pool_too_small:
            line = (
                f"{r.task}: the pool is smaller than the debate's budget ({r.debate} uses {r.debate_cost:.1f} "
                f"{measure}/q; vote@{r.k} {r.vote_cost:.1f}); compared with k = K = {r.k}"
            )
        else:
            continue
        console.print(line, markup=False, highlight=False)


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
    docs/results/papers.toml (the papers' figures). Each reader is validated on the store's hand-labelled
    replies (docs/results/readers/NAME.jsonl and readers/held-out/NAME.jsonl): one below 95% marks no verdict
    fragile. Each debate is set against the vote of the pool sampled with its own round-0 request, at equal
    tokens, completion tokens and calls. Stores are read, never written.
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


@reports_errors
def rounds(
    run: Run,
    condition: Annotated[
        list[str] | None, typer.Option("--condition", help="Only this condition (repeatable; default: every one).")
    ] = None,
    seed: Seed = 0,
    resamples: Resamples = 10_000,
) -> None:
    """Accuracy round by round, and Debate or Vote's martingale check (Choi et al. 2025).

    For each condition and task: per round, the questions that reached it, the accuracy of the round's majority vote
    and the agents' mean correctness (the share of agents right), each with a percentile bootstrap interval over
    questions; then each step's change in the agents' mean correctness (round r + 1 minus round r, paired by
    question) with its interval and sign test. Under the martingale claim every step's interval holds 0. A
    question's value is its mean over the seeds that ran it; errored results are left out."""
    from rich.table import Table

    from moot.analysis.round_study import round_study
    from moot.analysis.transcripts import open_run
    from moot.cli_output import fit_table, plural
    from moot.errors import ConfigError

    check_resamples(resamples)
    store, owned = open_run(run)
    try:
        results = store.results()
        pairs = list(dict.fromkeys((r.condition, r.task) for r in results))
    finally:
        if owned:
            store.close()
    known = {c for c, _ in pairs}
    for name in condition or ():
        if name not in known:
            raise ConfigError(f"condition {name!r} has no stored result in {run}; it has: {', '.join(sorted(known))}")
    console = _console()
    for name, task in pairs:
        if condition and name not in condition:
            continue
        study = round_study(results, name, task, seed, resamples)
        table = Table(
            "round",
            "questions",
            "vote right",
            "95% CI",
            "agents right",
            "95% CI",
            "change",
            "95% CI",
            "sign p",
            title=f"{name} on {task} ({plural(study.agents, 'agent')})",
        )
        steps = {s.start + 1: s for s in study.steps}
        for point in study.points:
            step = steps.get(point.round)
            table.add_row(
                str(point.round),
                str(point.questions),
                f"{point.vote:.1%}",
                f"{point.vote_ci.low:.1%} to {point.vote_ci.high:.1%}",
                f"{point.agents:.1%}",
                f"{point.agents_ci.low:.1%} to {point.agents_ci.high:.1%}",
                f"{step.change:+.1%}" if step else "",
                f"{step.ci.low:+.1%} to {step.ci.high:+.1%}" if step else "",
                f"{step.sign.p:.3g}" if step else "",
            )
        fit_table(table, console)
        console.print(table)
        if study.steps:
            verdict = "holds 0 at every step" if study.martingale_holds else "excludes 0 at some step"
            console.print(
                f"martingale check: the change in the agents' correctness {verdict}", markup=False, highlight=False
            )


readers_app = typer.Typer(
    help="The documented readers of the replies (moot's, the paper's, a strict one), checked on labelled replies.",
    no_args_is_help=True,
)


@reports_errors
def readers_check(
    sample: Annotated[
        Path,
        typer.Argument(
            help="A hand-labelled sample of a store's replies: JSON lines as benchmarks/reader_sample.py writes "
            "them, each with its label (the answer a careful reader reads; null with a note: none)."
        ),
    ],
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            help="The store the sample was drawn from (default: runs/replicate/STORE.sqlite, STORE the "
            "sample's own 'store').",
        ),
    ] = None,
) -> None:
    """Each reader's accuracy on the labelled replies, with a Wilson interval, and the replies it misreads.

    A reader below 95% marks no verdict fragile in `moot report --labels` and `moot compare --labels`. moot's
    reader is read with moot's current code; "stored" is the answers stored in the turns (what verdicts use).
    """
    from rich.table import Table

    from moot.analysis.reader_check import TRUSTED, default_store, load_sample, reader_accuracy
    from moot.cli_output import printable

    results = reader_accuracy(sample, store or default_store(load_sample(sample)))
    console = _console()
    table = Table("reader", "replies", "agree", "accuracy", "95% CI (Wilson)", f"trusted (>= {TRUSTED:.0%})")
    for r in results:
        judges = "yes" if r.trusted else ("not applicable" if r.n == 0 else "no")
        interval = f"{r.interval.low:.0%}-{r.interval.high:.0%}" if r.n else "—"
        accuracy = f"{r.accuracy:.0%}" if r.n else "—"
        table.add_row(r.reader, str(r.n), str(r.agreed), accuracy, interval, judges)
    console.print(table)
    for r in results:
        for d in r.disagreements:
            tail = " ".join(d.text.split())[-90:]
            console.print(
                printable(f"{r.reader} #{d.index}: label {d.label}, read {d.reading} :: …{tail}"),
                markup=False,
                highlight=False,
            )


readers_app.command("check")(readers_check)
app.add_typer(readers_app, name="readers")
app.command("report")(report)
app.command("compare")(compare)
app.command("results")(results)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
