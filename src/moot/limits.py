"""moot's documented limits on input, checked before any work (docs/cli.md, "Command line").

A size beyond a limit is refused with one line naming the setting, before any question is
generated and before any store is created: without them, 10^12 questions or 100,000 agents
would run for hours at full CPU and fill memory before anything was said.
"""

from __future__ import annotations

import re
import unicodedata

from moot.errors import ConfigError

MAX_AGENTS = 64  # agents of one condition
MAX_ROUNDS = 50  # rounds of one condition, counting round 0
MAX_POOL = 256  # candidates of the diverse initialiser (pool_size)
MAX_GENERATED_QUESTIONS = 100_000  # questions of a generated task (arithmetic, chess): a count, or an id's index + 1
MAX_STOCKFISH_DEPTH = 30  # chess-move:<depth> (depth 20 takes seconds a position; each ply more, about twice that)
MAX_SEEDS = 1_000  # seeds (repeats) of one experiment
# results a run plans (questions x seeds x conditions): each is a unit of work and a row, and planning 10^8
# of them alone took minutes at full CPU before any store was made
MAX_PLANNED_RESULTS = 10_000_000
SEED_RANGE = (-(2**63), 2**63 - 1)  # a seed is stored as a 64-bit integer
MAX_NAME_BYTES = 120  # a name in UTF-8: the store's file name is <name>-<hash>.sqlite, within 255 bytes

# Characters a name may not hold: controls, lone surrogates, line and paragraph separators, and Unicode's
# invisible format characters (category Cf: the bidirectional controls, which reorder how a label reads,
# and the zero-width ones, which make two different names read the same: "vote" and "vo\u200bte").
_CONTROLS = ("Cc", "Cs", "Zl", "Zp")
_FORMAT = "Cf"


def _control(c: str) -> bool:
    return unicodedata.category(c) in (*_CONTROLS, _FORMAT)


def _shown_character(c: str) -> str:
    """How an error names a character a name may not hold."""
    if c == "\0":
        return "NUL"
    kind = "invisible format character" if unicodedata.category(c) == _FORMAT else "control character"
    return f"{kind} U+{ord(c):04X}"


def canonical_name(name: str) -> str:
    """``name`` in Unicode's composed form (NFC): "café" typed with a combining accent and with a composed
    é are one name, compared, stored and shown alike."""
    return unicodedata.normalize("NFC", name)


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an experiment, condition, agent or preset, or None when it can.

    A name becomes a label in reports and (the experiment's) part of a file name: it may not be
    empty, hold a path separator, "..", NUL or another control character, an invisible format
    character (a zero-width space, a bidirectional control), or exceed ``MAX_NAME_BYTES`` bytes in UTF-8."""
    if not name.strip():
        return "a name must not be empty"
    if "/" in name or "\\" in name:
        return f"a name must not hold a path separator, got {name[:40]!r}"
    if ".." in name:
        return f"a name must not hold '..', got {name[:40]!r}"
    bad = next((c for c in name if _control(c)), None)
    if bad is not None:
        return f"a name must not hold {_shown_character(bad)}, got {name[:40]!r}"
    size = len(name.encode("utf-8"))
    if size > MAX_NAME_BYTES:
        return f"a name is at most {MAX_NAME_BYTES} bytes in UTF-8, got {size}"
    return None


def safe_name(text: str) -> str:
    """``text`` made a valid name: separators and control characters become '_', '..' becomes '__', and
    it is cut to ``MAX_NAME_BYTES`` bytes."""
    kept = "".join("_" if c in "/\\" or _control(c) else c for c in text).replace("..", "__")
    kept = kept.encode("utf-8")[:MAX_NAME_BYTES].decode("utf-8", "ignore")
    return kept if kept.strip() else "experiment"


# A lone UTF-16 surrogate (U+D800 to U+DFFF): Python holds one in a string (a JSON "\\ud800" escape decodes
# to it), but it is not text, and no UTF-8 encoder (SQLite's, a file's) writes it.
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate in ``text``, or None."""
    found = _SURROGATE.search(text)
    return found.group() if found else None


def without_lone_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, the replacement character (as a UTF-8 decoder
    replaces a byte it cannot read): what the run store writes, so that no reply can make it fail."""
    return _SURROGATE.sub("\ufffd", text)


def check_at_most(value: int, limit: int, what: str) -> int:
    """``value``, or a ConfigError: '<what> is at most <limit>, got <value>'."""
    if value > limit:
        raise ConfigError(f"{what} is at most {limit:,}, got {value:,}")
    return value
