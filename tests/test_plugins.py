"""Plug-ins: an installed package's entry points (moot.components, moot.tasks, moot.backends) are found with
no `plugins` line, a file is loaded with `moot --plugin`, and a plug-in that fails to load is one clear line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moot.cli import app
from moot.errors import ConfigError
from moot.tasks import TASKS, register_task
from moot.tasks.arithmetic import ArithmeticTask

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "examples/plugins/installed"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/plugins/installed, installed by pip into a folder of its own (put on PYTHONPATH)."""
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("build") / "installed"
    subprocess.run(["cp", "-r", str(PACKAGE), str(build)], check=True)  # pip builds in place: not in the repo
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*command, "--target", str(target), str(build)], check=True, capture_output=True)
    return target


def moot(*args: str, path: Path | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(path) if path else "", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "moot", *args], capture_output=True, text=True, env=env, cwd=cwd or ROOT, timeout=120
    )


def test_an_installed_packages_rule_and_task_are_listed(installed: Path) -> None:
    components = moot("protocols", "components", path=installed)
    assert components.returncode == 0, components.stderr
    assert "parsed-only" in components.stdout
    tasks = moot("tasks", path=installed)
    assert tasks.returncode == 0, tasks.stderr
    assert "capitals" in tasks.stdout and "capital" in " ".join(tasks.stdout.split())
    assert "parsed-only" not in moot("protocols", "components").stdout  # not installed: not there


