"""What a run store holds, as typed records: the read side of ``moot.runner.store``.

The store writes the engine's records (``moot.debate.records``) and reads the same types back;
these records add what the runner stores around them (where a result belongs, the calls it paid
for, the run's metadata), so that no reader needs the store's column names or JSON layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: reading a store's listing (`moot runs`) loads no config or engine code
    from moot.debate.records import DebateResult
    from moot.runner.config import ExperimentConfig


@dataclass(frozen=True)
class StoredResult:
    """One question's stored result: the engine's record plus where it belongs in the run.

    ``call_keys`` maps (round, agent) of each turn to the key of the call that made it ("" when the
    turn had none); ``metric`` is a task's own score where accuracy does not apply (biographies),
    with ``metric_detail`` (the task's JSON) behind it."""

    condition: str
    task: str
    seed: int
    result: DebateResult
    session: int
    metric: float | None = None
    metric_detail: Any = None
    call_keys: dict[tuple[int, str], str] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str, int]:
        """(condition, task, question id, seed): the unit of work, storage and resume."""
        return (self.condition, self.task, self.result.question.id, self.seed)

    @property
    def scorer_calls(self) -> int:
        """Calls of a judge-scored task's scorer; its detail is {agent: {"calls": n, ...}} (biographies)."""
        if not isinstance(self.metric_detail, dict):
            return 0
        return sum(int(part.get("calls", 0)) for part in self.metric_detail.values() if isinstance(part, dict))


@dataclass(frozen=True)
class StoredCall:
    """One completed model call (its request and reply stay in the store: ``RunStore.cached_reply``)."""

    key: str
    condition: str
    task: str
    question_id: str
    seed: int
    round: int
    agent: str
    sample_count: int
    backend: str
    model: str  # the model id the backend reported
    model_name: str  # the configured name, what prices are keyed by
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    session: int
    created_at: float
    batched: bool = False  # answered in a provider batch (its reply's samples name the batch)
    cached_tokens: int = 0  # of prompt_tokens, those the server reported it had cached (0: none reported)


@dataclass(frozen=True)
class CallError:
    """A model call that failed; its question ended with an error."""

    key: str
    condition: str
    task: str
    question_id: str
    seed: int
    round: int
    agent: str
    error: str
    session: int
    created_at: float


@dataclass(frozen=True)
class Session:
    """One run (or rerun) of the experiment on this store."""

    id: int
    started_at: float
    finished_at: float | None
    status: str
    calls: int
    cached: int
    options: dict[str, Any]
    last_call_at: float | None = None  # when its last stored call was made (None: it stored none)

    @property
    def wall_s(self) -> float:
        """Seconds the session ran; one with no recorded end (killed outright, or still running) counts up
        to its last stored call, 0 if it stored none."""
        if self.finished_at is not None:
            return self.finished_at - self.started_at
        return max(0.0, self.last_call_at - self.started_at) if self.last_call_at is not None else 0.0

    @property
    def made_calls(self) -> bool:
        """Whether the session called a model: a finished one says how many it made; one with no recorded
        end made some if it stored a call. A rerun that only replayed its store made none."""
        return self.calls > 0 if self.finished_at is not None else self.last_call_at is not None


@dataclass(frozen=True)
class StoredModel:
    """A model the run loaded: its backend kind and the id the backend reported."""

    backend: str
    model_id: str


@dataclass(frozen=True)
class RunMeta:
    """The run's metadata, as ``RunStore.create`` and the experiment wrote it."""

    schema_version: int
    moot_version: str
    created_at: float
    name: str
    status: str
    fingerprint_hash: str
    config: ExperimentConfig
    round_convention: str = ""
    history_mode: str = ""
    prompt_templates: dict[str, str] = field(default_factory=dict)
    round0_sharing: dict[str, tuple[str, ...]] = field(default_factory=dict)
    topology_density: dict[str, float] = field(default_factory=dict)
    task_provenance: tuple[dict[str, Any], ...] = ()
    models: dict[str, StoredModel] = field(default_factory=dict)  # by configured model name
    summary: dict[str, Any] | None = None  # summary_json at the end of the last session
    migrated_from: int | None = None  # the schema version the store was written with, if migrated


@dataclass(frozen=True)
class RunListing:
    """What ``moot runs`` shows of a run, read from its metadata without validating its experiment (no config,
    protocol or task code loads): ``RunStore.listing``."""

    name: str
    status: str
    created_at: float
    moot_version: str
    planned_units: int  # questions x seeds x conditions: the results a complete run holds
