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
blocks).

    python benchmarks/hostile.py                        # every case, with this checkout's moot
    python benchmarks/hostile.py --src /tmp/old/src     # another checkout's moot (before/after counts)
    python benchmarks/hostile.py --item 3 --verbose     # one item's cases, with what each printed
    python benchmarks/hostile.py --item 11 --item 12    # issue 59's cases only
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
from tests.integration.servers import CANNED_MODEL, Answer, Handler, Hostile, completion, reply, trickle

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
