"""The settings a quick run or a single question is described by on the command line, as one typed
model: `moot run` (without an experiment file) and `moot ask` share it, and it builds the same
configuration types an experiment file does. Errors name the option."""

from __future__ import annotations

import tomllib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from moot.backends.config import DEFAULT_KIND, backend_kinds, parse_backend
from moot.debate.agents import Sampling
from moot.debate.components.aggregation import TIE_RULES, TieRule
from moot.debate.protocol_presets import COMPONENT_FIELDS, resolve_protocol
from moot.errors import ConfigError, MootError
from moot.limits import SEED_RANGE, safe_name
from moot.runner.config import AgentTemplate, ConditionConfig, ExperimentConfig, TaskSelection
from moot.runner.config_files import _format_error
from moot.runner.config_resolve import resolve


class AgentOptions(BaseModel):
    """What every agent of a quick run is: its backend, sampling and system prompt; and the protocol's
    size. None means "not given": the preset's or the library's default applies."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agents: int | None = None
    rounds: int | None = None
    tie_rule: TieRule | None = None
    backend: str | None = None  # a registered backend kind (moot.backends.config.backend_kinds)
    model: str | None = None
    adapter: str | None = None  # hf: a peft adapter folder
    base_url: str | list[str] | None = None  # several: endpoints serving the same model
    api_key_env: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = Field(default=None, ge=SEED_RANGE[0], le=SEED_RANGE[1])
    system_prompt: str | None = None
    threads: int | None = None
    context: int | None = None
    settings: dict[str, Any] | None = None  # component settings, as in an experiment file's condition

    @field_validator("settings", mode="before")
    @classmethod
    def _settings(cls, value: Any) -> Any:
        """``KEY=VALUE`` strings (from --set) as a table: VALUE is read as TOML, else as a plain string."""
        if not isinstance(value, list | tuple):
            return value
        table: dict[str, Any] = {}
        for item in value:
            key, sep, raw = str(item).partition("=")
            key = key.strip()
            if not sep or key not in COMPONENT_FIELDS:
                raise ValueError(f"{item!r} is not KEY=VALUE with KEY one of {', '.join(COMPONENT_FIELDS)}")
            try:
                table[key] = tomllib.loads(f"v = {raw}")["v"]
            except tomllib.TOMLDecodeError:
                table[key] = raw.strip()
        return table

    @field_validator("tie_rule", mode="before")
    @classmethod
    def _tie_rule(cls, value: Any) -> Any:
        if value is not None and value not in TIE_RULES:
            raise ValueError(f"unknown tie rule {value!r}; choose {', '.join(TIE_RULES[:-1])} or {TIE_RULES[-1]}")
        return value

    @field_validator("backend", mode="before")
    @classmethod
    def _backend(cls, value: Any) -> Any:
        """Any registered kind (built-in or a plug-in's); an unknown one is named with the known ones."""
        kinds = list(backend_kinds())
        if value is not None and value not in kinds:
            raise ValueError(f"unknown backend {value!r}; choose {', '.join(kinds[:-1])} or {kinds[-1]}")
        return value

    @classmethod
    def of(cls, **given: Any) -> AgentOptions:
        """From command-line values (None: not given); an invalid one is a ConfigError naming it."""
        return _named(cls, given)

    def given(self) -> list[str]:
        """The options that were given, as they are spelled on the command line."""
        flags = {"settings": "--set"}
        return [flags.get(name, "--" + name.replace("_", "-")) for name, value in self if value is not None]

    def agent_template(self) -> AgentTemplate:
        if self.model is not None and backend_kinds()[self.backend or DEFAULT_KIND].gguf_model:
            from moot.models import check_model_name

            _option("--model", check_model_name, self.model)  # a typo is named before anything is built
        backend = {
            "kind": self.backend,
            "model": self.model,
            "adapter": self.adapter,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "n_threads": self.threads,
            "n_ctx": self.context,
        }
        sampling = {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}
        return AgentTemplate(
            backend=_named(parse_backend, backend), sampling=_named(Sampling, sampling), persona=self.system_prompt
        )

    def condition(self, protocol: str) -> ConditionConfig:
        _option("--protocol", resolve_protocol, protocol)  # an unknown name, with the closest known one
        given = {"agents": self.agents, "rounds": self.rounds, "tie_rule": self.tie_rule, **(self.settings or {})}
        try:
            return ConditionConfig.model_validate({"name": protocol, "protocol": protocol} | given)
        except ValidationError as exc:
            resolve_protocol(protocol)  # an unknown protocol is named as such
            raise _format_error(exc, f"option --protocol {protocol[:40]!r}") from None

    def experiment(
        self,
        protocols: list[str],
        task: str,
        questions: int | None = None,
        data: str | None = None,
        file_task: FileTaskOptions | None = None,
    ) -> ExperimentConfig:
        """A one-task experiment of these protocols, validated (protocols, counts, task) before anything runs.
        With ``file_task`` (--format), the ``data`` file is the task and ``task`` its name."""
        if questions is not None and questions < 1:
            raise ConfigError(f"questions must be a positive integer, got {questions}")
        seed = self.seed or 0
        conditions = tuple(self.condition(p) for p in protocols)
        from moot.tasks import get_task

        file_keys = file_task.selection_keys() if file_task is not None else {}
        if not file_keys:
            _option("--task", get_task, task)
        if file_keys:
            _file_task_selection(task, data, file_keys)  # its problem named by option
        try:
            config = ExperimentConfig(
                name=_experiment_name(protocols, task),
                seeds=(seed,),
                tasks=(
                    TaskSelection(
                        name=task, data=data, count=questions or (None if file_keys else 5), seed=seed, **file_keys
                    ),
                ),
                agent=self.agent_template(),
                conditions=conditions,
            )
        except ValidationError as exc:
            raise _format_error(exc, "options") from None
        resolve(
            config,
            where=lambda key, _: ("--data" if data is not None else "--task") if key == "tasks" else "--protocol",
        )
        return config


class FileTaskOptions(BaseModel):
    """A data file as a task on the command line: --format, --field KEY=COLUMN (repeatable), --prompt;
    the keys of a ``[[tasks]]`` table of the same name (moot.tasks.datafile)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str | None = None
    fields: tuple[str, ...] = ()  # KEY=COLUMN
    prompt: str | None = None

    def given(self) -> list[str]:
        """The options that were given, as spelled on the command line."""
        named = {"--format": self.format, "--field": self.fields or None, "--prompt": self.prompt}
        return [flag for flag, value in named.items() if value is not None]

    def field_table(self) -> dict[str, str]:
        """--field KEY=COLUMN values as a table; a value without '=' or a key given twice is a ConfigError."""
        table: dict[str, str] = {}
        for item in self.fields:
            key, sep, column = item.partition("=")
            key = key.strip()
            if not sep or not key:
                raise ConfigError(f"option --field: {item[:60]!r} is not KEY=COLUMN (e.g. --field question=text)")
            if key in table:
                raise ConfigError(f"option --field: {key} is given twice")
            table[key] = column
        return table

    def selection_keys(self) -> dict[str, Any]:
        """The ``format``, ``fields`` and ``prompt`` of a task selection (only those given)."""
        keys: dict[str, Any] = {"format": self.format, "fields": self.field_table() or None, "prompt": self.prompt}
        return {key: value for key, value in keys.items() if value is not None}


def _file_task_selection(task: str, data: str | None, keys: dict[str, Any]) -> None:
    """Check a data file task's options first, so that a problem names them rather than a file's keys."""
    try:
        TaskSelection(name=task, data=data, count=1, **keys)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        raise ConfigError(
            f"options --task/--data/--format/--field/--prompt: {where + ': ' if where else ''}{message}"
        ) from None


def _option(flag: str, check: Any, value: str) -> None:
    """``check(value)``; its MootError is one line that begins with the option as typed (``--task: ...``)."""
    try:
        check(value)
    except MootError as exc:
        raise ConfigError(f"{flag}: {exc}") from None


def _experiment_name(protocols: list[str], task: str) -> str:
    """'<protocols>-<task>', as a valid name: what a name may not hold becomes '_', and it is cut short
    (the store's file name adds the hash of everything the results depend on)."""
    return safe_name("-".join([*protocols, task]))


def _named(build: Any, values: dict[str, Any]) -> Any:
    """``build`` from the values that were given; a validation error names the option."""
    try:
        return build(**{k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = next((str(p) for p in first["loc"] if str(p) in values), str(first["loc"][0]) if first["loc"] else "")
        raise ConfigError(f"option {where}: {first['msg'].removeprefix('Value error, ')}") from None
