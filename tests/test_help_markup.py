"""Every `--help` shows its bracketed words: Rich reads "[prices]" as a markup tag and drops it unless escaped
("\\[prices]"), which once left "at the experiment's )" in `moot run --help`."""

from __future__ import annotations

import re
from typing import Any

import typer
from typer.testing import CliRunner

from moot.cli import app

BRACKETED = re.compile(r"\[([a-z_]+(?:\.[a-z_]+)*)\]")


def commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command of the app (a group's too), with the words that name it."""
    found = [(path, group)]
    if hasattr(group, "commands"):  # a group (typer's click may be its own copy: no isinstance)
        for name, command in group.commands.items():
            found += commands(command, (*path, name))
    return found


def test_every_bracketed_word_of_every_help_text_is_shown() -> None:
    runner = CliRunner()
    checked, dropped = 0, []
    for path, command in commands(typer.main.get_command(app)):
        texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
        words = {w for text in texts for w in BRACKETED.findall(text)}
        if not words:
            continue
        shown = " ".join(runner.invoke(app, [*path, "--help"], env={"COLUMNS": "400"}).output.split())
        dropped += [f"moot {' '.join(path)} --help drops [{w}]" for w in sorted(words) if f"[{w}]" not in shown]
        checked += len(words)
    assert not dropped
    assert checked >= 3  # run's [prices] and [budget] at least
