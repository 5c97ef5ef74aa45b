"""`moot run`: an experiment run durably, its questions shown as they finish, then its totals; or, with
--dry-run, its plan."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from moot import __version__
from moot.cli_output import escaped, fit_table, joined_lines, plural, printable, shortened
from moot.cli_support import reports_errors, shared_options
from moot.commands.console import console
from moot.commands.options import SHARED


def _model_label(config: Any) -> str:
    return str(config.describe())


def _answers(answers: tuple[str | None, ...]) -> str:
    return " ".join(a if a is not None else "·" for a in answers)


@reports_errors
@shared_options(SHARED)
def run(
    experiment: Annotated[
        Path | None, typer.Argument(help="An experiment TOML file (see examples/); or describe one with the options.")
    ] = None,
    protocol: Annotated[
        list[str] | None,
        typer.Option(
            "--protocol",
            "-p",
            help="Protocol preset (see `moot protocols`), repeatable for several conditions (default: society).",
        ),
    ] = None,
    task: Annotated[
        str | None, typer.Option("--task", "-t", help="Benchmark task, see `moot tasks` (default: arithmetic).")
    ] = None,
    data: Annotated[
        str | None,
        typer.Option(
            help='The task\'s questions from "hub" (Hugging Face) or a local JSONL/CSV file in its schema; '
            "with --format, the data file (JSONL, CSV or Parquet) that is the task, --task naming it."
        ),
    ] = None,
    data_format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="Make the --data file a task: number, choice or text (how answers are asked, read and scored).",
        ),
    ] = None,
    field: Annotated[
        list[str] | None,
        typer.Option(
            "--field",
            metavar="KEY=COLUMN",
            help="With --format, the file's column for a key, repeatable: question, answer, choices (choice), id.",
        ),
    ] = None,
    prompt: Annotated[
        str | None,
        typer.Option(help='With --format, a question template over the row, e.g. "Q: {question}".'),
    ] = None,
    questions: Annotated[
        int | None,
        typer.Option(
            "--questions",
            "-q",
            help="Number of questions (default: 5; at most the task's, or 100,000 for a generated task).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="The run's SQLite store, in an existing folder (default: runs/<name>-<config hash>.sqlite). An "
            "existing empty file there is taken over as the new store (as is an SQLite database without tables: what "
            "a run killed while creating its store leaves); this experiment's store is resumed; any other file is "
            "refused.",
        ),
    ] = None,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help="Make every call afresh, even if stored: stored calls are kept beside the new ones (round 0 "
            "is still shared between conditions).",
        ),
    ] = False,
    retry_errors: Annotated[
        bool, typer.Option("--retry-errors", help="Run again the questions stored with status error.")
    ] = False,
    replay_only: Annotated[
        bool,
        typer.Option(
            "--replay-only",
            help="Make no model call: store only the questions whose every call is stored, here or in a "
            "calls_from store (a rebuild that reads stored replies again with the current code); the others are "
            "left for a later run.",
        ),
    ] = False,
    no_share_round0: Annotated[
        bool, typer.Option("--no-share-round0", help="Do not share round-0 calls between conditions.")
    ] = False,
    concurrency: Annotated[
        int | None, typer.Option(help="Questions in flight at once (default: sized to the backend).")
    ] = None,
    batch: Annotated[
        bool,
        typer.Option(
            "--batch",
            help="Send every openai backend's requests as provider batches (the Batch API: half the price, replies "
            "within 24 h), each round of every question in one wave; the results do not depend on it.",
        ),
    ] = False,
    max_concurrency: Annotated[
        int | None,
        typer.Option(
            "--max-concurrency",
            help="Requests in flight at most per server, for every backend (an openai endpoint's max_concurrency, "
            "the local server's slots); the results do not depend on it.",
        ),
    ] = None,
    trace: Annotated[
        Path | None,
        typer.Option(
            "--trace",
            metavar="<path>",
            help="Write a JSON line per model call made: when it was asked for, sent and answered, the slot "
            "that served it and the server's prompt and generation times (benchmarks/engine.py --trace reads "
            "it); the results do not depend on it.",
        ),
    ] = None,
    calls_from: Annotated[
        list[Path] | None,
        typer.Option(
            "--calls-from",
            metavar="<path>",
            help="Another run's store: replay its calls where this run makes the very same request (the same "
            "questions in a larger run, arms two experiments share), copied into this run's store; "
            "repeatable, added to the file's calls_from.",
        ),
    ] = None,
    condition: Annotated[
        list[str] | None,
        typer.Option(
            "--condition",
            metavar="<name>",
            help="Run only this condition's questions this session (repeatable); the store stays the whole "
            "experiment's, and a later run without it runs the rest.",
        ),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="I/N",
            help="Run shard I of N (counting from 1): every Nth question, each with all its seeds and conditions, "
            "into its own store (default: the run's with .shard-I-of-N before .sqlite); `moot merge` joins the N "
            "stores into the one a single run writes.",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Load no model and make no call: print per condition the questions, and upper bounds of the calls, "
            "prompt and completion tokens and cost (at the experiment's \\[prices]) with every round played; and "
            "what the store holds and what is left.",
        ),
    ] = False,
    max_calls: Annotated[
        int | None,
        typer.Option(
            "--max-calls",
            help="Stop once the store holds this many calls (every session's, not only this one's: a rerun with a "
            "higher cap continues to it); questions in flight finish, none starts. Also \\[budget] max_calls.",
        ),
    ] = None,
    max_total_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-total-tokens",
            help="Stop once the store's calls total this many prompt + completion tokens (as --max-calls; "
            "--max-tokens is each reply's limit). Also \\[budget] max_tokens.",
        ),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(
            "--max-cost",
            metavar="USD",
            help="Stop once the store's calls cost this many US dollars at the experiment's \\[prices] (as "
            "--max-calls; a model without a price adds nothing). Also \\[budget] max_cost.",
        ),
    ] = None,
    *,
    shared: dict[str, Any],
) -> None:
    """Run protocols on a task's questions, durably: rerunning resumes, and stored calls are replayed.

    Prints each agent's answer per round, the final answer and whether it is right, then the totals.
    """
    from moot.errors import ConfigError
    from moot.runner.config_files import load_experiment
    from moot.runner.experiment import Experiment
    from moot.runner.options import AgentOptions, FileTaskOptions
    from moot.runner.session import RunOptions
    from moot.runner.shards import parse_shard
    from moot.runner.store_paths import check_output, store_path
    from moot.trace import check_trace

    part = parse_shard(shard) if shard is not None else None  # a bad spec is refused before anything else
    options = AgentOptions.of(**shared)
    file_task = FileTaskOptions(format=data_format, fields=tuple(field or ()), prompt=prompt)
    if experiment is not None:
        defining = {"--protocol": protocol, "--task": task, "--questions": questions, "--data": data}
        given = [
            *(name for name, value in defining.items() if value is not None),
            *file_task.given(),
            *options.given(),
        ]
        if given:
            raise ConfigError(f"{', '.join(given)} cannot be combined with an experiment file; edit the file instead")
        config = load_experiment(experiment)
    else:
        file_options = file_task if file_task.given() else None
        config = options.experiment(protocol or ["society"], task or "arithmetic", questions, data, file_options)
    if no_share_round0:
        config = config.model_copy(update={"share_round0": False})
    for key, value in (("concurrency", concurrency), ("max_concurrency", max_concurrency)):
        if value is not None:
            if value < 1:
                option = "--" + key.replace("_", "-")
                raise ConfigError(f"option {option}: must be a positive integer, got {value}")
            config = config.model_copy(update={key: value})
    if batch:
        config = config.model_copy(update={"batch": True})
    caps = {"max_calls": max_calls, "max_tokens": max_total_tokens, "max_cost": max_cost}
    if any(value is not None for value in caps.values()):
        from moot.runner.config import Budget
        from moot.runner.spend import check_caps

        check_caps(max_calls=max_calls, max_total_tokens=max_total_tokens, max_cost=max_cost)
        set_caps = {key: value for key, value in caps.items() if value is not None}
        budget = (config.budget or Budget()).model_copy(update=set_caps)
        config = config.model_copy(update={"budget": budget})
    if calls_from:
        config = config.model_copy(update={"calls_from": (*config.calls_from, *calls_from)})
    path = store_path(config, output, part)
    check_output(path)
    if trace is not None:
        check_trace(trace, path)  # before any work: never the store, a link or a file that is not a trace
    resumed = path.exists()
    exp = Experiment(config, path, part)
    try:
        for missing in exp.missing_sources:
            console.print(
                f"calls_from: {missing} does not exist: its calls are made afresh", markup=False, soft_wrap=True
            )
        chosen = tuple(condition) if condition else None
        run_options = RunOptions(
            use_cache=not no_cache, retry_errors=retry_errors, conditions=chosen, trace=trace, replay_only=replay_only
        )
        if dry_run:
            _print_plan(exp, chosen)
        else:
            _run_and_report(exp, run_options, resumed)
    finally:
        exp.close()


class _ConsoleLines(logging.Handler):
    """Log records as plain lines on moot's console, each shown as it happens (a pipe or CI log too)."""

    def emit(self, record: logging.LogRecord) -> None:
        console.print(record.getMessage(), markup=False, soft_wrap=True)
        console.file.flush()


