"""Where a run's time goes: ``moot run --trace FILE`` writes one JSON line per model call.

Each call line says where it belongs (condition, question, seed, agent, round), when the runner asked
for it (``queued``) and when its reply was back (``done``), and per sample when it was sent, which of a
managed server's slots served it and how many of them were busy, and the server's own timings where it
gives them (llama-server's ``timings``: prompt tokens evaluated and cached, prompt and generation
milliseconds). Times are seconds since the trace began. Replayed calls cost nothing and are not traced.

``breakdown`` reads a trace back into the shares of the server's slot time that a debate spends
generating, reading prompts and idle, how long finished agents wait for the slowest of their round,
and how busy the slots were over the run (benchmarks/engine.py prints it). The trace is a measuring
instrument: it changes no request and no result.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from moot.errors import ConfigError

_SAMPLES: ContextVar[list[dict[str, Any]] | None] = ContextVar("moot_trace_samples", default=None)
# named pipes checked and opened for writing, by absolute path: held open from the check until the run's trace
# takes them, so that their reader (`cat PIPE`) sees no end in between
_PIPES: dict[Path, int] = {}
TIMES = ("sent", "done")  # the times a backend records in a sample (``time.perf_counter()``)


def sample_record() -> dict[str, Any] | None:
    """A new sample record of the call being traced, for its backend to fill in (``sent`` and ``done`` as
    ``time.perf_counter()``, ``slot``, ``busy``, ``server``: the server's timings, token counts); None when
    nothing is traced."""
    samples = _SAMPLES.get()
    if samples is None:
        return None
    record: dict[str, Any] = {}
    samples.append(record)
    return record


def check_trace(path: Path, store: Path | None = None) -> bool:
    """Refuse (ConfigError) a trace file moot must not write, before the run does any work: the run's store,
    any SQLite database or a file SQLite or moot keeps beside a store, a folder, a link (``moot.outputs``'
    rules for an output file), or an existing file with something in it that is not an earlier trace (a
    trace is rewritten by each run that names it; any other file is the user's). True for a pipe or
    terminal the user named: it is written into. A named pipe is opened here, without waiting: one with no
    reader is refused (opening it would wait for one for ever), one with a reader is held open for the run."""
    from moot.outputs import STORE_FILES, check_output

    if store is not None:  # by name too: a new run's store and its side files do not exist yet
        own = {store.absolute(), *(store.absolute().with_name(store.name + s) for s in STORE_FILES)}
        if path.absolute() in own:
            raise ConfigError(
                f"--trace: {path} is this run's store or a file SQLite keeps beside it; name another file"
            )
    try:
        if check_output(path, force=True, reading=store, stream=True):
            _hold_pipe(path)
            return True  # a pipe or terminal the user named
        if not path.exists() or path.stat().st_size == 0:
            return False
        with path.open("rb") as f:
            first = f.readline(4096)
    except ConfigError as exc:
        raise ConfigError(f"--trace: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"--trace: cannot write {path}: {exc.strerror or exc}") from None
    try:
        earlier = json.loads(first)
    except ValueError:
        earlier = None
    if not (isinstance(earlier, dict) and earlier.get("kind") == "run"):
        raise ConfigError(f"--trace: {path} exists and is not a trace moot wrote; name a new file, or remove this one")
    return False


def _hold_pipe(path: Path) -> None:
    """Open the named pipe at ``path`` for writing, never waiting for a reader (O_NONBLOCK: no reader is
    ENXIO, a ConfigError), and hold it in ``_PIPES`` for ``Trace``; nothing for a path that is no pipe."""
    from moot.outputs import open_pipe

    key = path.absolute()
    if key in _PIPES or (fd := open_pipe(path)) is None:
        return
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)  # writes wait for the reader
    _PIPES[key] = fd


class Trace:
    """A trace file being written: a header line (``run``: when, and ``about``: the run's facts, such as
    its server's ``slots``), one line per call, an end line."""

    def __init__(self, path: Path, about: dict[str, Any] | None = None, store: Path | None = None):
        into_stream = check_trace(path, store)
        try:
            held = _PIPES.pop(path.absolute(), None)  # a named pipe, opened by the check
            if held is not None:
                self._file: IO[str] = os.fdopen(held, "w", encoding="utf-8")
            elif into_stream:  # a terminal or another pipe the user named (/dev/stdout)
                self._file = path.open("w", encoding="utf-8")
            else:  # O_NOFOLLOW: a link planted since the check is refused, not written through
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
                self._file = os.fdopen(fd, "w", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"--trace: cannot write {path}: {exc.strerror or exc}") from None
        self.path = path
        self._start = time.perf_counter()
        self._write({"kind": "run", "started": time.time(), **(about or {})})

    def _write(self, line: dict[str, Any]) -> None:
        self._file.write(json.dumps(line, sort_keys=True) + "\n")
        self._file.flush()

    @contextmanager
    def call(self, place: dict[str, object]) -> Iterator[None]:
        """Trace the model call made inside: its samples are those its backend records meanwhile."""
        samples: list[dict[str, Any]] = []
        token = _SAMPLES.set(samples)
        queued = self._since()
        error: str | None = None
        try:
            yield
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            _SAMPLES.reset(token)
            timed = [s | {k: self._since(s[k]) for k in TIMES if k in s} for s in samples]
            line = {"kind": "call", **{k: place[k] for k in PLACE if k in place}}
            self._write(line | {"queued": queued, "done": self._since(), "samples": timed, "error": error})

    def _since(self, at: float | None = None) -> float:
        """Seconds from the trace's start to ``at`` (default: now), to the microsecond."""
        return round((time.perf_counter() if at is None else at) - self._start, 6)

    def close(self) -> None:
        if not self._file.closed:
            self._write({"kind": "end", "at": self._since()})
            self._file.close()


PLACE = ("condition", "task", "question_id", "seed", "agent", "round")


@dataclass(frozen=True)
class Breakdown:
    """A traced run's time, in seconds of wall time and of slot time (wall time x slots)."""

    wall_s: float
    slots: int
    calls: int
    samples: int
    completion_tokens: int
    prompt_tokens: int  # prompt tokens the server evaluated (not those it had cached)
    cached_tokens: int
    generating_s: float  # slot-seconds generating (the server's generation time)
    prompt_s: float  # slot-seconds reading prompts (the server's prompt time)
    other_busy_s: float  # slot-seconds a request held a slot beyond the two (HTTP, sampling, queueing)
    waiting_for_slot_s: float  # request-seconds between asking and being sent (all slots busy)
    slowest_agent_s: float  # agent-seconds a finished agent's question waited for the slowest of its round
    per_slot_generating: tuple[float, ...]  # each slot's share of the wall time spent generating
    busy_shares: tuple[float, ...]  # [k]: the share of the wall time with k requests in flight

    @property
    def slot_s(self) -> float:
        return self.wall_s * self.slots

    @property
    def idle_s(self) -> float:
        return max(self.slot_s - self.generating_s - self.prompt_s - self.other_busy_s, 0.0)

    @property
    def tokens_per_s(self) -> float:
        return self.completion_tokens / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def mean_busy(self) -> float:
        return sum(k * share for k, share in enumerate(self.busy_shares))


def read_trace(path: Path) -> list[dict[str, Any]]:
    """The lines of a trace file; a line that is not JSON is a ConfigError naming it."""
    lines = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if text.strip():
            try:
                lines.append(json.loads(text))
            except json.JSONDecodeError:
                raise ConfigError(f"{path}:{number}: not a trace line (JSON expected)") from None
    return lines


def breakdown(lines: list[dict[str, Any]], slots: int | None = None) -> Breakdown:
    """Where the traced time went. ``slots``: the server's slots (default: the trace's ``run`` line's,
    else the largest number of requests ever in flight). A sample without server timings counts as busy
    from sent to done (its ``other_busy_s``)."""
    calls = [line for line in lines if line.get("kind") == "call"]
    samples = [s for c in calls for s in c["samples"] if "sent" in s and "done" in s]
    if not samples:
        raise ConfigError("the trace has no traced model call (a run that only replayed stored calls?)")
    about = {k: v for line in lines if line.get("kind") == "run" for k, v in line.items()}
    start = min(c["queued"] for c in calls)
    wall = max(c["done"] for c in calls) - start
    events = sorted([(s["sent"], 1) for s in samples] + [(s["done"], -1) for s in samples])
    peak, level = 0, 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    width = slots or int(about.get("slots") or 0) or peak
    shares = [0.0] * (max(width, peak) + 1)
    level, last = 0, start
    for at, step in events:
        shares[level] += at - last
        level, last = level + step, at
    shares[level] += start + wall - last  # after the last reply, until its call was back
    generating = prompt = other = 0.0
    per_slot: dict[int, float] = defaultdict(float)
    evaluated = cached = completion = 0
    for s in samples:
        held = s["done"] - s["sent"]
        server = s.get("server") or {}
        gen = float(server.get("predicted_ms", 0.0)) / 1000
        read = float(server.get("prompt_ms", 0.0)) / 1000
        generating += gen
        prompt += read
        other += max(held - gen - read, 0.0)
        if "slot" in s:
            per_slot[int(s["slot"])] += gen
        evaluated += int(server.get("prompt_n", 0))
        cached += int(server.get("cache_n", 0))
        completion += int(s.get("completion_tokens", 0))
    rounds: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for c in calls:
        if c.get("error") is None:
            rounds[(c.get("condition"), c.get("task"), c.get("question_id"), c.get("seed"), c.get("round"))].append(
                c["done"]
            )
    slowest = sum(max(done) - d for done in rounds.values() for d in done)
    return Breakdown(
        wall_s=wall,
        slots=width,
        calls=len(calls),
        samples=len(samples),
        completion_tokens=completion,
        prompt_tokens=evaluated,
        cached_tokens=cached,
        generating_s=generating,
        prompt_s=prompt,
        other_busy_s=other,
        waiting_for_slot_s=sum(s["sent"] - c["queued"] for c in calls for s in c["samples"] if "sent" in s),
        slowest_agent_s=slowest,
        per_slot_generating=tuple(per_slot.get(i, 0.0) / wall if wall > 0 else 0.0 for i in range(width)),
        busy_shares=tuple(share / wall if wall > 0 else 0.0 for share in shares),
    )


def describe(b: Breakdown) -> list[str]:
    """The breakdown as lines of text."""

    def share(seconds: float) -> str:
        return f"{seconds:8.1f} slot-s  {100 * seconds / b.slot_s:5.1f}%" if b.slot_s > 0 else f"{seconds:8.1f} s"

    busy = ", ".join(f"{k}: {100 * s:.0f}%" for k, s in enumerate(b.busy_shares) if s >= 0.005)
    slots = " ".join(f"{100 * s:.0f}%" for s in b.per_slot_generating)
    return [
        f"wall {b.wall_s:.1f} s x {b.slots} slots = {b.slot_s:.1f} slot-s; {b.calls} calls, {b.samples} samples",
        f"completion tokens {b.completion_tokens} ({b.tokens_per_s:.1f}/s over the wall time); prompt tokens "
        f"evaluated {b.prompt_tokens}, cached {b.cached_tokens}",
        f"  generating       {share(b.generating_s)}",
        f"  reading prompts  {share(b.prompt_s)}",
        f"  other busy       {share(b.other_busy_s)}",
        f"  idle             {share(b.idle_s)}",
        f"finished agents waiting for the slowest of their round: {b.slowest_agent_s:.1f} agent-s",
        f"requests waiting for a free slot: {b.waiting_for_slot_s:.1f} request-s",
        f"requests in flight (share of wall time): {busy}; mean {b.mean_busy:.2f}",
        f"each slot generating (share of wall time): {slots}",
    ]
