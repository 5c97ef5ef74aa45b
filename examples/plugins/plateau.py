"""A stopping rule written outside moot: stop once the majority answer has stayed the same for
``patience`` consecutive rounds (a softer version of moot's own "stable" rule, which needs every
agent's answer unchanged).

Use it from an experiment file with ``plugins = ["plateau.py"]`` (a path relative to that file;
examples/plugin-stopping.toml names it ``"plugins/plateau.py"``) and
``stopping = { kind = "plateau", patience = 2 }``, or from Python by importing this file (or
calling ``moot.debate.registry.load_plugin``) before resolving a protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field

from moot.debate.components.stopping import Stopping
from moot.debate.records import RoundRecord
from moot.debate.registry import register


@register
class Plateau(Stopping):
    kind: Literal["plateau"] = "plateau"
    reads_answers: ClassVar[bool] = True  # what it decides depends on the answers read from the replies
    patience: int = Field(default=2, ge=2, description="rounds in a row with the same majority answer")

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        winners = [record.vote.winner for record in history[-self.patience :]]
        if len(winners) == self.patience and winners[0] is not None and len(set(winners)) == 1:
            return "plateau"
        return None

    def condition(self) -> str:
        return f"the majority answer is unchanged for {self.patience} rounds"
