"""The hostile suite (issue 42; run by hand, its counts go into the issue notes).

Each case plants one hostile input (a link where moot writes, a server that answers badly, a key it
echoes, a reply or a question holding terminal escapes, a plug-in, a closed output stream, ...), runs
`moot` on it as a user would (a subprocess, with its own fresh folder and, where it needs one, a real
HTTP server on 127.0.0.1 that this script runs), and sorts what happened into one outcome:

- ``clean``: what should happen did (one `moot: error:` line, or the input handled as documented);
- ``question error``: the run went on and recorded the question as an error (status ``error``);
- ``traceback``: Python's traceback reached the user;
- ``hang``: no end within the case's time (60 s unless it says);
- ``data loss``: a file moot must not touch changed;
- ``secret``: a planted API key, or an encoding of it, reached the output or the store;
- ``wrong silently``: moot went on and its output or store is wrong without saying so (a raw escape on
  the terminal, numbers from a bad reply, two models in one run, ...);
- ``by design``: moot went on as it documents, though the input looks hostile (an empty file taken over as
  the store, ``--port 0`` serving on a free port, a dry run that says it cannot bound the cost).

Items 11 and 12 (issue 59) aim at the newer machinery (``moot view``, ``run --dry-run`` and its prices, spend
caps and ``[budget]``, ``moot.open``) and at the reasoning parser (nested, late and doubled ``<think>``
blocks). Items 13 to 18 (issue 59, second part) aim at provider batches and their ledger, ``moot merge``, math
grading, data files, installed and file plug-ins, and limits (paces, concurrency, seeds).

    python benchmarks/hostile.py                        # every case, with this checkout's moot
    python benchmarks/hostile.py --src /tmp/old/src     # another checkout's moot (before/after counts)
    python benchmarks/hostile.py --item 3 --verbose     # one item's cases, with what each printed
    python benchmarks/hostile.py --item 11 --item 12    # issue 59's first cases only
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' servers

from tests.helpers import query
from tests.integration.servers import CANNED_MODEL, Answer, BatchServer, Handler, Hostile, completion, reply, trickle

CLEAN, QUESTION_ERROR, TRACEBACK, HANG = "clean", "question error", "traceback", "hang"
DATA_LOSS, SECRET, WRONG, BY_DESIGN = "data loss", "secret", "wrong silently", "by design"
OUTCOMES = (CLEAN, QUESTION_ERROR, BY_DESIGN, TRACEBACK, HANG, DATA_LOSS, SECRET, WRONG)

KEY = "hostile_0123456789/abcdef+XYZ=key"  # the planted API key (no "sk-": that prefix is masked by its look)
KEY_ENV = "MOOT_HOSTILE_KEY"
SRC = Path(__file__).resolve().parents[1] / "src"


# -- running moot ------------------------------------------------------------------------------------------
@dataclass
class Proc:
    rc: int | None  # None: it did not end in time (killed)
    out: bytes
    err: bytes

    @property
    def text(self) -> str:
        return (self.out + self.err).decode("utf-8", "replace")

    @property
    def hung(self) -> bool:
        return self.rc is None

    @property
    def traceback(self) -> bool:
        return b"Traceback (most recent call last)" in self.out + self.err

    @property
    def failure(self) -> str | None:
        """HANG or TRACEBACK when the command ended so, else None (the case judges the rest)."""
        return HANG if self.hung else TRACEBACK if self.traceback else None


@dataclass
class Context:
    folder: Path
    src: Path
    timeout_s: float = 60.0

    def env(self, **extra: str) -> dict[str, str]:
        inherited = {k: v for k, v in os.environ.items() if k != "MOOT_HOSTILE_REPLY"}
        return {**inherited, "PYTHONPATH": str(self.src), KEY_ENV: KEY, "COLUMNS": "200", **extra}

    def moot(self, *args: str, env: dict[str, str] | None = None, shell: str | None = None, wait: bool = True) -> Proc:
        """`python -m moot ARGS` in the case's folder; ``shell`` runs that shell line instead ($MOOT is moot)."""
        command: list[str] = [sys.executable, "-m", "moot", *args]
        full_env = env or self.env()
        if shell is not None:
            full_env = {**full_env, "MOOT": f"{sys.executable} -m moot"}
            command = ["sh", "-c", shell]
        process = subprocess.Popen(
            command,
            cwd=self.folder,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = process.communicate(timeout=self.timeout_s)
            return Proc(process.returncode, out, err)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            return Proc(None, out, err)

    def write(self, name: str, text: str) -> Path:
        path = self.folder / name
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        return path


def toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def experiment(
    ctx: Context,
    backend: dict[str, Any],
    *,
    tasks: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    top: dict[str, Any] | None = None,
    name: str = "exp.toml",
) -> Path:
    """An experiment file: one arithmetic question and a single agent unless told otherwise."""
    lines = [f"name = {toml_value('hostile')}", 'output = "run.sqlite"']
    lines += [f"{k} = {toml_value(v)}" for k, v in (top or {}).items()]
    for task in tasks or [{"name": "arithmetic", "count": 1}]:
        lines += ["", "[[tasks]]", *(f"{k} = {toml_value(v)}" for k, v in task.items())]
    lines += ["", "[agent]", f"backend = {toml_value(backend)}", "sampling = { temperature = 0.0, max_tokens = 32 }"]
    for condition in conditions or [{"name": "single", "protocol": "single"}]:
        lines += ["", "[[conditions]]", *(f"{k} = {toml_value(v)}" for k, v in condition.items())]
    return ctx.write(name, "\n".join(lines) + "\n")


SCRIPTED = {"kind": "scripted", "model": "numbers"}


def hostile_plugin(ctx: Context) -> Path:
    """A plug-in registering the scripted model ``hostile``: it replies $MOOT_HOSTILE_REPLY, unescaped."""
    return ctx.write(
        "hostile_model.py",
        textwrap.dedent(
            """
            import os
            from moot.backends.scripted import register_scripted_model

            def reply(request, index):
                return os.environ.get("MOOT_HOSTILE_REPLY", "4").encode().decode("unicode_escape")

            register_scripted_model("hostile", reply)
            """
        ),
    )


def statuses(path: Path) -> Counter[str]:
    if not path.exists():
        return Counter()
    try:
        return Counter(s for (s,) in query(path, "SELECT status FROM results"))
    except sqlite3.Error:
        return Counter()


def run_outcome(proc: Proc, store: Path) -> str:
    """A run fed one bad thing: a traceback or hang as such; a recorded question error; a clean refusal."""
    if proc.hung:
        return HANG
    if proc.traceback:
        return TRACEBACK
    found = statuses(store)
    if found.get("error"):
        return QUESTION_ERROR
    if proc.rc not in (0, None) and "moot: error:" in proc.text:
        return CLEAN
    return WRONG


# -- a server that answers as told (the test suite's Hostile) ----------------------------------------------
def answering(body: bytes | dict[str, Any], status: int = 200, **headers: str) -> Answer:
    """An answer of ``body`` (a dict is written as JSON: NaN and infinities bare, lone surrogates escaped)."""
    return reply(body if isinstance(body, bytes) else json.dumps(body).encode(), status=status, headers=headers)


def error(message: str, status: int) -> Answer:
    return answering({"error": {"message": message}}, status)


@contextmanager
def serving(default: Answer | None = None, models: tuple[str, ...] = (CANNED_MODEL,)) -> Iterator[Hostile]:
    """A Hostile server answering every chat completion with ``default`` (a canned completion if None)."""
    server = Hostile(models)
    server.default = default
    try:
        yield server
    finally:
        server.close()


def openai(server: Hostile, **changes: Any) -> dict[str, Any]:
    return {
        "kind": "openai",
        "base_url": server.url,
        "model": CANNED_MODEL,
        "api_key_env": KEY_ENV,
        "max_retries": 0,
        "timeout_s": 5,
        **changes,
    }


# -- the cases ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    item: int
    name: str
    check: Callable[[Context], str]


CASES: list[Case] = []


def case(item: int, name: str) -> Callable[[Callable[[Context], str]], Callable[[Context], str]]:
    def register(check: Callable[[Context], str]) -> Callable[[Context], str]:
        CASES.append(Case(item, name, check))
        return check

    return register


def untouched(victim: Path, before: bytes, proc: Proc) -> str:
    """A planted link's target must keep its bytes, whatever moot says."""
    if victim.read_bytes() != before:
        return DATA_LOSS
    if proc.hung:
        return HANG
    return TRACEBACK if proc.traceback else CLEAN


def scripted_run(ctx: Context) -> Path:
    exp = experiment(ctx, SCRIPTED)
    proc = ctx.moot("run", str(exp))
    assert proc.rc == 0, proc.text
    return ctx.folder / "run.sqlite"


def slow_run(ctx: Context) -> Path:
    """A run of about a minute: 120 questions one at a time, each reply taking half a second."""
    tasks = [{"name": "arithmetic", "count": 120}]
    return experiment(ctx, {**SCRIPTED, "delay_s": 0.5}, tasks=tasks, top={"concurrency": 1})


def started(store: Path, process: subprocess.Popen[bytes]) -> bool:
    """Wait until ``process`` (a run) has stored a result; False when it ended or a minute passed first."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if statuses(store):
            return True
        time.sleep(0.2)
    return False


# 1. planted links ------------------------------------------------------------------------------------------
def _victim(ctx: Context) -> tuple[Path, bytes]:
    victim = ctx.write("victim.txt", "precious\n")
    return victim, victim.read_bytes()


@case(1, "symlink at the HTML report")
def _link_html(ctx: Context) -> str:
    store = scripted_run(ctx)
    victim, before = _victim(ctx)
    (ctx.folder / "run.report.html").symlink_to(victim)
    return untouched(victim, before, ctx.moot("report", str(store), "-q"))


@case(1, "symlink at the HTML report's transcript page")
def _link_page(ctx: Context) -> str:
    store = scripted_run(ctx)
    victim, before = _victim(ctx)
    pages = ctx.folder / "run.report-files"
    pages.mkdir()
    for i in range(1, 4):
        (pages / f"transcripts-{i:04d}.html").symlink_to(victim)
    return untouched(victim, before, ctx.moot("report", str(store), "-q"))


@case(1, "symlink at the store's lock")
def _link_lock(ctx: Context) -> str:
    victim, before = _victim(ctx)
    (ctx.folder / "run.sqlite.lock").symlink_to(victim)
    return untouched(victim, before, ctx.moot("run", str(experiment(ctx, SCRIPTED))))


@case(1, "symlink at the --markdown file")
def _link_markdown(ctx: Context) -> str:
    store = scripted_run(ctx)
    victim, before = _victim(ctx)
    (ctx.folder / "out.md").symlink_to(victim)
    return untouched(victim, before, ctx.moot("report", str(store), "-q", "--no-html", "--markdown", "out.md"))


@case(1, "symlink at the export file")
def _link_export(ctx: Context) -> str:
    store = scripted_run(ctx)
    victim, before = _victim(ctx)
    (ctx.folder / "out.jsonl").symlink_to(victim)
    return untouched(victim, before, ctx.moot("export", str(store), "--out", "out.jsonl"))


def _two_runs(ctx: Context, alias: Callable[[Path, Path], None]) -> str:
    """A slow run holds its store; a second run through another name of the same file must be refused."""
    exp = slow_run(ctx)
    first = subprocess.Popen(
        [sys.executable, "-m", "moot", "run", str(exp)],
        cwd=ctx.folder,
        env=ctx.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        store = ctx.folder / "run.sqlite"
        if not started(store, first):
            raise RuntimeError("the first run stored nothing")
        alias(store, ctx.folder / "other.sqlite")
        ctx.timeout_s = 20  # a refusal is immediate: a second run still going then went ahead
        second = ctx.moot("run", str(exp), "--output", "other.sqlite")
    finally:
        os.killpg(first.pid, signal.SIGTERM)
        first.wait()
    if second.traceback:
        return TRACEBACK
    return CLEAN if second.rc not in (0, None) else WRONG


@case(1, "a second run through a symlink to a held store")
def _lock_symlink(ctx: Context) -> str:
    return _two_runs(ctx, lambda store, alias: alias.symlink_to(store))


@case(1, "a second run through a hard link to a held store")
def _lock_hardlink(ctx: Context) -> str:
    return _two_runs(ctx, lambda store, alias: os.link(store, alias))


# 2. a poisoned store ---------------------------------------------------------------------------------------
def _hostile_reply(ctx: Context, reply: str) -> str:
    plugin = hostile_plugin(ctx)
    exp = experiment(ctx, {"kind": "scripted", "model": "hostile"}, top={"plugins": [plugin.name]})
    env = ctx.env(MOOT_HOSTILE_REPLY=reply)
    first = ctx.moot("run", str(exp), env=env)
    again = ctx.moot("run", str(exp), env=env)  # a rerun must not crash on what the first stored
    worst = [p for p in (first, again) if p.hung or p.traceback]
    if worst:
        return HANG if worst[0].hung else TRACEBACK
    return CLEAN if first.rc == 0 and sum(statuses(ctx.folder / "run.sqlite").values()) == 1 else QUESTION_ERROR


for _name, _reply in {
    "a lone surrogate in a reply": "4 \\ud800",
    "a lone low surrogate in a reply": "\\udfff the answer is 4",
    "NUL in a reply": "4\\x00",
}.items():
    case(2, _name)(partial(_hostile_reply, reply=_reply))


@case(2, "a lone surrogate in a data row")
def _surrogate_row(ctx: Context) -> str:
    (ctx.folder / "rows.jsonl").write_text('{"question": "What is 2+2? \\ud800", "answer": "4"}\n')
    exp = experiment(ctx, SCRIPTED, tasks=[{"name": "rows", "data": "rows.jsonl", "format": "number"}])
    proc = ctx.moot("run", str(exp))
    return proc.failure or (CLEAN if proc.rc == 0 or "moot: error:" in proc.text else WRONG)


def _server_run(ctx: Context, chat: Answer, **backend: Any) -> str:
    with serving(chat) as server:
        proc = ctx.moot("run", str(experiment(ctx, openai(server, **backend))))
    return run_outcome(proc, ctx.folder / "run.sqlite")


@case(2, "a body of 200,000 nested brackets")
def _nested(ctx: Context) -> str:
    return _server_run(ctx, answering(b"[" * 200_000 + b"]" * 200_000))


@case(2, "usage.prompt_tokens = 10**30")
def _huge_usage(ctx: Context) -> str:
    return _server_run(ctx, answering(completion(usage={"prompt_tokens": 10**30, "total_tokens": 10**30})))


@case(2, "usage.completion_tokens negative")
def _negative_usage(ctx: Context) -> str:
    return _server_run(ctx, answering(completion(usage={"completion_tokens": -5})))


@case(2, "a lone surrogate escape in a server's JSON")
def _surrogate_json(ctx: Context) -> str:
    with serving(answering(completion("The answer is 4. \ud800"))) as server:
        exp = experiment(ctx, openai(server))
        first, again = ctx.moot("run", str(exp)), ctx.moot("run", str(exp))
    for proc in (first, again):
        if proc.hung or proc.traceback:
            return HANG if proc.hung else TRACEBACK
    return CLEAN if statuses(ctx.folder / "run.sqlite").get("answered") else QUESTION_ERROR


# 3. no run can hang ----------------------------------------------------------------------------------------
def _trickled(ctx: Context, part: str) -> str:
    """A valid reply trickled over about a minute: a run with ``timeout_s = 5`` must not wait 30 s for it."""
    ctx.timeout_s = 30
    return _server_run(ctx, trickle(part))


for _part in ("headers", "body"):
    case(3, f"a server trickling its {_part}, a byte every 0.2 s")(partial(_trickled, part=_part))


@case(3, "a reply of 64 MB")
def _huge_reply(ctx: Context) -> str:
    return _server_run(ctx, answering(completion("4 " + "x" * 64_000_000)))


@case(3, "a 10 MB reply is stored once at most")
def _big_reply(ctx: Context) -> str:
    outcome = _server_run(ctx, answering(completion("The answer is 4. " + "y" * 10_000_000)))
    store = ctx.folder / "run.sqlite"
    if outcome == WRONG and store.exists() and store.stat().st_size > 25_000_000:
        return WRONG  # stored several times over
    return CLEAN if outcome in (WRONG, QUESTION_ERROR) else outcome


@case(3, "seeds x questions beyond what a run can plan")
def _plan(ctx: Context) -> str:
    exp = experiment(ctx, SCRIPTED, tasks=[{"name": "arithmetic", "count": 100_000}], top={"seeds": list(range(1000))})
    ctx.timeout_s = 30
    proc = ctx.moot("run", str(exp))
    return run_outcome(proc, ctx.folder / "run.sqlite") if not proc.hung else HANG


@case(3, "--resamples 1000000000")
def _resamples(ctx: Context) -> str:
    store = scripted_run(ctx)
    ctx.timeout_s = 30
    proc = ctx.moot("report", str(store), "-q", "--no-html", "--resamples", "1000000000")
    return proc.failure or CLEAN  # refused, or done within the time


@case(3, "a named pipe with no reader as --trace")
def _trace_pipe(ctx: Context) -> str:
    os.mkfifo(ctx.folder / "trace.pipe")
    ctx.timeout_s = 30
    proc = ctx.moot("run", str(experiment(ctx, SCRIPTED)), "--trace", "trace.pipe")
    return WRONG if (ctx.folder / "run.sqlite").exists() and not proc.failure else _refused(proc)


@case(3, "COLUMNS=100000000")
def _huge_columns(ctx: Context) -> str:
    store = scripted_run(ctx)
    proc = ctx.moot("report", str(store), "--no-html", env=ctx.env(COLUMNS="100000000"))
    return proc.failure or (CLEAN if proc.rc == 0 and len(proc.out) < 1_000_000 else WRONG)


# 4. two models silently mixed ------------------------------------------------------------------------------
@case(4, "resuming after the server switched its only model")
def _switch(ctx: Context) -> str:
    with serving() as server:
        backend = openai(server)
        backend.pop("model")
        exp = experiment(ctx, backend, tasks=[{"name": "arithmetic", "count": 2}], top={"concurrency": 1})
        server.answers = [answering(completion()), error("busy", 503)]
        ctx.moot("run", str(exp))
        server.models = ("another-model",)
        proc = ctx.moot("run", str(exp), "--retry-errors")
    store = ctx.folder / "run.sqlite"
    models = {m for (m,) in query(store, "SELECT DISTINCT model FROM calls")}
    return proc.failure or (WRONG if len(models) > 1 else CLEAN)


@case(4, "a 307 redirect to another server")
def _redirect(ctx: Context) -> str:
    with serving() as target:
        with serving(answering(b"", 307, Location=target.url + "/chat/completions")) as server:
            proc = ctx.moot("run", str(experiment(ctx, openai(server))))
        followed = target.seen
    return proc.failure or (WRONG if followed else run_outcome(proc, ctx.folder / "run.sqlite"))


# 5. secrets ------------------------------------------------------------------------------------------------
def _leaked(ctx: Context, proc: Proc, forms: list[str]) -> bool:
    seen = proc.out + proc.err
    for path in ctx.folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.suffix not in (".toml", ".py"):
            seen += path.read_bytes()
    return any(form.encode() in seen for form in forms)


def _echo(ctx: Context, shown: Callable[[str], str], key: str = KEY) -> str:
    def chat(h: Handler) -> None:
        sent = h.headers.get("Authorization", "").removeprefix("Bearer ")
        error(f"Unauthorized: {shown(sent)} is not valid here", 401)(h)

    with serving(chat) as server:
        proc = ctx.moot("run", str(experiment(ctx, openai(server))), env=ctx.env(**{KEY_ENV: key}))
    return proc.failure or (
        SECRET if _leaked(ctx, proc, [shown(key), key]) else run_outcome(proc, ctx.folder / "run.sqlite")
    )


ECHOES: dict[str, Callable[[str], str]] = {
    "as sent": lambda k: k,
    "URL-encoded": lambda k: quote(k, safe=""),
    "base64": lambda k: base64.b64encode(k.encode()).decode(),
    "base64 without padding": lambda k: base64.b64encode(k.encode()).decode().rstrip("="),
    "URL-safe base64": lambda k: base64.urlsafe_b64encode(k.encode()).decode(),
    "without its last 4 characters": lambda k: k[:-4],
    "without its last 8 characters": lambda k: k[:-8],
    "JSON-escaped": lambda k: json.dumps(k)[1:-1],
}
for _how, _shown in ECHOES.items():
    case(5, f"a key echoed {_how}")(partial(_echo, shown=_shown))

for _how, _key in {
    "with spaces": "hostile 0123456789 abcdef key",
    "with quotes": 'hostile"0123456789"abcdef key',
    "with a backslash": "hostile\\0123456789abcdef key",
}.items():
    case(5, f"a key {_how}, echoed")(partial(_echo, shown=ECHOES["as sent"], key=_key))


@case(5, "a model id that embeds the key")
def _model_key(ctx: Context) -> str:
    with serving(models=(f"model-{KEY}",)) as server:
        backend = openai(server)
        backend.pop("model")
        proc = ctx.moot("run", str(experiment(ctx, backend)))
    return proc.failure or (SECRET if _leaked(ctx, proc, [KEY]) else CLEAN)


@case(5, "a key in the base URL's user information, echoed in an error")
def _url_key(ctx: Context) -> str:
    def chat(h: Handler) -> None:
        error(f"bad credentials {h.headers.get('Authorization', '')}", 401)(h)

    with serving(chat) as server:
        url = server.url.replace("http://", f"http://user:{quote(KEY, safe='')}@")
        proc = ctx.moot("run", str(experiment(ctx, {**openai(server), "base_url": url})))
    if proc.hung or proc.traceback:
        return HANG if proc.hung else TRACEBACK
    basic = base64.b64encode(f"user:{KEY}".encode()).decode()
    return SECRET if _leaked(ctx, proc, [KEY, basic]) else run_outcome(proc, ctx.folder / "run.sqlite")


@case(5, "a password with a '/' not percent-encoded in the base URL")
def _url_unencoded(ctx: Context) -> str:
    with serving() as server:
        url = server.url.replace("http://", f"http://user:{KEY}@")
        proc = ctx.moot("run", str(experiment(ctx, {**openai(server), "base_url": url})))
    if _leaked(ctx, proc, [KEY, KEY.split("/")[0]]):
        return SECRET
    return proc.failure or (CLEAN if proc.rc == 2 and "moot: error:" in proc.text else WRONG)


# 6. terminal injection -------------------------------------------------------------------------------------
INJECTIONS = {
    "a screen clear": "\x1b[2J\x1b[H",
    "a title change": "\x1b]0;owned\x07",
    "an OSC 8 link": "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "a NUL": "\x00",
    "a bidirectional override": "\u202e",
    "a C1 control (CSI)": "\x9b2J",
}
RAW = ("\x1b", "\x07", "\x00", "\u202e", "\x9b")


def _raw(proc: Proc) -> bool:
    text = (proc.out + proc.err).decode("utf-8", "replace")
    return any(c in text for c in RAW)


def _terminal(proc: Proc) -> str:
    return proc.failure or (WRONG if _raw(proc) else CLEAN)


def _in_question(ctx: Context, sequence: str) -> str:
    row = {"question": f"What is 2+2?{sequence} Say it.", "answer": "4"}
    (ctx.folder / "rows.jsonl").write_text(json.dumps(row) + "\n")
    exp = experiment(ctx, SCRIPTED, tasks=[{"name": "rows", "data": "rows.jsonl", "format": "number"}])
    return _terminal(ctx.moot("run", str(exp)))


def _in_reply(ctx: Context, sequence: str) -> str:
    plugin = hostile_plugin(ctx)
    reply = ("The answer is 4." + sequence).encode("unicode_escape").decode()
    proc = ctx.moot(
        "--plugin", plugin.name, "ask", "What is 2+2?", "-b", "scripted", "-m", "hostile", "-p", "single",
        env=ctx.env(MOOT_HOSTILE_REPLY=reply),
    )  # fmt: skip
    return _terminal(proc)


def _in_error(ctx: Context, sequence: str) -> str:
    with serving(error(f"overloaded{sequence}", 400)) as server:
        return _terminal(ctx.moot("run", str(experiment(ctx, openai(server)))))


for _what, _sequence in INJECTIONS.items():
    case(6, f"{_what} in a question (moot run)")(partial(_in_question, sequence=_sequence))
    case(6, f"{_what} in a reply (moot ask)")(partial(_in_reply, sequence=_sequence))
    case(6, f"{_what} in a server's error (moot run)")(partial(_in_error, sequence=_sequence))


# 7. silent wrong numbers -----------------------------------------------------------------------------------
def _logprobs(values: list[float]) -> Answer:
    tokens = [{"token": f"t{i}", "logprob": v, "top_logprobs": []} for i, v in enumerate(values)]
    return answering(completion("The answer is 4.", logprobs={"content": tokens}))


def _anll(ctx: Context, values: list[float]) -> str:
    with serving(_logprobs(values)) as server:
        condition = {"name": "m2", "protocol": "mad-m2"}
        proc = ctx.moot("run", str(experiment(ctx, openai(server), conditions=[condition])))
    if proc.hung or proc.traceback:
        return HANG if proc.hung else TRACEBACK
    found = statuses(ctx.folder / "run.sqlite")
    if found.get("error"):
        return QUESTION_ERROR
    return CLEAN if proc.rc not in (0, None) and "moot: error:" in proc.text else WRONG


for _what, _values in {
    "NaN log-probabilities": [float("nan")] * 5,
    "infinite log-probabilities": [float("-inf")] * 5,
    "positive log-probabilities": [0.5] * 5,
    "log-probabilities for fewer tokens than the completion": [-0.1],
}.items():
    case(7, _what)(partial(_anll, values=_values))


@case(7, "an empty existing file as output")
def _empty_output(ctx: Context) -> str:
    """Documented (README's store bullets, `moot run --help`): an empty file is taken over as the new store."""
    victim = ctx.write("run.sqlite", "")
    proc = ctx.moot("run", str(experiment(ctx, SCRIPTED)))
    if proc.failure:
        return proc.failure
    if proc.rc != 0 and victim.stat().st_size == 0:
        return CLEAN
    return BY_DESIGN if proc.rc == 0 and sum(statuses(victim).values()) == 1 else WRONG


def _names(ctx: Context, first: str, second: str) -> str:
    conditions = [{"name": first, "protocol": "single"}, {"name": second, "protocol": "vote"}]
    proc = ctx.moot("run", str(experiment(ctx, SCRIPTED, conditions=conditions)))
    return proc.failure or (CLEAN if proc.rc != 0 and "moot: error:" in proc.text else WRONG)


case(7, "conditions 'café' in NFC and in NFD")(lambda ctx: _names(ctx, "caf\u00e9", "cafe\u0301"))
case(7, "conditions 'vote' and 'vo\\u200bte'")(lambda ctx: _names(ctx, "vote", "vo\u200bte"))


@case(7, "two [[tasks]] of one generated task")
def _two_tables(ctx: Context) -> str:
    tasks = [{"name": "arithmetic", "count": 5}, {"name": "arithmetic", "count": 3}]
    proc = ctx.moot("run", str(experiment(ctx, SCRIPTED, tasks=tasks)))
    if proc.hung or proc.traceback:
        return HANG if proc.hung else TRACEBACK
    if proc.rc != 0:
        return CLEAN if "moot: error:" in proc.text else WRONG
    kept = sum(statuses(ctx.folder / "run.sqlite").values())
    return CLEAN if kept == 8 else WRONG


# 8. plug-ins -----------------------------------------------------------------------------------------------
MARKER = "plugin-ran.txt"
PLUGIN_BODY = f"from pathlib import Path\nPath({MARKER!r}).write_text('ran')\n"


@case(8, "a plug-in in a file that fails validation")
def _plugin_invalid(ctx: Context) -> str:
    ctx.write("evil.py", PLUGIN_BODY)
    exp = experiment(ctx, SCRIPTED, top={"plugins": ["evil.py"], "no_such_key": 1})
    proc = ctx.moot("run", str(exp))
    return proc.failure or (WRONG if (ctx.folder / MARKER).exists() else CLEAN)


@case(8, "a plug-in outside the experiment's folder")
def _plugin_outside(ctx: Context) -> str:
    outside = Path(tempfile.mkdtemp(prefix="moot-hostile-outside-")) / "evil.py"
    outside.write_text(PLUGIN_BODY)
    sub = ctx.folder / "exp"
    sub.mkdir()
    exp = experiment(ctx, SCRIPTED, top={"plugins": [str(outside)]}, name="exp/exp.toml")
    proc = ctx.moot("run", str(exp.relative_to(ctx.folder)))
    return proc.failure or (WRONG if (ctx.folder / MARKER).exists() else CLEAN)


@case(8, "a plug-in raising SystemExit(0)")
def _plugin_exit(ctx: Context) -> str:
    ctx.write("quits.py", "raise SystemExit(0)\n")
    proc = ctx.moot("run", str(experiment(ctx, SCRIPTED, top={"plugins": ["quits.py"]})))
    return proc.failure or (CLEAN if proc.rc != 0 and "moot: error:" in proc.text else WRONG)


# 9. output streams -----------------------------------------------------------------------------------------
def _stream(ctx: Context, shell: str, env: dict[str, str] | None = None) -> str:
    exp = experiment(ctx, SCRIPTED)
    proc = ctx.moot(shell=shell.replace("EXP", str(exp)), env=env)
    return proc.failure or CLEAN


case(9, "stdout closed")(lambda ctx: _stream(ctx, "$MOOT run EXP >&-"))
case(9, "stdout is /dev/full")(lambda ctx: _stream(ctx, "$MOOT run EXP > /dev/full"))
case(9, "stdout closed, --help")(lambda ctx: _stream(ctx, "$MOOT --help >&-"))
case(9, "stdout and stderr closed")(lambda ctx: _stream(ctx, "$MOOT run EXP >&- 2>&-"))
case(9, "PYTHONIOENCODING=ascii")(
    lambda ctx: _stream(ctx, "$MOOT run EXP && $MOOT report run.sqlite", ctx.env(PYTHONIOENCODING="ascii"))
)


# 10. smaller -----------------------------------------------------------------------------------------------
@case(10, "/proc/self/status as a store")
def _proc_status(ctx: Context) -> str:
    proc = ctx.moot("report", "/proc/self/status", "-q")
    return proc.failure or (WRONG if "an SQLite database" in proc.text and "not an SQLite" not in proc.text else CLEAN)


@case(10, "a session killed mid-run stays running")
def _killed(ctx: Context) -> str:
    exp = slow_run(ctx)
    process = subprocess.Popen(
        [sys.executable, "-m", "moot", "run", str(exp)], cwd=ctx.folder, env=ctx.env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    if not started(ctx.folder / "run.sqlite", process):
        raise RuntimeError("the run stored nothing")
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    proc = ctx.moot("runs", ".")
    return proc.failure or (WRONG if "running" in proc.text and "interrupted" not in proc.text else CLEAN)


@case(10, "an export killed mid-write leaves no hidden file")
def _export_killed(ctx: Context) -> str:
    store = scripted_run(ctx)
    part = ctx.folder / ".out.jsonl.abcd1234.part"  # what an export killed an hour ago left
    part.write_text("half")
    os.utime(part, (time.time() - 3600, time.time() - 3600))
    proc = ctx.moot("export", str(store), "--out", "out.jsonl")
    return proc.failure or (WRONG if list(ctx.folder.glob(".*.part")) else CLEAN)


# 11. issue 59: the newer machinery (moot view, dry runs and prices, spend caps, moot.open) -------------------
def _refused(proc: Proc, option: str | None = None) -> str:
    """A refusal: a `moot: error:` line, or the command line's usage error naming ``option``."""
    if proc.failure:
        return proc.failure
    named = option is not None and f"'{option}'" in proc.text
    return CLEAN if proc.rc not in (0, None) and ("moot: error:" in proc.text or named) else WRONG


def _view_refused(ctx: Context, *args: str, option: str | None = None) -> str:
    ctx.timeout_s = 20  # a refusal is at once; a view that serves never ends by itself
    return _refused(ctx.moot("view", *args), option)


@case(11, "moot view of a file that is not a store")
def _view_text(ctx: Context) -> str:
    return _view_refused(ctx, str(ctx.write("notes.txt", "not a store\n")))


@case(11, "moot view of a directory")
def _view_folder(ctx: Context) -> str:
    return _view_refused(ctx, ".")


@case(11, "moot view on a port in use")
def _view_port_in_use(ctx: Context) -> str:
    store = scripted_run(ctx)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        return _view_refused(ctx, str(store), "--port", str(taken.getsockname()[1]))


for _port in ("-1", "70000"):
    case(11, f"moot view --port {_port}")(
        lambda ctx, port=_port: _view_refused(ctx, "x.sqlite", "--port", port, option="--port")
    )


@case(11, "moot view --port 0")
def _view_port_zero(ctx: Context) -> str:
    """--port 0 is the default: a free port the system picks, whose page must answer."""
    store = scripted_run(ctx)
    process = subprocess.Popen(
        [sys.executable, "-m", "moot", "view", str(store), "--port", "0"], cwd=ctx.folder, env=ctx.env(),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode("utf-8", "replace")  # its URL, at once
        url = line[line.find("http://") :].split()[0] if "http://" in line else ""
        if not url or url.rstrip("/").endswith(":0"):
            return TRACEBACK if "Traceback" in line else WRONG
        with urllib.request.urlopen(url, timeout=10) as page:
            return BY_DESIGN if page.status == 200 else WRONG
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()


def _dry_run(ctx: Context, prices: dict[str, Any] | None) -> str:
    """A dry run's bounds: a bad price refused; none said to leave the cost unbounded; never inf or NaN."""
    top = {"prices": {"numbers": prices}} if prices is not None else None
    proc = ctx.moot("run", str(experiment(ctx, SCRIPTED, top=top)), "--dry-run")
    if proc.failure or proc.rc != 0:
        return _refused(proc)
    if re.search(r"(?i)\$inf|\binf\b|\bnan\b", proc.text):
        return WRONG
    if (ctx.folder / "run.sqlite").exists():
        return WRONG  # a dry run creates nothing
    return BY_DESIGN if prices is None and "no price for" in proc.text else CLEAN


case(11, "moot run --dry-run without prices")(lambda ctx: _dry_run(ctx, None))
for _what, _price in {"NaN": float("nan"), "negative": -1.0, "1e308": 1e308}.items():
    case(11, f"moot run --dry-run with a price of {_what}")(
        lambda ctx, price=_price: _dry_run(ctx, {"prompt": price, "completion": 1.0})
    )


def _capped(ctx: Context, option: str, value: str) -> str:
    """A spend cap that cannot be one: refused before any store is made."""
    proc = ctx.moot("run", str(experiment(ctx, SCRIPTED)), option, value)
    if (ctx.folder / "run.sqlite").exists() and not proc.failure:
        return WRONG
    return _refused(proc, option)


for _value in ("0", "-1", "nan", "inf", "1e400"):
    case(11, f"--max-cost {_value}")(partial(_capped, option="--max-cost", value=_value))
case(11, "--max-calls 0")(partial(_capped, option="--max-calls", value="0"))


@case(11, "a [budget] in EUR")
def _budget_eur(ctx: Context) -> str:
    exp = experiment(ctx, SCRIPTED, top={"budget": {"max_cost": 1.0, "currency": "EUR"}})
    proc = ctx.moot("run", str(exp))
    return WRONG if (ctx.folder / "run.sqlite").exists() else _refused(proc)


def _open(ctx: Context, argument: str) -> str:
    """moot.open in a script: a MootError saying what is wrong (what a script catches), no other exception."""
    code = (
        "import moot\nfrom moot.errors import MootError\ntry:\n    moot.open(ARG)\n"
        "except MootError as exc:\n    print('moot: error:', exc)\n    raise SystemExit(2)\n"
    ).replace("ARG", argument)
    script = ctx.write("open_case.py", code)
    return _refused(ctx.moot(shell=f"'{sys.executable}' {script.name}"))


@case(11, "moot.open of a file that is not a store")
def _open_text(ctx: Context) -> str:
    ctx.write("notes.txt", "not a store\n")
    return _open(ctx, "'notes.txt'")


case(11, "moot.open of an empty list")(lambda ctx: _open(ctx, "[]"))
case(11, "moot.open of a directory")(lambda ctx: _open(ctx, "'.'"))


# 12. issue 59: reasoning replies --------------------------------------------------------------------------
def _turns(store: Path) -> list[tuple[str, str | None, str]]:
    """Each stored turn's content, reasoning and what its agent was shown."""
    return [(t, r, s) for t, r, s in query(store, "SELECT text, reasoning, shown FROM turns")]


def _reasoned(ctx: Context, run: Callable[[Path], Proc], hidden: tuple[str, ...], content: str) -> str:
    """A two-agent debate of replies that think: every turn's content is ``content``, its reasoning holds every
    ``hidden`` mark, and no agent is shown a mark or a tag (peers see the content only)."""
    conditions = [{"name": "society", "protocol": "society", "agents": 2, "rounds": 2}]
    proc = run(experiment(ctx, SCRIPTED, conditions=conditions))  # the backend is replaced by ``run``
    store = ctx.folder / "run.sqlite"
    if proc.failure or not store.exists():
        return proc.failure or WRONG
    turns = _turns(store)
    if not turns or statuses(store).get("error"):
        return QUESTION_ERROR
    for text, reasoning, shown in turns:
        if text != content or not all(mark in (reasoning or "") for mark in hidden):
            return WRONG
        if any(mark in shown for mark in (*hidden, "<think>", "</think>")):
            return WRONG
    return CLEAN


def _scripted_reasoning(ctx: Context, reply: str, hidden: tuple[str, ...], content: str) -> str:
    plugin = hostile_plugin(ctx)

    def run(exp: Path) -> Proc:
        text = exp.read_text().replace(toml_value(SCRIPTED), toml_value({"kind": "scripted", "model": "hostile"}))
        exp.write_text(text.replace('output = "run.sqlite"', f'output = "run.sqlite"\nplugins = ["{plugin.name}"]'))
        return ctx.moot("run", str(exp), env=ctx.env(MOOT_HOSTILE_REPLY=reply))

    return _reasoned(ctx, run, hidden, content)


case(12, "a nested <think> block")(
    partial(
        _scripted_reasoning,
        reply="<think>a MARKA <think>b MARKB</think> c MARKC</think>The answer is 7.",
        hidden=("MARKA", "MARKB", "MARKC"),
        content="The answer is 7.",
    )
)
case(12, "a <think> block after a first sentence")(
    partial(
        _scripted_reasoning,
        reply="First, a look. <think>hidden MARKL</think> The answer is 7.",
        hidden=("MARKL",),
        content="First, a look.\n\nThe answer is 7.",
    )
)


@case(12, "reasoning_content and a <think> block in one reply")
def _field_and_block(ctx: Context) -> str:
    said = {"reasoning_content": "field MARKF"}
    with serving(answering(completion("<think>block MARKT</think>The answer is 7.", message=said))) as server:

        def run(exp: Path) -> Proc:
            exp.write_text(exp.read_text().replace(toml_value(SCRIPTED), toml_value(openai(server))))
            return ctx.moot("run", str(exp))

        return _reasoned(ctx, run, ("MARKF", "MARKT"), "The answer is 7.")


# 13. issue 59: provider batches (moot.backends.batches, the ledger) -----------------------------------------
class TamperedBatches(BatchServer):
    """The tests' BatchServer whose batch output files come back through ``tamper`` (their bytes in, what the
    client reads out), and that can forget a file the moment a batch ends (``vanish``) or answer every poll
    of a batch with ``poll_status`` (an HTTP status) instead."""

    def __init__(self, tamper: Callable[[bytes], bytes] | None = None) -> None:
        super().__init__()
        self.tamper = tamper
        self.vanish = False
        self.poll_status: int | None = None

    def _dispatch(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes, str]:
        parts = target.split("?")[0].rstrip("/").split("/")
        if self.poll_status is not None and method == "GET" and parts[-2:-1] == ["batches"]:
            return self.poll_status, b'{"error": {"message": "poll refused"}}', "application/json"
        if method == "GET" and parts[-1] == "content" and parts[-3] == "files":
            with self.lock:
                meta = self.files.get(parts[-2], {})
                if self.vanish and meta:
                    del self.files[parts[-2]]
                    self.contents.pop(parts[-2], None)
                elif self.tamper is not None and str(meta.get("filename", "")).endswith("_output.jsonl"):
                    return 200, self.tamper(self.contents[parts[-2]]), "application/octet-stream"
        return super()._dispatch(method, target, headers, body)


def batch_backend(server: BatchServer, **changes: Any) -> dict[str, Any]:
    return {
        "kind": "openai", "base_url": server.url, "model": CANNED_MODEL, "api_key_env": KEY_ENV, "max_retries": 0,
        "timeout_s": 5, "batch": True, "batch_poll_s": 0.1, "batch_deadline_s": 20, **changes,
    }  # fmt: skip


def _batched(ctx: Context, server: TamperedBatches, count: int = 2, **backend: Any) -> tuple[Proc, Path]:
    exp = experiment(ctx, batch_backend(server, **backend), tasks=[{"name": "arithmetic", "count": count}])
    return ctx.moot("run", str(exp)), ctx.folder / "run.sqlite"


def _replies(store: Path) -> list[str]:
    try:
        return [t for (t,) in query(store, "SELECT text FROM turns")]
    except sqlite3.Error:
        return []


def _batch_case(ctx: Context, tamper: Callable[[bytes], bytes], planted: str | None = None) -> str:
    """A run whose batch output file is ``tamper``ed: what cannot be read is a question error, never a reply
    taken from a line that is not the request's own (``planted`` marks such a reply)."""
    with serving_batches(tamper) as server:
        proc, store = _batched(ctx, server)
    if proc.failure:
        return proc.failure
    if planted is not None and any(planted in text for text in _replies(store)):
        return WRONG
    found = statuses(store)
    if found.get("error"):
        return QUESTION_ERROR
    return CLEAN if proc.rc == 0 and found.get("answered") == 2 else WRONG


@contextmanager
def serving_batches(tamper: Callable[[bytes], bytes] | None = None) -> Iterator[TamperedBatches]:
    server = TamperedBatches(tamper)
    try:
        yield server
    finally:
        server.close()


def _each_line(change: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    return lambda data: b"".join(change(line) for line in data.splitlines(keepends=True))


def _doubled(line: bytes) -> bytes:
    """The line, then the same custom_id answered otherwise (a provider that ran the request twice)."""
    other = json.loads(line)
    other["response"]["body"]["choices"][0]["message"]["content"] = "The answer is 999. PLANTED"
    return line + json.dumps(other).encode() + b"\n"


def _stranger(line: bytes) -> bytes:
    other = json.loads(line)
    other["custom_id"] = "moot-" + "0" * 40
    other["response"]["body"]["choices"][0]["message"]["content"] = "The answer is 999. PLANTED"
    return json.dumps(other).encode() + b"\n" + line


def _not_completion(line: bytes) -> bytes:
    other = json.loads(line)
    other["response"]["body"] = {"choices": [], "PLANTED": True}
    return json.dumps(other).encode() + b"\n"


case(13, "a batch output file of malformed JSONL")(partial(_batch_case, tamper=lambda d: d.replace(b'"', b"'")))
case(13, "a batch output file cut mid-line")(partial(_batch_case, tamper=lambda d: d[: len(d) // 2]))
case(13, "a batch output file missing its first line")(
    partial(_batch_case, tamper=lambda d: b"".join(d.splitlines(keepends=True)[1:]))
)
case(13, "a batch output file of invalid UTF-8 and NUL bytes")(
    partial(_batch_case, tamper=lambda d: d.replace(b"answer", b"\xff\x00\xfe"))
)
case(13, "a batch output answering each custom_id twice, differently")(
    partial(_batch_case, tamper=_each_line(_doubled), planted="PLANTED")
)
case(13, "a batch output with lines for custom_ids never sent")(
    partial(_batch_case, tamper=_each_line(_stranger), planted="PLANTED")
)
case(13, "a batch output whose bodies are not chat completions")(
    partial(_batch_case, tamper=_each_line(_not_completion), planted="PLANTED")
)


@case(13, "a provider that deletes the output file as it is read")
def _batch_vanish(ctx: Context) -> str:
    with serving_batches() as server:
        server.vanish = True
        proc, store = _batched(ctx, server)
    return run_outcome(proc, store)


@case(13, "a provider whose batch polls all answer HTTP 500")
def _batch_poll_500(ctx: Context) -> str:
    ctx.timeout_s = 90
    with serving_batches() as server:
        server.poll_status = 500
        proc, store = _batched(ctx, server, batch_deadline_s=10)
    return run_outcome(proc, store)


@case(13, "a batch that never ends (batch_deadline_s = 3)")
def _batch_held(ctx: Context) -> str:
    with serving_batches() as server:
        server.hold()
        proc, store = _batched(ctx, server, batch_deadline_s=3)
        server.release()
    return run_outcome(proc, store)


@case(13, "the ledger of one store copied into another, run against a new provider")
def _ledger_copied(ctx: Context) -> str:
    """A finished batch run's store copied, its results dropped, run again against a provider that knows none
    of its batches: the ledger's batches are missing there (question errors, documented), and --retry-errors
    sends the requests again; never a hang or a reply from elsewhere."""
    with serving_batches() as server:
        proc, store = _batched(ctx, server)
    if proc.rc != 0:
        raise RuntimeError(f"the first batch run failed: {proc.text[-300:]}")
    other = ctx.folder / "other.sqlite"
    other.write_bytes(store.read_bytes())
    with sqlite3.connect(other) as db:
        for table in ("results", "turns", "calls"):
            db.execute(f"DELETE FROM {table}")
    with serving_batches() as server:
        exp = experiment(ctx, batch_backend(server), tasks=[{"name": "arithmetic", "count": 2}])
        first = ctx.moot("run", str(exp), "--output", str(other))
        again = ctx.moot("run", str(exp), "--output", str(other), "--retry-errors")
    for proc in (first, again):
        if proc.failure:
            return proc.failure
    return CLEAN if statuses(other).get("answered") == 2 else run_outcome(again, other)


# 14. issue 59: moot merge ---------------------------------------------------------------------------------
def _shards(ctx: Context, exp: Path, count: int = 2, prefix: str = "s") -> list[Path]:
    made = []
    for index in range(1, count + 1):
        out = ctx.folder / f"{prefix}{index}.sqlite"
        proc = ctx.moot("run", str(exp), "--shard", f"{index}/{count}", "--output", str(out))
        if proc.rc != 0:
            raise RuntimeError(f"shard {index} failed: {proc.text[-300:]}")
        made.append(out)
    return made


def _four(ctx: Context, name: str = "exp.toml", count: int = 4) -> Path:
    return experiment(ctx, SCRIPTED, tasks=[{"name": "arithmetic", "count": count}], name=name)


def _merge_refused(ctx: Context, out: str, *stores: Path) -> str:
    ctx.timeout_s = 30
    return _refused(ctx.moot("merge", out, *map(str, stores)))


@case(14, "moot merge of shards of two experiments")
def _merge_two(ctx: Context) -> str:
    one = _shards(ctx, _four(ctx), prefix="a")
    two = _shards(ctx, _four(ctx, "other.toml", count=5), prefix="b")
    return _merge_refused(ctx, "out.sqlite", one[0], two[1])


@case(14, "moot merge of shards of two moot versions")
def _merge_versions(ctx: Context) -> str:
    one, two = _shards(ctx, _four(ctx))
    with sqlite3.connect(two) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'moot_version'", (json.dumps("0.0.1-hostile"),))
    proc = ctx.moot("merge", "out.sqlite", str(one), str(two))
    if proc.failure:
        return proc.failure
    if proc.rc == 0:
        return BY_DESIGN if "0.0.1-hostile" in proc.text or "version" in proc.text else WRONG
    return _refused(proc)


@case(14, "moot merge of a shard still running (its lock held)")
def _merge_running(ctx: Context) -> str:
    exp = slow_run(ctx)
    (done,) = [p for p in _shards_one(ctx, exp)]
    running = ctx.folder / "s1.sqlite"
    process = subprocess.Popen(
        [sys.executable, "-m", "moot", "run", str(exp), "--shard", "1/2", "--output", str(running)], cwd=ctx.folder,
        env=ctx.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        if not started(running, process):
            raise RuntimeError("the running shard stored nothing")
        outcome = _merge_refused(ctx, "out.sqlite", running, done)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()
    return WRONG if outcome == CLEAN and (ctx.folder / "out.sqlite").exists() else outcome


def _shards_one(ctx: Context, exp: Path) -> list[Path]:
    """Shard 2 of 2 of a slow experiment, run quickly (its replies without delay)."""
    quick = ctx.write("quick.toml", exp.read_text().replace("delay_s = 0.5", "delay_s = 0.0"))
    out = ctx.folder / "s2.sqlite"
    proc = ctx.moot("run", str(quick), "--shard", "2/2", "--output", str(out))
    if proc.rc != 0:
        raise RuntimeError(f"shard 2 failed: {proc.text[-300:]}")
    return [out]


def _merge_into(ctx: Context, plant: Callable[[Path], None]) -> str:
    shards = _shards(ctx, _four(ctx))
    victim, before = _victim(ctx)
    plant(ctx.folder / "out.sqlite")
    outcome = _merge_refused(ctx, "out.sqlite", *shards)
    return DATA_LOSS if victim.read_bytes() != before else outcome


case(14, "moot merge OUT a symlink to a file")(lambda ctx: _merge_into(ctx, lambda p: p.symlink_to("victim.txt")))
case(14, "moot merge OUT a dangling symlink")(lambda ctx: _merge_into(ctx, lambda p: p.symlink_to("gone/x.sqlite")))
case(14, "moot merge OUT a FIFO")(lambda ctx: _merge_into(ctx, lambda p: os.mkfifo(p)))


@case(14, "moot merge OUT the store a moot run is writing")
def _merge_over_run(ctx: Context) -> str:
    shards = _shards(ctx, _four(ctx))
    exp = slow_run(ctx)
    process = subprocess.Popen(
        [sys.executable, "-m", "moot", "run", str(exp)], cwd=ctx.folder, env=ctx.env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    store = ctx.folder / "run.sqlite"
    try:
        if not started(store, process):
            raise RuntimeError("the run stored nothing")
        outcome = _merge_refused(ctx, "run.sqlite", *shards)
        alive = process.poll() is None
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()
    return outcome if alive else WRONG


@case(14, "moot merge of a shard store cut in half")
def _merge_truncated(ctx: Context) -> str:
    one, two = _shards(ctx, _four(ctx))
    data = two.read_bytes()
    two.write_bytes(data[: len(data) // 2])
    return _merge_refused(ctx, "out.sqlite", one, two)


# 15. issue 59: math grading (moot.tasks.mathgrade's worker) ------------------------------------------------
def _math(ctx: Context, reply: str, gold: str = "81", count: int = 1, env: dict[str, str] | None = None) -> str:
    """A data-file MATH task answered ``reply``: every question answered within the bound, none graded right
    unless the reply is the gold."""
    rows = "".join(json.dumps({"problem": f"What is 9*9? ({i})", "answer": gold}) + "\n" for i in range(count))
    ctx.write("math.jsonl", rows)
    plugin = hostile_plugin(ctx)
    exp = experiment(
        ctx, {"kind": "scripted", "model": "hostile"}, tasks=[{"name": "math", "data": "math.jsonl", "count": count}],
        top={"plugins": [plugin.name]},
    )  # fmt: skip
    ctx.timeout_s = 60
    started_at = time.monotonic()
    proc = ctx.moot("run", str(exp), env={**ctx.env(MOOT_HOSTILE_REPLY=reply), **(env or {})})
    if proc.failure:
        return proc.failure
    store = ctx.folder / "run.sqlite"
    if proc.rc != 0:
        return WRONG
    correct = [c for (c,) in query(store, "SELECT correct FROM results")]
    if len(correct) != count or time.monotonic() - started_at > 50:
        return WRONG
    return WRONG if any(correct) else CLEAN


case(15, "an answer 9^9^9^9 (a tower of exponents)")(partial(_math, reply="\\\\boxed{9^{9^{9^{9}}}}"))
case(15, "a gold and an answer 9^9^9^9 that differ")(
    partial(_math, reply="\\\\boxed{9^{9^{9^{8}}}}", gold="9^{9^{9^{9}}}")
)
case(15, "an answer of 10,000 characters of LaTeX")(partial(_math, reply="\\\\boxed{" + "x^{2}+" * 1666 + "1}"))
case(15, "an answer of 300 nested \\frac")(
    partial(_math, reply="\\\\boxed{" + "\\\\frac{1}{1+" * 300 + "1" + "}" * 300 + "}")
)
case(15, "an answer 10^{10^{100}} - 10^{10^{100}} + 81, counted as right?")(
    partial(_math, reply="\\\\boxed{10^{10^{100}}-10^{10^{100}}+80}")
)


@case(15, "the grading worker killed from outside mid-run")
def _math_killed(ctx: Context) -> str:
    """The plug-in kills every math-verify worker of its process before each reply: grading must restart one
    (or say the pair is ungraded), never hang or crash."""
    ctx.write(
        "killer.py",
        textwrap.dedent(
            """
            import os, signal
            from moot.backends.scripted import register_scripted_model

            def reply(request, index):
                for pid in os.listdir("/proc"):
                    try:
                        with open(f"/proc/{pid}/cmdline", "rb") as f:
                            line = f.read()
                        with open(f"/proc/{pid}/stat") as f:
                            parent = int(f.read().rsplit(")", 1)[1].split()[1])
                    except (OSError, ValueError, IndexError):
                        continue
                    if b"mathgrade import serve" in line and parent == os.getpid():
                        os.kill(int(pid), signal.SIGKILL)
                return "The answer is \\\\boxed{81}."

            register_scripted_model("killer", reply)
            """
        ),
    )
    rows = "".join(json.dumps({"problem": f"What is 9*9? ({i})", "answer": "81"}) + "\n" for i in range(4))
    ctx.write("math.jsonl", rows)
    exp = experiment(
        ctx, {"kind": "scripted", "model": "killer"}, tasks=[{"name": "math", "data": "math.jsonl", "count": 4}],
        top={"plugins": ["killer.py"], "concurrency": 1},
    )  # fmt: skip
    proc = ctx.moot("run", str(exp))
    if proc.failure or proc.rc != 0:
        return proc.failure or WRONG
    correct = [c for (c,) in query(ctx.folder / "run.sqlite", "SELECT correct FROM results")]
    return CLEAN if len(correct) == 4 else WRONG


# 16. issue 59: data files (moot.tasks.datafile) ----------------------------------------------------------
def _data(ctx: Context, name: str, content: bytes | None, fmt: str = "number", expect: int | None = None) -> str:
    """A data-file task: refused with one line, or run with ``expect`` questions (None: it must be refused)."""
    if content is not None:
        (ctx.folder / name).write_bytes(content)
    ctx.timeout_s = 30
    proc = ctx.moot("run", str(experiment(ctx, SCRIPTED, tasks=[{**DATA_TASK, "data": name, "format": fmt}])))
    if proc.failure or proc.rc != 0:
        return proc.failure or (_refused(proc) if expect is None else WRONG)
    if expect is None:
        return WRONG
    return CLEAN if sum(statuses(ctx.folder / "run.sqlite").values()) == expect else WRONG


DATA_TASK = {"name": "rows", "fields": {"question": "question", "answer": "answer"}}
ROW = b'{"question": "What is 2+2?", "answer": "4"}\n'
for _what, _bytes in {
    "a row without its answer": ROW + b'{"question": "What is 3+3?"}\n',
    "an answer that is a JSON object": ROW + b'{"question": "What is 3+3?", "answer": {"n": 6}}\n',
    "a question that is a list": ROW + b'{"question": ["What", "is"], "answer": "6"}\n',
    "a question of null": ROW + b'{"question": null, "answer": "6"}\n',
    "a row that is a JSON array": ROW + b'["What is 3+3?", "6"]\n',
    "a raw NUL byte inside a string": ROW + b'{"question": "What is 3+3?\x00", "answer": "6"}\n',
    "latin-1 bytes in a UTF-8 file": ROW + b'{"question": "Caf\xe9: what is 3+3?", "answer": "6"}\n',
    "an answer of NaN": ROW + b'{"question": "What is 3+3?", "answer": NaN}\n',
}.items():
    case(16, f"a JSONL file with {_what}")(partial(_data, name="rows.jsonl", content=_bytes))

case(16, "a CSV with a quoted newline in a question")(
    partial(_data, name="rows.csv", content=b'question,answer\n"What is\n2+2?",4\n"What is 3+3?",6\n', expect=2)
)
case(16, "an empty JSONL file")(partial(_data, name="rows.jsonl", content=b""))


@case(16, "a Parquet file with a struct column as the question")
def _parquet_struct(ctx: Context) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"question": [{"text": "What is 2+2?", "n": 1}], "answer": ["4"]})
    pq.write_table(table, ctx.folder / "rows.parquet")
    return _data(ctx, "rows.parquet", None)


@case(16, "a named pipe with no writer as the data file")
def _data_fifo(ctx: Context) -> str:
    os.mkfifo(ctx.folder / "rows.jsonl")
    return _data(ctx, "rows.jsonl", None)


@case(16, "a 1,000,000-row JSONL file, 3 questions asked")
def _data_million(ctx: Context) -> str:
    with (ctx.folder / "rows.jsonl").open("wb") as out:
        for i in range(1_000_000):
            out.write(b'{"question": "What is %d+1?", "answer": "%d"}\n' % (i, i + 1))
    ctx.timeout_s = 60
    exp = experiment(ctx, SCRIPTED, tasks=[{**DATA_TASK, "data": "rows.jsonl", "format": "number", "count": 3}])
    began = time.monotonic()
    proc = ctx.moot("run", str(exp))
    took = time.monotonic() - began
    if proc.failure or proc.rc != 0:
        return proc.failure or WRONG
    print(f"    (1,000,000 rows: {took:.1f} s)", flush=True)
    return CLEAN if sum(statuses(ctx.folder / "run.sqlite").values()) == 3 and took < 30 else WRONG


# 17. issue 59: plug-ins (files and installed entry points) -------------------------------------------------
PLATEAU = """
from typing import Literal
from moot.debate.registry import register
from moot.debate.components.stopping import Stopping

@register
class Plateau(Stopping):
    kind: Literal["plateau"] = "plateau"
    marker: str = "{marker}"
"""


@case(17, "two plug-in files that each define class Plateau of kind plateau")
def _two_plateaus(ctx: Context) -> str:
    ctx.write("one.py", PLATEAU.replace("{marker}", "one"))
    ctx.write("two.py", PLATEAU.replace("{marker}", "two"))
    proc = ctx.moot("run", str(experiment(ctx, SCRIPTED, top={"plugins": ["one.py", "two.py"]})))
    return proc.failure or (CLEAN if proc.rc != 0 and "plateau" in proc.text and "moot: error:" in proc.text else WRONG)


@case(17, "a plug-in file registering a built-in rule's name")
def _builtin_name(ctx: Context) -> str:
    ctx.write("taken.py", PLATEAU.replace('"plateau"', '"fixed"').replace("{marker}", "x"))
    proc = ctx.moot("run", str(experiment(ctx, SCRIPTED, top={"plugins": ["taken.py"]})))
    return proc.failure or (CLEAN if proc.rc != 0 and "moot: error:" in proc.text else WRONG)


def _installed(ctx: Context, group: str, value: str, module: str, run: bool = True) -> str:
    """An installed plug-in (a dist-info folder on PYTHONPATH) whose entry point in ``group`` is ``value``
    and whose module is ``module``: moot must refuse it with one line or go on, never a traceback."""
    site = ctx.folder / "site"
    info = site / "hostile_ep-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hostile-ep\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\nhostile = {value}\n")
    (site / "hostile_ep.py").write_text(textwrap.dedent(module))
    env = ctx.env(PYTHONPATH=f"{ctx.src}{os.pathsep}{site}")
    args = ["run", str(experiment(ctx, SCRIPTED))] if run else ["tasks"]
    proc = ctx.moot(*args, env=env)
    if proc.failure:
        return proc.failure
    if proc.rc != 0:
        return CLEAN if "moot: error:" in proc.text and "hostile" in proc.text else WRONG
    return CLEAN if run else BY_DESIGN


case(17, "an entry point (moot.components) that raises at import")(
    partial(_installed, group="moot.components", value="hostile_ep", module="raise RuntimeError('boom')\n")
)
case(17, "an entry point (moot.backends) registering the kind openai")(
    partial(
        _installed, group="moot.backends", value="hostile_ep",
        module="""
            from moot.backends.config import register_backend
            from moot.backends.scripted import ScriptedConfig
            class OpenAI(ScriptedConfig):
                pass
            register_backend("openai", OpenAI)
        """,
    )
)  # fmt: skip
case(17, "an entry point (moot.tasks) whose factory returns an int")(
    partial(_installed, group="moot.tasks", value="hostile_ep:make", module="def make():\n    return 5\n", run=False)
)
case(17, "an entry point (moot.tasks) that is not callable")(
    partial(_installed, group="moot.tasks", value="hostile_ep:VALUE", module="VALUE = 5\n", run=False)
)
case(17, "an entry point (moot.tasks) naming a module that does not exist")(
    partial(_installed, group="moot.tasks", value="no_such_module:make", module="", run=False)
)


# 18. issue 59: limits -------------------------------------------------------------------------------------
def _limit(ctx: Context, *args: str, top: dict[str, Any] | None = None, backend: dict[str, Any] | None = None,
           tasks: list[dict[str, Any]] | None = None) -> str:  # fmt: skip
    """A run with a limit that cannot be one: refused with one line, or run to its end within the case's time."""
    ctx.timeout_s = 30
    exp = experiment(ctx, backend or SCRIPTED, top=top, tasks=tasks)
    proc = ctx.moot("run", str(exp), *args)
    if proc.failure or proc.rc != 0:
        return proc.failure or _refused(proc, args[0] if args else None)
    return CLEAN if sum(statuses(ctx.folder / "run.sqlite").values()) >= 1 else WRONG


def _paced(ctx: Context, **pace: Any) -> str:
    with serving() as server:
        return _limit(ctx, backend=openai(server, **pace), tasks=[{"name": "arithmetic", "count": 3}])


case(18, "tokens_per_minute = 0")(partial(_paced, tokens_per_minute=0))


@case(18, "tokens_per_minute = 1 (every request larger than a minute's budget)")
def _one_token(ctx: Context) -> str:
    """Documented: a request larger than the whole budget goes alone once the last minute is empty, so two
    questions take a minute (each wait bounded by the minute), not forever."""
    with serving() as server:
        exp = experiment(ctx, openai(server, tokens_per_minute=1), tasks=[{"name": "arithmetic", "count": 2}])
        ctx.timeout_s = 100
        proc = ctx.moot("run", str(exp))
    if proc.failure or proc.rc != 0:
        return proc.failure or _refused(proc)
    return BY_DESIGN if statuses(ctx.folder / "run.sqlite").get("answered") == 2 else WRONG


case(18, "requests_per_minute = 1e-9")(partial(_paced, requests_per_minute=1e-9))
case(18, "--max-concurrency 1000000000")(lambda ctx: _limit(ctx, "--max-concurrency", "1000000000"))
case(18, "--max-concurrency 0")(lambda ctx: _limit(ctx, "--max-concurrency", "0"))
case(18, "--concurrency 0")(lambda ctx: _limit(ctx, "--concurrency", "0"))
case(18, "seeds = [2**64]")(lambda ctx: _limit(ctx, top={"seeds": [2**64]}))
case(18, "seeds = [-(2**63) - 1]")(lambda ctx: _limit(ctx, top={"seeds": [-(2**63) - 1]}))
case(18, "a task count of 0")(lambda ctx: _limit(ctx, tasks=[{"name": "arithmetic", "count": 0}]))


# -- the suite ---------------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", type=Path, default=SRC, help="the moot source folder to run (default: this one)")
    parser.add_argument("--item", type=int, action="append", help="only this item's cases (repeatable)")
    parser.add_argument("--verbose", action="store_true", help="print each case's outcome as it ends")
    args = parser.parse_args()
    chosen = [c for c in CASES if not args.item or c.item in args.item]
    outcomes: dict[str, str] = {}
    by_item: dict[int, Counter[str]] = {}
    start = time.monotonic()
    for number, c in enumerate(chosen, 1):
        folder = Path(tempfile.mkdtemp(prefix="moot-hostile-"))
        try:
            outcome = c.check(Context(folder, args.src.resolve()))
        except Exception as exc:  # the suite's own failure: say so, never count it as moot's
            outcome = f"suite error: {type(exc).__name__}: {exc}"[:200]
        outcomes[f"{c.item}. {c.name}"] = outcome
        by_item.setdefault(c.item, Counter())[outcome if outcome in OUTCOMES else "suite error"] += 1
        if args.verbose:
            print(f"[{number}/{len(chosen)}] {c.item}. {c.name}: {outcome}", flush=True)
    total = Counter(o if o in OUTCOMES else "suite error" for o in outcomes.values())
    report = {
        "moot": str(args.src),
        "cases": len(chosen),
        "wall_s": round(time.monotonic() - start, 1),
        "outcomes": {o: total[o] for o in (*OUTCOMES, "suite error") if total[o]},
        "by_item": {str(i): dict(sorted(n.items())) for i, n in sorted(by_item.items())},
        "not clean": {name: o for name, o in outcomes.items() if o not in (CLEAN, QUESTION_ERROR)},
    }
    print(json.dumps(report, indent=2, ensure_ascii=True))


if __name__ == "__main__":
    main()
