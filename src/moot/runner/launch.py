"""``moot launch FILE --slurm``: an experiment's shards (``moot.runner.shards``) as one Slurm array job, watched
until every shard's store is complete, the lost ones resubmitted, then merged into the experiment's store.

How. ``plan_launch`` reads the experiment and the ``[slurm]`` table (``SlurmSettings``; an option of the command
wins over its key). ``render_script`` writes a batch script beside the store whose task I runs ``<this python>
-m moot run FILE --shard I/N``; it is submitted with ``sbatch --array=1-N``. sbatch is called directly, not
through submitit: moot's unit of work is a command line and a store (a task that dies leaves a store that the
next ``moot run`` resumes), not a pickled Python function whose result comes back through a file, so a plain
script is both all that is needed and what a user can read and resubmit by hand (``sbatch --array=5 SCRIPT``).
Slurm's commands are called, and their answers read, in ``moot.runner.slurm``.

Where. The launch is recorded in ``STORE.launch.json`` beside the store (``LaunchState``: the array job's id,
per shard its latest job and task ids, its tries and last state), written after every change, so that
``moot launch FILE --status`` and a rerun of ``moot launch FILE --slurm`` after the launcher was killed find the
jobs again instead of submitting twice. Each task logs to ``STORE-STEM.shard-I-of-N.log`` (appended to by
every try); the script is ``STORE.launch.sh``.

Watching. Every poll asks ``squeue`` for the launch's jobs. A shard whose store's status is complete is done.
A shard whose task has left the queue without a complete store (it failed, was cancelled, preempted, timed
out, or its node failed) is resubmitted (``sbatch --array=I`` of the same script; several at once in one
call), and its store resumes: the calls it made are replayed, none is paid twice. After ``max_tries``
submissions (default ``MAX_TRIES``) a shard is given up; once no task is left in the queue the launch ends with
one line per shard given up. When every shard is done, ``merge_shards`` writes the experiment's store. How a
job that left the queue ended is asked of ``scontrol show job`` (which remembers a job for MinJobAge, 300 s by
default), then of ``sacct``; sacct needs slurmdbd accounting, which a small cluster may lack, so where neither
knows, the launch says so and decides from the store alone, which is what decides in every case.
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from moot.errors import ConfigError
from moot.runner.config import SlurmSettings
from moot.runner.shards import MergeOutcome, Shard, merge_shards, shard_output
from moot.runner.slurm import Queued, QueueUnknown, _command, ended, sbatch, squeue

MAX_TRIES = 3  # submissions of one shard (the first included) before a launch gives up on it
TASK_ID = "${SLURM_ARRAY_TASK_ID}"


# -- the plan -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Launch:
    """What a launch submits: ``count`` shards of the experiment ``experiment`` (named ``name``, its results'
    hash ``fingerprint``), merged into ``store``; each task runs ``python -m moot run`` in ``workdir``."""

    name: str
    experiment: Path
    fingerprint: str
    store: Path
    count: int | None  # None: not given (a recorded launch's own count is used)
    output: Path | None  # ``--output`` given: passed on to every shard (its own path), else moot run's default
    settings: SlurmSettings
    python: str
    workdir: Path
    max_tries: int = MAX_TRIES

    @property
    def state_path(self) -> Path:
        return self.store.with_name(self.store.name + ".launch.json")

    @property
    def script_path(self) -> Path:
        return self.store.with_name(self.store.name + ".launch.sh")

    def shard_store(self, index: int, count: int) -> Path:
        """Shard ``index``'s store: what ``moot run FILE --shard index/count`` writes."""
        return shard_output(self.store, Shard(index, count))

    def log_path(self, index: int | str, count: int) -> Path:
        """A task's log: STORE-STEM.shard-I-of-N.log (``%a``: Slurm's array task id)."""
        return self.store.with_name(f"{self.store.stem}.shard-{index}-of-{count}.log")