def test_an_installed_rule_and_task_run_with_no_plugins_line(installed: Path, tmp_path: Path) -> None:
    experiment = tmp_path / "capitals.toml"
    experiment.write_text(
        'name = "capitals"\n[[tasks]]\nname = "capitals"\ncount = 3\n'
        '[agent]\nbackend = { kind = "scripted", model = "numbers" }\n'
        '[[conditions]]\nname = "kept"\nprotocol = "society"\nagents = 3\nrounds = 2\nretention = "parsed-only"\n',
        encoding="utf-8",
    )
    store = tmp_path / "capitals.sqlite"
    result = moot("run", str(experiment), "--output", str(store), path=installed, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "What is the capital of" not in result.stderr
    shown = moot("report", str(store), "--no-html", path=installed, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "kept" in shown.stdout and "capitals" in shown.stdout


def test_an_installed_backend_kind_and_scripted_model_are_listed_and_run(installed: Path, tmp_path: Path) -> None:
    listed = moot("backends", path=installed)
    assert listed.returncode == 0, listed.stderr
    assert "│ echo " in listed.stdout and "prefix=''" in listed.stdout
    assert "scripted models: numbers, paris" in listed.stdout
    assert "│ echo " not in moot("backends").stdout  # not installed: not there
    experiment = tmp_path / "echo.toml"
    experiment.write_text(
        'name = "echo"\n[[tasks]]\nname = "capitals"\ncount = 2\n'
        '[agent]\nbackend = { kind = "echo", prefix = "Heard: " }\n'
        '[[conditions]]\nname = "echoed"\nprotocol = "society"\nagents = 2\nrounds = 2\n',
        encoding="utf-8",
    )
    store = tmp_path / "echo.sqlite"
    result = moot("run", str(experiment), "--output", str(store), path=installed, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    shown = moot("report", str(store), "--no-html", path=installed, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "echoed" in shown.stdout
    quick = ["run", "--task", "capitals", "--questions", "2", "--protocol", "vote", "--agents", "2"]
    echoed = moot(*quick, "--backend", "echo", "--output", str(tmp_path / "quick.sqlite"), path=installed, cwd=tmp_path)
    assert echoed.returncode == 0, echoed.stderr
    paris = moot(
        *quick,
        "--backend",
        "scripted",
        "--model",
        "paris",
        "--output",
        str(tmp_path / "paris.sqlite"),
        path=installed,
        cwd=tmp_path,
    )
    assert paris.returncode == 0, paris.stderr
    assert "Paris" in paris.stdout
    refused = moot(*quick, "--backend", "echo", "--output", str(tmp_path / "no.sqlite"), cwd=tmp_path)
    assert (
        refused.returncode == 2
        and "unknown backend 'echo'; choose local, vllm, llama-cpp, openai, hf or scripted" in (refused.stderr)
    )


@pytest.mark.parametrize("group", ["moot.components", "moot.backends"])
def test_a_plugin_that_fails_to_load_is_one_line_and_help_loads_none(tmp_path: Path, group: str) -> None:
    site = tmp_path / "site"
    (site / "broken_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "broken_plugin-0.1.dist-info" / "METADATA").write_text("Name: broken-plugin\nVersion: 0.1\n")
    (site / "broken_plugin-0.1.dist-info" / "entry_points.txt").write_text(f"[{group}]\nbroken = broken_rules\n")
    (site / "broken_rules.py").write_text('raise RuntimeError("boom")\n')
    result = moot(*(("protocols", "components") if group == "moot.components" else ("backends",)), path=site)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        f"moot: error: plug-in 'broken' (entry point {group}: broken = 'broken_rules') failed to load: "
        "RuntimeError: boom"
    )
    assert moot("--help", path=site).returncode == 0  # nothing is loaded to show the help


@pytest.mark.parametrize(
    "command",
    [("tasks",), ("run", "--task", "failing", "--protocol", "single", "--backend", "scripted", "--output", "x.sqlite")],
)
def test_an_installed_task_factory_that_raises_is_one_line_naming_its_plugin(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    site = tmp_path / "site"
    (site / "failing_task-0.1.dist-info").mkdir(parents=True)
    (site / "failing_task-0.1.dist-info" / "METADATA").write_text("Name: failing-task\nVersion: 0.1\n")
    (site / "failing_task-0.1.dist-info" / "entry_points.txt").write_text("[moot.tasks]\nfailing = failing_task:make\n")
    (site / "failing_task.py").write_text('def make():\n    raise RuntimeError("no questions here")\n')
    result = moot(*command, path=site, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert (
        "plug-in 'failing' (entry point moot.tasks: failing = 'failing_task:make') failed to make its task: "
        "RuntimeError: no questions here"
    ) in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.sqlite").exists()


def test_a_plugin_file_is_loaded_with_the_plugin_option() -> None:
    result = CliRunner().invoke(app, ["--plugin", str(ROOT / "examples/plugins/plateau.py"), "protocols", "components"])
    assert result.exit_code == 0, result.output
    assert "plateau" in result.output
    missing = CliRunner().invoke(app, ["--plugin", "no-such-file.py", "tasks"])
    assert missing.exit_code == 2 and "plugin no-such-file.py: no such file" in missing.output


def test_register_task_names_and_clashes() -> None:
    class Mine(ArithmeticTask):
        name = "mine"

    register_task("mine-test", Mine)
    register_task("mine-test", Mine)  # the same factory again: nothing changes
    assert TASKS.pop("mine-test") is Mine
    with pytest.raises(ConfigError, match="task 'arithmetic' is already registered"):
        register_task("arithmetic", Mine)
    with pytest.raises(ConfigError, match="a task's name has no spaces"):
        register_task("my:task", Mine)


def test_moot_extensions_lists_every_kind_with_where_it_comes_from(installed: Path) -> None:
    """One command lists tasks, backends, scripted models and every component family; an installed package's
    entries name its module, a --plugin file its path, moot's own "moot"."""
    from moot.debate.registry import FAMILIES

    result = moot("--plugin", str(ROOT / "examples/plugins/tally.py"), "extensions", path=installed)
    assert result.returncode == 0, result.stderr
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in result.stdout.splitlines() if line.startswith("│")]
    named = {(r[0], r[1]): r for r in rows if r[0]}
    assert {kind for kind, _ in named} == {"task", "backend", "scripted model", *FAMILIES}
    assert named[("task", "arithmetic")][2] == "moot" and named[("stopping", "consensus")][2] == "moot"
    assert named[("cue", "tally")][2].endswith("tally.py") and named[("cue", "tally")][3] == "most=3"
    assert named[("task", "capitals")][2].startswith("moot_capitals")
    assert named[("retention", "parsed-only")][2].startswith("moot_capitals")
    assert named[("backend", "echo")][2].startswith("moot_capitals") and "prefix=''" in named[("backend", "echo")][3]
    assert named[("scripted model", "paris")][2].startswith("moot_capitals")
