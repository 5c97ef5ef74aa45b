"""A figure of the model's three results: belief per round, majority accuracy per round, and initialisation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from moot.errors import ConfigError
from moot.theory.experiments import (
    InitComparison,
    Summary,
    belief_conditions,
    compare_init,
    run_conditions,
    with_p_correct,
)
from moot.theory.model import DebateModel

SWEEP = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)  # prior belief in the correct answer, for the initialisation panel


@dataclass(frozen=True)
class Figure:
    """What the figure shows, for a caller that also prints it."""

    path: Path
    conditions: list[Summary]
    sweep: list[tuple[float, InitComparison]]


def plot_theory(base: DebateModel, debates: int, seed: int, path: Path, sweep: Sequence[float] = SWEEP) -> Figure:
    """Simulate and draw three panels into a PNG at ``path``.

    (a) expected belief in the correct answer per round (D.1 vs D.4), (b) majority-vote accuracy
    per round, both with 95% confidence bands of the Monte Carlo mean (± 1.96 SE) for the update
    rules of :func:`belief_conditions`; (c) random vs diversity-aware initialisation under ``base``'s
    update rule, over a sweep of the prior belief in the correct answer: P(correct answer present in round 0) and final
    majority accuracy, with 95% intervals.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise ConfigError("plotting needs matplotlib: pip install matplotlib") from None

    conditions = run_conditions(belief_conditions(base), debates, seed)
    comparisons = [(p, compare_init(with_p_correct(base, p), debates, seed)) for p in sweep]

    fig, (ax_belief, ax_majority, ax_init) = plt.subplots(1, 3, figsize=(16, 4.8))
    for summary in conditions:
        rounds = range(len(summary.belief))
        means = [e.mean for e in summary.belief]
        low, high = zip(*(e.interval() for e in summary.belief))
        (line,) = ax_belief.plot(rounds, means, marker="o", label=summary.name)
        ax_belief.fill_between(rounds, low, high, color=line.get_color(), alpha=0.25)
        rounds = range(len(summary.majority))
        means = [e.mean for e in summary.majority]
        low, high = zip(*(e.interval() for e in summary.majority))
        ax_majority.plot(rounds, means, marker="o", color=line.get_color(), label=summary.name)
        ax_majority.fill_between(rounds, low, high, color=line.get_color(), alpha=0.25)
    ax_belief.set(
        title="(a) expected belief in the correct answer",
        xlabel="round (last point: after the final update)",
        ylabel="E[mean belief]",
    )
    ax_majority.set(title="(b) majority-vote accuracy", xlabel="round", ylabel="P(majority correct)")
    for ax in (ax_belief, ax_majority):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_belief.legend(fontsize=8)
    ax_majority.legend(fontsize=8)

    ps = [p for p, _ in comparisons]
    weighting = "confidence-weighted" if base.weighting == "confidence" else "unweighted"
    for label, statistic, style in (
        ("correct present in round 0", "present", "--"),
        ("final majority correct", "final_majority", "-"),
    ):
        for init, color in (("random", "tab:gray"), ("diverse", "tab:green")):
            estimates = [getattr(getattr(c, init), statistic) for _, c in comparisons]
            ax_init.errorbar(
                ps,
                [e.mean for e in estimates],
                yerr=[1.96 * e.se for e in estimates],
                linestyle=style,
                marker="o",
                color=color,
                capsize=2,
                label=f"{init}: {label}",
            )
    ax_init.plot(ps, ps, ":", color="black", linewidth=0.8, label="prior belief")
    ax_init.set(
        title=f"(c) initialisation (pool {base.pool}, {base.selection}; {weighting})",
        xlabel="prior belief in the correct answer",
        ylabel="probability",
    )
    ax_init.legend(fontsize=7)
    prior = ", ".join(f"{c:g}" for c in base.priors()[0])
    conf = base.confidence
    fig.suptitle(
        f"Dirichlet-categorical debate: {base.agents} agents, {base.rounds} rounds, prior ({prior}), "
        f"topology {base.topology.kind}, confidence {conf.mean_correct:g}|{conf.mean_wrong:g} (correct|wrong), "
        f"{debates:,} debates per point; bands: 95% CI",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    from moot.outputs import write_output

    # whole or not at all, never through a link (moot.safe_files); the format named by ``path``'s suffix,
    # not by the temporary file's; a pipe or terminal the command was given is written into
    kind = path.suffix[1:].lower() or str(plt.rcParams["savefig.format"])
    write_output(path, lambda target: fig.savefig(target, dpi=120, format=kind), stream=True)
    plt.close(fig)
    return Figure(path, conditions, comparisons)