def plan_launch(
    experiment: Path,
    *,
    output: Path | None = None,
    shards: int | None = None,
    options: Mapping[str, object] | None = None,
    sbatch: Sequence[str] = (),
    max_tries: int | None = None,
) -> Launch:
    """The launch of the experiment file ``experiment``: the ``[slurm]`` table with the command line's
    ``options`` (partition, time, mem, cpus_per_task: those not None win) and ``sbatch`` options (added to the
    table's)."""
    from moot.runner.config_files import load_experiment
    from moot.runner.config_resolve import experiment_hash
    from moot.runner.store_paths import store_path

    config = load_experiment(experiment)
    table = config.slurm or SlurmSettings()
    given = {key: value for key, value in (options or {}).items() if value is not None}
    given["sbatch"] = (*table.sbatch, *sbatch)
    if shards is not None:
        given["shards"] = shards
    if max_tries is not None:
        given["max_tries"] = max_tries
    try:
        settings = SlurmSettings.model_validate(table.model_dump() | given)
    except ValidationError as exc:
        error = exc.errors()[0]
        option = "--" + str(error["loc"][0]).replace("_", "-")
        raise ConfigError(f"option {option}: {error['msg'].removeprefix('Value error, ')}") from None
    count = settings.shards
    if count is not None:
        _check_count(count, [len(t.ids) if t.ids is not None else t.count for t in config.tasks])
    return Launch(
        name=config.name,
        experiment=experiment.absolute(),
        fingerprint=experiment_hash(config),
        store=store_path(config, output).absolute(),
        count=count,
        output=output.absolute() if output is not None else None,
        settings=settings,
        python=sys.executable,
        workdir=Path.cwd(),
        max_tries=settings.max_tries or MAX_TRIES,
    )


def _check_count(count: int, questions: Sequence[int | None]) -> None:
    """At most one shard per question (a shard runs whole questions); unknown where a data file task takes
    every row of its file."""
    if None in questions:
        return
    total = sum(q for q in questions if q is not None)
    if count > total:
        raise ConfigError(
            f"option --shards {count}: the experiment has {total} questions, so at most {total} shards "
            "(a shard runs whole questions)"
        )


def render_script(launch: Launch, count: int) -> str:
    """The batch script of every task: its sbatch options, then ``moot run FILE --shard I/N`` for the task's
    index I (``$SLURM_ARRAY_TASK_ID``), in the folder the launch was made in, after the ``setup`` lines."""
    settings = launch.settings
    job_name = re.sub(r"[^A-Za-z0-9._-]+", "-", launch.name).strip("-") or "experiment"
    options = [
        f"--job-name=moot-{job_name}",
        f"--output={launch.log_path('%a', count)}",
        "--open-mode=append",  # every try's output in one log
    ]
    for key in ("partition", "time", "mem", "cpus_per_task"):
        value = getattr(settings, key)
        if value is not None:
            options.append(f"--{key.replace('_', '-')}={value}")
    options.extend(settings.sbatch)
    command = [shlex.quote(launch.python), "-m", "moot", "run", shlex.quote(str(launch.experiment))]
    command += ["--shard", f'"{TASK_ID}/{count}"']
    if launch.output is not None:
        head, tail = str(launch.shard_store(0, count)).split(".shard-0-of-", 1)
        command += ["--output", f'{shlex.quote(head + ".shard-")}"{TASK_ID}"{shlex.quote("-of-" + tail)}']
    lines = [
        "#!/bin/bash",
        f"# moot launch: shard I of {count} of {launch.name} is array task I; `sbatch --array=I {launch.script_path.name}`",
        "# runs it again (its store resumes). Written by moot launch, which rewrites it on every launch.",
        *(f"#SBATCH {option}" for option in options),
        "set -eu",
        "export PYTHONUNBUFFERED=1",
        f"cd {shlex.quote(str(launch.workdir))}",
        *settings.setup,
        "exec " + " ".join(command),
    ]
    return "\n".join(lines) + "\n"


# -- the record ---------------------------------------------------------------------------------------
class ShardJob(BaseModel):
    """A shard's latest submission: array job ``job``, task ``task`` (the shard's index), the ``tries`` so far,
    its ``state`` when last seen (squeue's state, "done", or "gave up") and how its last job ended (``ended``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    job: str
    task: int
    tries: int
    state: str
    ended: str | None = None


class LaunchState(BaseModel):
    """A launch as ``STORE.launch.json`` records it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    name: str
    experiment: str
    fingerprint: str
    count: int
    store: str
    array_job: str
    shards: dict[int, ShardJob]
    merged: bool = False

    def jobs(self) -> list[str]:
        """Every array job the launch's shards are in now, in order of submission."""
        return sorted({s.job for s in self.shards.values()}, key=lambda job: (len(job), job))


