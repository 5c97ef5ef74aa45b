"""``moot gate``: train a learned debate gate on stored debates and show one (moot.debate.gate, docs/gate.md).
scikit-learn loads only when a gate is trained."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from moot.cli_output import escaped, fit_table, make_console, plural
from moot.cli_support import reports_errors

if TYPE_CHECKING:
    from collections import Counter
    from collections.abc import Sequence

    from moot.debate.gate import Gate, GateRow

gate_app = typer.Typer(
    help="Learn where debate helps: a gate on round 0's features, trained on stored debates (after iMAD, Fan et "
    "al. 2026); a condition applies it with stopping learned-gate.",
    no_args_is_help=True,
)
console = make_console(piped=120)


@gate_app.command("train")
@reports_errors
def train(
    stores: Annotated[
        list[Path], typer.Argument(help="Run stores holding the debate condition (read only).", show_default=False)
    ],
    condition: Annotated[
        str,
        typer.Option(
            "--condition",
            "-c",
            help="The stored condition whose debates it learns from (2 rounds or more).",
            show_default=False,
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="The gate file to write (JSON).", show_default=False)],
    task: Annotated[
        str | None, typer.Option("--task", "-t", help="The task to learn, where the condition ran several.")
    ] = None,
    folds: Annotated[int, typer.Option(help="Cross-validation folds, split by question.")] = 5,
    threshold: Annotated[
        float, typer.Option(help="Debate where the predicted probability that debate helps is above it.")
    ] = 0.5,
    seed: Annotated[int, typer.Option(help="Seed of the folds' shuffle.")] = 0,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file at --out.")] = False,
) -> None:
    """Train a gate: for each stored result of the condition, round 0's features and whether debate helped (round 0's majority wrong, the final answer right); a logistic regression on them, cross-validated by question.

    Prints the gate's out-of-fold accuracy beside the oracle gate's, always debating's and never debating's, and the share of results it does not debate, then writes the gate file. A condition uses it with stopping = { kind = "learned-gate", file = "FILE" }.
    """
    from moot.debate.gate import train as train_gate
    from moot.errors import ConfigError
    from moot.outputs import check_output

    if not 0 <= threshold <= 1:
        raise ConfigError(f"--threshold must be between 0 and 1, got {threshold}")
    if folds < 2:
        raise ConfigError(f"--folds must be at least 2, got {folds}")
    check_output(out, force=force)  # never over a store (an SQLite file), a folder or through a link
    data = read_stores(stores, condition, task)
    gate = train_gate(
        data.rows,
        folds=folds,
        threshold=threshold,
        seed=seed,
        condition=condition,
        stores=data.stores,
        protocol=data.protocol,
        rounds=data.rounds,
        confidence_scale=data.confidence_scale,
    )
    console.print(
        f"[bold]moot gate train[/]: condition {escaped(condition)} · task {escaped(gate.task)} · "
        f"{plural(len(stores), 'store')}",
        soft_wrap=True,
    )
    console.print(_trained_on(gate, data.left_out), markup=False, soft_wrap=True)
    _print_figures(gate)
    gate.save(out)
    console.print(
        f'wrote {escaped(str(out))}; a condition uses it with stopping = {{ kind = "learned-gate", file = '
        f'"{escaped(str(out))}" }}',
        soft_wrap=True,
    )


@gate_app.command("show")
@reports_errors
def show(
    file: Annotated[Path, typer.Argument(help="A gate file `moot gate train` wrote.", show_default=False)],
) -> None:
    """Show a gate: what it was trained on, its features' weights, and its cross-validated figures."""
    from moot.debate.gate import Gate

    gate = Gate.load(file)
    console.print(f"[bold]gate {escaped(str(file))}[/]: task {escaped(gate.task)}", soft_wrap=True)
    stores = ", ".join(gate.stores) or "not recorded"
    console.print(
        f"trained on condition {gate.condition or '?'} (protocol {gate.protocol or '?'}, "
        f"{plural(gate.agents, 'agent')} × {plural(gate.rounds, 'round')}) of {stores}",
        markup=False,
        soft_wrap=True,
    )
    console.print(_trained_on(gate, None), markup=False, soft_wrap=True)
    console.print(f"label: {gate.label}", markup=False, soft_wrap=True)
    console.print(
        f"model: {gate.model}; debate where the probability is above {gate.threshold:g}", markup=False, soft_wrap=True
    )
    table = Table(title="features (standardised: (value - mean) / scale)", title_justify="left")
    for header in ("feature", "coefficient", "mean", "scale"):
        table.add_column(header, justify="left" if header == "feature" else "right")
    for name, coefficient, mean, scale in zip(gate.features, gate.coefficients, gate.means, gate.scales, strict=True):
        table.add_row(name, f"{coefficient:+.4f}", f"{mean:.4g}", f"{scale:.4g}")
    table.add_row("(intercept)", f"{gate.intercept:+.4f}", "", "")
    fit_table(table, console)
    console.print(table)
    _print_figures(gate)


