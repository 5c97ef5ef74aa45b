"""`moot ask`: one question debated, shown round by round as it happens (nothing is stored)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.text import Text

from moot.cli_output import plural, printable
from moot.cli_support import reports_errors, shared_options
from moot.commands.console import console
from moot.commands.options import SHARED
from moot.errors import MootError

ASK_SHOWN = 400  # characters of each reply `moot ask` shows without --full (its end, where the answer is)


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

    from moot.runner.config_resolve import resolve_condition
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
