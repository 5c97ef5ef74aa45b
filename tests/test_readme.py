"""The README's and the manual's commands work as written: every `moot ...` line of the code blocks of
README.md and of every page under docs/ parses against the real command line (an option it names that does
not exist fails here); those of the README and of the manual's pages moved out of it (MANUAL) that run in
seconds without a model are run, in that order, on the scripted backend in a temporary folder; every `make`
target they name exists; their extras, counts and option tables agree with the code, and every link between
them names a file that exists and a heading that it has."""

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
# The README's manual, moved to docs/ (issue 60), page by page in the order the README held it: their commands
# run after the README's own, in this order. The other pages' commands (servers, clusters, training) are parsed.
MANUAL = (
    "cli.md",
    "experiments.md",
    "protocols.md",
    "reports.md",
    "theory.md",
    "confidence-training.md",
    "reproducibility.md",
    "tasks.md",
    "backends.md",
    "extending.md",
    "library.md",
    "development.md",
)
# README.md and every page of docs/, by their paths in the repository
PAGES = {
    "README.md": README,
    **{f"docs/{path.name}": path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs").glob("*.md"))},
}
IN_ORDER = ["README.md", *(f"docs/{name}" for name in MANUAL)]  # the pages whose commands run, in order
DOCUMENTED = "\n\n".join(PAGES.values())  # what the README used to say, wherever it is now
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
    # the scripted backend's answers are almost never right, so no debate helps: nothing to learn (tests/test_gate.py
    # trains and shows gates on stores made for it)
    ("gate", "train"),
    ("gate", "show"),
}


def code_lines(text: str) -> Iterator[str]:
    """Every line inside a Markdown file's fenced code blocks."""
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


MOOT = [c[1:] for page in IN_ORDER for c in commands(PAGES[page]) if c[0] == "moot"]  # run, in this order
PARSED = [c[1:] for page, text in PAGES.items() if page not in IN_ORDER for c in commands(text) if c[0] == "moot"]
MAKE = [c[1:] for text in PAGES.values() for c in commands(text) if c[0] == "make"]


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
    """The extraction finds the README's and the manual's commands (a change of their format would otherwise
    pass silently), and the README's first two commands are still the two that set everything up."""
    assert [c[:2] for c in commands(README)[:2]] == [["make", "demo"], ["make", "test"]]
    for page in IN_ORDER:
        assert page in PAGES, f"{page} is gone: update MANUAL"
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


@pytest.mark.parametrize("args", MOOT + PARSED, ids=words)
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
    """The command to run for a README or manual line (None: parsed only), with options that keep it fast."""
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
    """The README's commands, then the manual's, in their order, in a fresh folder with the examples: every
    agent's backend is the scripted one (numbers fixed by each call's seed), so nothing loads a model."""
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
    named = {a[0] for a in MAKE if a} | set(re.findall(r"`make ([A-Za-z0-9_-]+)", DOCUMENTED))
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
    for page, text in PAGES.items():
        for group in re.findall(r"moot\[([^\]]+)\]", text):
            for extra in group.split(","):
                assert extra.strip() in declared, f"{page} names moot[{group}]; pyproject has no extra {extra!r}"
    targets = makefile_targets()
    checked = 0
    for page, text in PAGES.items():
        for said in re.finditer(r"`make ([A-Za-z0-9_-]+)` installs", text):
            clause = re.split(r"\.\s|;", text[said.end() :], maxsplit=1)[0]  # what it installs, to the clause's end
            for group in re.findall(r"moot\[([^\]]+)\]", clause):
                extras = {e.strip() for e in group.split(",")}
                target = said.group(1)
                assert extras == installed_extras(target, targets), f"{page}: make {target} installs moot[{group}]"
                checked += 1
    assert checked, "the README no longer says which extras a make target installs: update this test"
    for target in targets:
        assert installed_extras(target, targets) <= declared


def test_counts_in_the_readme_are_true() -> None:
    from moot.debate.protocol_presets import PRESETS
    from moot.tasks import TASKS

    stated = {
        "benchmark tasks": len(TASKS),  # the rows of `moot tasks` (moot.tasks.catalog)
        "presets": len(PRESETS),
    }
    for what, count in stated.items():
        assert re.search(rf"\b(\d+) {what}\b", README), f"the README no longer says how many {what}: update this test"
        for page, text in PAGES.items():
            for said in re.findall(rf"\b(\d+) {what}\b", text):
                assert int(said) == count, f"{page} says {said} {what}; there are {count}"


def _options(command: str) -> set[str]:
    group = get_command(app)
    assert isinstance(group, TyperGroup)
    return {opt for param in group.commands[command].params for opt in [*param.opts, *param.secondary_opts]}


def _flags(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*|-[a-z])\b", text))


def test_option_tables_name_real_options() -> None:
    """The options the manual's command-line page (once the README's section) lists exist on the commands it
    names."""
    run, ask = _options("run"), _options("ask")
    page = PAGES["docs/cli.md"]
    shared = [line.split("|")[1] for line in page.splitlines() if line.startswith("| `-")]
    assert shared, "the table of the options run and ask share is missing"
    for cell in shared:
        for flag in _flags(cell):
            assert flag in run and flag in ask, f"docs/cli.md: {flag} is not an option of both run and ask"
    for prefix, options in (("`run` only:", run), ("`ask` only:", ask)):
        paragraph = page.split(prefix, 1)[1].split("\n\n", 1)[0]
        flags = _flags(paragraph)
        assert flags, f"docs/cli.md: {prefix} names no option"
        for flag in flags:
            assert flag in options, f"docs/cli.md: {prefix} {flag} is not an option"


def anchors(text: str) -> set[str]:
    """GitHub's anchors of a Markdown file's headings: a heading in lower case, spaces as hyphens, punctuation
    other than hyphens dropped (the site's anchors are made alike: mkdocs.yml's toc slugify)."""
    fenced = False
    found = set()
    for line in text.splitlines():
        fenced ^= line.lstrip().startswith("```")
        if not fenced and (heading := re.match(r"^#+ (.*)$", line)):
            found.add(re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-"))
    return found


def links(text: str) -> list[str]:
    """The targets of a Markdown file's links and images, outside code blocks and inline code."""
    fenced = False
    found = []
    for line in text.splitlines():
        fenced ^= line.lstrip().startswith("```")
        if not fenced:
            found += re.findall(r"\]\(([^()\s]+)\)", re.sub(r"(`+).+?\1", "", line))
    return found


def test_every_link_within_the_readme_names_a_heading() -> None:
    """Every link of README.md and of the pages under docs/ names a file of the repository (relative to the
    page, as GitHub reads it) and, with an anchor, a heading of that file; URLs are not followed."""
    assert links(README), "the README links nowhere: the extraction is broken"
    checked = 0
    for page, text in PAGES.items():
        for target in links(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # a URL
            path, _, anchor = target.partition("#")
            file = ((ROOT / page).parent / path).resolve() if path else ROOT / page
            assert file.is_relative_to(ROOT) and file.exists(), f"{page} links to {target}: no such file"
            if anchor:
                assert file.suffix == ".md", f"{page} links to {target}: an anchor in a file that is no page"
                assert anchor in anchors(file.read_text(encoding="utf-8")), f"{page} links to {target}: no such heading"
                checked += 1
    assert checked, "no link names a heading: the extraction is broken"
