"""What moot prints: progress as it happens on a pipe, tables that fit 80 columns without cutting a value,
model text printed as written, and labels that say what they are."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.table import Table
from typer.testing import CliRunner

from moot.backends.scripted import ScriptedBackend
from moot.cli import app
from moot.cli_output import fit_table, make_console, plural, shortened
from tests.test_readme import use_scripted_backend

ROOT = Path(__file__).parent.parent
SMOKE = ROOT / "examples" / "scripted-smoke.toml"


def moot_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return env | extra


def test_progress_lines_reach_a_pipe_as_they_happen(tmp_path: Path) -> None:
    """stdout a pipe (tee, CI): each question's line is readable while the run goes on, not at its end."""
    experiment = tmp_path / "slow.toml"
    experiment.write_text(
        'name = "slow"\nconcurrency = 1\n[[tasks]]\nname = "arithmetic"\ncount = 6\n'
        '[agent]\nbackend = { kind = "scripted", model = "numbers", delay_s = 0.5 }\n'
        '[[conditions]]\nname = "single"\nprotocol = "single"\n'
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "moot", "run", str(experiment)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=moot_env(),
    )
    try:
        assert process.stdout is not None
        header = process.stdout.readline()
        assert header.startswith("moot ") and "(6 questions)" in header
        first = process.stdout.readline()
        alive = process.poll() is None  # five questions of half a second each are still to come
        assert first.startswith("  single · ") and " · gold " in first, first
        assert alive, "the first progress line came only when the run had ended"
    finally:
        process.communicate(timeout=120)
    assert process.returncode == 0


def test_many_questions_on_a_pipe_get_progress_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """More than 60 questions and no terminal: a progress line every 5%, not a bar drawn only at the end."""
    use_scripted_backend(monkeypatch)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "-p", "single", "-q", "80"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("questions ")]
    assert lines[0].startswith("questions 4/80 · calls ") and lines[-1].startswith("questions 80/80 · ")
    assert len(lines) == 20


