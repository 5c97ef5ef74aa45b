"""A retention rule written outside moot: agents hear only the replies whose answer could be read (unparsed
ones are dropped); a round with no readable reply keeps all, and the fallback is recorded. Use it from an
experiment file with ``plugins = ["parsed_only.py"]`` (a path relative to that file) and
``retention = "parsed-only"`` in a condition; installed, it is the entry point ``parsed-only`` of the group
``moot.components``."""

from __future__ import annotations

from typing import Any, Literal

from moot.debate.components.retention import Kept, Retention
from moot.debate.records import RoundRecord
from moot.debate.registry import register


@register
class ParsedOnly(Retention):
    kind: Literal["parsed-only"] = "parsed-only"

    async def keep(self, debate: Any, previous: RoundRecord) -> Kept:
        kept = [i for i, turn in enumerate(previous.turns) if turn.answer is not None]
        return Kept(kept or None)
