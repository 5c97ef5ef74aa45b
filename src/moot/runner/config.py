"""Experiment definitions: conditions x tasks x questions x seeds, from a TOML file or CLI flags.

Every error names the key and the problem. The resolved form (every condition's
protocol and full agent list) is what the store keeps and what a rerun is compared against.

This module holds the configuration types (``ExperimentConfig`` and its tables, ``ResolvedCondition``);
``config_files`` reads and validates an experiment file (``load_experiment``, ``parse_experiment``), and
``config_resolve`` resolves its conditions and fingerprint (``resolve``, ``results_fingerprint``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from moot.backends.config import BackendConfig
from moot.debate.agents import AgentSpec, Sampling
from moot.debate.protocol_presets import COMPONENT_FIELDS
from moot.debate.protocols import ProtocolSpec
from moot.limits import (
    MAX_GENERATED_QUESTIONS,
    MAX_PLANNED_RESULTS,
    MAX_SEEDS,
    SEED_RANGE,
    canonical_name,
    name_problem,
)

if TYPE_CHECKING:
    from moot.tasks.base import Task


def _name(value: str) -> str:
    value = canonical_name(value)
    problem = name_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


# A name of an experiment, condition, agent or preset: a label in reports and, for an experiment, part
# of its store's file name (moot.limits.name_problem says what it may not hold). It is kept in NFC
# (``canonical_name``), so that two spellings of one name that read alike are one name, and a duplicate.
Name = Annotated[str, AfterValidator(_name)]
# What names a task, a preset or a protocol: in NFC too, so that it finds what a Name names.
Reference = Annotated[str, AfterValidator(canonical_name)]


class StrictModel(BaseModel):
    """A config or record read from a file: frozen, and a key it does not know is an error."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class TaskSelection(StrictModel):
    """Which questions of a task: the first ``count`` of ``split`` in the order fixed by ``seed``, or explicit ``ids``;
    a data file task given neither takes every row of its file, in the file's order.

    With ``format`` the task is the ``data`` file itself (moot.tasks.datafile): ``name`` names it (not a
    built-in task's name), ``fields`` maps its keys to the file's columns, ``prompt`` is an optional template."""

    name: Reference
    data: str | None = Field(
        default=None, description='"hub", or a local JSONL/CSV/Parquet file (in the task\'s schema, or read as format)'
    )
    split: str | None = None
    count: int | None = Field(default=None, ge=1)
    seed: int = Field(default=0, ge=SEED_RANGE[0], le=SEED_RANGE[1])
    ids: tuple[str, ...] | None = None
    format: str | None = Field(
        default=None,
        description="a data file as a task: how its answers are asked, read and scored (a registered format: "
        "number, choice, text, or a plug-in's)",
    )
    fields: dict[str, str] | None = Field(
        default=None, description="with format: the file's column for question, answer, choices (choice) and id"
    )
    prompt: str | None = Field(default=None, description='with format: a template over the row, e.g. "Q: {question}"')

    @model_validator(mode="after")
    def _count_or_ids(self) -> TaskSelection:
        if self.count is not None and self.ids is not None:
            raise ValueError("give one of count and ids, not both")
        if self.count is None and self.ids is None and self.format is None:
            # a data file task (format) without either takes every row, as lm-eval and Inspect do
            raise ValueError("give count or ids (a data file task, with format, takes every row without them)")
        if self.ids is not None and len(set(self.ids)) != len(self.ids):
            raise ValueError("ids must be unique")
        return self

    @field_validator("format")
    @classmethod
    def _format(cls, value: str | None) -> str | None:
        """A registered data-file format (moot.tasks.datafile.FILE_FORMATS); an unknown one names the known."""
        from moot.tasks.datafile import unknown_format

        if value is not None and (problem := unknown_format(value)) is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _data_file_task(self) -> TaskSelection:
        """``format`` makes the data file a task; ``fields`` and ``prompt`` belong to it alone."""
        from moot.tasks import PARAMETRISED, TASKS
        from moot.tasks.datafile import fields_problem, prompt_problem

        if self.format is None:
            if self.fields is not None or self.prompt is not None:
                raise ValueError("fields and prompt describe a data file as a task: give format too")
            return self
        if self.data is None or self.data == "hub":
            raise ValueError(f"format {self.format} needs data: the JSONL, CSV or Parquet file that is the task")
        if self.name.partition(":")[0] in (*TASKS, *PARAMETRISED):
            raise ValueError(f"{self.name!r} is a built-in task; give the data file task a name of its own")
        problem = fields_problem(self.format, self.fields or {})
        if problem is None and self.prompt is not None:
            problem = prompt_problem(self.prompt, self.fields or {})
        if problem is not None:
            raise ValueError(problem)
        return self

    @model_serializer(mode="wrap")
    def _without_unset_file_keys(self, handler: SerializerFunctionWrapHandler) -> Any:
        """``format``, ``fields`` and ``prompt`` are left out of a dump while unset, so that every
        experiment written before them keeps its fingerprint (``results_fingerprint``) and resumes."""
        data = handler(self)
        if isinstance(data, dict):
            for key in FILE_TASK_KEYS:
                if data.get(key) is None:
                    data.pop(key, None)
        return data


