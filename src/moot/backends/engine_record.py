"""What served a run's model, and how: the engine, its version and the settings that decide whether a rerun
without the store gives the same replies.

A run's store replays exactly whatever the engine. A rerun from an empty store does too only where the engine
computes each reply the same way every time: llama-server with parallel slots batches a request with whatever
else is in flight, and the batch changes the floating-point sums, so a seeded reply can differ
(benchmarks/rerun.py measures how often). A run records its backends' ``EngineRecord`` in the store's meta
(``engines``, by configured model name, written when the run creates or resumes its store), and ``moot report``
names it in its header.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict


class EngineRecord(BaseModel):
    """One backend's engine. ``engine``: what computes the replies (``llama-server``, or an openai server's
    ``owned_by``, e.g. ``llamacpp``, ``vllm``); ``version``: its version as the engine says it (None: it does
    not say). The settings are None where unknown: ``slots`` (requests decoded together), ``batch`` and
    ``ubatch`` (logical and physical batch sizes, tokens), ``threads``, ``context`` (tokens per slot).
    ``deterministic``: the backend runs in the mode that makes reruns give equal replies (the local
    backend's ``deterministic = true``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: str
    version: str | None = None
    slots: int | None = None
    batch: int | None = None
    ubatch: int | None = None
    threads: int | None = None
    context: int | None = None
    deterministic: bool = False

    def describe(self) -> str:
        """One line: the engine, its version and its settings, e.g. ``llama-server 11434.0.0, 1 slot, ...``."""
        parts = [self.engine + (f" {self.version}" if self.version else "")]
        if self.slots is not None:
            parts.append(f"{self.slots} slot{'s' if self.slots != 1 else ''}")
        if self.batch is not None or self.ubatch is not None:
            parts.append(f"batch {self.batch or '?'}/{self.ubatch or '?'}")
        if self.threads is not None:
            parts.append(f"{self.threads} thread{'s' if self.threads != 1 else ''}")
        if self.context is not None:
            parts.append(f"context {self.context}")
        parts.append("deterministic" if self.deterministic else "reruns may differ")
        return ", ".join(parts)


def read_engines(meta: dict[str, Any]) -> dict[str, EngineRecord]:
    """A store's recorded engines by model name (none for a run made before moot recorded them; an entry
    that does not read as a record is skipped: the record informs, it never stops a report)."""
    out: dict[str, EngineRecord] = {}
    stored = meta.get("engines")
    if not isinstance(stored, dict):
        return out
    for name, value in stored.items():
        try:
            out[str(name)] = EngineRecord.model_validate(value)
        except ValueError:
            continue
    return out


def package_version(package: str) -> str | None:
    """An installed distribution's version (None: not installed)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def binary_version(binary: Path) -> str | None:
    """The first line of ``binary --version`` that names a version (llama-server prints it on stderr)."""
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [line.strip() for line in (done.stdout + done.stderr).splitlines() if "version" in line.lower()]
    return lines[0].removeprefix("version: ") if lines else None
