"""What a run has spent (calls, tokens, US dollars) and whether a ``[budget]`` cap is reached.

The caps count the store's total: every call it holds when the session starts (earlier sessions', and calls
copied from ``calls_from`` stores, which the store holds as its own) plus the calls this session makes. A
call replayed from the store costs nothing new: it is already in the total. So a run stopped at a cap and
rerun with a higher one continues to the new cap, and a rerun with the same cap starts no question.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from moot.backends.base import Reply
from moot.errors import ConfigError
from moot.runner.config import Budget, Price
from moot.runner.store import RunStore


@dataclass
class Spent:
    """Running totals of a run's spend (mutable on purpose: a counter). ``unpriced``: models without a price,
    whose calls add no cost."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    unpriced: set[str] = field(default_factory=set)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, model: str, price: Price | None, prompt: int, completion: int, cached: int, batched: bool) -> None:
        self.calls += 1
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        if price is None:
            self.unpriced.add(model)
        else:
            self.cost += price.dollars(prompt, completion, cached, batched)

    def add_reply(self, model: str, price: Price | None, reply: Reply) -> None:
        """A call this session made (``model``: its configured model name, what prices are keyed by)."""
        cached = sum(s.cached_tokens or 0 for s in reply.samples)
        batched = any(s.batch is not None for s in reply.samples)
        self.add(model, price, reply.prompt_tokens, reply.completion_tokens, cached, batched)

    def of(self, measure: str) -> float:
        """The spend in a cap's measure: calls, tokens (prompt + completion) or cost (US dollars)."""
        return {"calls": float(self.calls), "tokens": float(self.tokens), "cost": self.cost}[measure]


def stored_spend(store: RunStore, prices: Mapping[str, Price]) -> Spent:
    """Every call ``store`` holds, priced at ``prices`` by model name."""
    spent = Spent()
    for call in store.iter_calls():
        price = prices.get(call.model_name)
        spent.add(call.model_name, price, call.prompt_tokens, call.completion_tokens, call.cached_tokens, call.batched)
    return spent


@dataclass(frozen=True)
class BudgetStop:
    """Why a run stopped at a cap: the cap's measure (calls, tokens or cost), its value, and the spend then."""

    measure: str
    limit: float
    spent: float

    @property
    def option(self) -> str:
        """The command-line option that sets the cap."""
        return {"calls": "--max-calls", "tokens": "--max-total-tokens", "cost": "--max-cost"}[self.measure]

    def meta(self, final: float, session: int) -> dict[str, object]:
        """The store's ``stop_reason`` record: ``final`` is the spend once the questions in flight finished."""
        return {"budget": self.measure, "limit": self.limit, "spent": final, "session": session}


def reached(budget: Budget | None, spent: Spent) -> BudgetStop | None:
    """The first cap of ``budget`` that ``spent`` has reached (calls, then tokens, then cost), else None."""
    if budget is None:
        return None
    for measure, limit in budget.caps().items():
        if spent.of(measure) >= limit:
            return BudgetStop(measure, limit, spent.of(measure))
    return None


def shown(measure: str, value: float) -> str:
    """A spend in words: "$0.0123", "1,234 tokens", "12 calls"."""
    if measure == "cost":
        return f"${value:,.6f}".rstrip("0").rstrip(".") if value else "$0"
    return f"{int(value):,} {measure}"


def check_caps(**caps: float | None) -> None:
    """Refuse a cap that is not a positive finite number, naming its option (``max_total_tokens`` is
    ``--max-total-tokens``): one ConfigError line."""
    for name, value in caps.items():
        if value is not None and not (math.isfinite(value) and value > 0):
            option = "--" + name.replace("_", "-")
            raise ConfigError(f"option {option}: must be a positive finite number, got {value}")
