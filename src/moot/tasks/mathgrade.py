"""Mathematical answers: the last \\boxed{} of a reply, a normal form that votes compare, and grading by
symbolic equivalence with math-verify in a worker process whose time is bounded.

Votes and grades differ on purpose. An agent's answer (``Extraction.answer``) is the normal form of its
last \\boxed{} (``canonical_answer``): spaces, ``\\left``/``\\right``, ``\\dfrac``, degree signs, trailing
units and full stops removed, so that "\\dfrac{1}{2}" and "\\frac12" vote together. Vote identity is string
identity of that form: "0.5" and "\\frac{1}{2}" are two votes. Grading an answer against the gold is
symbolic (``MathGrader``): the normal forms' string equality first, else math-verify's ``verify`` of the
two parsed expressions, so "0.5", "\\frac{1}{2}" and "1/2" are all right when the gold is one of them.
Votes are not merged by symbolic equivalence: grouping an answer with an earlier equivalent one would make
a vote depend on the order replies arrive in, and grouping by the gold would merge right answers only.

math-verify bounds its own time with ``signal.alarm``, which works on the main thread only. moot runs it
with those timeouts off (``parsing_timeout=None``, ``timeout_seconds=None``) in one persistent worker
process (a Python subprocess speaking JSON lines, started on first use: no fork of a process that runs
threads, and no re-import of the caller's main module as multiprocessing's "spawn" does), and bounds each
comparison itself: past
``timeout_s`` (5 s by default) the worker is killed, restarted on the next comparison, and the pair is
*ungraded* (``Grade.TIMEOUT``; ``Grade.FAILED`` when the worker dies or raises). An ungraded answer scores
as wrong, never right, and is not hidden: each is logged (logger ``moot.tasks.mathgrade``, a warning naming
the question) and kept in ``MathGrader.ungraded``. Grades are cached per (answer, gold) pair, timeouts
included, so a pathological answer costs its bound once per process.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any

from moot.errors import ConfigError
from moot.tasks.extract import boxed_contents, canonical_number

logger = logging.getLogger(__name__)

MATH_VERIFY_HINT = "pip install 'math-verify[antlr4_13_2]==0.9.0' (or moot[tasks])"
DEFAULT_TIMEOUT_S = 5.0


# --- reading answers -------------------------------------------------------------------------


def boxed_answer(text: str) -> str | None:
    """The content of the last non-empty \\boxed{...} in ``text`` (nested braces balanced), stripped."""
    for content in reversed(boxed_contents(text)):
        if content.strip():
            return content.strip()
    return None


_CONTROL_WORD_END = re.compile(r"\\[A-Za-z]+$")
_LEFT_RIGHT = re.compile(r"\\(?:left|right)(?![A-Za-z])|\\(?:big|Big|bigg|Bigg)[lr]?(?![A-Za-z])")
_THIN_SPACES = re.compile(r"(?<!\\)\\[!,;:> ]|~")  # not the row break of a matrix (two backslashes)
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\degree(?![A-Za-z])")
_UNIT = re.compile(r"\s*\\(?:text|textnormal|textrm|mbox)\s*\{[^{}]*\}(?:\s*\^\s*\{?[23]\}?)?\s*$")
_TEXT = re.compile(r"\\(?:text|textnormal|textrm|textbf|mbox|mathrm|mathbf)\s*\{([^{}]*)\}")
_FRAC_SHORT = re.compile(r"\\frac(?:\s*(\d)|\s*\{([^{}]*)\})(?:\s*(\d)|\s*\{([^{}]*)\})")
_SQRT_SHORT = re.compile(r"\\sqrt\s*(\d|[A-Za-z](?![A-Za-z]))")
_SLASH = re.compile(r"(-?\d+)/(\d+)")
_ASSIGNED = re.compile(r"[A-Za-z]=(?P<rest>[^=]+)")
_PLAIN_NUMBER = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|-?\.\d+")


def _squeeze(text: str) -> str:
    """``text`` without whitespace, except a single space between a control word and a letter ("\\cot x")."""

    def keep(match: re.Match[str]) -> str:
        before, after = text[: match.start()], text[match.end() : match.end() + 1]
        return " " if _CONTROL_WORD_END.search(before) and after.isalpha() else ""

    return re.sub(r"\s+", keep, text)


def _fraction(match: re.Match[str]) -> str:
    numerator = match.group(1) or match.group(2)
    denominator = match.group(3) or match.group(4)
    return f"\\frac{{{numerator}}}{{{denominator}}}"


def canonical_answer(text: str | None) -> str | None:
    """The normal form in which answers vote: ``text`` (a \\boxed{} content, or a short answer) with
    surrounding ``$``, thin spaces, ``\\left``/``\\right``, ``\\displaystyle``, degree signs, dollar and
    percent signs, a trailing unit (``\\text{ cm}^2``) and a trailing full stop removed; remaining
    ``\\text{X}`` unwrapped; ``\\dfrac``/``\\tfrac`` as ``\\frac``, ``\\frac12`` as ``\\frac{1}{2}``, ``\\sqrt2`` as
    ``\\sqrt{2}``, an integer ``a/b`` as ``\\frac{a}{b}``; a plain number canonical ("10,080" -> "10080",
    "0.50" -> "0.5"); a single-letter assignment by its value ("x=5" -> "5"); whitespace removed but
    where it ends a control word ("\\cot x"). None when nothing is left."""
    if text is None:
        return None
    s = text.strip()
    while len(s) >= 2 and s[0] == "$" and s[-1] == "$":
        s = s[1:-1].strip()
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("\\displaystyle", "")
    s = s.replace("{,}", ",")
    s = _THIN_SPACES.sub(" ", s)
    s = _LEFT_RIGHT.sub("", s)
    s = _DEGREES.sub("", s)
    s = s.replace("\\$", "").replace("$", "").replace("\\%", "").replace("%", "")
    s = s.strip().rstrip(".").strip()
    without_unit = _UNIT.sub("", s)
    if without_unit.strip():  # a unit after something; a lone \text{even} is the answer itself
        s = without_unit
    s = _TEXT.sub(lambda m: m.group(1), s)
    s = _squeeze(s).rstrip(".")
    s = _FRAC_SHORT.sub(_fraction, s)
    s = _SQRT_SHORT.sub(lambda m: f"\\sqrt{{{m.group(1)}}}", s)
    if (assigned := _ASSIGNED.fullmatch(s)) is not None:
        s = assigned.group("rest")
    if (slash := _SLASH.fullmatch(s)) is not None:
        s = f"\\frac{{{slash.group(1)}}}{{{slash.group(2)}}}"
    if _PLAIN_NUMBER.fullmatch(s) and (number := canonical_number(s)) is not None:
        s = number
    return s or None


def math_answer(text: str) -> str | None:
    """A reply's answer: the normal form of its last non-empty \\boxed{} (None when it has none)."""
    return canonical_answer(boxed_answer(text))


