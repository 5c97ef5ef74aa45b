"""The budget units of the equal-budget comparison (``moot.analysis.budget``) and what a result spends in them:
``Measure`` (tokens, completion tokens, calls, US dollars), ``Spend`` and its pricing at a run's ``[prices]``
(``priced``, ``condition_pricer``, also ``moot.frames``' cost), and the check that a store has what a unit needs
(``check_measure``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from moot.analysis.budget_matching import _round0
from moot.errors import ConfigError
from moot.runner.config import Price
from moot.runner.store import RunStore

Measure = Literal["tokens", "completion", "calls", "cost"]
MEASURES: tuple[Measure, ...] = ("tokens", "completion", "calls", "cost")
# what each budget unit counts, as tables name it
UNITS: dict[str, str] = {
    "tokens": "tokens (prompt + completion)",
    "completion": "completion tokens",
    "calls": "calls",
    "cost": "US dollars",
}


# -- costs -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Spend:
    """What one answer, or one question's debate, used: calls, prompt and completion tokens, and US dollars at
    the run's ``[prices]`` (None: some model it used has no price)."""

    calls: float
    prompt: float
    completion: float
    cost: float | None = None

    def of(self, measure: Measure) -> float:
        """The spend in ``measure``: calls, tokens (prompt + completion), completion tokens, or US dollars."""
        if measure == "calls":
            return self.calls
        if measure == "tokens":
            return self.prompt + self.completion
        if measure == "completion":
            return self.completion
        if self.cost is None:
            raise ValueError("no cost: some model has no price")
        return self.cost


def mean_spend(spends: Sequence[Spend]) -> Spend:
    """The mean of ``spends`` (cost None if any is None)."""
    n = max(len(spends), 1)
    costs = [s.cost for s in spends]
    return Spend(
        sum(s.calls for s in spends) / n,
        sum(s.prompt for s in spends) / n,
        sum(s.completion for s in spends) / n,
        None if any(c is None for c in costs) else sum(c for c in costs if c is not None) / n,
    )


def priced(calls: int, prompt: int, completion: int, price: Price | None, cached: float = 0) -> Spend:
    """A spend priced at ``price`` (US dollars per million tokens; None: unpriced), ``cached`` of its prompt
    tokens (as the servers reported them) at the price's ``cached_prompt`` (``Price.microdollars``)."""
    cost = None if price is None else price.microdollars(prompt, completion, cached) / 1e6
    return Spend(calls, prompt, completion, cost)


def check_measure(measure: Measure, spends: Iterable[Spend]) -> None:
    """A ConfigError naming what the store lacks for ``measure``: token counts (every call counted none) or
    prices (a model without one, or only zero prices: nothing to match)."""
    if measure not in MEASURES:
        raise ConfigError(f"unknown budget unit {measure!r}; one of {', '.join(MEASURES)}")
    spends = list(spends)
    if measure in ("tokens", "completion") and spends and not any(s.of(measure) for s in spends):
        raise ConfigError(f"--budget {measure}: the store has no {measure} counts (every call recorded 0)")
    if measure == "cost":
        if any(s.cost is None for s in spends):
            raise ConfigError(
                '--budget cost: some model of the store has no price; add [prices."MODEL"] to the experiment'
            )
        if spends and not any(s.cost for s in spends):
            raise ConfigError(
                "--budget cost: every price in the store is zero (a local model); use tokens or completion"
            )


def _spends(store: RunStore, models: dict[str, set[str]]) -> Callable[[str, int, int, int, float], Spend]:
    """A pricer of one condition's spend (calls, prompt, completion and cached prompt tokens): priced at the run's
    ``[prices]`` where every model its results used (its round-0 agents' and its own calls') is one priced model;
    unpriced (cost None) otherwise. ``models``: each condition's round-0 models (``_round0``), extended here."""
    prices = store.run_meta().config.prices
    for call in store.iter_calls():
        models.setdefault(call.condition, set()).add(call.model_name)
    price_of = {c: prices.get(next(iter(m))) if len(m) == 1 else None for c, m in models.items()}

    def spend(condition: str, calls: int, prompt: int, completion: int, cached: float) -> Spend:
        return priced(calls, prompt, completion, price_of.get(condition), cached)

    return spend


def condition_pricer(store: RunStore) -> Callable[[str, int, int, int, float], Spend]:
    """``_spends`` for every condition of ``store``: how its results are priced (also ``moot.frames``' cost)."""
    return _spends(store, _round0(store)[1])
