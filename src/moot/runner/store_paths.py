"""Where a run's store lives: the default path under ``runs/`` (named by the experiment's hash), a shard's
path, and the check that a path can hold a store (moot creates no folder but ``runs``). ``Experiment`` opens
its store there; ``moot run`` and ``moot launch`` find and check the same path with them."""

from __future__ import annotations

from pathlib import Path

from moot.errors import ConfigError
from moot.runner.config import ExperimentConfig
from moot.runner.config_resolve import experiment_hash
from moot.runner.shards import Shard, shard_output

RUNS = Path("runs")  # the default stores' folder: the only folder moot creates (in an existing one)


def default_output(config: ExperimentConfig) -> Path:
    """runs/<name>-<hash of what results depend on>.sqlite: the same experiment finds its store again."""
    digest = experiment_hash(config)[:10]
    return RUNS / f"{config.name}-{digest}.sqlite"


def store_path(config: ExperimentConfig, output: Path | None = None, shard: Shard | None = None) -> Path:
    """The run's store: ``output`` as given; else the experiment's ``output`` or its default path, a shard's
    with ``.shard-I-of-N`` before the suffix (``moot.runner.shards.shard_output``)."""
    if output is not None:
        return output
    path = config.output or default_output(config)
    return shard_output(path, shard) if shard is not None else path


def _creates_folder(path: Path) -> bool:
    """Whether moot creates the store's folder: a missing ``runs`` folder inside an existing one (the default
    ``./runs``), never its parents."""
    parent = path.parent
    return parent.name == RUNS.name and not parent.exists() and parent.parent.is_dir()


def check_output(path: Path) -> None:
    """A store's path is used as given, but moot creates no folder above it except a ``runs`` folder in an
    existing one (the default ``./runs``): any other folder must exist. A ConfigError says why a path cannot
    hold a store."""
    text = str(path)
    if "\0" in text:
        raise ConfigError(f"output {text!r}: a path must not hold NUL")
    if any(len(part.encode("utf-8", "surrogateescape")) > 255 for part in path.parts):
        raise ConfigError(f"output {text[:80]!r}...: a file or folder name is at most 255 bytes")
    try:
        if path.is_dir():
            raise ConfigError(f"output {path}: is a folder; name the store's file, e.g. {path / 'run.sqlite'}")
        parent = path.parent
        if parent.is_dir() or _creates_folder(path):
            return
        problem = "is not a folder" if parent.exists() else "does not exist"
    except OSError as exc:  # a path the system refuses (too long, a loop of links...)
        raise ConfigError(f"output {text[:80]}: {exc.strerror}") from None
    raise ConfigError(
        f"output {path}: the folder {parent} {problem}; moot creates no folder but a runs folder in an existing "
        "one (create it first)"
    )