_ANSWER_IS = re.compile(r"^(?:the\s+)?(?:final\s+)?answer\s*(?:is|:|=)\s*", re.IGNORECASE)
_MAX_BARE = 100  # the longest field read as a bare answer


def field_answer(text: str) -> str | None:
    """An answer stated in a judge's or moderator's field: its last \\boxed{} if any, else the whole field
    when it is short (at most 100 characters, "the answer is" removed, ``\\(...\\)`` unwrapped); else None."""
    if (boxed := boxed_answer(text)) is not None:
        return canonical_answer(boxed)
    bare = _ANSWER_IS.sub("", text.strip())
    if bare.startswith("\\(") and bare.endswith("\\)"):
        bare = bare[2:-2]
    if not bare.strip() or len(bare) > _MAX_BARE or "\n" in bare.strip():
        return None
    return canonical_answer(bare)


# --- grading -----------------------------------------------------------------------------------


class Grade(StrEnum):
    """How a comparison ended. TIMEOUT and FAILED are ungraded: scored as wrong, and recorded."""

    EQUIVALENT = "equivalent"
    DIFFERENT = "different"
    TIMEOUT = "timeout"  # the comparison ran past the bound; the worker was killed
    FAILED = "failed"  # the worker died or raised

    @property
    def graded(self) -> bool:
        return self in (Grade.EQUIVALENT, Grade.DIFFERENT)