def read_state(path: Path) -> LaunchState | None:
    """The launch recorded at ``path``; None where none is."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return LaunchState.model_validate_json(text)
    except ValidationError:
        raise ConfigError(
            f"{path} is not a launch record moot can read; remove it to launch afresh (the shards' stores are kept "
            "and resume)"
        ) from None


def write_state(path: Path, state: LaunchState) -> None:
    """Write ``state`` whole or not at all: beside, then moved into place."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(state.model_dump_json(indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)


# -- deciding -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Decision:
    """What the shards' states call for: done, still ``waiting`` in the queue, to ``resubmit``, or given up
    (``failed``); shard indexes."""

    done: tuple[int, ...]
    waiting: tuple[int, ...]
    resubmit: tuple[int, ...]
    failed: tuple[int, ...]


def decide(
    state: LaunchState, queue: Mapping[tuple[str, int], Queued], complete: Collection[int], max_tries: int
) -> Decision:
    """A shard with a complete store is done; one whose task is in ``queue`` waits; any other has left the queue
    without finishing: resubmitted while it has had fewer than ``max_tries`` submissions, else given up."""
    done, waiting, resubmit, failed = [], [], [], []
    for index, shard in sorted(state.shards.items()):
        if index in complete:
            done.append(index)
        elif (shard.job, shard.task) in queue:
            waiting.append(index)
        elif shard.tries < max_tries:
            resubmit.append(index)
        else:
            failed.append(index)
    return Decision(tuple(done), tuple(waiting), tuple(resubmit), tuple(failed))


@dataclass(frozen=True)
class Progress:
    """A shard's store, read-only: its status and results stored of planned."""

    status: str
    done: int
    planned: int

    def __str__(self) -> str:
        return f"{self.done} of {self.planned} results, store {self.status}"


def progress(path: Path) -> Progress | None:
    """The progress of the store at ``path`` (None: not written yet, or not readable yet)."""
    from moot.runner.store import RunStore, StoreError

    if not path.exists():
        return None
    try:
        store = RunStore.read(path)
    except StoreError:
        return None
    try:
        listing = store.listing()
        return Progress(listing.status, len(store.done()), listing.planned_units)
    except StoreError:
        return None
    finally:
        store.close()


# -- the launch ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LaunchOutcome:
    """Where a launch stands when ``launch`` returns: merged (``merged``), given up on some shards (``failed``:
    one line each), or with shards still queued (``waiting``, with ``wait=False``)."""

    state: LaunchState
    merged: MergeOutcome | None = None
    failed: tuple[str, ...] = ()
    waiting: int = 0


