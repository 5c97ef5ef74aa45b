"""What one session of a run is asked to do (``RunOptions``) and what it reports when it ends
(``RunOutcome``): the runner's inputs and outputs, apart from the runner that uses them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from moot.runner.spend import BudgetStop, Spent


@dataclass(frozen=True)
class RunOptions:
    """How a session runs. ``conditions``: only these arms' questions are run this session (None: every
    arm); the store is still the whole experiment's, so a later session runs the others."""

    use_cache: bool = True
    retry_errors: bool = False
    conditions: tuple[str, ...] | None = None
    trace: Path | None = None  # ``--trace``: a JSON line per model call made (moot.trace)
    # ``--replay-only``: make no model call; a question some of whose calls are stored nowhere is left unstored
    # for a later run (a rebuild that re-reads stored replies with the current code, after a reader's fix)
    replay_only: bool = False


@dataclass(frozen=True)
class RunOutcome:
    store_path: Path
    units: int
    skipped: int
    ran: int
    calls: int
    replayed: int
    copied: int  # of replayed: calls copied from other runs' stores (calls_from)
    errors: int
    wall_s: float
    left: int = 0  # ``--replay-only``: questions not stored because some call of theirs is stored nowhere
    stopped: BudgetStop | None = None  # the ``[budget]`` cap that stopped the run (None: not stopped by one)
    spent: Spent | None = None  # the store's total spend when the session ended (with a ``[budget]``)