@dataclass(frozen=True)
class Ungraded:
    """A comparison that ended without a grade: where (a question id), the pair, how, and after how long."""

    where: str
    answer: str
    gold: str
    grade: Grade
    seconds: float
    error: str = ""


def _boxed(expression: str) -> str:
    return f"\\boxed{{{expression}}}"


def _compare(answer: str, gold: str) -> bool:
    """math-verify's verdict on ``answer`` against ``gold`` (in the worker: no time bound here)."""
    from math_verify import parse, verify

    parsed_gold = parse(_boxed(gold), parsing_timeout=None)
    parsed_answer = parse(_boxed(answer), parsing_timeout=None)
    return bool(verify(parsed_gold, parsed_answer, timeout_seconds=None))


def serve() -> None:
    """The worker's loop (``python -c "from moot.tasks.mathgrade import serve; serve()"``): report ready (or
    why not), then answer each JSON line {"answer", "gold"} with {"ok", "equivalent", "error"}. Only these
    lines go to the real standard output; anything else printed goes to standard error."""
    import json
    import os
    import signal
    import sys

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    logging.getLogger("math_verify").setLevel(logging.ERROR)  # "timeout is disabled": bounded by the parent
    logging.getLogger("latex2sympy2_extended").setLevel(logging.ERROR)
    try:
        import math_verify  # noqa: F401
    except ImportError as exc:
        send({"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    send({"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        try:
            send({"ok": True, "equivalent": _compare(request["answer"], request["gold"]), "error": ""})
        except Exception as exc:  # math-verify catches its own; anything else is a failed comparison
            send({"ok": False, "equivalent": False, "error": f"{type(exc).__name__}: {exc}"[:500]})


_WORKER = "from moot.tasks.mathgrade import serve; serve()"


class _Worker:
    """The worker process and a thread that reads its replies into a queue (so a read can time out)."""

    def __init__(self) -> None:
        import os
        import queue
        import subprocess
        import sys

        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # the parent's modules
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
            encoding="utf-8",
        )
        self.replies: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, name="moot-math-grader-reader", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.replies.put(line)
        self.replies.put(None)  # the worker ended

    def send(self, message: dict[str, Any]) -> None:
        import json

        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def receive(self, timeout_s: float) -> dict[str, Any] | None:
        """The next reply; None when none came within ``timeout_s``. EOFError when the worker ended."""
        import json
        import queue

        try:
            line = self.replies.get(timeout=timeout_s)
        except queue.Empty:
            return None
        if line is None:
            raise EOFError("the worker ended")
        reply = json.loads(line)
        assert isinstance(reply, dict)
        return reply

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class MathGrader:
    """Symbolic equivalence by math-verify in one worker process, each comparison bounded by ``timeout_s``
    (see the module's docstring). Thread-safe; the worker starts on the first comparison that needs it
    (``start_timeout_s`` bounds its start, imports included), and is ended by ``close`` or with the process."""

    def __init__(
        self, timeout_s: float = DEFAULT_TIMEOUT_S, *, start_timeout_s: float = 120.0, cache_size: int = 100_000
    ) -> None:
        if not timeout_s > 0:
            raise ConfigError(f"the grading bound must be positive, got {timeout_s}")
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self.cache_size = cache_size
        self.ungraded: list[Ungraded] = []
        self.comparisons = 0  # pairs sent to the worker
        self.restarts = 0  # workers killed after a timeout or a failure
        self._cache: OrderedDict[tuple[str, str], Grade] = OrderedDict()
        self._lock = threading.Lock()
        self._worker: _Worker | None = None

    def grade(self, answer: str, gold: str, where: str = "") -> Grade:
        """``answer`` against ``gold``: equal normal forms are equivalent at once; otherwise math-verify
        decides in the worker, within ``timeout_s``. ``where`` (e.g. a question id) names an ungraded pair
        in the log and in ``ungraded``."""
        canonical = canonical_answer(answer)
        if canonical is not None and canonical == canonical_answer(gold):
            return Grade.EQUIVALENT
        key = (answer, gold)
        with self._lock:
            if (cached := self._cache.get(key)) is not None:
                self._cache.move_to_end(key)
                return cached
            grade, seconds, error = self._ask(answer, gold)
            self._cache[key] = grade
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
            if not grade.graded:
                self.ungraded.append(Ungraded(where, answer, gold, grade, seconds, error))
        if not grade.graded:
            logger.warning(
                "math grading %s%s after %.1f s: %r against gold %r scored as wrong%s",
                grade.value,
                f" ({where})" if where else "",
                seconds,
                answer[:200],
                gold[:200],
                f" ({error})" if error else "",
            )
        return grade

    def equivalent(self, answer: str, gold: str, where: str = "") -> bool:
        """Whether ``answer`` is graded equivalent to ``gold`` (an ungraded pair is not)."""
        return self.grade(answer, gold, where) is Grade.EQUIVALENT

    def close(self) -> None:
        """Stop the worker (a later comparison starts another)."""
        with self._lock:
            self._stop()

    def __del__(self) -> None:
        worker = getattr(self, "_worker", None)
        if worker is not None and worker.alive():
            worker.process.kill()

    # -- the worker

    def _ask(self, answer: str, gold: str) -> tuple[Grade, float, str]:
        worker = self._start()
        self.comparisons += 1
        started = time.perf_counter()
        try:
            worker.send({"answer": answer, "gold": gold})
            reply = worker.receive(self.timeout_s)
        except (EOFError, OSError, ValueError) as exc:  # the worker died (killed for memory, say)
            self._restart()
            return Grade.FAILED, time.perf_counter() - started, f"the worker ended ({type(exc).__name__})"
        seconds = time.perf_counter() - started
        if reply is None:
            self._restart()
            return Grade.TIMEOUT, seconds, ""
        if not reply.get("ok"):
            return Grade.FAILED, seconds, str(reply.get("error", ""))
        return (Grade.EQUIVALENT if reply.get("equivalent") else Grade.DIFFERENT), seconds, ""

    def _start(self) -> _Worker:
        if self._worker is not None and self._worker.alive():
            return self._worker
        self._stop()
        worker = self._worker = _Worker()
        try:
            ready = worker.receive(self.start_timeout_s)
        except (EOFError, ValueError) as exc:
            self._stop()
            raise ConfigError(f"the math grader's worker ended as it started ({type(exc).__name__})") from None
        if ready is None:
            self._stop()
            raise ConfigError(f"the math grader's worker did not start within {self.start_timeout_s:g} s")
        if not ready.get("ready"):
            self._stop()
            raise ConfigError(f"grading MATH answers needs math-verify ({MATH_VERIFY_HINT}): {ready.get('error')}")
        return worker

    def _restart(self) -> None:
        self.restarts += 1
        self._stop()

    def _stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop()


def math_verify_available() -> bool:
    """Whether math-verify can be imported here (the worker imports it)."""
    import importlib.util

    return importlib.util.find_spec("math_verify") is not None


def require_math_verify(task: str) -> None:
    """A ConfigError naming the install command when math-verify is missing."""
    if not math_verify_available():
        raise ConfigError(f"task {task} grades answers with math-verify, which is not installed: {MATH_VERIFY_HINT}")


@cache
def shared_grader() -> MathGrader:
    """The process's grader (one worker, one cache), shared by the tasks that grade with math-verify."""
    return MathGrader()


def grade_counts(grader: MathGrader | None = None) -> dict[str, Any]:
    """What a grader did: comparisons sent to its worker, restarts, and ungraded pairs by kind."""
    grader = grader or shared_grader()
    kinds: dict[str, int] = {}
    for item in grader.ungraded:
        kinds[item.grade.value] = kinds.get(item.grade.value, 0) + 1
    return {"comparisons": grader.comparisons, "restarts": grader.restarts, "ungraded": kinds}