class _Watcher:
    """One launch's poll after poll: the queue and the stores read, shards resubmitted, the record kept."""

    def __init__(self, launch: Launch, state: LaunchState, say: Callable[[str], None]):
        self.launch = launch
        self.state = state
        self.say = say

    def shard(self, index: int) -> str:
        return f"shard {index}/{self.state.count}"

    def store(self, index: int) -> Path:
        return self.launch.shard_store(index, self.state.count)

    def step(self) -> Decision:
        """One poll: every shard's state brought up to date, the lost ones resubmitted; recorded."""
        queue = squeue(self.state.jobs())
        known = {i: progress(self.store(i)) for i, s in self.state.shards.items() if s.state != "done"}
        complete = {i for i, s in self.state.shards.items() if s.state == "done"}
        complete |= {i for i, p in known.items() if p is not None and p.status == "complete"}
        decision = decide(self.state, queue, complete, self.launch.max_tries)
        shards = dict(self.state.shards)
        for index in decision.done:
            if shards[index].state != "done":
                self.say(f"{self.shard(index)}: done ({known[index]})")
                shards[index] = shards[index].model_copy(update={"state": "done"})
        for index in decision.waiting:
            now = queue[(shards[index].job, shards[index].task)].state
            if shards[index].state != now:
                self.say(f"{self.shard(index)}: job {shards[index].job}_{index} {now}")
                shards[index] = shards[index].model_copy(update={"state": now})
        for index in (*decision.resubmit, *decision.failed):
            if shards[index].state != "gave up":
                how = ended(shards[index].job, shards[index].task)
                shards[index] = shards[index].model_copy(update={"state": "left the queue", "ended": how})
        for index in decision.failed:
            if shards[index].state != "gave up":
                stored = known.get(index)
                self.say(
                    f"{self.shard(index)}: job {shards[index].job}_{index} left the queue ({shards[index].ended}) "
                    f"{'with no store' if stored is None else f'with {stored}'}; no tries left "
                    f"({shards[index].tries} of {self.launch.max_tries})"
                )
                shards[index] = shards[index].model_copy(update={"state": "gave up"})
        self.state = self.state.model_copy(update={"shards": shards})
        if decision.resubmit:
            self._resubmit(decision.resubmit, known)
        else:
            self.save()
        return decision

    def _resubmit(self, indexes: Sequence[int], known: Mapping[int, Progress | None]) -> None:
        shards = dict(self.state.shards)
        job = sbatch(self.launch.script_path, indexes)
        for index in indexes:
            old = shards[index]
            stored = known.get(index)
            self.say(
                f"{self.shard(index)}: job {old.job}_{index} left the queue ({old.ended}) "
                f"{'with no store' if stored is None else f'with {stored}'}; resubmitted as job {job}_{index} "
                f"(try {old.tries + 1} of {self.launch.max_tries})"
            )
            shards[index] = ShardJob(job=job, task=index, tries=old.tries + 1, state="PENDING")
        self.state = self.state.model_copy(update={"shards": shards})
        self.save()

    def _given_up(self, shard: ShardJob, stored: Progress | None) -> str:
        index = shard.task
        return (
            f"{self.shard(index)}: gave up after {shard.tries} {'try' if shard.tries == 1 else 'tries'}: its last job "
            f"{shard.job}_{index} left the queue ({shard.ended}) {'with no store' if stored is None else f'with {stored}'}"
            f"; log {self.launch.log_path(index, self.state.count)}"
        )

    def failures(self) -> tuple[str, ...]:
        return tuple(
            self._given_up(s, progress(self.store(i)))
            for i, s in sorted(self.state.shards.items())
            if s.state == "gave up"
        )

    def save(self) -> None:
        write_state(self.launch.state_path, self.state)

    def merge(self) -> MergeOutcome:
        paths = [self.store(i) for i in sorted(self.state.shards)]
        merged = merge_shards(self.launch.store, paths)
        self.state = self.state.model_copy(update={"merged": True})
        self.save()
        return merged


def launch(
    plan: Launch,
    *,
    wait: bool = True,
    poll_s: float = 30.0,
    say: Callable[[str], None] = print,
    sleep: Callable[[float], None] = time.sleep,
) -> LaunchOutcome:
    """Submit the launch (or find it recorded) and watch it: with ``wait``, poll every ``poll_s`` seconds until
    every shard is done and merged, or every shard not done has been given up; without, one poll."""
    _command("sbatch")
    with _held(plan):
        state = read_state(plan.state_path)
        if state is None:
            state = _submit(plan, say)
        else:
            _check_recorded(plan, state)
            if state.merged and plan.store.exists():
                say(f"{plan.name}: every shard is done and merged into {plan.store}")
                return LaunchOutcome(state)
            plan.script_path.write_text(render_script(plan, state.count), encoding="utf-8")
            say(
                f"{plan.name}: found array job {state.array_job} ({state.count} shards) in {plan.state_path}; "
                "watching it, nothing submitted again"
            )
        watcher = _Watcher(plan, state, say)
        failures = 0
        while True:
            try:
                decision = watcher.step()
                failures = 0
            except QueueUnknown as exc:
                failures += 1
                if failures >= 5 or not wait:
                    raise
                say(f"{exc} (will ask again)")
                sleep(poll_s)
                continue
            left = len(decision.waiting) + len(decision.resubmit)
            if not left:
                if decision.failed:
                    return LaunchOutcome(watcher.state, failed=watcher.failures())
                return LaunchOutcome(watcher.state, merged=watcher.merge())
            if not wait:
                return LaunchOutcome(watcher.state, waiting=left)
            sleep(poll_s)


