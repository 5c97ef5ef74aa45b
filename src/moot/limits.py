"""moot's documented limits on input, checked before any work (README, "Command line").

A size beyond a limit is refused with one line naming the setting, before any question is
generated and before any store is created: without them, 10^12 questions or 100,000 agents
would run for hours at full CPU and fill memory before anything was said.
"""

from __future__ import annotations

import unicodedata

from moot.errors import ConfigError

MAX_AGENTS = 64  # agents of one condition
MAX_ROUNDS = 50  # rounds of one condition, counting round 0
MAX_POOL = 256  # candidates of the diverse initialiser (pool_size)
MAX_GENERATED_QUESTIONS = 100_000  # questions of a generated task (arithmetic, chess): a count, or an id's index + 1
MAX_STOCKFISH_DEPTH = 30  # chess-move:<depth> (depth 20 takes seconds a position; each ply more, about twice that)
MAX_SEEDS = 1_000  # seeds (repeats) of one experiment
SEED_RANGE = (-(2**63), 2**63 - 1)  # a seed is stored as a 64-bit integer
MAX_NAME_BYTES = 120  # a name in UTF-8: the store's file name is <name>-<hash>.sqlite, within 255 bytes

# Unicode's bidirectional controls: they reorder how a label reads in a terminal or a report.
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")


def _control(c: str) -> bool:
    return unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") or c in _BIDI


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an experiment, condition, agent or preset, or None when it can.

    A name becomes a label in reports and (the experiment's) part of a file name: it may not be
    empty, hold a path separator, "..", NUL or another control character, or exceed
    ``MAX_NAME_BYTES`` bytes in UTF-8."""
    if not name.strip():
        return "a name must not be empty"
    if "/" in name or "\\" in name:
        return f"a name must not hold a path separator, got {name[:40]!r}"
    if ".." in name:
        return f"a name must not hold '..', got {name[:40]!r}"
    bad = next((c for c in name if _control(c)), None)
    if bad is not None:
        shown = "NUL" if bad == "\0" else f"control character U+{ord(bad):04X}"
        return f"a name must not hold {shown}, got {name[:40]!r}"
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


def check_at_most(value: int, limit: int, what: str) -> int:
    """``value``, or a ConfigError: '<what> is at most <limit>, got <value>'."""
    if value > limit:
        raise ConfigError(f"{what} is at most {limit:,}, got {value:,}")
    return value
