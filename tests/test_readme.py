"""The README's commands work as written: every `moot ...` line of its code blocks parses against the
real command line (an option it names that does not exist fails here), those that run in seconds
without a model are run, in README order, on the scripted backend in a temporary folder; every
`make` target it names exists; its extras, counts and option tables agree with the code."""

from __future__ import annotations

import importlib
import re
import shlex
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.core import TyperGroup
from typer.main import get_command
from typer.testing import CliRunner

from moot.backends.scripted import ScriptedBackend, seeded_numbers
from moot.cli import app

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

# Shown, parsed, but not run here: each takes several seconds, or assembles a model from its packages.
NOT_RUN = {
    ("theory", "simulate"),
    ("theory", "init"),
    ("theory", "plot"),
    ("theory", "engine-check"),
    ("models", "fetch"),
    ("view", "runs/compare-arithmetic.sqlite"),  # serves until Ctrl-C (tests/test_live_view.py runs it)
    ("launch", "examples/slurm-gsm8k.toml"),  # submits Slurm jobs (tests/test_launch.py runs launches on a cluster)
}


def code_lines(text: str) -> Iterator[str]:
    """Every line inside the README's fenced code blocks."""
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            yield line


def commands(text: str) -> list[list[str]]:
    """The shell commands of the code blocks, split into words, comments dropped: each part of a
    line joined by `&&`, without a leading `$ ` prompt or environment assignments."""
    found = []
    for line in code_lines(text):
        line = line.strip().removeprefix("$ ")
        for part in line.split("&&"):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:  # not shell (TOML, Python)
                continue
            while words and ENV_ASSIGNMENT.match(words[0]):
                words = words[1:]
            if words and words[0] in ("moot", "make"):
                found.append(words)
    return found


MOOT = [c[1:] for c in commands(README) if c[0] == "moot"]
MAKE = [c[1:] for c in commands(README) if c[0] == "make"]


def parse(args: list[str]) -> tuple[Any, Any]:
    """``args`` parsed by moot's command line as typed, down to the command they name, with every
    option converted and checked, and nothing run: (the command, its context). Raises the command
    line's usage error (a TyperException) for an unknown command or option, a missing argument or a
    value of the wrong type."""
    command: Any = get_command(app)
    name, rest = "moot", list(args)
    while True:
        try:
            ctx = command.make_context(name, rest)
        except typer.Exit:  # --help or --version: printed, and nothing else to check
            return command, None
        if not isinstance(command, TyperGroup):
            return command, ctx
        remaining = [*ctx._protected_args, *ctx.args]
        if not remaining:
            return command, ctx  # a group run on its own (`moot protocols`)
        found, sub, rest = command.resolve_command(ctx, remaining)
        assert found is not None and sub is not None
        name, command = found, sub


def words(args: list[str]) -> str:
    return shlex.join(["moot", *args])


def test_the_readme_shows_commands() -> None:
    """The extraction finds the README's commands (a change of its format would otherwise pass silently)."""
    subcommands = {a[0] for a in MOOT}
    assert {
        "run",
        "runs",
        "export",
        "report",
        "compare",
        "ask",
        "protocols",
        "tasks",
        "models",
        "theory",
    } <= subcommands
    assert ["demo"] in MAKE and ["test"] in MAKE


@pytest.mark.parametrize("args", MOOT, ids=words)
def test_every_moot_command_parses(args: list[str]) -> None:
    parse(args)


def test_parse_refuses_what_moot_refuses() -> None:
    with pytest.raises(typer.TyperException, match="No such option"):
        parse(["run", "--no-such-option", "1"])
    with pytest.raises(typer.TyperException, match="valid integer"):
        parse(["run", "--questions", "many"])
    with pytest.raises(typer.TyperException, match="No such command"):
        parse(["no-such-command"])
    assert parse(["protocols", "show", "liang"])[0].name == "show"


def _is_generated_run(ctx: Any) -> bool:
    """A run on the scripted backend in seconds: no server, no dataset to install (arithmetic)."""
    params = ctx.params
    return params.get("backend") in (None, "local") and (params.get("task") or "arithmetic") == "arithmetic"


def _runnable(args: list[str]) -> list[str] | None:
    """The command to run for a README line (None: parsed only), with options that keep it fast."""
    if tuple(args[:2]) in NOT_RUN:
        return None
    if "--help" in args:
        return args
    _, ctx = parse(args)
    if args[0] in ("run", "ask"):
        return args if _is_generated_run(ctx) else None
    if args[0] in ("report", "compare"):
        return [*args, "--resamples", "100", *(["--no-html"] if args[0] == "report" else [])]
    return args


def use_scripted_backend(monkeypatch: pytest.MonkeyPatch, backend: Any = None) -> None:
    """Every agent's backend, whatever its config, is ``backend`` (default: the scripted one answering
    numbers fixed by each call's seed): moot's commands run in-process with no model."""
    evaluate = importlib.import_module("moot.runner.evaluate")  # `moot.runner.evaluate` is also a function
    monkeypatch.setattr(evaluate, "make_backend", lambda config: backend or ScriptedBackend(seeded_numbers))