FILE_TASK_KEYS = ("format", "fields", "prompt")


def task_of(selection: TaskSelection) -> Task:
    """The task a selection names: a data file read as its ``format``, else a registered task
    (``get_task(name, data)``). The runner and ``resolve`` build tasks through it."""
    from moot.tasks import get_task

    if selection.format is None:
        return get_task(selection.name, selection.data)
    from moot.tasks.datafile import data_file_task

    assert selection.data is not None  # the validator requires it
    return data_file_task(selection.name, selection.data, selection.format, selection.fields or {}, selection.prompt)


class AgentTemplate(StrictModel):
    """Settings of an agent; in a condition's agent list every field falls back to the experiment's [agent]."""

    name: Name | None = None
    backend: BackendConfig | None = None
    sampling: Sampling | None = None
    persona: str | None = None
    agreement: int | None = Field(default=None, ge=0, le=10)


class ProtocolOverrides(StrictModel):
    """Component choices that override a preset's. Their keys are the protocol's own component fields
    (moot.debate.protocol_presets.COMPONENT_FIELDS: every component slot, the tie rule and moot 0.1's flat
    settings), given at the top level of a condition or preset table; they are validated when the
    protocol is resolved, by the components themselves."""

    components: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _gather(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        given = dict(data.pop("components", None) or {})
        for key in COMPONENT_FIELDS:
            if key in data:
                given[key] = data.pop(key)
        return data | ({"components": given} if given else {})


class PresetConfig(ProtocolOverrides):
    """A user-defined preset: a base preset plus component choices and defaults."""

    base: Reference = "society"
    agents: int | None = Field(default=None, ge=1)
    rounds: int | None = Field(default=None, ge=1)
    reference: str = ""


class ConditionConfig(ProtocolOverrides):
    """One arm of the experiment: a name, a protocol preset, its settings and component overrides.

    ``judge`` configures the condition's judge agent (default: the first agent's backend, sampling as
    ``helper_sampling`` says: as the agents for a protocol's helper, greedy for a task's scorer): the
    helper of protocols that need one, and the model behind a task's own judged metric (biographies'
    fact checker). A condition whose protocol needs no judge may set
    it only when a task of the experiment is scored by one."""

    name: Name
    protocol: Reference
    agents: int | list[AgentTemplate] | None = None
    rounds: int | None = None
    judge: AgentTemplate | None = None


MAX_PRICE = 1_000_000.0  # US dollars per million tokens: $1 a token, far above any price, so no sum overflows


class Price(StrictModel):
    """US dollars per million tokens (at most ``MAX_PRICE``)."""

    prompt: float = Field(ge=0, le=MAX_PRICE, allow_inf_nan=False)
    completion: float = Field(ge=0, le=MAX_PRICE, allow_inf_nan=False)
    batch: float = Field(
        default=0.5, ge=0, le=1, description="the share of the price a call answered in a provider batch pays"
    )
    cached_prompt: float | None = Field(
        default=None,
        ge=0,
        le=MAX_PRICE,
        allow_inf_nan=False,
        description="the price of the prompt tokens a server reports it had cached (default: the prompt price)",
    )

    def microdollars(self, prompt: float, completion: float, cached: float = 0) -> float:
        """What ``prompt`` and ``completion`` tokens cost, in millionths of a US dollar, ``cached`` of the prompt
        tokens at ``cached_prompt``: exactly prompt x prompt price + completion x completion price where no token
        was cached or cached tokens have no price of their own."""
        full = prompt * self.prompt + completion * self.completion
        if not cached or self.cached_prompt is None:
            return full
        return full - min(cached, prompt) * (self.prompt - self.cached_prompt)

    def dollars(self, prompt: float, completion: float, cached: float = 0, batched: bool = False) -> float:
        """One call's US dollars: ``microdollars``, at the ``batch`` share when a provider batch answered it."""
        return (self.batch if batched else 1.0) * self.microdollars(prompt, completion, cached) / 1e6


class Budget(StrictModel):
    """Spend caps of a run (``[budget]``; ``moot run --max-calls/--max-total-tokens/--max-cost``), each on the
    store's total: every call the store holds (earlier sessions' included) plus those this session makes. A run
    that reaches one starts no new question; the questions in flight finish (so the cap may be exceeded by
    them) and the run stops cleanly, resumable with a higher cap. Not part of the results."""

    max_calls: int | None = Field(default=None, ge=1, description="model calls")
    max_tokens: int | None = Field(default=None, ge=1, description="prompt + completion tokens")
    max_cost: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, description="US dollars at the experiment's [prices]"
    )

    currency: str = Field(default="USD", description="the currency of max_cost: USD, the currency of [prices]")

    @field_validator("currency")
    @classmethod
    def _usd(cls, value: str) -> str:
        """moot prices calls in US dollars ([prices]) and converts no currency: any other is refused by name."""
        if value.strip().upper() != "USD":
            raise ValueError(
                f"currency {value!r} is not one moot prices in: [prices] and max_cost are US dollars (USD)"
            )
        return "USD"

    def caps(self) -> dict[str, float]:
        """The caps set, by name (calls, tokens, cost)."""
        given = {"calls": self.max_calls, "tokens": self.max_tokens, "cost": self.max_cost}
        return {name: value for name, value in given.items() if value is not None}