def run_80(*args: str, cwd: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "moot", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=moot_env(COLUMNS="80"),
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def first_column(output: str) -> str:
    """The first column's cells of the table rows, joined: a folded value reads whole again."""
    return "".join(line.split("│")[1].strip() for line in output.splitlines() if line.startswith("│"))


def assert_fits(output: str, width: int = 80) -> None:
    assert "…" not in output
    for line in output.splitlines():
        if any(c in line for c in "│┃┏┗┡└┌╇"):
            assert len(line) <= width, line


def test_tables_fit_80_columns_without_cutting_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / ("a-rather-long-folder-name-for-runs-" * 2 + "end")
    folder.mkdir()
    store = folder / "scripted-smoke-with-a-long-name-that-is-never-cut.sqlite"
    out = run_80("run", str(SMOKE), "--output", str(store), cwd=tmp_path)  # COLUMNS read as moot starts
    assert_fits(out)
    totals = out.split("totals", 1)[1]
    assert "0/24 (0%)" in totals and "not shown at this width: " in totals
    assert f"run stored in {store}\n" in out  # a path on its own line, whole

    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr("moot.commands.stores.console", make_console(piped=140))
    monkeypatch.setattr("moot.commands.catalog.console", make_console(piped=140))

    def shown(*args: str) -> str:
        result = CliRunner().invoke(app, list(args))
        assert result.exit_code == 0, result.output
        assert_fits(result.output)
        return result.output

    out = shown("runs", str(folder))
    assert str(store) in first_column(out)  # folded within its column, every character kept
    assert "complete" in out
    assert "chess-move(orchess-move:<depth>)" in first_column(shown("tasks")).replace(" ", "")  # wrapped, not cut
    assert "society" in first_column(shown("protocols"))
    shown("protocols", "components")
    liang = " ".join(shown("protocols", "show", "liang").split())
    assert "instruction │ the task's" in liang and "helper sampling │ as the agents" in liang
    assert "helper sampling │ no helper" in " ".join(shown("protocols", "show", "society").split())
    shown("models", "list")


def test_report_tables_fit_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("moot.debate.embeddings.available", lambda: False)  # no sentence-embedding model
    store = tmp_path / "smoke.sqlite"
    use_scripted_backend(monkeypatch)
    assert CliRunner().invoke(app, ["run", str(SMOKE), "--output", str(store)]).exit_code == 0
    result = CliRunner().invoke(app, ["report", str(store), "--no-html", "--resamples", "100"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert_fits(result.output)
    assert f"run scripted-smoke ({store})" in result.output
    assert "Accuracy and cost" in result.output and "not shown at this width: protocol" in result.output


def test_fit_table_drops_secondary_columns_then_wraps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    console = make_console(piped=140)
    assert console.width == 40
    table = Table()
    for column in ("name", "value", "detail", "extra"):
        table.add_column(column, no_wrap=True)
    table.add_row("/a/very/long/path/that/does/not/fit/in/forty/columns", "12,345", "x " * 30, "y")
    dropped = fit_table(table, console, optional=("extra",), flexible=("detail",))
    assert dropped == ["extra"]
    with console.capture() as captured:
        console.print(table)
    text = captured.get()
    assert "…" not in text and all(len(line) <= 40 for line in text.splitlines())
    assert "/a/very/long/path/that/does/not/fit/in/forty/columns" in first_column(text)
    assert "12,345" in text  # a number is not split while a text column can wrap instead


def test_plural() -> None:
    assert plural(1, "question") == "1 question"
    assert plural(2, "question") == "2 questions"
    assert plural(1, "reply", "replies") == "1 reply" and plural(0, "reply", "replies") == "0 replies"


def test_progress_labels_gold_ties_and_plurals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_scripted_backend(monkeypatch)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", str(SMOKE)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "arithmetic (4 questions)" in out and "seeds 0, 1" in out
    assert "  vote · 27+12*24+28-13*1 · gold 330 · r0: " in out
    assert " = 330" not in out
    assert "(tie broken)" in out  # three different answers: the tie rule took the first agent's
    assert "accuracy near 0% is expected" in out  # the scripted backend does not read the questions

    result = CliRunner().invoke(app, ["run", "-p", "single", "-q", "1"])
    assert result.exit_code == 0, result.output
    assert "arithmetic (1 question) · seed 0 · " in result.output
    assert "(1 questions)" not in result.output


def test_tie_broken_needs_a_tie_and_a_vote() -> None:
    from moot.debate.records import Vote
    from moot.runner.summary import tie_broken

    class Round:
        def __init__(self, vote: Vote) -> None:
            self.vote = vote

    class Result:
        def __init__(self, vote: Vote, final: str | None) -> None:
            self.rounds = (Round(vote),)
            self.final_answer = final

    tie = Vote((("3", 1), ("4", 1)), "3", ("3", "4"), 0)
    clear = Vote((("3", 2), ("4", 1)), "3", ("3",), 0)
    assert tie_broken(Result(tie, "3"))
    assert not tie_broken(Result(clear, "3"))
    assert not tie_broken(Result(tie, "3"), judged=True)  # a judge's or moderator's answer
    assert not tie_broken(Result(tie, None))


LATEX = "First, x^2 = 4.\n\\[ x^2 \\]\nIn [bold]brackets[/bold] too.\nThe answer is 4."


def test_ask_prints_model_text_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    use_scripted_backend(monkeypatch, ScriptedBackend(lambda request, index: LATEX))
    result = CliRunner().invoke(app, ["ask", "What is 2+2?", "-p", "single"])
    assert result.exit_code == 0, result.output
    assert "\\[ x^2 \\]" in result.output  # rich markup would eat the backslash
    assert "[bold]brackets[/bold]" in result.output
    assert "agent-1 → 4" in result.output and "final answer: 4 (answered)" in result.output
    assert "characters cut" not in result.output


def test_ask_says_how_much_of_a_reply_it_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    long = "word " * 200 + "\nThe answer is 4."
    use_scripted_backend(monkeypatch, ScriptedBackend(lambda request, index: long))
    result = CliRunner().invoke(app, ["ask", "What is 2+2?", "-p", "single"])
    assert result.exit_code == 0, result.output
    cut = len(long.strip()) - 400
    assert f"… ({cut:,} characters cut; --full shows all)" in result.output
    result = CliRunner().invoke(app, ["ask", "What is 2+2?", "-p", "single", "--full"])
    assert result.exit_code == 0 and "characters cut" not in result.output
    assert result.output.count("word") == 200


def test_piped_console_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert make_console(piped=140).width == 140  # not a terminal (pytest captures stdout)
    monkeypatch.setenv("COLUMNS", "80")
    assert make_console(piped=140).width == 80


def test_a_header_breaks_only_between_its_parts() -> None:
    from moot.cli_output import joined_lines

    parts = ["moot 0.1.0", "society (2×2)", "arithmetic (2 questions)", "seed 3", "model qwen2.5-0.5b"]
    assert joined_lines(parts, 80) == [
        "moot 0.1.0 · society (2×2) · arithmetic (2 questions) · seed 3",
        "model qwen2.5-0.5b",
    ]
    assert joined_lines(parts, 200) == [" · ".join(parts)]
    assert joined_lines(["a" * 10, "b"], 5) == ["a" * 10, "b"]


def test_shortened_cuts_at_a_word_and_marks_the_cut() -> None:
    assert shortened("What is  2+3?\n", 40) == "What is 2+3?"
    assert shortened("Miguel uses 2 pads of paper a week", 20) == "Miguel uses 2 pads…"
    assert len(shortened("Miguel uses 2 pads of paper a week", 20)) <= 20
    assert shortened("Supercalifragilistic", 8) == "Superca…"
    assert shortened("ab cd", 3) == "ab…"


def test_a_long_question_keeps_its_progress_line_within_the_width(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question longer than the line (GSM8K's, say) is shortened so each progress line reads in 80 columns."""
    use_scripted_backend(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr("moot.commands.run.console", make_console(piped=140))
    result = CliRunner().invoke(app, ["run", "-t", "gsm8k", "-q", "3", "-p", "society"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("  society · ")]
    assert len(lines) == 3, result.output
    assert all(len(line) <= 80 and "…" in line and " · gold " in line for line in lines), lines


def test_a_header_naming_many_conditions_breaks_between_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nine conditions (the stopping study's count) name themselves over several lines of at most 80
    columns, each condition whole on one line, a line that goes on ending in a comma."""
    use_scripted_backend(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr("moot.commands.run.console", make_console(piped=140))
    presets = ["single", "vote", "society", "sparse", "star", "self-refine", "liang", "liang-fixed", "liang-strict"]
    result = CliRunner().invoke(app, ["run", "-q", "1", *(arg for p in presets for arg in ("-p", p))])
    assert result.exit_code == 0, result.output
    header = result.output.split("\n  ", 1)[0].splitlines()  # up to the first progress line
    assert len(header) >= 3 and all(len(line) <= 80 for line in header), header
    assert header[0].startswith("moot ") and header[0].endswith(","), header
    named = " ".join(header).split(", ")
    assert [name.split(" (")[0].split(" · ")[-1] for name in named][: len(presets)] == presets, header


def test_ask_names_a_reasoning_models_thinking_and_shows_it_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    thinking = "<think>two and two make four, not five</think> The answer is 4."
    use_scripted_backend(monkeypatch, ScriptedBackend(lambda request, index: thinking))
    result = CliRunner().invoke(app, ["ask", "What is 2+2?", "-p", "single"])
    assert result.exit_code == 0, result.output
    assert "(reasoning, 7 tokens: --full shows it)" in result.output and "not five" not in result.output
    assert "agent-1 → 4" in result.output  # read from the content, not the reasoning's "five"
    full = CliRunner().invoke(app, ["ask", "What is 2+2?", "-p", "single", "--full"])
    assert full.exit_code == 0 and "(reasoning, 7 tokens)" in full.output and "not five" in full.output
