"""Tables declared by their columns: a ``Column`` names its header and how a row's item becomes its cell, and
``table`` builds a ``Table`` of plain text cells, one row per item (``moot.analysis.tables`` declares the
report's). The renderers (terminal, Markdown, HTML) read the ``Table``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from moot.analysis.formatting import DASH, fixed

T = TypeVar("T")
U = TypeVar("U")
OwnerT = TypeVar("OwnerT")
PartT = TypeVar("PartT")


@dataclass(frozen=True)
class Table:
    key: str  # a stable identifier (HTML id, tests)
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""


@dataclass(frozen=True)
class Column(Generic[T]):
    """One column of a table: its header, and its cell in the row of an item of type ``T``."""

    header: str
    cell: Callable[[T], str]

    def over(self, get: Callable[[U], T]) -> Column[U]:
        """The same column over items from which ``get`` takes this column's item."""
        cell = self.cell
        return Column(self.header, lambda item: cell(get(item)))


def table(key: str, title: str, columns: Sequence[Column[T]], items: Iterable[T], note: str = "") -> Table:
    """The table of one row per item, its cells as ``columns`` declare them."""
    return Table(
        key,
        title,
        tuple(c.header for c in columns),
        tuple(tuple(c.cell(item) for c in columns) for item in items),
        note,
    )


@dataclass(frozen=True)
class Part(Generic[OwnerT, PartT]):
    """A row's item in a table of one record of a condition's or a pair's (its replies, its oracle, its
    round difference...): the condition or pair, ``of``, and its record, ``part``."""

    of: OwnerT
    part: PartT


def parts(owners: Iterable[OwnerT], get: Callable[[OwnerT], PartT | None]) -> list[Part[OwnerT, PartT]]:
    """Each owner that has the record ``get`` takes from it (not None), with that record."""
    return [Part(owner, part) for owner in owners if (part := get(owner)) is not None]


def owned(owner: Sequence[Column[OwnerT]], columns: Sequence[Column[PartT]]) -> tuple[Column[Part[OwnerT, PartT]], ...]:
    """The owner's columns (its name: a condition's, a pair's A and B), then its record's ``columns``."""

    def of(row: Part[OwnerT, PartT]) -> OwnerT:
        return row.of

    def part(row: Part[OwnerT, PartT]) -> PartT:
        return row.part

    return (*(c.over(of) for c in owner), *(c.over(part) for c in columns))


def dash_unless(shown: bool, cell: Callable[[T], str]) -> Callable[[T], str]:
    """``cell`` where ``shown``, else a dash in every row (a figure that does not apply)."""
    return cell if shown else lambda _: DASH


def count(n: int | None) -> str:
    return DASH if n is None else f"{n:,}"


def cost(x: float | None) -> str:
    return DASH if x is None else f"${fixed(x, 4)}"


def ratio(k: int, n: int) -> str:
    return f"{k}/{n} = {fixed(k / n)}" if n else DASH


_NUMERIC = re.compile(r"^[\s\d.,+\-<>\[\]$/=%∞—()s±x]*$")


def numeric_columns(table: Table) -> list[bool]:
    """Columns whose every cell is a number, count, interval or ratio (right-aligned by the renderers)."""
    return [
        bool(table.rows) and all(_NUMERIC.match(row[i]) is not None for row in table.rows)
        for i in range(len(table.columns))
    ]
