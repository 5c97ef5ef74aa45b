"""Reading an experiment file: TOML (``read_toml``) validated into an ``ExperimentConfig`` (``parse_experiment``,
``load_experiment``), its data paths joined to the file's folder, its plug-ins checked and loaded, and every
validation error worded as one line naming each key (``_format_error``, which other config files use too)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from moot.debate.registry import STORED, load_plugin, plugin_file
from moot.errors import ConfigError
from moot.runner.config import ExperimentConfig


def _format_error(exc: ValidationError, source: str) -> ConfigError:
    """One line naming every problem's key: 'file: key: problem; key: problem'.

    A list left too short only because an item of it is invalid (pydantic counts the items that validated:
    one bad condition of one is also "conditions: at least 1 item") names the item's problem alone."""
    errors = exc.errors()
    below = {error["loc"][:n] for error in errors for n in range(1, len(error["loc"]))}  # where an error lies under
    errors = [e for e in errors if not (e["type"] == "too_short" and e["loc"] in below)]
    problems = []
    for error in errors[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        if error["type"] == "extra_forbidden":
            problem = "unknown key"
        elif error["type"] == "missing":
            problem = "required key is missing"
        else:
            problem = error["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {problem}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return ConfigError(f"{source}: {'; '.join(problems)}{more}")


def parse_experiment(data: dict[str, Any], source: str = "experiment", base: Path | None = None) -> ExperimentConfig:
    """Validate an experiment table. A task's ``data`` file is relative to ``base``, the experiment file's
    folder (``hub`` is not a path); without ``base``, to the working directory.

    Its ``plugins`` are Python files, run when loaded: an experiment file that names any must be trusted
    like a script. Each must lie in ``base`` or below it (``_plugin_files``), and none runs before every
    other key validates: the table is validated first with what a plug-in registers (a rule, a backend
    kind) taken as written, then the plug-ins are loaded and it is validated again, now against them."""
    if base is not None and isinstance(data.get("tasks"), list):
        data = {**data, "tasks": [_data_against(task, base) for task in data["tasks"]]}
    plugins = _plugin_files(data.get("plugins", ()), source, base)
    if plugins:
        data = {**data, "plugins": [str(path) for path in plugins]}
        _validate(data, source, STORED)  # as a stored run is read: a plug-in's names are kept as data
        for path in plugins:
            try:
                load_plugin(path)
            except ConfigError as exc:
                raise ConfigError(f"{source}: plugins: {exc}") from None
    return _validate(data, source)


def _validate(data: dict[str, Any], source: str, context: dict[str, Any] | None = None) -> ExperimentConfig:
    try:
        return ExperimentConfig.model_validate(data, context=context)
    except ValidationError as exc:
        raise _format_error(exc, source) from None


def _plugin_files(plugins: Any, source: str, base: Path | None) -> list[Path]:
    """The files ``plugins`` names, resolved against ``base`` (else the working folder), each a file in that
    folder or below it (a ConfigError for a '..' escape, a path or a link outside it, a missing file); none
    when ``plugins`` is not a list of paths (its validation says why)."""
    if not isinstance(plugins, list | tuple) or not all(isinstance(p, str) for p in plugins):
        return []
    folder = (base or Path.cwd()).resolve()
    where = "the experiment file's folder" if base is not None else "the working folder"
    files = []
    for plugin in plugins:
        path = (folder / Path(plugin).expanduser()).resolve()
        if not path.is_relative_to(folder):
            raise ConfigError(
                f"{source}: plugins: {plugin} is outside {where} ({folder}); a plug-in runs as code, so an "
                "experiment file may name only files in its own folder or below (load another with moot --plugin)"
            )
        try:
            files.append(plugin_file(path))
        except ConfigError as exc:
            raise ConfigError(f"{source}: plugins: {exc}") from None
    return files


def _data_against(task: Any, base: Path) -> Any:
    """A ``[[tasks]]`` table whose ``data`` path is joined to ``base`` (kept relative when ``base`` is: an
    experiment file in the working directory keeps its ``data`` as written, and so its fingerprint)."""
    if not isinstance(task, dict) or not isinstance(task.get("data"), str) or task["data"] in ("hub", ""):
        return task
    return {**task, "data": os.path.normpath(base / Path(task["data"]).expanduser())}


def load_experiment(path: Path) -> ExperimentConfig:
    """Read and validate an experiment TOML file."""
    return parse_experiment(read_toml(path), str(path), path.parent)


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's table; an unreadable file, text that is not UTF-8 or malformed TOML is one ConfigError."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}: line {line}: not UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: malformed TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: malformed TOML: arrays or tables nested too deeply") from None
    except ValueError as exc:  # an integer of more than 4,300 digits (Python's int conversion limit)
        raise ConfigError(f"{path}: malformed TOML: {str(exc).split(':')[0]}") from None
    return data
