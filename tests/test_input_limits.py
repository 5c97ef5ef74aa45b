"""Absurd or hostile input is refused with one `moot: error:` line (exit 2) before any work (issue 14,
items 9, 10 and 11): names that would be paths, sizes beyond the documented limits, files that are
not UTF-8 or nest too deeply, numbers longer than Python converts. Nothing is created."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moot.cli import app
from moot.debate.protocol_presets import resolve_protocol
from moot.errors import ConfigError
from moot.limits import MAX_AGENTS, MAX_GENERATED_QUESTIONS, MAX_POOL, MAX_ROUNDS
from moot.tasks import load_local
from moot.tasks.arithmetic import ArithmeticTask
from moot.tasks.extract import canonical_number, numbers_equal
from moot.tasks.gsm8k import GSM8KTask

SCRIPTED = """
[[tasks]]
name = "arithmetic"
count = 1

[agent]
backend = { kind = "scripted", model = "numbers" }

[[conditions]]
name = "single"
protocol = "single"
"""
# a server that is not there: options are checked before it is asked, and no local model is ever loaded
DEAD = ("-b", "openai", "--base-url", "http://127.0.0.1:9/v1")


def cli(*args: str) -> tuple[int, str, str]:
    """`moot ARGS` in this process: (exit status, stdout, stderr)."""
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def moot(*args: str, cwd: Path) -> tuple[int, str, str]:
    """`moot ARGS` in a child process, for input that used to hang: a hang fails the test."""
    result = subprocess.run([sys.executable, "-m", "moot", *args], capture_output=True, text=True, timeout=90, cwd=cwd)
    return result.returncode, result.stdout, result.stderr


def refused(status: int, stdout: str, stderr: str, message: str) -> None:
    assert "Traceback" not in stdout + stderr
    assert status == 2, stdout + stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("moot: error: "), stderr
    assert message in lines[0], lines[0]


def write(folder: Path, text: str, name: str = "exp.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


# --- item 9: a name is a name; moot creates no folder above a store -------------------------------


@pytest.mark.parametrize(
    ("head", "condition", "message"),
    [
        ('name = "a/../../x"\n', "", "name: a name must not hold a path separator, got 'a/../../x'"),
        ('name = "x\\\\y"\n', "", "name: a name must not hold a path separator"),
        ('name = ".."\n', "", "name: a name must not hold '..'"),
        ('name = "a\\u0000b"\n', "", "name: a name must not hold NUL"),
        ('name = "a\\u001bb"\n', "", "name: a name must not hold control character U+001B"),
        ('name = "a\\nb"\n', "", "name: a name must not hold control character U+000A"),
        (f'name = "{"n" * 300}"\n', "", "name: a name is at most 120 bytes in UTF-8, got 300"),
        ("", 'name = "a/b"', "conditions.0.name: a name must not hold a path separator"),
        ("", 'name = "c\\u0000"', "conditions.0.name: a name must not hold NUL"),
    ],
)
def test_names_with_separators_dots_controls_or_too_long_are_refused(
    head: str, condition: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "deep" / "er"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    text = head + SCRIPTED
    if condition:
        text = text.replace('name = "single"', condition)
    path = write(work, text)
    refused(*cli("run", str(path)), message)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["deep", "er", "exp.toml"]  # nothing created anywhere


def test_agent_and_preset_names_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    agents = SCRIPTED.replace('protocol = "single"', 'protocol = "vote"\nagents = [{name = ".."}, {name = "b"}]')
    refused(*cli("run", str(write(tmp_path, agents))), "conditions.0.agents.list[AgentTemplate].0.name: a name")
    preset = SCRIPTED + '\n[presets."p/q"]\nbase = "vote"\n'
    refused(*cli("run", str(write(tmp_path, preset))), "presets: preset 'p/q': a name must not hold a path separator")
    assert not (tmp_path / "runs").exists()


def test_a_given_output_is_used_as_is_and_no_folder_is_created_above_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, 'name = "x"\n' + SCRIPTED)
    refused(
        *cli("run", str(path), "--output", "missing/sub/run.sqlite"),
        "output missing/sub/run.sqlite: the folder missing/sub does not exist",
    )
    in_file = write(tmp_path, 'output = "nowhere/run.sqlite"\n' + SCRIPTED, "out.toml")
    refused(*cli("run", str(in_file)), "the folder nowhere does not exist")
    refused(*cli("run", str(path), "--output", str(tmp_path)), "is a folder; name the store's file")
    refused(*cli("run", str(path), "--output", "o" * 300 + ".sqlite"), "a file or folder name is at most 255 bytes")
    nul = write(tmp_path, 'output = "a\\u0000b.sqlite"\n' + SCRIPTED, "nul.toml")
    refused(*cli("run", str(nul)), "a path must not hold NUL")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.toml", "nul.toml", "out.toml"]

    status, stdout, stderr = cli("run", str(path))  # the default ./runs is the one folder moot creates
    assert status == 0, stdout + stderr
    assert [p.name for p in (tmp_path / "runs").iterdir()][0].startswith("x-")
    (tmp_path / "given").mkdir()
    status, stdout, stderr = cli("run", str(path), "--output", "given/mine.sqlite")
    assert status == 0 and (tmp_path / "given" / "mine.sqlite").is_file(), stdout + stderr


# --- item 10: absurd sizes, refused before any work ------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-q", "1000000000000"], "the question count of generated task arithmetic is at most 100,000"),
        (["-t", "chess-validity", "-q", "1000000000000"], "generated task chess-validity is at most 100,000"),
        (["--agents", "100000"], "agents is at most 64, got 100,000"),
        (["-p", "diverse", "--set", "pool_size=100000"], "initializer.pool_size (the candidate pool) is at most 256"),
    ],
)
def test_absurd_sizes_from_options_are_refused_at_once(args: list[str], message: str, tmp_path: Path) -> None:
    # an unreachable server: the sizes are refused before it is even asked
    refused(*moot("run", *DEAD, *args, cwd=tmp_path), message)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("count = 1", "count = 1000000000000"), "tasks.0: the question count of generated task arithmetic"),
        (("count = 1", 'ids = ["arithmetic-s0-999999999999"]'), "the index of a generated question is below 100,000"),
        (('protocol = "single"', 'protocol = "society"\nagents = 100000'), "conditions.0: agents is at most 64"),
        (('protocol = "single"', 'protocol = "society"\nrounds = 1000'), "conditions.0: rounds is at most 50"),
        (('name = "arithmetic"', 'name = "chess-move:99"'), "the Stockfish depth is at most 30, got 99"),
    ],
)
def test_absurd_sizes_from_a_file_are_refused_at_once(change: tuple[str, str], message: str, tmp_path: Path) -> None:
    path = write(tmp_path, SCRIPTED.replace(*change))
    refused(*moot("run", str(path), cwd=tmp_path), message)
    assert list(tmp_path.iterdir()) == [path]


def test_seeds_rounds_and_pools_at_and_beyond_their_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    seeds = "seeds = [" + ", ".join(map(str, range(1001))) + "]\n"
    refused(*cli("run", str(write(tmp_path, seeds + SCRIPTED))), "seeds: at most 1,000 seeds, got 1,001")
    refused(*cli("run", str(write(tmp_path, "seeds = [18446744073709551616]\n" + SCRIPTED))), "64-bit integer")
    # each within its limit, together 10^8 results: refused before any question is generated (issue 42)
    many = seeds.replace(", 1000]", "]") + SCRIPTED.replace("count = 1", "count = 100000")
    refused(*cli("run", str(write(tmp_path, many))), "100,000,000 results planned")
    refused(*cli("run", *DEAD, "--seed", "18446744073709551616"), "option seed: Input should be less than or equal to")
    refused(*cli("run", *DEAD, "--concurrency", "0"), "option --concurrency: must be a positive integer, got 0")
    assert not (tmp_path / "runs").exists()

    spec = resolve_protocol("society", agents=MAX_AGENTS, rounds=MAX_ROUNDS)
    assert (spec.agents, spec.rounds) == (64, 50)
    assert resolve_protocol("diverse", agents=4, components={"pool_size": MAX_POOL}).initializer.pool(4) == 256
    for kwargs in ({"agents": 65}, {"rounds": 51}, {"components": {"pool_size": 257}}):
        with pytest.raises(ConfigError, match="is at most"):
            resolve_protocol("diverse", **kwargs)


def test_the_last_generated_question_is_found_by_id_without_generating_more() -> None:
    task = ArithmeticTask()
    last = task.by_ids([f"arithmetic-s3-{MAX_GENERATED_QUESTIONS - 1}", "arithmetic-s3-2", "arithmetic-s1-0"])
    assert [q.id for q in last] == ["arithmetic-s3-99999", "arithmetic-s3-2", "arithmetic-s1-0"]
    assert last[1] == task.questions(3, 3)[2] and last[2] == task.questions(1, 1)[0]
    with pytest.raises(ConfigError, match="below 100,000"):
        task.by_ids(["arithmetic-s0-" + "9" * 5000])  # more digits than Python converts to int


def test_limits_are_documented_in_help_and_readme() -> None:
    status, stdout, _ = cli("run", "--help")
    assert status == 0
    flat = " ".join(stdout.replace("│", " ").split())
    for text in ("at most 64", "at most 50", "100,000 for a generated task", "pool_size is at most 256"):
        assert text in flat
    readme = " ".join((Path(__file__).parent.parent / "docs" / "cli.md").read_text().split())
    assert "most 64 agents and 50 rounds per condition" in readme and "at most 100,000 questions" in readme


# --- item 11 (input): files and numbers that used to end in a traceback ----------------------------


def test_bad_experiment_files_give_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'# ok\nname = "caf\xe9"\n' + SCRIPTED.encode())
    refused(*cli("run", str(latin)), f"{latin}: line 2: not UTF-8 text")
    deep = write(tmp_path, "a = " + "[" * 5000 + "]" * 5000 + "\n", "deep.toml")
    refused(*cli("run", str(deep)), "malformed TOML: arrays or tables nested too deeply")
    tables = write(tmp_path, "a = " + "{b = " * 2000 + "1" + "}" * 2000 + "\n", "tables.toml")
    refused(*cli("run", str(tables)), "nested too deeply")
    digits = write(tmp_path, "seeds = [" + "1" * 5000 + "]\n" + SCRIPTED, "digits.toml")
    refused(*cli("run", str(digits)), "malformed TOML: Exceeds the limit (4300 digits) for integer string conversion")
    prices = write(tmp_path, SCRIPTED + "[prices.numbers]\nprompt = inf\ncompletion = 0\n", "prices.toml")
    refused(*cli("run", str(prices)), "prices.numbers.prompt: Input should be a finite number")
    refused(*cli("run", *DEAD, "-t", "chess-move:²"), "chess-move:<depth> needs a positive integer depth, got '²'")
    refused(*cli("run", *DEAD, "-t", "chess-move:" + "9" * 5000), "the Stockfish depth is at most 30")
    refused(*cli("run", *DEAD, "-p", "../x"), "unknown protocol '../x'")
    assert not (tmp_path / "runs").exists()


def test_a_gold_answer_of_5000_digits_is_read_and_compared_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    long = "7" * 5000
    data = tmp_path / "long.jsonl"
    data.write_text(json.dumps({"question": "How much?", "answer": f"so #### {long}"}) + "\n")
    task = load_local(GSM8KTask(), data)
    (question,) = task.questions(1, 0)
    assert question.gold == long
    assert task.score(f"{long}.000", question) and not task.score("7" * 4999 + "8", question)
    assert task.extract(f"It is \\boxed{{{long}}}.").answer == long
    assert canonical_number("0.12345678901234567890123456789012345") == "0.12345678901234567890123456789012345"
    assert canonical_number("1e999999999") is None and canonical_number("1.5e2") == "150"
    assert numbers_equal("1" * 6000, "1" * 6000)

    experiment = SCRIPTED.replace('name = "arithmetic"', f'name = "gsm8k"\ndata = "{data}"')
    status, stdout, stderr = cli("run", str(write(tmp_path, 'name = "long"\n' + experiment)))
    assert status == 0 and "Traceback" not in stdout + stderr, stdout + stderr

    raw = tmp_path / "raw.jsonl"
    raw.write_text('{"question": "ok?", "answer": "#### 1"}\n{"question": "How much?", "answer": ' + long + "}\n")
    refused(
        *cli("run", *DEAD, "-t", "gsm8k", "--data", str(raw)),
        f"{raw}: row 2: an integer of more than 4,300 digits (value has 5000 digits); write a number that long",
    )