def _print_stop(stop: Any, spent: Any) -> None:
    """A run stopped at a ``[budget]`` cap: which, what the store's calls spent, by how much the questions in
    flight went over it."""
    from moot.runner.spend import shown

    final = spent.of(stop.measure)
    over = max(0.0, final - stop.limit)
    console.print(
        f"stopped: {stop.option} {shown(stop.measure, stop.limit)} reached; the store's calls spent "
        f"{shown(stop.measure, final)}, {shown(stop.measure, over)} over it (questions in flight when a cap is "
        "reached finish; none starts): rerun with a higher cap to continue",
        markup=False,
        soft_wrap=True,
    )


def _print_plan(exp: Any, chosen: tuple[str, ...] | None) -> None:
    """``moot run --dry-run``: the plan's bounds per condition, what the store holds, and what is left."""
    import asyncio

    from moot.runner.plan import plan_experiment, plan_rows

    plan = asyncio.run(plan_experiment(exp, chosen))

    def cost(value: float | None) -> str:
        return "—" if value is None else f"${value:,.4f}"

    table = Table(
        title="dry run: upper bounds, every round played (no model loaded, no call made)", title_justify="left"
    )
    for column in ("condition", "questions", "calls", "shared r0", "prompt tokens ≤", "completion tokens ≤", "cost ≤"):
        table.add_column(column, justify="left" if column == "condition" else "right")
    for row in plan_rows(plan):
        table.add_row(
            escaped(row["condition"]),
            f"{row['questions']:,}",
            f"{row['calls']:,}",
            f"{row['shared']:,}",
            f"{row['prompt']:,}",
            f"{row['completion']:,}",
            cost(row["cost"]),
        )
    console.print(table)
    stored, left = plan.stored, plan.remaining
    priced = "" if plan.unpriced else f", {cost(stored.cost)}"
    console.print(
        f"store {exp.output}: {plural(plan.stored_results, 'result')}, {plural(stored.calls, 'call')} "
        f"({stored.prompt_tokens:,} prompt + {stored.completion_tokens:,} completion tokens{priced}); left: "
        f"{plural(plan.remaining_questions, 'question')}, ≤ {left.calls:,} calls, ≤ {left.prompt_tokens:,} prompt "
        f"+ {left.completion_tokens:,} completion tokens" + ("" if left.cost is None else f", ≤ {cost(left.cost)}"),
        markup=False,
        soft_wrap=True,
    )
    if plan.unpriced:
        console.print(
            "no price for " + ", ".join(plan.unpriced) + ': cost not bounded (add [prices."MODEL"] to the experiment)',
            markup=False,
            soft_wrap=True,
        )
    budget = exp.config.budget
    if budget is not None:
        caps = ", ".join(f"{k} {v:g}" for k, v in budget.caps().items())
        console.print(f"budget: {caps} (on the store's total)", markup=False, soft_wrap=True)