def _submit(plan: Launch, say: Callable[[str], None]) -> LaunchState:
    """The first submission: the whole array, recorded."""
    if plan.count is None:
        raise ConfigError("moot launch --slurm: give the number of shards, --shards N (or shards in [slurm])")
    if plan.store.exists():
        raise ConfigError(
            f"{plan.store} already exists, and a launch merges its shards into it: move it away, or name "
            "another --output"
        )
    plan.script_path.write_text(render_script(plan, plan.count), encoding="utf-8")
    job = sbatch(plan.script_path, range(1, plan.count + 1))
    shards = {i: ShardJob(job=job, task=i, tries=1, state="PENDING") for i in range(1, plan.count + 1)}
    state = LaunchState(
        name=plan.name,
        experiment=str(plan.experiment),
        fingerprint=plan.fingerprint,
        count=plan.count,
        store=str(plan.store),
        array_job=job,
        shards=shards,
    )
    write_state(plan.state_path, state)
    say(
        f"{plan.name}: submitted array job {job}, {plan.count} shards (tasks 1-{plan.count}); logs "
        f"{plan.log_path('I', plan.count)}; recorded in {plan.state_path}"
    )
    return state


def _check_recorded(plan: Launch, state: LaunchState) -> None:
    """A recorded launch is this experiment's, with as many shards as asked for."""
    if state.fingerprint != plan.fingerprint:
        raise ConfigError(
            f"{plan.state_path} records a launch of another experiment (its conditions, tasks, seeds or agents "
            "differ); remove it to launch this one"
        )
    if plan.count is not None and plan.count != state.count:
        raise ConfigError(
            f"{plan.state_path} records a launch of {state.count} shards: give --shards {state.count}, or remove it "
            "(and the shards' stores) to launch another number"
        )


class _held:
    """One launcher at a time watches a launch: an OS lock on ``STORE.launch.lock`` (released when the process
    ends, however it ends)."""

    def __init__(self, plan: Launch):
        self.store = plan.store
        self.path = plan.store.with_name(plan.store.name + ".launch.lock")
        self.fd = -1

    def __enter__(self) -> None:
        from moot.runner.store_paths import check_output

        check_output(self.store)  # its folder exists, or is a runs folder moot creates (as moot run does)
        self.path.parent.mkdir(exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise ConfigError(
                f"another moot launch is watching this launch ({self.path} is held); stop it first, or use --status"
            ) from None

    def __exit__(self, *_: object) -> None:
        os.close(self.fd)


# -- status -------------------------------------------------------------------------------------------
def status_lines(plan: Launch) -> list[str]:
    """The recorded launch, one line per shard: its state (squeue's now, where Slurm's commands are here, else
    the recorded one), its tries, and its results stored of planned, read from its store."""
    state = read_state(plan.state_path)
    if state is None:
        raise ConfigError(f"no launch of {plan.name} is recorded ({plan.state_path} does not exist)")
    _check_recorded(plan, state)
    live = shutil.which("squeue") is not None
    queue = squeue(state.jobs()) if live else {}
    merged = " merged into " + str(plan.store) if state.merged and plan.store.exists() else ""
    lines = [
        f"{plan.name}: array job {state.array_job}, {state.count} shards{merged}; recorded in {plan.state_path}"
        + ("" if live else " (squeue is not on PATH: states as last recorded)")
    ]
    for index, shard in sorted(state.shards.items()):
        stored = progress(plan.shard_store(index, state.count))
        now = shard.state
        if live and shard.state not in ("done", "gave up"):
            queued = queue.get((shard.job, shard.task))
            now = queued.state if queued is not None else "not in the queue"
        if stored is not None and stored.status == "complete":
            now = "done"
        results = f"{stored.done} of {stored.planned} results" if stored is not None else "no store yet"
        lines.append(
            f"shard {index}/{state.count}: {now}, job {shard.job}_{shard.task}, try {shard.tries} of {plan.max_tries}, "
            f"{results}"
        )
    return lines
