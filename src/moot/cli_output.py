"""How the command line prints: text made safe for a terminal, widths, tables that fit and plurals.

Tables fit the terminal by wrapping their cells (a word longer than its column, such as a file
path, is folded onto the next line, never cut) and, where a table is still too wide, by leaving
out secondary columns, which the caller names so that it can say which were left out."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

# what a terminal acts on instead of showing: the C0 controls but line feed and tab, DEL, the C1 controls
# (CSI and OSC among them), and the bidirectional marks, embeddings, overrides and isolates that reorder
# what is shown, and the line and paragraph separators
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` safe to print: every character a terminal would act on (an escape sequence that clears the
    screen, retitles the window or hides a link; a bidirectional override that reorders a line) shown as
    its Python escape (``\\x1b``, ``\\u202e``) instead; line feeds and tabs kept. For text that comes from a
    question, a reply, a server or a file."""
    return _UNSAFE.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text.replace("\r\n", "\n"))


def escaped(text: str) -> str:
    """``printable(text)`` with rich markup escaped: for such text inside a markup string."""
    return escape(printable(text))


def plural(count: int, word: str, many: str | None = None) -> str:
    """'1 question', '2 questions' (``many``: an irregular plural)."""
    return f"{count:,} {word if count == 1 else many or word + 's'}"


def joined_lines(parts: list[str], width: int, separator: str = " · ") -> list[str]:
    """``parts`` joined by ``separator`` into lines of at most ``width`` characters, broken only between
    parts (a part longer than a line gets a line of its own)."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + len(separator) + len(part) <= width:
            lines[-1] += separator + part
        else:
            lines.append(part)
    return lines


def shortened(text: str, width: int) -> str:
    """``text`` on one line (whitespace collapsed) of at most ``width`` characters: cut at a word where
    it is longer, with "…" to show the cut (a word longer than the line is cut inside)."""
    line = " ".join(text.split())
    if len(line) <= width:
        return line
    cut = line[: max(1, width - 1)]
    if " " in cut and line[len(cut)] != " ":
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + "…"


# the widest console moot prints to: a larger COLUMNS (or terminal) is taken as this, so that
# `COLUMNS=100000000` cannot pad every table and rule out to hundreds of megabytes; and the narrowest
# (`COLUMNS=0` printed nothing at all)
MAX_CONSOLE_WIDTH = 1_000
MIN_CONSOLE_WIDTH = 20


def console_width(piped: int) -> int | None:
    """The width a console should be given: None (the terminal's own, or ``COLUMNS`` when set) on a
    terminal or where ``COLUMNS`` says; ``piped`` columns for a pipe or a file (logs, CI), or no stdout at all
    (``moot ... >&-``, which the command line then refuses with one line)."""
    terminal = sys.stdout is not None and sys.stdout.isatty()
    if terminal or os.environ.get("COLUMNS", "").strip().isdigit():
        return None
    return piped


def make_console(piped: int) -> Console:
    """A console for moot's output: no highlighting, ``console_width(piped)`` wide, within
    ``MIN_CONSOLE_WIDTH`` and ``MAX_CONSOLE_WIDTH`` columns."""
    console = Console(highlight=False, width=console_width(piped))
    if not MIN_CONSOLE_WIDTH <= console.width <= MAX_CONSOLE_WIDTH:
        console.width = min(max(console.width, MIN_CONSOLE_WIDTH), MAX_CONSOLE_WIDTH)
    return console


def natural_width(table: Table, console: Console) -> int:
    """The width ``table`` takes when nothing wraps."""
    return Measurement.get(console, console.options.update_width(100_000), table).maximum


def _fits(table: Table, console: Console, flexible: set[str]) -> bool:
    """Whether ``table`` fits ``console`` with every value on one line (headers may wrap between words),
    the ``flexible`` columns' free text wrapped between words down to ``TEXT`` characters."""
    natural = natural_width(table, console)
    if natural <= console.width:
        return True
    sizes = {id(c): _content_widths(c, console) for c in table.columns}
    overhead = natural - sum(widest for *_, widest in sizes.values())
    needed = sum(
        min(value, max(word, TEXT)) if str(c.header) in flexible else value
        for c in table.columns
        for word, value, _ in [sizes[id(c)]]
    )
    return overhead + needed <= console.width


TEXT = 16  # the narrowest a column of free text is made before columns are left out


def _content_widths(column: Any, console: Console) -> tuple[int, int, int]:
    """(the longest word, the widest value, the widest line) of ``column``'s cells and header: its
    narrowest width that wraps only between words, its narrowest that keeps every value on one line
    (the header may wrap), and its width when nothing wraps."""
    wide = console.options.update_width(100_000)

    def size(cell: Any) -> Measurement:
        return Measurement.get(console, wide, console.render_str(cell) if isinstance(cell, str) else cell)

    header = size(column.header)
    cells = [size(c) for c in column.cells]
    word = max([header.minimum, *(m.minimum for m in cells)])
    value = max([word, *(m.maximum for m in cells)])
    return word, value, max(value, header.maximum)


def fit_table(table: Table, console: Console, optional: Sequence[str] = (), flexible: Sequence[str] = ()) -> list[str]:
    """Make ``table`` fit ``console``'s width without cutting any value: every cell may wrap, and a
    word longer than its column is folded, not cut with "…". While the table is wider than the
    console, the columns headed ``optional`` are left out, in that order; then the columns wrap,
    between words where the width allows, the columns headed ``flexible`` (long free text) first.
    Returns the headers left out."""
    for column in table.columns:
        column.no_wrap = False
        column.overflow = "fold"
    dropped: list[str] = []
    for header in optional:
        if _fits(table, console, set(flexible)):
            break
        found = next((c for c in table.columns if str(c.header) == header), None)
        if found is not None:
            table.columns.remove(found)
            dropped.append(header)
    natural = natural_width(table, console)
    if natural > console.width:
        _share(table, console, natural, set(flexible))
    return dropped


def _share(table: Table, console: Console, natural: int, flexible: set[str]) -> None:
    """Narrow the columns so that ``table`` fits, splitting no word where that is possible: each column
    keeps at least its longest word; the width left goes to keeping values on one line, then headers,
    first to the other columns, then to ``flexible`` (free text that wraps well), each time to the
    narrowest first (water-filling). Where the longest words do not fit side by side, the flexible
    columns alone are folded, if they can each keep 8 characters; else rich shares the width out."""
    sizes = {id(c): _content_widths(c, console) for c in table.columns}
    room = console.width - (natural - sum(widest for *_, widest in sizes.values()))  # for the cells' content
    fixed = [c for c in table.columns if str(c.header) not in flexible]
    free = [c for c in table.columns if str(c.header) in flexible]
    widths = {key: word for key, (word, *_) in sizes.items()}
    steps = [(fixed, 1), (free, 1), (fixed, 2), (free, 2)]  # 1: up to the widest value, 2: the header too
    if sum(widths.values()) > room:
        if not free or room - sum(widths[id(c)] for c in fixed) < 8 * len(free):
            return
        widths.update({id(c): 0 for c in free})
        steps = [(free, 1), (free, 2)]
    extra = room - sum(widths.values())
    for group, step in steps:
        ordered = sorted(group, key=lambda c: sizes[id(c)][step] - widths[id(c)])
        for i, column in enumerate(ordered):
            give = max(0, min(sizes[id(column)][step] - widths[id(column)], extra // (len(ordered) - i)))
            widths[id(column)] += give
            extra -= give
    for column in table.columns:
        column.max_width = widths[id(column)]
