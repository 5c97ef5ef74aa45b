"""`moot launch FILE --slurm`: the batch script, the launch record, the decisions taken on squeue's word, and
launches on a real one-node Slurm cluster started here (munge, slurmctld and slurmd on 127.0.0.1): a 4-shard
launch merges into the store one `moot run` writes, a shard cancelled mid-run is resubmitted and resumes, a
shard that always fails is given up after --max-tries, and sbatch's refusal is one line."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from moot.cli import app
from moot.errors import ConfigError
from moot.runner.config import ExperimentConfig, SlurmSettings
from moot.runner.config_files import load_experiment, parse_experiment
from moot.runner.config_resolve import experiment_hash
from moot.runner.experiment import run_experiment
from moot.runner.launch import (
    Launch,
    LaunchState,
    ShardJob,
    decide,
    plan_launch,
    read_state,
    render_script,
    write_state,
)
from moot.runner.slurm import Queued, parse_squeue
from moot.runner.store import RunStore

EXPERIMENT = """\
name = "{name}"
seeds = [0]
{extra}
[[tasks]]
name = "arithmetic"
count = 8

[agent]
backend = {{ kind = "scripted", model = "numbers", delay_s = {delay} }}

[[conditions]]
name = "vote"
protocol = "vote"

[[conditions]]
name = "society"
protocol = "society"
rounds = 2
{slurm}"""
# 8 questions x 1 seed x 2 conditions over 4 shards: 2 questions, so 4 results, a shard
PER_SHARD = 4
# what differs between two runs of one experiment by nature: which session stored a row, and when
DIFFERS = {"results": {"session"}, "turns": set(), "calls": {"session", "created_at"}}


def write_experiment(folder: Path, name: str, *, delay: float = 0.0, extra: str = "", slurm: str = "") -> Path:
    path = folder / f"{name}.toml"
    path.write_text(EXPERIMENT.format(name=name, delay=delay, extra=extra, slurm=slurm), encoding="utf-8")
    return path


def a_launch(tmp_path: Path, output: Path | None = None, **settings: Any) -> Launch:
    return Launch(
        name="study",
        experiment=tmp_path / "study.toml",
        fingerprint="f" * 64,
        store=output or tmp_path / "runs" / "study.sqlite",  # as plan_launch: --output is the merged store
        count=4,
        output=output,
        settings=SlurmSettings(**settings),
        python="/opt/env/bin/python",
        workdir=tmp_path,
    )


# -- the batch script ---------------------------------------------------------------------------------
def test_the_script_runs_shard_i_of_n_for_array_task_i(tmp_path: Path) -> None:
    script = render_script(a_launch(tmp_path), 4)
    assert script == (
        "#!/bin/bash\n"
        "# moot launch: shard I of 4 of study is array task I; `sbatch --array=I study.sqlite.launch.sh`\n"
        "# runs it again (its store resumes). Written by moot launch, which rewrites it on every launch.\n"
        "#SBATCH --job-name=moot-study\n"
        f"#SBATCH --output={tmp_path}/runs/study.shard-%a-of-4.log\n"
        "#SBATCH --open-mode=append\n"
        "set -eu\n"
        "export PYTHONUNBUFFERED=1\n"
        f"cd {tmp_path}\n"
        f'exec /opt/env/bin/python -m moot run {tmp_path}/study.toml --shard "${{SLURM_ARRAY_TASK_ID}}/4"\n'
    )


def test_the_script_carries_the_settings_setup_and_each_shards_output(tmp_path: Path) -> None:
    launch = a_launch(
        tmp_path,
        output=tmp_path / "out" / "big.sqlite",
        partition="gpu",
        time="04:00:00",
        mem="16G",
        cpus_per_task=8,
        sbatch=("--gres=gpu:1", "--account=lab"),
        setup=("module load cuda", "vllm serve qwen &"),
    )
    lines = render_script(launch, 8).splitlines()
    assert lines[3:11] == [
        "#SBATCH --job-name=moot-study",
        f"#SBATCH --output={tmp_path}/out/big.shard-%a-of-8.log",
        "#SBATCH --open-mode=append",
        "#SBATCH --partition=gpu",
        "#SBATCH --time=04:00:00",
        "#SBATCH --mem=16G",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --gres=gpu:1",
    ]
    assert lines[11] == "#SBATCH --account=lab"
    assert lines[-3:-1] == ["module load cuda", "vllm serve qwen &"]
    assert lines[-1] == (
        f'exec /opt/env/bin/python -m moot run {tmp_path}/study.toml --shard "${{SLURM_ARRAY_TASK_ID}}/8" '
        f'--output {tmp_path}/out/big.shard-"${{SLURM_ARRAY_TASK_ID}}"-of-8.sqlite'
    )
    # bash expands it to the very path moot run --shard 3/8 --output ... is given, and launch reads
    shell = lines[-1].split("--output ", 1)[1]
    expanded = subprocess.run(
        ["bash", "-c", f"printf %s {shell}"], env={"SLURM_ARRAY_TASK_ID": "3"}, capture_output=True, text=True
    )
    assert expanded.stdout == str(launch.shard_store(3, 8)) == f"{tmp_path}/out/big.shard-3-of-8.sqlite"


def test_the_file_table_and_the_options_combine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    slurm = '[slurm]\nshards = 4\npartition = "cpu"\nmem = "4G"\nsbatch = ["--qos=low"]\nmax_tries = 5\n'
    path = write_experiment(tmp_path, "combined", slurm=slurm)
    plan = plan_launch(path, options={"partition": "gpu", "time": None}, sbatch=("--gres=gpu:1",))
    assert plan.count == 4 and plan.max_tries == 5
    assert plan.settings.partition == "gpu" and plan.settings.mem == "4G" and plan.settings.time is None
    assert plan.settings.sbatch == ("--qos=low", "--gres=gpu:1")
    config = load_experiment(path)
    assert plan.store == tmp_path / "runs" / f"combined-{experiment_hash(config)[:10]}.sqlite"
    assert plan_launch(path, shards=2, max_tries=1).count == 2
    with pytest.raises(ConfigError, match=r"^option --shards 9: the experiment has 8 questions, so at most 8 shards"):
        plan_launch(path, shards=9)
    with pytest.raises(ConfigError, match=r"^option --sbatch: an sbatch option starts with - \(e.g. --gres=gpu:1\)"):
        plan_launch(path, sbatch=("gres=gpu:1",))


def test_the_slurm_table_is_no_part_of_the_results(tmp_path: Path) -> None:
    data = {
        "tasks": [{"name": "arithmetic", "count": 2}],
        "conditions": [{"name": "vote", "protocol": "vote"}],
    }
    plain = parse_experiment(data)
    launched = parse_experiment(data | {"slurm": {"shards": 2, "partition": "gpu", "sbatch": ["--gres=gpu:1"]}})
    assert experiment_hash(plain) == experiment_hash(launched)
    assert "slurm" not in plain.model_dump(mode="json")  # the stored config of a run without one is as it was
    assert launched.model_dump(mode="json")["slurm"]["partition"] == "gpu"
    assert ExperimentConfig.model_validate(launched.model_dump(mode="json")) == launched
    with pytest.raises(
        ConfigError, match=r"^experiment: slurm\.sbatch\.0: an sbatch option starts with - \(e\.g\. --gres"
    ):
        parse_experiment(data | {"slurm": {"sbatch": ["gres"]}})
    with pytest.raises(ConfigError, match=r"^experiment: slurm\.setup\.0: must be one line$"):
        parse_experiment(data | {"slurm": {"setup": ["a\nb"]}})
    with pytest.raises(ConfigError, match=r"^experiment: slurm\.nodes: unknown key$"):
        parse_experiment(data | {"slurm": {"nodes": 2}})


# -- the record ---------------------------------------------------------------------------------------
def a_state(**shards: ShardJob) -> LaunchState:
    return LaunchState(
        name="study",
        experiment="/x/study.toml",
        fingerprint="f" * 64,
        count=len(shards),
        store="/x/runs/study.sqlite",
        array_job="12",
        shards={int(k.removeprefix("s")): v for k, v in shards.items()},
    )


def test_the_record_round_trips(tmp_path: Path) -> None:
    state = a_state(
        s1=ShardJob(job="12", task=1, tries=1, state="done"),
        s2=ShardJob(job="15", task=2, tries=2, state="PENDING"),
        s3=ShardJob(job="12", task=3, tries=3, state="gave up", ended="FAILED, exit code 3:0"),
    )
    path = tmp_path / "study.sqlite.launch.json"
    write_state(path, state)
    assert read_state(path) == state
    on_disk = json.loads(path.read_text())
    assert on_disk["array_job"] == "12" and on_disk["shards"]["2"] == {
        "job": "15",
        "task": 2,
        "tries": 2,
        "state": "PENDING",
        "ended": None,
    }
    assert state.jobs() == ["12", "15"]
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # written beside, then moved: no leftover
    assert read_state(tmp_path / "none.json") is None
    path.write_text('{"version": 1}')
    with pytest.raises(ConfigError, match=r"is not a launch record moot can read; remove it to launch afresh"):
        read_state(path)


# -- squeue and the decisions -------------------------------------------------------------------------
SQUEUE = """\
12|1|RUNNING|None
12|2|RUNNING|None
12|[5-7]|PENDING|Resources
15|3|PENDING|Priority
99|N/A|RUNNING|None
not squeue's
"""


def test_squeue_lines_are_read_by_job_and_task() -> None:
    queue = parse_squeue(SQUEUE)
    assert sorted(queue) == [("12", 1), ("12", 2), ("12", 5), ("12", 6), ("12", 7), ("15", 3)]
    assert queue[("15", 3)] == Queued("15", 3, "PENDING", "Priority")
    assert queue[("12", 6)].reason == "Resources"
    assert parse_squeue("") == {}


def test_lost_shards_are_resubmitted_until_their_tries_run_out() -> None:
    state = a_state(
        s1=ShardJob(job="12", task=1, tries=1, state="RUNNING"),  # in the queue: waits
        s2=ShardJob(job="12", task=2, tries=1, state="RUNNING"),  # gone, store complete: done
        s3=ShardJob(job="12", task=3, tries=1, state="PENDING"),  # gone, store not complete: again
        s4=ShardJob(job="12", task=4, tries=3, state="RUNNING"),  # gone on its third try: given up
        s5=ShardJob(job="15", task=5, tries=2, state="PENDING"),  # resubmitted: its new job is queued
        s6=ShardJob(job="12", task=6, tries=2, state="RUNNING"),  # its old job's task is not its latest
        s7=ShardJob(job="12", task=7, tries=3, state="RUNNING"),  # complete: done, whatever its tries
    )
    queue = parse_squeue("12|1|RUNNING|None\n15|5|PENDING|Priority\n15|6|PENDING|Priority\n")
    decision = decide(state, queue, complete={2, 7}, max_tries=3)
    assert decision.done == (2, 7)
    assert decision.waiting == (1, 5)
    assert decision.resubmit == (3, 6)
    assert decision.failed == (4,)
    assert decide(state, queue, complete={2, 7}, max_tries=4).failed == ()  # a rerun with more tries resumes it
    everything = decide(state, {}, complete=set(range(1, 8)), max_tries=3)
    assert everything.done == tuple(range(1, 8)) and not everything.waiting


# -- the command line, without Slurm ------------------------------------------------------------------
def test_without_sbatch_on_path_a_launch_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write_experiment(tmp_path, "nowhere")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = CliRunner().invoke(app, ["launch", str(path), "--slurm", "--shards", "2"])
    assert result.exit_code == 2
    assert result.stderr == (
        "moot: error: Slurm's sbatch is not on PATH; run moot launch where Slurm's commands are (a login node), "
        "or run the shards yourself: moot run FILE --shard I/N, then moot merge (docs/scale-out.md)\n"
    )
    assert not (tmp_path / "runs").exists()


def test_a_launch_names_where_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write_experiment(tmp_path, "somewhere")
    result = CliRunner().invoke(app, ["launch", str(path)])
    assert result.exit_code == 2
    assert result.stderr == (
        "moot: error: moot launch: say where the shards run: --slurm (a Slurm array job), or --status for a "
        "recorded launch\n"
    )
    result = CliRunner().invoke(app, ["launch", str(path), "--status"])
    assert result.exit_code == 2
    assert result.stderr.startswith("moot: error: no launch of somewhere is recorded (")


# -- a real one-node Slurm cluster --------------------------------------------------------------------
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "scontrol", "sinfo")
APT_HINT = "apt-get install slurmctld slurmd munge slurm-client (`make setup-test` installs them)"


def _program(name: str) -> str | None:
    found = shutil.which(name)
    if found is None and Path("/usr/sbin", name).is_file():
        found = str(Path("/usr/sbin", name))
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait(what: str, ready: Any, timeout_s: float, logs: Collection[Path] = ()) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            shown = "\n".join(f"--- {p}\n{p.read_text(errors='replace')[-2000:]}" for p in logs if p.exists())
            pytest.fail(f"the test cluster: {what} within {timeout_s:.0f} s\n{shown}")
        time.sleep(0.2)


@dataclass(frozen=True)
class Cluster:
    folder: Path
    env: dict[str, str]

    def slurm(self, *args: str) -> str:
        done = subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{args}: {done.stderr}"
        return done.stdout

    def moot(self, folder: Path, *args: str, timeout_s: float = 150) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "moot", *args], cwd=folder, env=self.env, capture_output=True, text=True,
            timeout=timeout_s,
        )  # fmt: skip

    def queue(self) -> str:
        """The job list as a user sees it, one line per array task."""
        return self.slurm("squeue", "--array", "--format=%.8i %.9P %.16j %.10T %.6M %R")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """munged, slurmctld and slurmd in a temporary folder, on 127.0.0.1 and free ports, with a generated key and
    slurm.conf (this machine's CPUs and memory, one partition); stopped by PID at the end."""
    missing = [name for name in (*DAEMONS, *CLIENTS) if _program(name) is None]
    if missing:
        pytest.fail(f"Slurm is not installed here ({', '.join(missing)} missing): {APT_HINT}")
    if os.geteuid() != 0:
        pytest.fail("the test cluster runs Slurm's daemons as root (SlurmUser=root): run the tests as root")
    folder = Path(tempfile.mkdtemp(prefix="moot-slurm-"))  # short: the munge socket's path has a limit
    for name in ("munge", "state", "spool", "log"):
        (folder / name).mkdir(mode=0o700)
    key = folder / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    munge_socket = folder / "munge" / "munge.socket"
    started: list[subprocess.Popen[bytes]] = []

    def start(*args: str, log: str) -> None:
        with open(folder / "log" / log, "wb") as out:
            started.append(subprocess.Popen(list(args), stdout=out, stderr=subprocess.STDOUT, env=env))

    env = dict(os.environ) | {"SLURM_CONF": str(folder / "slurm.conf")}
    try:
        start(
            str(_program("munged")), "--foreground", "--force", f"--key-file={key}", f"--socket={munge_socket}",
            f"--pid-file={folder / 'munge' / 'munged.pid'}", f"--log-file={folder / 'log' / 'munged.log'}",
            f"--seed-file={folder / 'munge' / 'munged.seed'}", log="munged.out",
        )  # fmt: skip
        _wait("munged listens", munge_socket.exists, 20, [folder / "log" / "munged.out"])
        hardware = subprocess.run([str(_program("slurmd")), "-C"], capture_output=True, text=True, check=True)
        node = re.sub(r"^NodeName=\S+", "NodeName=localhost NodeAddr=127.0.0.1", hardware.stdout.splitlines()[0])
        conf = f"""\
ClusterName=moottest
SlurmctldHost=localhost
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={munge_socket}
CredType=cred/munge
StateSaveLocation={folder / "state"}
SlurmdSpoolDir={folder / "spool"}
SlurmctldPidFile={folder / "slurmctld.pid"}
SlurmdPidFile={folder / "slurmd.pid"}
SlurmctldLogFile={folder / "log" / "slurmctld.log"}
SlurmdLogFile={folder / "log" / "slurmd.log"}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
KillWait=5
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
{node}
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""
        (folder / "slurm.conf").write_text(conf, encoding="utf-8")
        start(str(_program("slurmctld")), "-D", "-i", "-f", str(folder / "slurm.conf"), log="slurmctld.out")
        start(str(_program("slurmd")), "-D", "-N", "localhost", "-f", str(folder / "slurm.conf"), log="slurmd.out")

        def idle() -> bool:
            done = subprocess.run(["sinfo", "--noheader", "--format=%t"], env=env, capture_output=True, text=True)
            return done.stdout.strip() == "idle"

        logs = [folder / "log" / name for name in ("slurmctld.out", "slurmd.out", "slurmctld.log", "slurmd.log")]
        _wait("the node is idle", idle, 60, logs)
        yield Cluster(folder, env)
    finally:
        if started[1:]:  # cancel what a failed test left queued, by id, on this cluster only
            queued = subprocess.run(
                ["squeue", "--noheader", "--format=%A"], env=env, capture_output=True, text=True
            ).stdout.split()
            if queued:
                subprocess.run(["scancel", *queued], env=env, capture_output=True)
                time.sleep(2)
        for process in reversed(started):
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(folder, ignore_errors=True)


def rows(path: Path, table: str, leave_out: Collection[str] = ()) -> list[str]:
    """A table's rows, each as canonical JSON without the columns ``leave_out``, sorted."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cursor = db.execute(f"SELECT * FROM {table}")
        names = [c[0] for c in cursor.description]
        return sorted(
            json.dumps({k: v for k, v in zip(names, row) if k not in leave_out}, sort_keys=True) for row in cursor
        )
    finally:
        db.close()


def assert_same_run(merged: Path, single: Path) -> None:
    """The merged store holds the results, turns and calls of one run, row for row (session ids and times
    left out)."""
    for table, differs in DIFFERS.items():
        left, right = rows(merged, table, differs), rows(single, table, differs)
        assert left == right, f"{table}: the merged store differs from one run's"
        assert left, f"{table}: empty"
    print(f"equal to one moot run, row for row: {', '.join(f'{t} {len(rows(single, t))}' for t in DIFFERS)}")


def single_run(experiment: Path, folder: Path) -> Path:
    """One `moot run` of the experiment (in-process; every question in flight at once: concurrency is not part
    of the results)."""
    config = load_experiment(experiment).model_copy(update={"concurrency": None})
    path = folder / "single.sqlite"
    asyncio.run(run_experiment(config, path))
    return path


@pytest.mark.slurm
def test_a_launch_recorded_is_found_again_and_merges_into_one_runs_store(cluster: Cluster, tmp_path: Path) -> None:
    experiment = write_experiment(tmp_path, "launched")
    submitted = cluster.moot(tmp_path, "launch", experiment.name, "--slurm", "--shards", "4", "--no-wait")
    assert submitted.returncode == 0, submitted.stderr
    job = re.search(r"submitted array job (\d+), 4 shards", submitted.stdout)
    assert job is not None, submitted.stdout
    store = next((tmp_path / "runs").glob("launched-*.sqlite.launch.json")).with_suffix("").with_suffix("")
    recorded = read_state(store.with_name(store.name + ".launch.json"))
    assert recorded is not None and recorded.array_job == job[1] and recorded.count == 4
    assert {(i, s.job, s.task, s.tries) for i, s in recorded.shards.items()} == {(i, job[1], i, 1) for i in range(1, 5)}

    # the launcher is gone (--no-wait); run again, it finds the jobs and submits nothing
    watched = cluster.moot(tmp_path, "launch", experiment.name, "--slurm", "--poll", "1")
    print(watched.stdout)
    assert watched.returncode == 0, watched.stderr
    assert f"found array job {job[1]} (4 shards)" in watched.stdout
    assert "submitted array job" not in watched.stdout and "resubmitted" not in watched.stdout
    assert "merged 4 shards of launched: 16 results" in watched.stdout
    assert watched.stdout.rstrip().endswith(f"run stored in {store} (moot report {store})")
    final = read_state(store.with_name(store.name + ".launch.json"))
    assert final is not None and final.merged
    assert {(s.job, s.tries, s.state) for s in final.shards.values()} == {(job[1], 1, "done")}

    status = cluster.moot(tmp_path, "launch", experiment.name, "--status")
    assert status.returncode == 0, status.stderr
    assert status.stdout.splitlines()[1:] == [
        f"shard {i}/4: done, job {job[1]}_{i}, try 1 of 3, {PER_SHARD} of {PER_SHARD} results" for i in range(1, 5)
    ]
    again = cluster.moot(tmp_path, "launch", experiment.name, "--slurm")
    assert again.stdout == f"launched: every shard is done and merged into {store}\n"
    assert_same_run(store, single_run(experiment, tmp_path))


@pytest.mark.slurm
def test_a_cancelled_shard_is_resubmitted_and_resumes(cluster: Cluster, tmp_path: Path) -> None:
    # one question at a time, each reply 2 s: a shard runs for about 8 s
    experiment = write_experiment(tmp_path, "cancelled", delay=2.0, extra="concurrency = 1")
    launcher = subprocess.Popen(
        [sys.executable, "-m", "moot", "launch", experiment.name, "--slurm", "--shards", "4", "--poll", "1"],
        cwd=tmp_path, env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        runs = tmp_path / "runs"
        shard = {}

        def shard_one_has_begun() -> bool:
            found = list(runs.glob("cancelled-*.shard-1-of-4.sqlite")) if runs.is_dir() else []
            if not found:
                return False
            shard["path"] = found[0]
            db = sqlite3.connect(f"file:{found[0]}?mode=ro", uri=True)
            try:
                return int(db.execute("SELECT COUNT(*) FROM results").fetchone()[0]) >= 1
            except sqlite3.Error:
                return False
            finally:
                db.close()

        _wait("shard 1 stores its first result", shard_one_has_begun, 60)
        store = Path(str(shard["path"]).replace(".shard-1-of-4", ""))
        state = read_state(store.with_name(store.name + ".launch.json"))
        assert state is not None
        first = state.shards[1]
        before = cluster.queue()
        cluster.slurm("scancel", f"{first.job}_1")
        time.sleep(1)
        after = cluster.queue()
        print(f"squeue before scancel {first.job}_1:\n{before}\nsqueue after it:\n{after}")
        assert re.search(rf"^\s*{first.job}_1 .* RUNNING", before, re.MULTILINE)
        assert not re.search(rf"^\s*{first.job}_1 .* RUNNING", after, re.MULTILINE)
        out, err = launcher.communicate(timeout=150)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.communicate()
    print(out)
    assert launcher.returncode == 0, err
    final = read_state(store.with_name(store.name + ".launch.json"))
    assert final is not None and final.merged
    assert final.shards[1].tries == 2 and final.shards[1].job != first.job
    assert [final.shards[i].tries for i in (2, 3, 4)] == [1, 1, 1]
    assert re.search(
        rf"shard 1/4: job {first.job}_1 left the queue \(CANCELLED, exit code \d+:\d+\) with [1-3] of 4 results, store "
        rf"interrupted; resubmitted as job {final.shards[1].job}_1 \(try 2 of 3\)",
        out,
    ), out
    sessions = RunStore.read(shard["path"])
    try:
        assert [s.status for s in sessions.sessions()] == ["interrupted", "complete"]  # resumed, not redone
    finally:
        sessions.close()
    assert_same_run(store, single_run(experiment, tmp_path))


@pytest.mark.slurm
def test_a_shard_that_always_fails_is_given_up_after_max_tries(cluster: Cluster, tmp_path: Path) -> None:
    experiment = write_experiment(
        tmp_path, "broken", slurm='[slurm]\nshards = 2\nsetup = ["echo setting up", "exit 3"]\n'
    )
    failed = cluster.moot(tmp_path, "launch", experiment.name, "--slurm", "--poll", "1")
    print(failed.stdout, failed.stderr)
    assert failed.returncode == 1
    lines = failed.stderr.splitlines()
    assert len(lines) == 3
    for index, line in enumerate(lines[:2], start=1):
        assert re.fullmatch(
            rf"moot: shard {index}/2: gave up after 3 tries: its last job \d+_{index} left the queue \(FAILED, exit "
            rf"code 3:0, NonZeroExitCode\) with no store; log \S+/broken-\w+\.shard-{index}-of-2\.log",
            line,
        ), line
    assert lines[2] == (
        "moot: 2 of 2 shards failed; once their logs' cause is fixed, rerun with a higher --max-tries: their stores "
        "resume"
    )
    log = next((tmp_path / "runs").glob("broken-*.shard-1-of-2.log"))
    assert log.read_text().splitlines() == ["setting up"] * 3  # every try's output, appended
    assert len(re.findall(r"resubmitted as job", failed.stdout)) == 4  # 2 shards x 2 resubmissions


@pytest.mark.slurm
def test_sbatch_refusing_the_job_is_one_line(cluster: Cluster, tmp_path: Path) -> None:
    experiment = write_experiment(tmp_path, "refused")
    refused = cluster.moot(tmp_path, "launch", experiment.name, "--slurm", "--shards", "2", "--partition", "nope")
    assert refused.returncode == 2
    assert refused.stderr == (
        "moot: error: sbatch refused the job: invalid partition specified: nope; Batch job submission failed: "
        "Invalid partition name specified\n"
    )
    assert not list((tmp_path / "runs").glob("*.launch.json"))  # nothing recorded: a rerun submits afresh