def _one_line(value: str) -> str:
    if "\n" in value or "\r" in value or "\0" in value:
        raise ValueError("must be one line")
    return value


OneLine = Annotated[str, AfterValidator(_one_line)]


def _sbatch_option(value: str) -> str:
    if not _one_line(value).startswith("-"):
        raise ValueError(f"an sbatch option starts with - (e.g. --gres=gpu:1), got {value!r}")
    return value


class SlurmSettings(StrictModel):
    """How ``moot launch FILE --slurm`` submits the experiment's shards as one Slurm array job (``[slurm]``;
    each key is also an option of ``moot launch``, which wins over the file). Not part of the results: the
    same experiment launched with other settings finds the same stores."""

    shards: int | None = Field(default=None, ge=1, description="array tasks, one shard each (--shards)")
    partition: str | None = Field(default=None, description="sbatch --partition")
    time: str | None = Field(default=None, description="sbatch --time: each task's limit, e.g. 04:00:00")
    mem: str | None = Field(default=None, description="sbatch --mem: memory per node, e.g. 16G")
    cpus_per_task: int | None = Field(default=None, ge=1, description="sbatch --cpus-per-task")
    sbatch: tuple[Annotated[str, AfterValidator(_sbatch_option)], ...] = Field(
        default=(), description='raw sbatch options, e.g. ["--gres=gpu:1", "--account=lab"] (--sbatch)'
    )
    setup: tuple[OneLine, ...] = Field(
        default=(),
        description="shell lines each task runs before its shard (module load, a model server started in the "
        "background); a line that fails fails the task",
    )
    max_tries: int | None = Field(
        default=None, ge=1, description="submissions of a shard before the launch gives up (default 3)"
    )

    @field_validator("partition", "time", "mem")
    @classmethod
    def _single_line(cls, value: str | None) -> str | None:
        return None if value is None else _one_line(value)