def _run_and_report(exp: Any, options: Any, resumed: bool) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from moot.runner.summary import question_rows, summarize, tie_broken

    # the conditions break between names, each line but the last ending in a comma (room kept for it)
    labels = [f"{c.name} ({c.protocol.agents}×{c.protocol.rounds})" for c in exp.conditions]
    names = joined_lines(labels, console.width - 1, ", ")
    first_agent = exp.conditions[0].agents[0].backend
    tasks = ", ".join(f"{s.name} ({plural(len(exp.questions[i]), 'question')})" for i, s in enumerate(exp.config.tasks))
    seeds = f"{'seed' if len(exp.config.seeds) == 1 else 'seeds'} {', '.join(map(str, exp.config.seeds))}"
    named = [line + "," for line in names[:-1]] + names[-1:]
    parts = [f"moot {__version__}", *named, tasks, seeds, f"model {_model_label(first_agent)}"]
    if exp.shard is not None:
        parts.append(f"shard {exp.shard} ({plural(len(exp.members), 'question')} of them)")
    for line in joined_lines(parts, console.width):
        console.print(line, markup=False)
    if resumed:
        # a path is printed whole, on one line however long (the terminal wraps it; nothing is inserted)
        console.print(
            f"resuming {exp.output}: stored results are kept, stored calls are replayed", markup=False, soft_wrap=True
        )

    state: dict[str, Any] = {"lines": True, "progress": None, "task": None, "done": 0, "pending": 0}

    def on_start(pending: int) -> None:
        state["lines"] = pending <= 60
        state["pending"] = pending
        if not state["lines"] and console.is_terminal:
            progress = Progress(
                TextColumn("questions"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[calls]}"),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
            )
            state["task"] = progress.add_task("run", total=pending, calls="")
            progress.start()
            state["progress"] = progress

    def on_result(unit: Any, result: Any) -> None:
        state["done"] += 1
        if state["lines"]:
            rounds_text = "  ".join(
                f"r{rec.index}: {_answers(tuple(t.answer for t in rec.turns))}" for rec in result.rounds
            )
            mark = "[green]right[/]" if result.correct else "[red]wrong[/]"
            if result.status.value != "answered":
                mark += f" ({result.status.value})"
            if tie_broken(result, unit.condition.protocol.aggregation.judged):
                mark += " (tie broken)"
            if result.error:
                mark += f" {escaped(result.error)}"
            # one line a question: the question is shortened to what the rest of the line leaves room for
            head = printable(f"  {unit.condition.name} · ")
            tail = printable(f" · gold {result.question.gold} · {rounds_text} → {result.final_answer or '—'} ")
            room = max(24, console.width - len(head) - len(tail) - Text.from_markup(mark).cell_len)
            question = shortened(printable(result.question.prompt), room)
            console.print(f"{escape(head)}{escape(question)}{escape(tail)}{mark}")
        else:
            usage = exp.cache.usage
            calls = f"calls {usage.calls:,} · replayed {exp.cache.replayed:,} · tokens {usage.prompt_tokens + usage.completion_tokens:,}"
            if state["progress"] is not None:
                state["progress"].update(state["task"], advance=1, calls=calls)
            elif state["done"] % max(1, state["pending"] // 20) == 0 or state["done"] == state["pending"]:
                # not a terminal (a pipe, a log): a line every 5% instead of a bar that is drawn only at the end
                console.print(f"questions {state['done']:,}/{state['pending']:,} · {calls}", markup=False)
        console.file.flush()  # a pipe (tee, CI) shows each line as it happens

    batch_log = logging.getLogger("moot.backends.batches")  # batch mode: each batch sent, polled again, ended
    shown, level = _ConsoleLines(), batch_log.level
    batch_log.addHandler(shown)
    batch_log.setLevel(logging.INFO)
    try:
        import asyncio

        outcome = asyncio.run(exp.run(options, on_result=on_result, on_start=on_start))
    finally:
        batch_log.removeHandler(shown)
        batch_log.setLevel(level)
        if state["progress"] is not None:
            state["progress"].stop()

    rows = question_rows(exp.store)
    if len(rows) <= 60:
        _print_question_table(exp, rows)
    conditions, total = summarize(exp.store)
    _print_summary(conditions, total)
    copied = f" ({outcome.copied} from other runs' stores)" if outcome.copied else ""
    console.print(
        f"this session: model calls {outcome.calls} · replayed from the store {outcome.replayed}{copied} · "
        f"questions run {outcome.ran}, already stored {outcome.skipped} · wall time {outcome.wall_s:.1f} s",
        soft_wrap=True,  # one line to read or grep; a terminal wraps it
    )
    if outcome.left:
        console.print(
            f"--replay-only: {plural(outcome.left, 'question')} left unstored (some call of theirs is stored "
            "nowhere); a run without --replay-only makes their calls",
            markup=False,
            soft_wrap=True,
        )
    if outcome.stopped is not None:
        _print_stop(outcome.stopped, outcome.spent)
    console.print(f"run stored in {exp.output}", markup=False, soft_wrap=True)
    console.print("[dim]answers per round are in agent order; · marks an unparsed reply[/]")
    if all(a.backend.kind == "scripted" for c in exp.conditions for a in c.agents):
        console.print(
            "[dim]the scripted backend does not read the questions: its replies are numbers drawn from each "
            "call's seed, so an accuracy near 0% is expected; it tries the runner, the store and the "
            "output without a model[/]"
        )
    if total.errors:
        console.print(f"[red]{plural(total.errors, 'question')} ended with an error[/]; rerun with --retry-errors")
        raise typer.Exit(1)


def _print_question_table(exp: Any, rows: list[Any]) -> None:
    max_rounds = max((c.protocol.rounds for c in exp.conditions), default=1)
    several_seeds = len(exp.config.seeds) > 1
    table = Table(title="answers per round (r0: round 0)", title_justify="left")
    for column, justify in (("condition", "left"), ("question", "left"), ("gold", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    if several_seeds:
        table.add_column("seed", justify="right")
    for r in range(max_rounds):
        table.add_column(f"r{r}", justify="right")  # round r, as in the lines above
    table.add_column("final", justify="right")
    table.add_column("correct")
    for row in rows:
        cells = [_answers(a) for a in row.answers] + [""] * (max_rounds - len(row.answers))
        verdict = (
            "[green]yes[/]" if row.correct else "[red]no[/]" + ("" if row.status == "answered" else f" ({row.status})")
        )
        if row.tie_broken:
            verdict += " (tie broken)"
        seed = [str(row.seed)] if several_seeds else []
        table.add_row(
            escaped(row.condition),
            escaped(row.prompt),
            escaped(row.gold),
            *seed,
            *(escaped(c) for c in cells),
            escaped(row.final_answer or "—"),
            verdict,
        )
    fit_table(table, console, flexible=("question",))
    console.print(table)


def _print_summary(conditions: list[Any], total: Any) -> None:
    table = Table(title="totals", title_justify="left")
    scored = any(s.metric_count for s in conditions)
    for column in (
        "condition",
        "accuracy",
        *(["task metric"] if scored else []),
        "unparsed",
        "truncated",
        "abstained",
        "errors",
        "rounds",
        "calls",
        "shared",
        "prompt tok",
        "compl. tok",
        "model time",
        "cost",
    ):
        table.add_column(column, justify="left" if column == "condition" else "right")
    for s in [*conditions, total]:
        metric = [("—" if s.metric is None else f"{s.metric:.3f}")] if scored else []
        table.add_row(
            escape(s.name),
            f"{s.correct}/{s.questions} ({s.accuracy:.0%})",
            *metric,
            str(s.unparsed),
            f"{s.truncated}/{s.replies}",
            str(s.abstained),
            str(s.errors),
            f"{s.rounds / s.questions:.2f}" if s.questions else "—",
            str(s.usage.calls),
            str(s.usage.used_calls - s.usage.calls),
            f"{s.usage.prompt_tokens:,}",
            f"{s.usage.completion_tokens:,}",
            f"{s.usage.latency_s:.1f} s",
            "n/a" if s.usage.cost is None else f"${s.usage.cost:.4f}",
            end_section=s is conditions[-1],
        )
    # a narrow terminal leaves out the secondary columns, these first, rather than cut any value
    optional = ("abstained", "shared", "compl. tok", "prompt tok", "truncated", "model time", "cost", "rounds")
    dropped = fit_table(table, console, optional, flexible=("condition",))
    console.print(table)
    if dropped:
        console.print(
            f"[dim]not shown at this width: {', '.join(dropped)} (a wider terminal shows them; `moot report RUN` "
            "has them all)[/]"
        )
    console.print(
        "[dim]unparsed: questions without a parsed final answer; truncated: agents' replies cut off by the "
        "token limit, of all replies[/]"
    )
    for s in conditions:
        if s.confidence_missing is not None:
            console.print(
                f"{escape(s.name)}: confidence missing in {s.confidence_missing} of {plural(s.replies, 'reply', 'replies')}"
            )
        if s.reasoned:
            console.print(
                f"{escape(s.name)}: {s.reasoned} of {plural(s.replies, 'reply', 'replies')} reasoned "
                f"({s.reasoning_tokens:,} reasoning tokens, part of the completion tokens); "
                f"{s.reasoning_only} gave no content after their reasoning (unparsed)"
            )
    console.print(
        "[dim]calls, tokens, model time and cost are what each condition paid for; 'shared' counts the calls its "
        "debates reused from another condition (round 0) or an earlier identical call; rounds is the mean; "
        "cost needs \\[prices] in the experiment file"
        + (
            "; task metric: the task's own score (biographies: fact precision by the judge), mean over questions"
            if scored
            else ""
        )
        + "[/]"
    )
