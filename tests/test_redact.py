"""No credential reaches what moot writes or prints: the store, the report, an export, the terminal."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from moot.backends.base import GenerationRequest, Message
from moot.backends.config import OpenAIBackendConfig
from moot.backends.openai_api import OpenAIBackend
from moot.errors import BackendError, ConfigError
from moot.redact import redact, register_secret
from tests.integration.servers import ECHO_KEY, FaultProxy

KEY = "sk-proj-Zq81xY0tEnvSecretValue"  # the key the API key's environment variable holds
PASSWORD = "hunter2-url-password"
USER = "alice-the-user"
QUERY_TOKEN = "qtok-Query-Secret-77"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()  # what the client sends for user:password@
SECRETS = (KEY, PASSWORD, USER, QUERY_TOKEN, BASIC)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("http://alice:pw@host:8080/v1", "http://***@host:8080/v1"),
        ("https://tok@host/v1 and http://u:p@other/", "https://***@host/v1 and http://***@other/"),
        ("http://host/v1?api-key=abc&x=1", "http://host/v1?api-key=***&x=1"),
        ("http://host/v1?api_key=abc", "http://host/v1?api_key=***"),
        ("http://host/v1?x=1&key=abc#f", "http://host/v1?x=1&key=***#f"),
        ("http://host/v1?token=abc&access_token=def", "http://host/v1?token=***&access_token=***"),
        ("http://host/v1?api-version=2024-01-01", "http://host/v1?api-version=2024-01-01"),
        ("Incorrect API key provided: Bearer abc.def-ghi", "Incorrect API key provided: Bearer ***"),
        ("Incorrect API key provided: plainvalue123.", "Incorrect API key provided: ***"),
        ("Incorrect API key provided: Basic YWxpY2U6cHc=", "Incorrect API key provided: Basic ***"),
        ("invalid key sk-abcdefgh12345 given", "invalid key sk-*** given"),
        ("Authorization: Bearer xyz123", "Authorization: Bearer ***"),
        ("http://127.0.0.1:8080/v1 answered HTTP 500: oops", "http://127.0.0.1:8080/v1 answered HTTP 500: oops"),
        ("the answer is 42, a key idea", "the answer is 42, a key idea"),
    ],
)
def test_redact_masks_credentials_and_nothing_else(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_a_registered_secret_is_masked_wherever_it_appears() -> None:
    register_secret("zz-registered-secret-1")
    assert redact("x zz-registered-secret-1 y") == "x *** y"
    assert "zz-registered-secret-1" not in str(BackendError("echo: zz-registered-secret-1"))
    assert str(ConfigError("at http://u:p@h/v1")) == "at http://***@h/v1"  # every moot error is redacted


def test_a_base_url_keeps_its_credentials_for_requests_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOOT_REDACT_KEY", KEY)
    url = f"http://{USER}:{PASSWORD}@127.0.0.1:9/v1?api-key={QUERY_TOKEN}"
    config = OpenAIBackendConfig(base_url=url, model="m", api_key_env="MOOT_REDACT_KEY")
    assert config.base_url == url  # what requests use
    shown = "http://***@127.0.0.1:9/v1?api-key=***"
    assert config.model_dump(mode="json")["base_url"] == shown and config.describe() == f"m at {shown}"
    backend = OpenAIBackend(config)
    assert backend.model_id == f"openai:{shown}:m"
    assert all(s not in backend.model_id for s in SECRETS)


@pytest.fixture
def server() -> Iterator[FaultProxy]:
    fake = FaultProxy(None)
    yield fake
    fake.close()


async def test_a_key_echoed_in_a_401_is_masked_in_the_error(
    server: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOOT_REDACT_KEY", KEY)
    backend = OpenAIBackend(OpenAIBackendConfig(base_url=server.url, model="m", api_key_env="MOOT_REDACT_KEY"))
    server.faults = [ECHO_KEY]
    with pytest.raises(BackendError) as raised:
        await backend.generate(GenerationRequest(messages=(Message("user", "hi"),), max_tokens=4))
    await backend.aclose()
    assert str(raised.value) == f"{server.url} answered HTTP 401: Incorrect API key provided: Bearer ***"
    assert server.seen == 1  # a refused key is not retried


def flat(text: str) -> str:
    """Printed text without the line breaks and table borders that may cut a secret in two."""
    return "".join(c for c in text if not c.isspace() and c not in "│┃")


def moot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"MOOT_REDACT_KEY": KEY}
    return subprocess.run(
        [sys.executable, "-m", "moot", *args], capture_output=True, text=True, timeout=180, cwd=cwd, env=env
    )


def test_no_secret_in_the_store_report_export_or_output(server: FaultProxy, tmp_path: Path) -> None:
    """A server echoes the key in a 401; a base URL carries a user, a password and an api-key (then the
    client sends Basic authorization, which the server echoes instead)."""
    url = server.url.replace("http://", f"http://{USER}:{PASSWORD}@") + f"?api-key={QUERY_TOKEN}"
    server.faults = [ECHO_KEY]  # the first question's call
    out = tmp_path / "out"
    out.mkdir()
    store = out / "run.sqlite"
    common = ["--backend", "openai", "--base-url", url, "--api-key-env", "MOOT_REDACT_KEY", "-p", "single"]
    printed = []
    run = moot("run", *common, "-q", "2", "-o", str(store), cwd=tmp_path)
    printed.append(run.stdout + run.stderr)
    assert run.returncode == 1, printed[-1]  # one question ended with an error
    assert "IncorrectAPIkeyprovided:Basic***" in flat(printed[-1])
    assert "http://***@127.0.0.1" in printed[-1] and "api-key=***" in printed[-1]
    retry = moot("run", *common, "-q", "2", "-o", str(store), "--retry-errors", cwd=tmp_path)
    printed.append(retry.stdout + retry.stderr)
    assert retry.returncode == 0, printed[-1]
    server.faults = [ECHO_KEY] * 2  # the key itself, echoed
    common[common.index(url)] = server.url
    again = moot("run", *common, "-q", "3", "-o", str(out / "second.sqlite"), cwd=tmp_path)
    printed.append(again.stdout + again.stderr)
    assert again.returncode == 1 and "IncorrectAPIkeyprovided:Bearer***" in flat(printed[-1]), printed[-1]
    for command in (
        ["report", str(store), "--html", str(out / "report.html"), "--markdown", str(out / "report.md")],
        ["report", str(out / "second.sqlite"), "--html", str(out / "second.html")],
        ["runs", str(out)],
        *(["export", str(store), "--table", t, "--out", str(out / f"{t}.jsonl")] for t in ("results", "call_errors")),
        *(
            ["export", str(store), "--table", t, "--out", str(out / f"{t}.csv"), "-f", "csv"]
            for t in ("calls", "conditions")
        ),
        ["export", str(out / "second.sqlite"), "--table", "call_errors", "--out", str(out / "second.jsonl")],
    ):
        result = moot(*command, cwd=tmp_path)
        printed.append(result.stdout + result.stderr)
        assert result.returncode == 0, printed[-1]
    written = sorted(p for p in out.iterdir() if p.is_file())
    assert {p.name for p in written} >= {"run.sqlite", "report.html", "report.md", "call_errors.jsonl", "calls.csv"}
    assert "Basic ***" in (out / "call_errors.jsonl").read_text()  # the error is kept, its credential is not
    assert "Bearer ***" in (out / "second.jsonl").read_text()
    for secret in SECRETS:
        for path in written:
            assert secret.encode() not in path.read_bytes(), (secret, path.name)
        for text in printed:
            assert secret not in flat(text), (secret, text)


def _encodings(secret: str) -> list[str]:
    """The forms a server may echo a secret in: percent-encoded, base64 (standard and URL-safe, with and
    without padding), JSON-escaped."""
    raw = secret.encode()
    padded = [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()]
    return [quote(secret, safe=""), *padded, *(p.rstrip("=") for p in padded), json.dumps(secret)[1:-1]]


@pytest.mark.parametrize(
    "secret",
    ["zq-Encoded/Key+With?Odd=Chars~1", 'zq-key "quoted" with spaces\\and\\backslashes', "zq-ÿ-unicode-key-Ω"],
)
def test_a_registered_secret_is_masked_in_every_encoding_a_server_echoes(secret: str) -> None:
    register_secret(secret)
    for form in [secret, *_encodings(secret)]:
        shown = redact(f"error: got {form} here")
        assert shown == "error: got *** here", (form, shown)


def test_a_key_with_spaces_or_quotes_is_masked_whole() -> None:
    key = 'zk a "spaced" key, with quotes'
    register_secret(key)
    for shown in (redact(f"Incorrect API key provided: {key}."), redact(json.dumps({"error": f"bad key {key}"}))):
        assert all(piece not in shown for piece in ("spaced", "quotes")), shown


def test_a_long_secret_cut_short_is_masked() -> None:
    key = "zp-Truncated0Key1Value2Xyz"  # 26 characters: any prefix of at least 18 is masked
    register_secret(key)
    assert redact(f"key {key[:-4]}... is invalid") == "key ***... is invalid"
    assert redact(f"key starts with {key[:18]}") == "key starts with ***"
    assert redact(f"a {key[:17]} is too short to tell") == f"a {key[:17]} is too short to tell"
    register_secret("zp-short-01")  # under 12 characters: only whole
    assert redact("zp-short-0 zp-short-01") == "zp-short-0 ***"


def test_ordinary_words_stay_readable() -> None:
    register_secret("abc")  # too short to mask everywhere: it would mask ordinary text
    register_secret("the-answer-is-42-ok")
    assert redact("abc: the answer is 42") == "abc: the answer is 42"


def test_a_model_id_embedding_the_key_is_masked() -> None:
    """A server's /v1/models names its model with the key in it (plain or encoded): what moot shows of that
    id, through ``redact``, is masked."""
    key = "zm-Model0Embedded1Key2"
    register_secret(key)
    for form in [key, *_encodings(key)]:
        assert redact(f"openai:http://127.0.0.1:8080/v1:llama-{form}") == "openai:http://127.0.0.1:8080/v1:llama-***"


# -- issue 59: a key holding quotes, a backslash and a run of spaces -------------------------------------------
ODD_KEY = 'xQ"yQQ\\zRR;,wSS  tailTT'  # as typed in the environment: a quote, a backslash, ";,", two spaces
ODD_PIECES = ("yQQ", "zRR", "wSS", "tailTT")  # what must not be left of it anywhere


@pytest.mark.parametrize(
    "form",
    [
        ODD_KEY,
        'xQ"yQQ\\zRR;,wSS tailTT',  # its run of spaces collapsed (an error message shortened to one line)
        'xQ\\"yQQ\\\\zRR;,wSS  tailTT',  # JSON-escaped
        'xQ\\"yQQ\\\\zRR;,wSS tailTT',  # JSON-escaped, spaces collapsed
        "xQ%22yQQ%5CzRR%3B%2CwSS%20%20tailTT",  # URL-encoded
        "xQ%22yQQ%5CzRR%3B%2CwSS++tailTT",  # URL-encoded as a form
        "xQ%22yQQ%5CzRR;,wSS%20%20tailTT",  # URL-encoded with ";," left as they are (a path's encoding)
        "xQ%22yQQ%5czRR%3b%2cwSS%20%20tailTT",  # lower-case escapes
        'xQ"yQQ\\\\zRR;,wSS  tailTT',  # Python's repr of it (a dict printed whole)
        "xQ&quot;yQQ\\zRR;,wSS  tailTT",  # HTML-escaped
    ],
)
def test_a_key_with_quotes_a_backslash_and_spaces_is_masked_whole_in_every_form(form: str) -> None:
    register_secret(ODD_KEY)
    shown = redact(f"Incorrect API key provided: Bearer {form}. Try again")
    assert shown == "Incorrect API key provided: Bearer ***. Try again", (form, shown)


async def test_a_401_echoing_a_key_with_quotes_a_backslash_and_spaces_masks_it_whole(
    server: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOOT_REDACT_KEY", ODD_KEY)
    backend = OpenAIBackend(OpenAIBackendConfig(base_url=server.url, model="m", api_key_env="MOOT_REDACT_KEY"))
    server.faults = [ECHO_KEY]
    with pytest.raises(BackendError) as raised:
        await backend.generate(GenerationRequest(messages=(Message("user", "hi"),), max_tokens=4))
    await backend.aclose()
    assert server.headers[0]["authorization"] == f"Bearer {ODD_KEY}"  # sent as it is
    assert str(raised.value) == f"{server.url} answered HTTP 401: Incorrect API key provided: Bearer ***"


def test_a_key_with_quotes_a_backslash_and_spaces_reaches_no_store_export_report_or_terminal(
    server: FaultProxy, tmp_path: Path
) -> None:
    server.faults = [ECHO_KEY]
    store = tmp_path / "run.sqlite"
    env = os.environ | {"MOOT_REDACT_KEY": ODD_KEY}
    common = ["--backend", "openai", "--base-url", server.url, "--api-key-env", "MOOT_REDACT_KEY", "-p", "single"]
    printed = []
    for args in (
        ["run", *common, "-q", "1", "-o", str(store)],
        ["report", str(store), "--html", str(tmp_path / "report.html"), "--resamples", "100"],
        ["export", str(store), "--table", "call_errors", "--out", str(tmp_path / "errors.jsonl")],
        ["export", str(store), "--table", "results", "--out", str(tmp_path / "results.jsonl")],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "moot", *args], capture_output=True, text=True, timeout=180, cwd=tmp_path, env=env
        )
        printed.append(done.stdout + done.stderr)
        assert done.returncode == (1 if args[0] == "run" else 0), printed[-1]
    assert "IncorrectAPIkeyprovided:Bearer***" in flat(printed[0])
    errors = (tmp_path / "errors.jsonl").read_text()
    assert "Incorrect API key provided: Bearer ***" in errors, errors
    for path in (store, tmp_path / "report.html", tmp_path / "errors.jsonl", tmp_path / "results.jsonl"):
        data = path.read_bytes()
        assert not [p for p in ODD_PIECES if p.encode() in data], path.name
    for text in printed:
        assert not [p for p in ODD_PIECES if p in flat(text)], text
