"""Text from a question, a reply, a model's reasoning, a server or a file never drives the terminal: its
escape sequences, control characters and bidirectional overrides are shown, not sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moot.backends.base import GenerationRequest
from moot.backends.scripted import ScriptedBackend
from moot.cli import app
from moot.cli_output import printable
from moot.errors import BackendError
from tests.test_readme import use_scripted_backend

# a screen clear, a window title (OSC 0), a hyperlink (OSC 8), a bell, NUL, a C1 control and a right-to-left override
HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ \x00\x9b31m\u202eevil\u2066 [bold]x[/bold]"
RAW = ("\x1b", "\x07", "\x00", "\x9b", "\u202e", "\u2066")


def assert_shown_not_sent(output: str) -> None:
    assert not [c for c in RAW if c in output], repr(output)
    assert "\\x1b[2J" in output and "\\u202e" in output, output  # shown, visibly
    assert "[bold]x[/bold]" in output  # not read as markup


def test_printable_keeps_text_and_shows_controls() -> None:
    assert printable("line one\n\tline two, ∑ é 中文 ✓") == "line one\n\tline two, ∑ é 中文 ✓"
    assert printable("a\r\nb") == "a\nb"  # a Windows line end is a line end
    assert printable("\x1b]0;t\x07\x00\x7f\x85\r\u200e\u200f\u202a\u202e\u2069") == (
        "\\x1b]0;t\\x07\\x00\\x7f\\x85\\r\\u200e\\u200f\\u202a\\u202e\\u2069"
    )


def hostile_reply(request: GenerationRequest, index: int) -> str:
    return f"<think>{HOSTILE}</think> {HOSTILE}\nAnswer: {HOSTILE}"


def test_ask_shows_a_hostile_reply_and_reasoning(monkeypatch: pytest.MonkeyPatch) -> None:
    use_scripted_backend(monkeypatch, ScriptedBackend(hostile_reply))
    result = CliRunner().invoke(app, ["ask", f"What is {HOSTILE}?", "-p", "single", "--full"])
    assert result.exit_code == 0, result.output
    assert_shown_not_sent(result.output)


def test_run_shows_a_hostile_question_and_reply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A data file's question and answer, and the model's reply, in the progress line and the tables."""
    data = tmp_path / "hostile.jsonl"
    data.write_text(json.dumps({"q": f"Q {HOSTILE}", "a": f"A {HOSTILE}"}) + "\n")
    use_scripted_backend(monkeypatch, ScriptedBackend(hostile_reply))
    monkeypatch.chdir(tmp_path)
    args = ["run", "-t", "hostile", "--data", str(data), "--format", "text", "-p", "single", "-q", "1"]
    result = CliRunner().invoke(app, [*args, "--field", "question=q", "--field", "answer=a"])
    assert result.exit_code == 0, result.output
    assert_shown_not_sent(result.output)


def failing_reply(request: GenerationRequest, index: int) -> str:
    raise BackendError(f"the server said: {HOSTILE}")


def test_a_hostile_error_message_is_shown_not_sent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server's error: in `moot run`'s progress line, and as `moot ask`'s one-line error on stderr."""
    use_scripted_backend(monkeypatch, ScriptedBackend(failing_reply))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "-p", "single", "-q", "1"])
    assert result.exit_code == 1, result.output
    assert_shown_not_sent(result.output)
    result = CliRunner().invoke(app, ["ask", "What is 2+2?", "-p", "single"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("moot: error: ") and result.stderr.count("\n") == 1, result.stderr
    assert_shown_not_sent(result.stderr)