class ExperimentConfig(StrictModel):
    name: Name = "experiment"
    plugins: tuple[str, ...] = Field(
        default=(),
        description="Python files that register their own components (moot.debate.registry.register), in the "
        "experiment file's folder or below; they run as code: trust the file as a script",
    )
    output: Path | None = None
    calls_from: tuple[Path, ...] = Field(
        default=(),
        description="other runs' stores whose calls this run replays where it makes the very same request "
        "(a replication grown to more questions, arms another run shares); copied into this run's store",
    )
    seeds: tuple[int, ...] = (0,)
    share_round0: bool = Field(
        default=True, description="conditions that start from independent answers reuse the same round-0 calls"
    )
    concurrency: int | None = Field(default=None, ge=1, description="questions in flight (default: per backend)")
    max_concurrency: int | None = Field(
        default=None,
        ge=1,
        description="requests in flight at most per server, for every backend of the run (an openai endpoint's "
        "max_concurrency, the local server's slots); not part of the results",
    )
    batch: bool = Field(
        default=False,
        description="every openai backend sends its requests as provider batches (its batch option); not part "
        "of the results",
    )
    tasks: tuple[TaskSelection, ...] = Field(min_length=1)
    agent: AgentTemplate = AgentTemplate()
    conditions: tuple[ConditionConfig, ...] = Field(min_length=1)
    prices: dict[str, Price] = Field(default_factory=dict, description="by model name (or GGUF path)")
    presets: dict[str, PresetConfig] = Field(default_factory=dict, description="user-defined protocol presets")
    budget: Budget | None = Field(default=None, description="spend caps (not part of the results)")
    slurm: SlurmSettings | None = Field(
        default=None, description="how `moot launch --slurm` submits the shards (not part of the results)"
    )

    @model_serializer(mode="wrap")
    def _budget_when_set(self, handler: SerializerFunctionWrapHandler) -> Any:
        """``budget`` and ``slurm`` are left out of a dump while unset, so that the stored config of every run
        stays as it was."""
        data = handler(self)
        if isinstance(data, dict):
            for key in ("budget", "slurm"):
                if data.get(key) is None:
                    data.pop(key, None)
        return data

    def planned_units(self) -> int:
        """Questions x seeds x conditions: the results a complete run holds."""
        per_seed = sum(len(t.ids) if t.ids is not None else t.count or 0 for t in self.tasks)
        return per_seed * len(self.seeds) * len(self.conditions)

    @model_validator(mode="after")
    def _plannable(self) -> Self:
        """Limits within bounds can multiply: 1,000 seeds of 100,000 questions are 10^8 results to plan. A
        count beyond a generated task's own limit is left to that limit's error, which names the setting."""
        if any((t.count or 0) > MAX_GENERATED_QUESTIONS for t in self.tasks):
            return self
        if (planned := self.planned_units()) > MAX_PLANNED_RESULTS:
            raise ValueError(
                f"{planned:,} results planned (questions x seeds x conditions); a run holds at most "
                f"{MAX_PLANNED_RESULTS:,}: split it into several experiments"
            )
        return self

    @field_validator("seeds")
    @classmethod
    def _seeds_unique(cls, seeds: tuple[int, ...]) -> tuple[int, ...]:
        if not seeds or len(set(seeds)) != len(seeds):
            raise ValueError("seeds must be a non-empty list of distinct integers")
        if len(seeds) > MAX_SEEDS:
            raise ValueError(f"at most {MAX_SEEDS:,} seeds, got {len(seeds):,}")
        if any(not SEED_RANGE[0] <= s <= SEED_RANGE[1] for s in seeds):
            raise ValueError("a seed is a 64-bit integer, from -2**63 to 2**63 - 1")
        return seeds

    @field_validator("tasks")
    @classmethod
    def _tasks_unique(cls, tasks: tuple[TaskSelection, ...]) -> tuple[TaskSelection, ...]:
        """One table per task: a store keys results by task and question id, so two selections of one task
        share their ids (arithmetic's count 5 and count 3 are 5 questions, not 8) and report wrong totals."""
        first: dict[str, int] = {}
        for i, task in enumerate(tasks):
            if task.name in first:
                raise ValueError(
                    f"task {task.name!r} is selected by tasks.{first[task.name]} and tasks.{i}; a task has one "
                    "table (its questions share their ids): give it one count, or the ids of every question"
                )
            first[task.name] = i
        return tasks

    @field_validator("presets")
    @classmethod
    def _preset_names(cls, presets: dict[str, PresetConfig]) -> dict[str, PresetConfig]:
        named: dict[str, PresetConfig] = {}
        for written, preset in presets.items():
            name = canonical_name(written)
            if (problem := name_problem(name)) is not None:
                raise ValueError(f"preset {written[:40]!r}: {problem}")
            if name in named:
                raise ValueError(f"duplicate preset name {name!r}")
            named[name] = preset
        return named

    @field_validator("conditions")
    @classmethod
    def _names_unique(cls, conditions: tuple[ConditionConfig, ...]) -> tuple[ConditionConfig, ...]:
        seen: set[str] = set()
        for c in conditions:
            if c.name in seen:
                raise ValueError(f"duplicate condition name {c.name!r}")
            seen.add(c.name)
        return conditions


class ResolvedCondition(StrictModel):
    """A condition with its protocol and every agent spelled out: what its results depend on."""

    name: str
    protocol: ProtocolSpec
    agents: tuple[AgentSpec, ...]
    judge: AgentSpec | None = None
