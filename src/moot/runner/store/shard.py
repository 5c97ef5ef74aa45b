"""Which shard of a run a store holds (``moot.runner.shards`` deals and merges them): its record in the store's
metadata, here so that the store reads it without importing the sharding code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from moot.runner.store.errors import StoreError


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1 <= index <= count): the questions at positions k with
    ``k mod count == index - 1`` in the run's question order."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, position: int) -> bool:
        """Whether the run's question at ``position`` (from 0) is this shard's."""
        return position % self.count == self.index - 1

    def size(self, questions: int) -> int:
        """How many of a run's ``questions`` this shard holds."""
        return max(0, (questions - self.index) // self.count + 1)

    def meta(self) -> dict[str, int]:
        """The shard as its store's metadata records it."""
        return {"index": self.index, "count": self.count}

    @classmethod
    def from_meta(cls, value: Any) -> Shard | None:
        """The shard a store's metadata names, None for a store of a whole run."""
        if value is None:
            return None
        try:
            return cls(int(value["index"]), int(value["count"]))
        except (TypeError, KeyError, ValueError):
            raise StoreError(f"a store's metadata names an invalid shard: {value!r}") from None
