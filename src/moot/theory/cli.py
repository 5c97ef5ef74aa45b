"""``moot theory``: Monte Carlo experiments on the Dirichlet-categorical model of debate (Zhu et al. 2026, §5)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.table import Table

from moot.cli_output import fit_table, make_console, plural
from moot.cli_support import reports_errors as _reports_errors
from moot.errors import MootError

theory_app = typer.Typer(
    help="Simulate the Dirichlet-categorical model of debate and check its theorems (Zhu et al. 2026, §5).",
    no_args_is_help=True,
)
console = make_console(piped=120)  # COLUMNS, when set, wins
DEFAULT_PLOT = Path("theory.png")  # moot's own name for the plot: replaced without --force
F = TypeVar("F", bound=Callable[..., Any])

Agents = Annotated[int, typer.Option("--agents", "-n", help="Number of agents.")]
Rounds = Annotated[int, typer.Option("--rounds", "-r", help="Rounds, counting round 0 (the initial answers).")]
Answers = Annotated[int, typer.Option("--answers", "-k", help="Number of possible answers; answer 0 is correct.")]
PCorrect = Annotated[
    float, typer.Option(help="Prior belief in the correct answer; the rest of the prior is spread evenly.")
]
PriorMass = Annotated[
    float, typer.Option(help="Sum of the Dirichlet prior counts: how firmly agents hold their prior.")
]
Prior = Annotated[
    str | None,
    typer.Option(
        help="Explicit prior counts, comma-separated, answer 0 first (overrides --answers, --p-correct, --prior-mass)."
    ),
]
TopologyOpt = Annotated[str, typer.Option(help="Who hears whom: full, ring, star (agent 0 is the hub) or none.")]
RingK = Annotated[int, typer.Option(help="ring: neighbours heard on each side.")]
NoSelf = Annotated[bool, typer.Option("--no-self", help="Agents do not count their own previous answer.")]
Weighting = Annotated[
    str, typer.Option(help="Update rule: none (one count per answer heard) or confidence (counts = confidence).")
]
ConfCorrect = Annotated[float, typer.Option(help="Mean confidence of a correct answer (in (0, 1)).")]
ConfWrong = Annotated[
    float, typer.Option(help="Mean confidence of a wrong answer; equal to --conf-correct: uninformative confidence.")
]
ConfConcentration = Annotated[
    float, typer.Option(help="Concentration a+b of the Beta confidence distributions ('inf': deterministic).")
]
Init = Annotated[str, typer.Option(help="Round-0 answers: random (independent) or diverse (greedy from a pool).")]
Pool = Annotated[int, typer.Option(help="diverse: candidate answers drawn before selecting one per agent.")]
Selection = Annotated[
    str, typer.Option(help="diverse: distinct (cover distinct answers, then pool order) or balanced (max entropy).")
]
TieRule = Annotated[str, typer.Option(help="Majority tie rule: first (earliest agent), random or abstain.")]
Debates = Annotated[int, typer.Option("--debates", "-d", help="Simulated debates (Monte Carlo sample size).")]
Seed = Annotated[int, typer.Option(help="Seed of the simulation.")]


def _model(
    agents: int,
    rounds: int,
    answers: int,
    p_correct: float,
    prior_mass: float,
    prior: str | None,
    topology: str,
    ring_k: int,
    no_self: bool,
    weighting: str,
    conf_correct: float,
    conf_wrong: float,
    conf_concentration: float,
    init: str,
    pool: int,
    selection: str,
    tie_rule: str,
) -> Any:
    from pydantic import ValidationError

    from moot.debate.components.topology import Topology
    from moot.debate.registry import parse
    from moot.errors import ConfigError
    from moot.theory.model import ConfidenceModel, DebateModel, prior_counts

    if prior is not None:
        try:
            counts = tuple(float(c) for c in prior.split(","))
        except ValueError:
            raise ConfigError(f"--prior must be comma-separated numbers, got {prior!r}") from None
    else:
        counts = prior_counts(answers, p_correct, prior_mass)
    if topology not in ("full", "ring", "star", "none"):
        raise ConfigError(f"unknown topology {topology!r}; choose full, ring, star or none")
    try:
        graph = parse("topology", {"kind": topology} | ({"k": ring_k} if topology == "ring" else {}))
        assert isinstance(graph, Topology)
    except ValidationError as exc:
        raise ConfigError(f"option --ring-k: {exc.errors()[0]['msg']}") from None
    return DebateModel(
        agents=agents,
        rounds=rounds,
        prior=counts,
        topology=graph,
        include_self=not no_self,
        weighting=weighting,  # type: ignore[arg-type]
        confidence=ConfidenceModel(conf_correct, conf_wrong, conf_concentration),
        init=init,  # type: ignore[arg-type]
        pool=pool,
        selection=selection,  # type: ignore[arg-type]
        tie_rule=tie_rule,  # type: ignore[arg-type]
    )


def _setting(model: Any, debates: int, prior: bool = True) -> str:
    conf = model.confidence
    counts = ", ".join(f"{c:g}" for c in model.priors()[0])
    weighting = (
        f"confidence-weighted (mean confidence {conf.mean_correct:g} if correct, {conf.mean_wrong:g} if wrong; "
        f"corr. with correctness {conf.correlation(model.prior_belief()):.2f} at the prior)"
        if model.weighting == "confidence"
        else "unweighted"
    )
    init = f"diverse ({model.selection}, pool {model.pool})" if model.init == "diverse" else "random"
    belief = f"prior ({counts}), belief {model.prior_belief():.3f}" if prior else f"{model.answers} answers"
    return (
        f"[bold]{plural(model.agents, 'agent')} × {plural(model.rounds, 'round')}[/] · {belief} · "
        f"topology {model.topology.kind}{'' if model.include_self else ' (no self)'} · {weighting} · init {init} · "
        f"{debates:,} debates"
    )


def _ci(estimate: Any, digits: int = 4) -> str:
    low, high = estimate.interval()
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def _gain(estimate: Any) -> str:
    return f"{estimate.mean:+.4f} ± {1.96 * estimate.se:.4f}"


@theory_app.command()
@_reports_errors
def simulate(
    agents: Agents = 5,
    rounds: Rounds = 5,
    answers: Answers = 4,
    p_correct: PCorrect = 0.4,
    prior_mass: PriorMass = 5.0,
    prior: Prior = None,
    topology: TopologyOpt = "full",
    ring_k: RingK = 1,
    no_self: NoSelf = False,
    weighting: Weighting = "none",
    conf_correct: ConfCorrect = 0.7,
    conf_wrong: ConfWrong = 0.4,
    conf_concentration: ConfConcentration = 10.0,
    init: Init = "random",
    pool: Pool = 10,
    selection: Selection = "distinct",
    tie_rule: TieRule = "first",
    debates: Debates = 100_000,
    seed: Seed = 0,
) -> None:
    """Simulate debates: expected belief in the correct answer per round (95% intervals), final majority accuracy.

    Also per round: the share of correct answers, majority accuracy and unanimity; and the drift of the belief.
    """
    import time

    from moot.theory.experiments import summarize
    from moot.theory.model import simulate as run

    model = _model(
        agents,
        rounds,
        answers,
        p_correct,
        prior_mass,
        prior,
        topology,
        ring_k,
        no_self,
        weighting,
        conf_correct,
        conf_wrong,
        conf_concentration,
        init,
        pool,
        selection,
        tie_rule,
    )
    start = time.perf_counter()
    summary = summarize("simulation", run(model, debates, seed))
    wall = time.perf_counter() - start
    console.print(_setting(model, debates))
    table = Table(title="per round (95% intervals: mean ± 1.96 Monte Carlo SE)", title_justify="left")
    for column in (
        "round",
        "E\\[belief]",
        "95% CI",
        "10-90% of debates",
        "correct answers",
        "majority correct",
        "unanimous",
    ):
        table.add_column(column, justify="right")
    for t, belief in enumerate(summary.belief):
        low, high = summary.spread[t]
        per_round = t < model.rounds
        table.add_row(
            str(t) if per_round else "after",
            f"{belief.mean:.4f}",
            _ci(belief),
            f"{low:.3f}-{high:.3f}",
            f"{summary.answers[t].mean:.4f}" if per_round else "",
            f"{summary.majority[t].mean:.4f}" if per_round else "",
            f"{summary.unanimous[t].mean:.4f}" if per_round else "",
        )
    fit_table(table, console)
    console.print(table)
    final, drift = summary.final_majority, summary.drift
    console.print(f"final majority accuracy {final.mean:.4f} {_ci(final)}")
    console.print(f"correct answer present in round 0: {summary.present.mean:.4f} {_ci(summary.present)}")
    console.print(
        f"drift of the expected belief, E\\[b_final - b_0] = {drift.mean:+.5f} {_ci(drift, 5)} "
        f"({drift.z:+.1f} SE from 0)"
    )
    console.print(f"[dim]simulated in {wall:.2f} s; belief is the agents' mean; 'after' is after the last update[/]")


@theory_app.command()
@_reports_errors
def init(
    agents: Agents = 5,
    rounds: Rounds = 5,
    answers: Answers = 4,
    p_correct: Annotated[
        list[float] | None,
        typer.Option(help="Prior belief in the correct answer; repeat for one row each (default: 0.1 to 0.6)."),
    ] = None,
    prior_mass: PriorMass = 5.0,
    topology: TopologyOpt = "full",
    ring_k: RingK = 1,
    no_self: NoSelf = False,
    weighting: Weighting = "none",
    conf_correct: ConfCorrect = 0.7,
    conf_wrong: ConfWrong = 0.4,
    conf_concentration: ConfConcentration = 10.0,
    pool: Pool = 10,
    selection: Selection = "distinct",
    tie_rule: TieRule = "first",
    debates: Debates = 50_000,
    seed: Seed = 0,
) -> None:
    """Compare random with diversity-aware initialisation, paired on the same random numbers.

    For each prior belief: how often the correct answer is present in round 0, and the final majority accuracy.
    """
    from dataclasses import replace

    from moot.theory.experiments import compare_init
    from moot.theory.model import prior_counts
    from moot.theory.plots import SWEEP

    values = p_correct or list(SWEEP)
    first = _model(
        agents,
        rounds,
        answers,
        values[0],
        prior_mass,
        None,
        topology,
        ring_k,
        no_self,
        weighting,
        conf_correct,
        conf_wrong,
        conf_concentration,
        "diverse",
        pool,
        selection,
        tie_rule,
    )
    console.print(_setting(first, debates, prior=False) + f" · prior mass {prior_mass:g}")
    table = Table(title="random vs diverse initialisation (paired gains ± 1.96 SE)", title_justify="left")
    for column in ("prior belief", "present: random", "diverse", "gain", "final majority: random", "diverse", "gain"):
        table.add_column(column, justify="right")
    for p in values:
        model = replace(first, prior=prior_counts(first.answers, p, prior_mass))
        c = compare_init(model, debates, seed)
        table.add_row(
            f"{p:g}",
            f"{c.random.present.mean:.4f}",
            f"{c.diverse.present.mean:.4f}",
            _gain(c.present_gain),
            f"{c.random.final_majority.mean:.4f}",
            f"{c.diverse.final_majority.mean:.4f}",
            _gain(c.success_gain),
        )
    fit_table(table, console)
    console.print(table)
    console.print(
        "[dim]present: the correct answer is among the round-0 answers; final: the last round's majority is "
        "correct; gain: diverse - random per debate, on common random numbers[/]"
    )


@theory_app.command()
@_reports_errors
def plot(
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="PNG file to write (default: theory.png, replaced when it exists); an existing file is "
            "replaced only with --force, a run store never.",
        ),
    ] = None,
    agents: Agents = 5,
    rounds: Rounds = 5,
    answers: Answers = 4,
    p_correct: PCorrect = 0.4,
    prior_mass: PriorMass = 5.0,
    prior: Prior = None,
    topology: TopologyOpt = "full",
    ring_k: RingK = 1,
    no_self: NoSelf = False,
    weighting: Annotated[
        str, typer.Option(help="Update rule of the initialisation panel: none or confidence.")
    ] = "none",
    conf_correct: ConfCorrect = 0.7,
    conf_wrong: ConfWrong = 0.4,
    conf_concentration: ConfConcentration = 10.0,
    pool: Pool = 10,
    selection: Selection = "distinct",
    tie_rule: TieRule = "first",
    debates: Debates = 20_000,
    seed: Seed = 0,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing --output file.")] = False,
) -> None:
    """Plot belief and majority accuracy per round by update rule, and the effect of diverse initialisation.

    Panels: expected belief and majority accuracy per round for unweighted, confidence-weighted and
    uninformatively weighted updates (95% bands); random vs diverse initialisation over the prior belief.
    """
    from moot.outputs import check_output
    from moot.theory.plots import plot_theory

    target = output or DEFAULT_PLOT
    check_output(target, force=force, default=output is None, stream=output is not None)
    model = _model(
        agents,
        rounds,
        answers,
        p_correct,
        prior_mass,
        prior,
        topology,
        ring_k,
        no_self,
        weighting,
        conf_correct,
        conf_wrong,
        conf_concentration,
        "random",
        pool,
        selection,
        tie_rule,
    )
    try:
        figure = plot_theory(model, debates, seed, target)
    except OSError as exc:
        raise MootError(f"cannot write {target}: {exc.strerror or exc}") from None
    table = Table(title="update rules", title_justify="left")
    for column in ("update", "E\\[belief] round 0", "after last update", "drift ± 1.96 SE", "final majority"):
        table.add_column(column, justify="left" if column == "update" else "right")
    for s in figure.conditions:
        table.add_row(
            s.name,
            f"{s.belief[0].mean:.4f}",
            f"{s.belief[-1].mean:.4f}",
            _gain(s.drift),
            f"{s.final_majority.mean:.4f} ± {1.96 * s.final_majority.se:.4f}",
        )
    fit_table(table, console)
    console.print(table)
    console.print(f"wrote {figure.path}", markup=False, soft_wrap=True)


@theory_app.command("engine-check")
@_reports_errors
def engine_check(
    agents: Agents = 5,
    rounds: Rounds = 5,
    answers: Answers = 4,
    p_correct: PCorrect = 0.4,
    prior_mass: PriorMass = 2.5,
    prior: Prior = None,
    topology: TopologyOpt = "full",
    ring_k: RingK = 1,
    no_self: NoSelf = False,
    weighting: Weighting = "none",
    conf_correct: ConfCorrect = 0.7,
    conf_wrong: ConfWrong = 0.4,
    conf_concentration: ConfConcentration = 10.0,
    tie_rule: TieRule = "first",
    questions: Annotated[int, typer.Option("--questions", "-q", help="Debates run through the real engine.")] = 500,
    debates: Debates = 50_000,
    seed: Seed = 0,
    threshold: Annotated[float, typer.Option(help="Largest |z| accepted as agreement.")] = 4.0,
) -> None:
    """Check the real debate engine against the simulator, with agents that follow the model.

    Every per-round statistic is compared by a two-sample z; exit status 1 if any |z| exceeds the threshold.
    """
    from moot.errors import ConfigError
    from moot.theory.engine_bridge import compare, engine_simulation
    from moot.theory.model import simulate as run

    model = _model(
        agents,
        rounds,
        answers,
        p_correct,
        prior_mass,
        prior,
        topology,
        ring_k,
        no_self,
        weighting,
        conf_correct,
        conf_wrong,
        conf_concentration,
        "random",
        10,
        "distinct",
        tie_rule,
    )
    if questions < 2:
        raise ConfigError(f"questions must be at least 2, got {questions}")
    console.print(_setting(model, debates) + f" · engine: {questions} debates")
    rows = compare(engine_simulation(model, questions, seed), run(model, debates, seed))
    table = Table(title="engine vs simulator", title_justify="left")
    for column in ("statistic", "engine", "simulator", "z"):
        table.add_column(column, justify="left" if column == "statistic" else "right")
    for row in rows:
        flag = "[red]" if abs(row.z) > threshold else ""
        table.add_row(
            row.statistic,
            f"{row.engine.mean:.4f} ± {row.engine.se:.4f}",
            f"{row.simulator.mean:.4f} ± {row.simulator.se:.4f}",
            f"{flag}{row.z:+.2f}",
        )
    fit_table(table, console)
    console.print(table)
    worst = max(abs(r.z) for r in rows)
    console.print(f"largest |z| = {worst:.2f} over {len(rows)} statistics (threshold {threshold:g})")
    if worst > threshold:
        raise typer.Exit(1)
