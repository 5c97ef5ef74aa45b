"""The task catalogue behind `moot tasks`: each task with the sizes available offline, its
licence, metric and source."""

from __future__ import annotations

from dataclasses import dataclass

from moot.errors import ConfigError
from moot.tasks import TASKS
from moot.tasks.data import DatasetTask


@dataclass(frozen=True)
class CatalogRow:
    name: str
    offline: str  # e.g. "test 1,319" or "generated" or "not shipped"
    licence: str
    metric: str
    source: str


_GENERATED = {
    "arithmetic": ("generated (Du et al.'s a+b*c+d-e*f)", "accuracy (numeric equality)", "Du et al. 2024"),
}


def offline_sizes(task: DatasetTask) -> str:
    """'test 1,319; validation 299' for the offline splits, or why there are none."""
    if not task.offline_splits:
        return task.offline_note
    parts = []
    for split in task.offline_splits:
        try:
            parts.append(f"{split} {len(task.items(split)):,}")
        except ConfigError as exc:
            return f"unavailable: {exc}"
    return "; ".join(parts)


def catalog() -> list[CatalogRow]:
    """One row per registered task, in registry order (parametrised forms noted in the name column)."""
    rows = []
    for name, factory in TASKS.items():
        if name in _GENERATED:
            offline, metric, source = _GENERATED[name]
            rows.append(CatalogRow(name, offline, "generated", metric, source))
            continue
        task = factory()
        shown = name
        if name == "mmlu":
            shown = "mmlu (or mmlu:<subject>,...)"
        elif name == "chess-move":
            shown = "chess-move (or chess-move:<depth>)"
        elif name == "hh-rlhf":
            shown = "hh-rlhf (or hh-rlhf:<subset>)"
        if isinstance(task, DatasetTask):
            rows.append(CatalogRow(shown, offline_sizes(task), task.licence, task.metric, task.source_url))
        else:
            metric = getattr(task, "metric", "accuracy")
            licence = getattr(task, "licence", "")
            source = getattr(task, "source_url", "")
            rows.append(CatalogRow(shown, "generated", licence, metric, source))
    return rows
