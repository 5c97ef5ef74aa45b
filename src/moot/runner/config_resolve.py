"""Resolving an experiment (``ExperimentConfig``, ``moot.runner.config``): its tasks built (``build_tasks``),
each condition spelled out as a ``ResolvedCondition`` (``resolve``: its protocol, every agent and its judge), and
the fingerprint of everything its results depend on (``results_fingerprint``, ``experiment_hash``), which names
its store and is what a rerun is compared against."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moot.backends.config import default_backend
from moot.debate.agents import AgentSpec, Sampling
from moot.debate.protocol_presets import PRESETS, resolve_protocol
from moot.debate.protocols import ProtocolSpec
from moot.errors import ConfigError, MootError
from moot.runner.config import (
    AgentTemplate,
    ConditionConfig,
    ExperimentConfig,
    PresetConfig,
    ResolvedCondition,
    task_of,
)

if TYPE_CHECKING:
    from moot.tasks.base import Task


def _merge(base: AgentTemplate, override: AgentTemplate) -> AgentTemplate:
    return base.model_copy(update=override.model_dump(exclude_unset=True, exclude_none=True))


def resolve_presets(presets: dict[str, PresetConfig]) -> dict[str, ProtocolSpec]:
    """User presets as protocol specs (a preset may build on an earlier one)."""
    resolved: dict[str, ProtocolSpec] = {}
    for name, preset in presets.items():
        if name in PRESETS:
            raise ConfigError(f"presets.{name}: the name of a built-in preset")
        try:
            spec = resolve_protocol(
                preset.base,
                agents=preset.agents,
                rounds=preset.rounds,
                components=preset.components,
                presets=resolved,
            )
        except ConfigError as exc:
            raise ConfigError(f"presets.{name}: {exc}") from None
        resolved[name] = spec.model_copy(update={"name": name, "reference": preset.reference or spec.reference})
    return resolved


def helper_sampling(protocol: ProtocolSpec, first: AgentSpec) -> Sampling:
    """How a condition's helper samples unless its ``judge`` table says otherwise. A protocol's helper (Liang's
    moderator and final judge, the stopping study's judge, DAR's filter) samples as the agents do: each
    paper's code passes its one sampling setting to every role (Liang et al.: temperature 0 for all players;
    the stopping study: gpt-4o-mini at temperature 0.0 throughout; DAR: temperature 1.0, top_p 0.9 for agents
    and filter alike). A judge that only scores a task (biographies' fact checker) is a measuring instrument,
    not part of the protocol: greedy (temperature 0)."""
    return first.sampling if protocol.needs_judge else Sampling(temperature=0.0)


def resolve_condition(
    condition: ConditionConfig,
    default: AgentTemplate,
    where: str,
    presets: dict[str, ProtocolSpec] | None = None,
    *,
    judged_tasks: bool = False,
) -> ResolvedCondition:
    """The condition spelled out. Its judge is resolved when the protocol needs one or the condition
    names one; naming one is an error unless the protocol or a task (``judged_tasks``) uses it."""
    count = len(condition.agents) if isinstance(condition.agents, list) else condition.agents
    try:
        protocol = resolve_protocol(
            condition.protocol,
            agents=count,
            rounds=condition.rounds,
            components=condition.components,
            presets=presets,
        )
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    templates = condition.agents if isinstance(condition.agents, list) else [AgentTemplate()] * protocol.agents
    agents = []
    for i, template in enumerate(templates, 1):
        merged = _merge(default, template)
        agents.append(
            AgentSpec(
                name=template.name or f"agent-{i}",
                backend=merged.backend or default_backend(),
                sampling=merged.sampling or Sampling(),
                persona=merged.persona,
                agreement=merged.agreement,
            )
        )
    if protocol.needs_logprobs:
        for agent in agents:
            if not agent.backend.logprobs:
                raise ConfigError(
                    f"{where}: protocol {protocol.name!r} needs log-probabilities, but agent {agent.name}'s backend "
                    "says it cannot give them (logprobs = false)"
                )
    models = {a.backend for a in agents}
    if len(models) < protocol.min_models:
        raise ConfigError(
            f"{where}.agents: protocol {protocol.name!r} needs agents of at least {protocol.min_models} different "
            f"models; all {len(agents)} run {agents[0].backend.model_name()} (give each agent its backend in "
            "[[conditions.agents]])"
        )
    if len({a.name for a in agents} | {"judge"}) != len(agents) + 1:
        raise ConfigError(f"{where}.agents: agent names must be unique and not 'judge'")
    judge = None
    if condition.judge is not None and not protocol.needs_judge and not judged_tasks:
        raise ConfigError(
            f"{where}.judge: protocol {protocol.name!r} has no judge (its stopping is not 'judge') and no task "
            "of the experiment is scored by one (biographies is)"
        )
    if protocol.needs_judge or condition.judge is not None:
        first = agents[0]
        merged = _merge(
            AgentTemplate(backend=first.backend, sampling=helper_sampling(protocol, first)),
            condition.judge or AgentTemplate(),
        )
        judge = AgentSpec(
            name="judge",
            backend=merged.backend or first.backend,
            sampling=merged.sampling or Sampling(),
            persona=merged.persona,
        )
    return ResolvedCondition(name=condition.name, protocol=protocol, agents=tuple(agents), judge=judge)


def _locate(key: str, index: int) -> str:
    return f"{key}.{index}"


def build_tasks(config: ExperimentConfig, where: Callable[[str, int], str] | None = None) -> tuple[Task, ...]:
    """The task of each selection, in order (a data file is read and checked once here: build them once and
    hand them to ``resolve`` and the runner). An error begins with where it is, as ``resolve``'s do."""
    locate = where or _locate
    tasks = []
    for i, selection in enumerate(config.tasks):
        try:
            tasks.append(task_of(selection))
        except MootError as exc:
            raise ConfigError(f"{locate('tasks', i)}: {exc}") from None
    return tuple(tasks)


def resolve(
    config: ExperimentConfig,
    where: Callable[[str, int], str] | None = None,
    tasks: Sequence[Task] | None = None,
) -> tuple[ResolvedCondition, ...]:
    """Resolve every condition, checking that its protocol and tasks exist (``tasks``: those of
    ``build_tasks``, built here when not given). An error begins with where it is: ``where(key, index)``,
    by default the file's key (``tasks.0``, ``conditions.1``); the command line names its options instead."""
    locate = where or _locate
    built = build_tasks(config, where) if tasks is None else tasks
    judged = any(getattr(task, "metric_uses_judge", False) for task in built)
    presets = resolve_presets(config.presets)
    conditions = tuple(
        resolve_condition(c, config.agent, locate("conditions", i), presets, judged_tasks=judged)
        for i, c in enumerate(config.conditions)
    )
    for i, condition in enumerate(conditions):
        for task in built:
            for component in condition.protocol.components():
                try:
                    component.check_task(task)
                except ConfigError as exc:
                    raise ConfigError(f"{locate('conditions', i)}: {exc}") from None
    return conditions


def results_fingerprint(config: ExperimentConfig, conditions: tuple[ResolvedCondition, ...]) -> dict[str, Any]:
    """Everything results depend on (not output path, calls_from, concurrency or prices: a call replayed from
    another store is the very call this run would make)."""
    return {
        "seeds": list(config.seeds),
        "share_round0": config.share_round0,
        "tasks": [t.model_dump(mode="json") | {"data_sha256": _data_digest(t.data)} for t in config.tasks],
        "conditions": [c.model_dump(mode="json") for c in conditions],
    }


def _data_digest(data: str | None) -> str | None:
    """sha256 of a local data file, so that a changed file never resumes an old run."""
    if data is None or data == "hub" or not Path(data).is_file():
        return None
    return hashlib.sha256(Path(data).read_bytes()).hexdigest()


def fingerprint_hash(fingerprint: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()


def experiment_hash(config: ExperimentConfig) -> str:
    """The hash of everything an experiment's results depend on: its store's ``fingerprint_hash``."""
    return fingerprint_hash(results_fingerprint(config, resolve(config)))
