"""``moot.run``: a durable experiment run from a script or a notebook cell, synchronously, returning the run opened
as DataFrames (``moot.open``).

moot's runner is asynchronous (``moot.runner.run_experiment``). Where no event loop is running (a script) ``run``
runs it with ``asyncio.run``; inside a running loop (a Jupyter cell, an ``async def``) ``asyncio.run`` is refused,
so the run goes to a worker thread with its own loop, and the caller blocks until it ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from moot.errors import ConfigError

if TYPE_CHECKING:
    from moot.frames import Run
    from moot.runner.config import ExperimentConfig

T = TypeVar("T")


def blocking(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """The result of the coroutine ``make()`` returns, run to its end from synchronous code: with
    ``asyncio.run`` where no event loop runs in this thread, else in a worker thread with a loop of its own
    (the running loop waits, blocked, as any synchronous call in it would)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="moot-run") as worker:
        return worker.submit(lambda: asyncio.run(make())).result()


def _experiment(
    experiment: ExperimentConfig | str | Path | Sequence[str],
    task: str | None,
    questions: int | None,
    agent: dict[str, Any],
) -> ExperimentConfig:
    """The experiment ``run`` runs: as given, read from a TOML file, or built from protocol names and a task as
    ``moot run -p ... -t ...`` builds it (``AgentOptions.experiment``)."""
    from moot.runner.config import ExperimentConfig
    from moot.runner.config_files import load_experiment
    from moot.runner.options import AgentOptions

    given = [name for name, value in {"task": task, "questions": questions, **agent}.items() if value is not None]
    file = experiment if isinstance(experiment, Path) else None
    if isinstance(experiment, str) and experiment.endswith(".toml"):
        file = Path(experiment)
    if (isinstance(experiment, ExperimentConfig) or file is not None) and given:
        raise ConfigError(
            f"{', '.join(given)} cannot be combined with an experiment (a config or file); edit the experiment"
        )
    if isinstance(experiment, ExperimentConfig):
        return experiment
    if file is not None:
        return load_experiment(file)
    assert not isinstance(experiment, Path)
    protocols = [experiment] if isinstance(experiment, str) else list(experiment)
    if not protocols or not all(isinstance(p, str) for p in protocols):
        raise ConfigError("moot.run: give an ExperimentConfig, an experiment TOML file or protocol name(s)")
    return AgentOptions.of(**agent).experiment(protocols, task or "arithmetic", questions)


def run(
    experiment: ExperimentConfig | str | Path | Sequence[str] = "society",
    task: str | None = None,
    *,
    questions: int | None = None,
    output: str | Path | None = None,
    agents: int | None = None,
    rounds: int | None = None,
    tie_rule: str | None = None,
    backend: str | None = None,
    model: str | None = None,
    base_url: str | list[str] | None = None,
    api_key_env: str | None = None,
    temperature: float | None = None,
    top_p: float | None = None,
    max_tokens: int | None = None,
    seed: int | None = None,
    system_prompt: str | None = None,
    settings: dict[str, Any] | None = None,
    use_cache: bool = True,
    retry_errors: bool = False,
) -> Run:
    """Run an experiment durably, as ``moot run`` does, and return its store opened as DataFrames (``moot.open``).

    ``experiment``: an ``ExperimentConfig``, a path to an experiment TOML file (a ``Path``, or a string ending in
    ``.toml``), or protocol name(s) run on ``task`` (default arithmetic) with ``questions`` (default 5) and the
    agent options of ``moot run`` (``backend="scripted"`` needs no model). ``output``: the store (default
    ``runs/<name>-<hash>.sqlite``); running again resumes it, replaying stored calls. Works in a plain script and
    inside a running event loop (a Jupyter cell); ``await moot.runner.run_experiment(...)`` still works too."""
    from moot.frames import open as open_run
    from moot.runner.experiment import run_experiment
    from moot.runner.session import RunOptions
    from moot.runner.store_paths import check_output, store_path

    agent = {
        "agents": agents,
        "rounds": rounds,
        "tie_rule": tie_rule,
        "backend": backend,
        "model": model,
        "base_url": base_url,
        "api_key_env": api_key_env,
        "temperature": temperature,
        "top_p": top_p,
        "max_tokens": max_tokens,
        "seed": seed,
        "system_prompt": system_prompt,
        "settings": settings,
    }
    config = _experiment(experiment, task, questions, agent)
    path = store_path(config, Path(output) if output is not None else None)
    check_output(path)
    options = RunOptions(use_cache=use_cache, retry_errors=retry_errors)
    outcome = blocking(lambda: run_experiment(config, path, options))
    return open_run(outcome.store_path)
