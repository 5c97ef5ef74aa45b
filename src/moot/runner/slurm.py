"""Slurm's commands as ``moot launch`` (``moot.runner.launch``) uses them: ``sbatch`` submits array tasks,
``squeue`` lists those still in the queue (``parse_squeue`` reads its lines), ``scontrol`` and then ``sacct`` say
how a task that left it ended. A command missing from PATH, refusing or failing is a ``SlurmError`` of one line."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from moot.errors import MootError

SQUEUE_FORMAT = "%F|%K|%T|%r"  # array job id | array task id | state | reason


class SlurmError(MootError):
    """Slurm is missing, or one of its commands refused or failed."""


class QueueUnknown(SlurmError):
    """squeue failed: the queue is not known this time (a busy controller), so nothing is decided on it."""


@dataclass(frozen=True)
class Queued:
    """An array task in the queue, as squeue shows it."""

    job: str
    task: int
    state: str
    reason: str


def _task_ids(text: str) -> list[int]:
    """squeue's array task ids: 3, or a range that was not expanded (1-4, 1,3,5-7, 2-8:2)."""
    ids: list[int] = []
    for part in text.strip("[]").split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part.strip())
        if match is None:
            continue
        start, stop, step = int(match[1]), int(match[2] or match[1]), int(match[3] or 1)
        ids.extend(range(start, stop + 1, step))
    return ids


def parse_squeue(text: str) -> dict[tuple[str, int], Queued]:
    """squeue's lines in ``SQUEUE_FORMAT``, by (array job id, task id); a job that is not an array's is left
    out (its task id is N/A)."""
    queue: dict[tuple[str, int], Queued] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 4:
            continue
        job, tasks, state, reason = (p.strip() for p in parts)
        for task in _task_ids(tasks):
            queue[(job, task)] = Queued(job, task, state, reason)
    return queue


def _command(name: str) -> str:
    """The path of Slurm's command ``name``; a SlurmError of one line where it is not on PATH."""
    path = shutil.which(name)
    if path is None:
        raise SlurmError(
            f"Slurm's {name} is not on PATH; run moot launch where Slurm's commands are (a login node), or run the "
            "shards yourself: moot run FILE --shard I/N, then moot merge (docs/scale-out.md)"
        )
    return path


def _errors(stderr: str, returncode: int) -> str:
    """A Slurm command's complaint as one line: its error lines without their prefix."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = [re.sub(r"^\w+: (error|fatal): ", "", line) for line in lines if re.match(r"^\w+: (error|fatal)", line)]
    return "; ".join(said or lines[-1:]) or f"exit status {returncode}"


def _run(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(args), capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SlurmError(f"{Path(args[0]).name} failed: {exc}") from None


def sbatch(script: Path, tasks: Collection[int]) -> str:
    """Submit array tasks ``tasks`` of ``script``; the array job's id. sbatch's refusal is a SlurmError with its
    own reason."""
    done = _run([_command("sbatch"), "--parsable", f"--array={_task_list(tasks)}", str(script)])
    if done.returncode != 0:
        raise SlurmError(f"sbatch refused the job: {_errors(done.stderr, done.returncode)}")
    job = done.stdout.strip().split(";")[0]
    if not job.isdigit():
        raise SlurmError(f"sbatch answered {done.stdout.strip()!r}, not a job id")
    return job


def _task_list(tasks: Collection[int]) -> str:
    """1-8 for consecutive tasks, else 2,5,7."""
    ordered = sorted(tasks)
    if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}-{ordered[-1]}"
    return ",".join(map(str, ordered))


def squeue(jobs: Iterable[str]) -> dict[tuple[str, int], Queued]:
    """The tasks of ``jobs`` still in the queue (pending, running, completing...). A job Slurm no longer knows
    is not in the queue; a squeue that fails otherwise is a SlurmError (the queue is then unknown, and nothing
    may be resubmitted for it)."""
    ids = ",".join(jobs)
    if not ids:
        return {}
    done = _run([_command("squeue"), "--noheader", "--array", f"--jobs={ids}", f"--format={SQUEUE_FORMAT}"])
    if done.returncode != 0:
        if "Invalid job id" in done.stderr:  # every job has left the queue (and Slurm's memory)
            return {}
        raise QueueUnknown(f"squeue failed: {_errors(done.stderr, done.returncode)}")
    return parse_squeue(done.stdout)


def ended(job: str, task: int) -> str:
    """How array task ``job_task`` ended, as Slurm remembers it: scontrol's JobState and ExitCode while it
    remembers the job, else sacct's (which needs slurmdbd accounting), else that neither knows."""
    name = f"{job}_{task}"
    scontrol = shutil.which("scontrol")
    if scontrol is not None:
        done = _run([scontrol, "show", "job", "--oneliner", name])
        fields = dict(re.findall(r"(\w+)=(\S*)", done.stdout)) if done.returncode == 0 else {}
        if "JobState" in fields:
            return _ending(fields["JobState"], fields.get("ExitCode", ""), fields.get("Reason", ""))
    sacct = shutil.which("sacct")
    if sacct is not None:
        done = _run([sacct, "--noheader", "--parsable2", "--allocations", f"--jobs={name}", "--format=State,ExitCode"])
        rows = [line.split("|") for line in done.stdout.splitlines() if line.count("|") == 1]
        if done.returncode == 0 and rows:
            return _ending(rows[-1][0], rows[-1][1], "")
    return "how it ended is unknown: scontrol no longer shows it, and sacct needs Slurm's accounting (slurmdbd)"


def _ending(state: str, exit_code: str, reason: str) -> str:
    said = state + (f", exit code {exit_code}" if exit_code else "")
    return said + (f", {reason}" if reason and reason != "None" else "")
