"""``moot launch``: the command over ``moot.runner.launch`` (imported when it runs, so that the command line starts
without it)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from moot.cli_output import printable
from moot.cli_support import reports_errors
from moot.errors import ConfigError


def _say(line: str) -> None:
    print(printable(line), flush=True)


@reports_errors
def launch(
    experiment: Annotated[Path, typer.Argument(help="An experiment TOML file (its \\[slurm] table, if any, applies).")],
    slurm: Annotated[bool, typer.Option("--slurm", help="Submit the shards as one Slurm array job (sbatch).")] = False,
    shards: Annotated[
        int | None, typer.Option("--shards", min=1, help="Shards, one array task each (also \\[slurm] shards).")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="The merged store (default: the experiment's); the shards' are beside it, .shard-I-of-N.",
        ),
    ] = None,
    partition: Annotated[str | None, typer.Option(help="sbatch --partition (also \\[slurm] partition).")] = None,
    time: Annotated[
        str | None, typer.Option("--time", help="sbatch --time, each task's limit, e.g. 04:00:00 (also \\[slurm]).")
    ] = None,
    mem: Annotated[str | None, typer.Option(help="sbatch --mem, e.g. 16G (also \\[slurm] mem).")] = None,
    cpus_per_task: Annotated[
        int | None, typer.Option("--cpus-per-task", min=1, help="sbatch --cpus-per-task (also \\[slurm]).")
    ] = None,
    sbatch: Annotated[
        list[str] | None,
        typer.Option(
            "--sbatch",
            metavar="ARG",
            help="A raw sbatch option, repeatable: --sbatch=--gres=gpu:1 (added to \\[slurm] sbatch).",
        ),
    ] = None,
    max_tries: Annotated[
        int | None,
        typer.Option(
            "--max-tries",
            min=1,
            help="Submissions of a shard (the first included) before giving up on it (default: 3; also \\[slurm]).",
        ),
    ] = None,
    poll: Annotated[float, typer.Option("--poll", min=0.1, help="Seconds between looks at the queue.")] = 30.0,
    no_wait: Annotated[
        bool, typer.Option("--no-wait", help="Submit (or look once: resubmit, merge) and return.")
    ] = False,
    status: Annotated[
        bool,
        typer.Option("--status", help="Print the recorded launch, one line per shard: state, tries, results stored."),
    ] = False,
) -> None:
    """Run an experiment's shards as a Slurm array job: submit, watch, resubmit the lost, merge.

    `moot launch FILE --slurm --shards N` submits one array job of N tasks, task I running `moot run FILE
    --shard I/N` with this Python, and stays to watch it (every --poll seconds): a shard whose task left the
    queue without a complete store (failed, cancelled, preempted, timed out) is submitted again and resumes its
    store; after --max-tries it is given up. When every shard is done their stores are merged into the
    experiment's. The launch is recorded beside the store (STORE.launch.json): rerunning the command watches
    the same jobs, and --status shows them. See docs/scale-out.md."""
    from moot.runner.launch import launch as run_launch
    from moot.runner.launch import plan_launch, status_lines

    if not slurm and not status:
        raise ConfigError(
            "moot launch: say where the shards run: --slurm (a Slurm array job), or --status for a recorded launch"
        )
    options = {"partition": partition, "time": time, "mem": mem, "cpus_per_task": cpus_per_task}
    plan = plan_launch(
        experiment, output=output, shards=shards, options=options, sbatch=tuple(sbatch or ()), max_tries=max_tries
    )
    if status:
        for line in status_lines(plan):
            _say(line)
        return
    try:
        outcome = run_launch(plan, wait=not no_wait, poll_s=poll, say=_say)
    except KeyboardInterrupt:
        print(
            "moot: stopped watching; the jobs stay queued (rerun the same moot launch to watch them again)",
            file=sys.stderr,
        )
        raise typer.Exit(130) from None
    if outcome.failed:
        for line in outcome.failed:
            print(f"moot: {printable(line)}", file=sys.stderr)
        print(
            f"moot: {len(outcome.failed)} of {outcome.state.count} shards failed; once their logs' cause is fixed, "
            "rerun with a higher --max-tries: their stores resume",
            file=sys.stderr,
        )
        raise typer.Exit(1)
    if outcome.merged is not None:
        done = outcome.merged
        _say(f"merged {done.shards} shards of {done.name}: {done.results} results, {done.calls} calls")
        _say(f"run stored in {done.path} (moot report {done.path})")
    elif outcome.waiting:
        _say(
            f"{outcome.waiting} of {outcome.state.count} shards queued or running: --status shows them, and the "
            "same command without --no-wait watches them and merges"
        )