def test_readme_commands_run_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's commands, in its order, in a fresh folder with its examples: every agent's backend
    is the scripted one (numbers fixed by each call's seed), so nothing loads a model."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    use_scripted_backend(monkeypatch)
    monkeypatch.setattr("moot.debate.embeddings.available", lambda: False)  # no sentence-embedding model
    runner = CliRunner()
    ran = []
    for args in MOOT:
        to_run = _runnable(args)
        if to_run is None:
            continue
        result = runner.invoke(app, to_run)
        assert result.exit_code == 0, f"{words(to_run)} exited {result.exit_code}:\n{result.output}{result.exception!r}"
        assert "Traceback" not in result.output
        ran.append(args[0])
    assert {"run", "runs", "export", "report", "compare", "ask", "protocols", "tasks", "models"} <= set(ran)
    assert Path("runs/compare-arithmetic.sqlite").is_file()


def makefile_targets() -> dict[str, tuple[list[str], list[str]]]:
    """Each Makefile target: its prerequisites and its recipe lines."""
    targets: dict[str, tuple[list[str], list[str]]] = {}
    current: list[str] | None = None
    for line in MAKEFILE.splitlines():
        rule = re.match(r"^([A-Za-z0-9_.$()/-]+):(?!=)\s*(.*)$", line)
        if rule:
            current = []
            targets[rule.group(1)] = (rule.group(2).split(), current)
        elif line.startswith("\t") and current is not None:
            current.append(line.strip())
        elif line.strip() and not line.startswith("#"):
            current = None
    return targets


def test_make_targets_named_in_the_readme_exist() -> None:
    targets = makefile_targets()
    named = {a[0] for a in MAKE if a} | set(re.findall(r"`make ([A-Za-z0-9_-]+)", README))
    assert named, "the README names no make target"
    for target in named:
        assert target in targets, f"make {target}: no such target in the Makefile"


def installed_extras(target: str, targets: dict[str, tuple[list[str], list[str]]]) -> set[str]:
    """The extras of moot that ``make TARGET`` installs (its prerequisites' included)."""
    prerequisites, recipe = targets.get(target, ([], []))
    extras = {e.strip() for line in recipe for group in re.findall(r"\.\[([^\]]+)\]", line) for e in group.split(",")}
    for prerequisite in prerequisites:
        extras |= installed_extras(prerequisite, targets)
    return extras


def test_extras_agree_with_pyproject_and_the_makefile() -> None:
    declared = set(PYPROJECT["project"]["optional-dependencies"])
    for group in re.findall(r"moot\[([^\]]+)\]", README):
        for extra in group.split(","):
            assert extra.strip() in declared, f"the README names moot[{group}]; pyproject has no extra {extra!r}"
    targets = makefile_targets()
    checked = 0
    for said in re.finditer(r"`make ([A-Za-z0-9_-]+)` installs", README):
        clause = re.split(r"\.\s|;", README[said.end() :], maxsplit=1)[0]  # what it installs, to the clause's end
        for group in re.findall(r"moot\[([^\]]+)\]", clause):
            extras = {e.strip() for e in group.split(",")}
            target = said.group(1)
            assert extras == installed_extras(target, targets), f"README: make {target} installs moot[{group}]"
            checked += 1
    assert checked, "the README no longer says which extras a make target installs: update this test"
    for target in targets:
        assert installed_extras(target, targets) <= declared


def test_counts_in_the_readme_are_true() -> None:
    from moot.debate.protocols import PRESETS
    from moot.tasks import TASKS

    stated = {
        "benchmark tasks": len(TASKS),  # the rows of `moot tasks` (moot.tasks.catalog)
        "presets": len(PRESETS),
    }
    for what, count in stated.items():
        for said in re.findall(rf"\b(\d+) {what}\b", README):
            assert int(said) == count, f"the README says {said} {what}; there are {count}"


def _options(command: str) -> set[str]:
    group = get_command(app)
    assert isinstance(group, TyperGroup)
    return {opt for param in group.commands[command].params for opt in [*param.opts, *param.secondary_opts]}


def _flags(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*|-[a-z])\b", text))


def test_option_tables_name_real_options() -> None:
    """The options the README's command-line section lists exist on the commands it names."""
    run, ask = _options("run"), _options("ask")
    shared = [line.split("|")[1] for line in README.splitlines() if line.startswith("| `-")]
    assert shared, "the README's table of shared options is missing"
    for cell in shared:
        for flag in _flags(cell):
            assert flag in run and flag in ask, f"README: {flag} is not an option of both run and ask"
    for prefix, options in (("`run` only:", run), ("`ask` only:", ask)):
        paragraph = README.split(prefix, 1)[1].split("\n\n", 1)[0]
        flags = _flags(paragraph)
        assert flags, f"README: {prefix} names no option"
        for flag in flags:
            assert flag in options, f"README: {prefix} {flag} is not an option"


def test_every_link_within_the_readme_names_a_heading() -> None:
    """GitHub's anchors: a heading in lower case, spaces as hyphens, punctuation other than hyphens dropped."""
    fenced = False
    anchors = set()
    for line in README.splitlines():
        fenced ^= line.lstrip().startswith("```")
        if not fenced and (heading := re.match(r"^#+ (.*)$", line)):
            anchors.add(re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-"))
    linked = set(re.findall(r"\]\(#([^)]+)\)", README))
    assert linked and linked <= anchors, f"links to no heading: {sorted(linked - anchors)}"