def _trained_on(gate: Gate, left_out: Counter[str] | None) -> str:
    parts = [
        f"{plural(gate.results, 'result')} of {plural(gate.questions, 'question')}",
        f"debate helped in {gate.positives:,} ({_share(gate.positives, gate.results)})",
        f"features: {', '.join(gate.features)}",
    ]
    if left_out is not None:
        parts.append(
            "left out: " + ("; ".join(f"{count:,} ({why})" for why, count in sorted(left_out.items())) or "none")
        )
    return " · ".join(parts)


def _print_figures(gate: Gate) -> None:
    cv = gate.cv
    if cv is None:
        console.print("no cross-validated figures recorded", markup=False)
        return
    n = gate.results
    table = Table(title=f"accuracy over the {plural(n, 'result')}", title_justify="left")
    for header in ("decision", "accuracy", "debated"):
        table.add_column(header, justify="left" if header == "decision" else "right")
    rows = (
        (f"learned gate ({cv.folds}-fold CV by question)", cv.gate, 1 - cv.saving),
        ("oracle: debate exactly where it helps", cv.oracle, gate.positives / n if n else 0.0),
        ("always debate", cv.always, 1.0),
        ("never debate (round 0's majority)", cv.never, 0.0),
    )
    for label, accuracy, debated in rows:
        table.add_row(label, _count_share(accuracy, n), _count_share(debated, n))
    fit_table(table, console, flexible=("decision",))
    console.print(table)
    console.print(
        f"saving: {_pct(cv.saving)} of results not debated, out of fold; the gate's label is right for "
        f"{_pct(cv.label_accuracy)}",
        markup=False,
        soft_wrap=True,
    )


def _count_share(fraction: float, n: int) -> str:
    return escape(f"{_pct(fraction)} ({round(fraction * n):,}/{n:,})")


def _share(count: int, n: int) -> str:
    return _pct(count / n) if n else "—"


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.1f}%"


# -- reading stores ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingData:
    """What ``read_stores`` gathered: the rows, how many results were left out and why, and the condition's
    protocol (as every store holds it)."""

    task: str
    condition: str
    stores: tuple[str, ...]
    rows: list[GateRow]
    left_out: Counter[str]
    protocol: str
    agents: int
    rounds: int
    confidence_scale: int | None


def read_stores(paths: Sequence[Path], condition: str, task: str | None = None) -> TrainingData:
    """The training rows of ``condition`` (on ``task``, which may be left out where the condition ran one) in the
    run stores at ``paths``, each opened read-only. One-line ConfigErrors (a StoreError for a missing or broken
    store) name what is wrong."""
    from collections import Counter

    from moot.debate.gate import gate_row
    from moot.errors import ConfigError
    from moot.runner.store import RunStore

    if not paths:
        raise ConfigError("name at least one run store")
    seen: dict[Path, Path] = {}
    for path in paths:
        resolved = path.resolve()
        if resolved in seen:
            raise ConfigError(f"store {path} is named twice")
        seen[resolved] = path
    shapes: list[tuple[Path, str, tuple[int, int, int | None]]] = []  # the condition's protocol in each store
    keys: dict[Path, list[tuple[str, str, str, int]]] = {}
    for path in paths:
        store = RunStore.read(path)
        try:
            conditions = store.conditions()
            if condition not in conditions:
                raise ConfigError(
                    f"{path}: no condition {condition!r}; its conditions: {', '.join(conditions) or 'none'}"
                )
            spec = conditions[condition].protocol
            if spec.rounds < 2:
                raise ConfigError(
                    f"{path}: condition {condition!r} plays one round only (rounds = 1): there is no debate to learn from"
                )
            if not spec.style.has_peers:
                raise ConfigError(f"{path}: condition {condition!r} has no peer round 0 (style {spec.style.kind!r})")
            scale = spec.confidence.scale if spec.confidence is not None else None
            shapes.append((path, spec.name, (spec.agents, spec.rounds, scale)))
            keys[path] = sorted(k for k in store.done() if k[0] == condition)
        finally:
            store.close()
    first, name, shape = shapes[0]
    for other, _, differs in shapes[1:]:
        if differs != shape:
            raise ConfigError(
                f"condition {condition!r} differs between {first} and {other} (agents, rounds, confidence scale: "
                f"{shape} and {differs}); a gate is trained on one setting"
            )
    tasks = sorted({k[1] for ks in keys.values() for k in ks})
    if not tasks:
        raise ConfigError(f"no stored result of condition {condition!r}")
    if task is None and len(tasks) > 1:
        raise ConfigError(f"condition {condition!r} ran on tasks {', '.join(tasks)}: choose one with --task")
    chosen = task if task is not None else tasks[0]
    if chosen not in tasks:
        raise ConfigError(
            f"no stored result of condition {condition!r} on task {chosen!r}; its tasks: {', '.join(tasks)}"
        )
    rows: list[GateRow] = []
    left_out: Counter[str] = Counter()
    for path in paths:
        store = RunStore.read(path)
        try:
            for key in keys[path]:
                if key[1] != chosen:
                    continue
                stored = store.result(*key)
                if stored is None:  # removed since listed: nothing to read
                    continue
                row = gate_row(stored, str(path))
                if isinstance(row, str):
                    left_out[row] += 1
                else:
                    rows.append(row)
        finally:
            store.close()
    agents, rounds, scale = shape
    return TrainingData(chosen, condition, tuple(str(p) for p in paths), rows, left_out, name, agents, rounds, scale)
