"""Shards: one experiment run as N independent stores (``moot run FILE --shard I/N``), merged back into the
store one run would have written (``moot merge OUT STORE...``).

The rule. A shard's unit is a whole question: every seed and every condition of it, so that a question's
paired comparisons, its round-0 sharing between conditions and its calls all stay inside one shard and
run exactly as they do in one run. The run's questions, in its order (task by task, each task's questions
as selected), are dealt round-robin: the k-th (counting from 0) goes to shard ``k mod N + 1``. The rule
depends on nothing but the question list, which the experiment's fingerprint fixes, so every machine deals
the same shards; round-robin keeps the shards' sizes within one question of each other and spreads every
task (and any trend in a task's order) over all of them. Shards count from 1: ``1/4`` to ``4/4``.

A shard's store is a store of the whole experiment (the same fingerprint, conditions and questions) that
holds its questions' results, turns and calls, with ``shard`` in its metadata ({"index": I, "count": N});
its sessions record the shard too. ``merge_shards`` checks that the stores are the N shards of one
experiment, each complete, none twice, none overlapping, then writes a new store whose rows are theirs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moot.errors import ConfigError
from moot.runner.store import RunStore
from moot.runner.store.shard import Shard

_SPEC = re.compile(r"([0-9]+)/([0-9]+)")


def parse_shard(text: str) -> Shard:
    """``I/N`` (shard I of N, counting from 1) as a Shard; a ConfigError of one line for anything else."""
    match = _SPEC.fullmatch(text.strip())
    if match is None:
        raise ConfigError(f"option --shard: expected I/N, shard I of N counting from 1 (e.g. 1/4), got {text!r}")
    index, count = int(match[1]), int(match[2])
    if count < 1:
        raise ConfigError(f"option --shard: N, the number of shards, must be at least 1, got {text!r}")
    if not 1 <= index <= count:
        raise ConfigError(f"option --shard: shards count from 1, so I must be 1 to {count}, got {text!r}")
    return Shard(index, count)


def shard_output(path: Path, shard: Shard) -> Path:
    """The experiment's store path with ``.shard-I-of-N`` before its suffix: runs/x.sqlite ->
    runs/x.shard-2-of-4.sqlite."""
    return path.with_name(f"{path.stem}.shard-{shard.index}-of-{shard.count}{path.suffix}")


def members(shard: Shard, questions: Sequence[Sequence[str]]) -> frozenset[tuple[int, str]]:
    """The (task index, question id) pairs of ``shard``, given each task's question ids in the run's order.
    A ConfigError when the run has fewer questions than shards (a shard would be empty)."""
    ordered = [(i, qid) for i, ids in enumerate(questions) for qid in ids]
    if shard.count > len(ordered):
        raise ConfigError(
            f"option --shard {shard}: the experiment has {len(ordered)} questions, so at most {len(ordered)} "
            "shards (a shard runs whole questions)"
        )
    return frozenset(unit for k, unit in enumerate(ordered) if shard.holds(k))


# -- merge --------------------------------------------------------------------------------------------
# metadata every shard of one experiment holds alike (the fingerprint is checked first, on its own)
SAME_META = (
    "moot_version",  # another version may read, score or prompt otherwise: one store would claim one version
    "round_convention",
    "history_mode",
    "prompt_templates",
    "round0_sharing",
    "topology_density",
    "task_provenance",
    "instructions",
)
# metadata a merged store does not take from its first shard as is
OWN_META = ("shard", "status", "summary", "copied_calls", "created_at", "models", "schema_version", "migrated_from")


@dataclass(frozen=True)
class MergeOutcome:
    path: Path
    name: str
    shards: int
    results: int
    turns: int
    calls: int
    sessions: int


@dataclass
class _Input:
    path: Path
    store: RunStore
    meta: dict[str, Any]
    shard: Shard


def merge_shards(out: Path, paths: Sequence[Path]) -> MergeOutcome:
    """Merge the stores of the N shards of one experiment into a new store ``out``, as one run of it
    would have written it: its metadata (without the shard), conditions, questions, and every shard's
    results, turns, calls, failed calls and sessions (renumbered in shard order).

    Refused, with one line and before anything is written: an ``out`` that exists, a store that is not a
    shard, shards of different experiments or of different N, a shard given twice or missing, a shard
    not complete, shards whose results overlap. The shards are only read. ``out`` is written beside, then
    moved into place, so it appears whole or not at all."""
    _check_out(out, paths)
    inputs = _open(paths)
    try:
        _check(inputs)
        temporary = _beside(out)
        try:
            counts = _write(temporary, inputs)
            _place(temporary, out)
        finally:
            for leftover in (temporary, *(temporary.with_name(temporary.name + s) for s in ("-wal", "-shm"))):
                leftover.unlink(missing_ok=True)
    finally:
        for item in inputs:
            item.store.close()
    return MergeOutcome(out, str(inputs[0].meta["name"]), len(inputs), *counts)


def _check_out(out: Path, paths: Sequence[Path]) -> None:
    if not paths:
        raise ConfigError("moot merge: name the store of every shard")
    if out.exists() or out.is_symlink():
        raise ConfigError(f"{out} already exists; merge writes a new store (name another path)")
    if not out.parent.is_dir():
        raise ConfigError(f"{out}: the folder {out.parent} does not exist")


def _open(paths: Sequence[Path]) -> list[_Input]:
    """Every store, read-only (nothing on disk changes), with its shard; a store of a whole run is refused."""
    inputs: list[_Input] = []
    try:
        for path in paths:
            store = RunStore.read(path)
            inputs.append(_Input(path, store, {}, Shard(0, 0)))
            inputs[-1].meta = store.meta()
            shard = Shard.from_meta(inputs[-1].meta.get("shard"))
            if shard is None:
                raise ConfigError(f"{path} is not a shard: it holds a whole run (made without --shard)")
            inputs[-1].shard = shard
    except BaseException:
        for item in inputs:
            item.store.close()
        raise
    return inputs


def _check(inputs: list[_Input]) -> None:
    """That the stores are the N shards of one experiment, each once and complete, none overlapping."""
    first = inputs[0]
    for item in inputs[1:]:
        if item.meta.get("fingerprint_hash") != first.meta.get("fingerprint_hash"):
            raise ConfigError(
                f"{item.path} is a shard of another experiment than {first.path} (conditions, tasks, seeds or "
                "agents differ)"
            )
        if item.shard.count != first.shard.count:
            raise ConfigError(
                f"{item.path} is shard {item.shard} and {first.path} shard {first.shard}: the shards of one merge "
                "share N"
            )
    _check_numbers(inputs)
    for item in inputs:
        status = item.store.run_meta().status
        if status != "complete":
            raise ConfigError(
                f"{item.path}: shard {item.shard} is not complete (status {status}); finish it first "
                f"(moot run FILE --shard {item.shard} resumes it)"
            )
    for item in inputs[1:]:
        for key in SAME_META:
            if item.meta.get(key) != first.meta.get(key):
                raise ConfigError(f"{item.path} and {first.path} differ in their run's {key}; they cannot be merged")
        for table in ("conditions", "questions"):
            if _digest(item.store.rows(table)) != _digest(first.store.rows(table)):
                raise ConfigError(f"{item.path} and {first.path} hold different {table}; they cannot be merged")
    _models(inputs)
    _check_disjoint(inputs)


def _check_numbers(inputs: list[_Input]) -> None:
    """Shards 1..N, each exactly once."""
    seen: dict[int, Path] = {}
    for item in inputs:
        if item.shard.index in seen:
            raise ConfigError(
                f"shard {item.shard} is given twice ({seen[item.shard.index]} and {item.path}); give each shard once"
            )
        seen[item.shard.index] = item.path
    count = inputs[0].shard.count
    missing = [i for i in range(1, count + 1) if i not in seen]
    if missing:
        raise ConfigError(
            f"missing {'shard' if len(missing) == 1 else 'shards'} {', '.join(map(str, missing))} of {count}: "
            "a merge needs the store of every shard"
        )


def _check_disjoint(inputs: list[_Input]) -> None:
    owner: dict[tuple[str, str, str, int], Path] = {}
    for item in inputs:
        for unit in item.store.done():
            if unit in owner:
                condition, task, question, seed = unit
                raise ConfigError(
                    f"{owner[unit]} and {item.path} both hold {condition} on {task} question {question} seed {seed}: "
                    "overlapping shards cannot be merged"
                )
            owner[unit] = item.path


def _models(inputs: list[_Input]) -> dict[str, Any]:
    """The models of every shard; one model name that stands for different models is refused."""
    models: dict[str, Any] = {}
    for item in inputs:
        for name, model in (item.meta.get("models") or {}).items():
            if models.setdefault(name, model) != model:
                raise ConfigError(
                    f"{item.path} ran model {name} as {model.get('model_id')}, another shard as "
                    f"{models[name].get('model_id')}; shards of one run must run the same models"
                )
    return models


def _digest(rows: Iterable[Mapping[str, Any]]) -> str:
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(row, sort_keys=True).encode())
    return digest.hexdigest()


def _meta(inputs: list[_Input]) -> dict[str, Any]:
    """The merged store's metadata: a single run's (its first shard's without the shard), created when the
    first shard was, with every shard's models and copied calls."""
    meta = {k: v for k, v in inputs[0].meta.items() if k not in OWN_META}
    meta["created_at"] = min(float(item.meta["created_at"]) for item in inputs)
    meta["models"] = _models(inputs)
    meta["status"] = "complete"
    copied = sum(int(item.meta.get("copied_calls", 0)) for item in inputs)
    if copied:
        meta["copied_calls"] = copied
    return meta


def _write(path: Path, inputs: list[_Input]) -> tuple[int, int, int, int]:
    """Write the merged store at ``path``: (results, turns, calls, sessions) written."""
    from moot.runner.summary import summary_json

    ordered = sorted(inputs, key=lambda item: item.shard.index)
    conditions = {row["name"]: json.loads(row["config"]) for row in ordered[0].store.rows("conditions")}
    store = RunStore.create(path, _meta(ordered), conditions)
    try:
        store.add_rows("questions", ordered[0].store.rows("questions"))
        calls = _Calls()
        session = 0
        for item in ordered:
            sessions = {row["id"]: session + n for n, row in enumerate(item.store.rows("sessions"), start=1)}
            store.add_rows("sessions", _renumbered(item.store.rows("sessions"), sessions, "id"))
            session += len(sessions)
            store.add_rows("calls", calls.take(item.store.rows("calls"), sessions))
            store.add_rows("call_errors", _without_id(_renumbered(item.store.rows("call_errors"), sessions)))
            store.add_rows("turns", _rekeyed(item.store.rows("turns"), calls.moved))
            store.add_rows("results", _renumbered(item.store.rows("results"), sessions))
        store.set_meta("summary", summary_json(store))
        counts = (store.count("results"), store.count("turns"), store.count("calls"), session)
    finally:
        store.close()
    return counts


class _Calls:
    """The merged calls: each shard's calls under their own keys, but for a key another shard stored too
    (identical requests in two questions, which one run makes once): the same reply is kept once and the
    shard's turns point to it; a different reply is kept beside it under ``KEY~SESSION``, as a call made
    again is (``RunStore.add_call``), and the shard's turns point to that."""

    def __init__(self) -> None:
        self._replies: dict[str, str] = {}  # stored key -> digest of its reply
        self._variants: dict[str, list[str]] = {}  # a call's key -> the keys stored for it (KEY, KEY~SESSION...)
        self.moved: dict[str, str] = {}  # the current shard's keys stored under another key

    def take(self, rows: Iterable[dict[str, Any]], sessions: Mapping[int, int]) -> Iterator[dict[str, Any]]:
        """One shard's calls to store (its sessions renumbered), filling ``moved`` for its turns."""
        self.moved = {}
        for row in rows:
            row["session"] = sessions.get(row["session"], row["session"])
            digest = _reply_digest(row["reply"])
            key = row["key"]
            if key in self._replies:
                same = next((k for k in self._variants[_base(key)] if self._replies[k] == digest), None)
                self.moved[key] = same or self._beside(key, row["session"])
                if same is not None:
                    continue
                row["key"] = self.moved[key]
            self._replies[row["key"]] = digest
            self._variants.setdefault(_base(key), []).append(row["key"])
            yield row

    def _beside(self, key: str, session: int) -> str:
        base, n = _base(key), 1
        stored = f"{base}~{session}"
        while stored in self._replies:
            n += 1
            stored = f"{base}~{session}.{n}"
        return stored


def _base(key: str) -> str:
    """The call key a stored key is for: ``KEY`` of ``KEY~SESSION`` (``RunStore.add_call``)."""
    return key.split("~")[0]


def _reply_digest(reply: str) -> str:
    """A reply's digest without what differs between two makings of one call by nature (latency, endpoint)."""
    data = json.loads(reply)
    for sample in data.get("samples", []):
        sample.pop("latency_s", None)
        sample.pop("endpoint", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _renumbered(
    rows: Iterable[dict[str, Any]], sessions: Mapping[int, int], column: str = "session"
) -> Iterator[dict[str, Any]]:
    for row in rows:
        row[column] = sessions.get(row[column], row[column])
        yield row


def _without_id(rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for row in rows:
        row.pop("id", None)
        yield row


def _rekeyed(rows: Iterable[dict[str, Any]], keys: Mapping[str, str]) -> Iterator[dict[str, Any]]:
    for row in rows:
        row["call_key"] = keys.get(row["call_key"], row["call_key"])
        yield row


def _beside(out: Path) -> Path:
    """A new empty file beside ``out``, of this merge only (``RunStore.create`` takes an empty file as new),
    with the permissions a new store gets."""
    for _ in range(100):
        path = out.with_name(f".{out.name}.{secrets.token_hex(4)}.merging")
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        except FileExistsError:
            continue
        except OSError as exc:
            raise ConfigError(f"cannot write in {out.parent}: {exc.strerror}") from None
        return path
    raise ConfigError(f"cannot write in {out.parent}: no free name for a temporary file")


def _place(temporary: Path, out: Path) -> None:
    """Move the written store into place, never over a file that appeared meanwhile."""
    try:
        os.link(temporary, out)
    except FileExistsError:
        raise ConfigError(f"{out} already exists; merge writes a new store (name another path)") from None
    except OSError:  # a file system without hard links
        if out.exists():
            raise ConfigError(f"{out} already exists; merge writes a new store (name another path)") from None
        os.replace(temporary, out)
