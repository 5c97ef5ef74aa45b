"""What the replications document is made from: the papers' table (docs/results/papers.toml) and each run
store's summary (docs/results/NAME.csv, NAME.json), with where these files lie.

``summarise`` reads a run store into its facts (``RunFacts``) and one ``ResultRow`` per stored result;
``rows_csv``, ``facts_json`` and ``read_summary`` write and read them back. Apart from ``moot.analysis.results``
(the command) so that the figures and the page can be computed from the summaries alone.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator

from moot.analysis.budget_pools import VotePool
from moot.analysis.differs import ArmProfile, arm_profiles
from moot.analysis.readers import MOOT
from moot.errors import ConfigError
from moot.runner.config import StrictModel
from moot.runner.config_files import _format_error, read_toml
from moot.runner.store import RunStore

PAPERS = Path("docs/results/papers.toml")
SUMMARIES = Path("docs/results")
STORES = Path("runs/replicate")
DOCUMENT = Path("docs/results.md")
EXPERIMENTS = Path("examples/replicate")


class Figure(StrictModel):
    """One accuracy a paper reports for a condition of its replication file, and where it stands."""

    task: str
    condition: str
    accuracy: float = Field(ge=0, le=1)
    where: str
    note: str = ""


Direction = Literal["better", "worse", "same"]
SIGN: dict[str, float] = {"better": 1.0, "worse": -1.0, "same": 0.0}


class Claim(StrictModel):
    """A direction a paper states in words where its copy gives no figure: CONDITION does better than, worse
    than or the same as AGAINST (the paper's baseline unless named), across the tasks it ran."""

    condition: str
    against: str | None = None
    direction: Direction
    where: str
    quote: str  # the paper's own words


class Paper(StrictModel):
    """A replication: its experiment file (examples/replicate/FILE.toml), the paper and its figures."""

    file: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    setting: str = ""  # the paper's own setting (models, agents, rounds, data), briefly
    baseline: str | None = None  # the condition every other one is compared against
    notes: str = ""  # why effects may or may not carry over; no figures (they are computed)
    figure: tuple[Figure, ...] = ()
    claim: tuple[Claim, ...] = ()

    @property
    def own(self) -> bool:
        """moot's own comparison: no paper's figures or stated directions to set beside it."""
        return not (self.figure or self.claim)


class Papers(StrictModel):
    paper: tuple[Paper, ...] = Field(min_length=1)


class ResultRow(StrictModel):
    """One stored result, as much as the document needs: its correctness, rounds and the calls and tokens of
    its question (``calls``...: what the debate used, round 0 shared with another condition included;
    ``paid_``...: the calls stored under it, as ``moot report`` counts them)."""

    condition: str
    task: str
    question_id: str
    seed: int
    status: str
    correct: bool
    rounds_used: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    paid_calls: int
    paid_prompt_tokens: int
    paid_completion_tokens: int
    # right under the paper's own parser and the strict reader (``moot.analysis.readers``); None (an empty
    # CSV cell): the reader does not apply to the task
    correct_paper: bool | None = None
    correct_strict: bool | None = None
    # whether the majority vote of the condition's own round-0 answers is right (``gains.round0_correct``): the
    # voting part of a debate's gain over a single agent; None (an empty CSV cell) in summaries made before it
    round0_correct: bool | None = None

    @field_validator("correct_paper", "correct_strict", "round0_correct", mode="before")
    @classmethod
    def _empty(cls, value: object) -> object:
        return None if value == "" else value

    def correct_under(self, reader: str) -> bool | None:
        """Right under ``reader`` (moot's: ``correct``); None where the reader does not apply."""
        return self.correct if reader == MOOT else getattr(self, f"correct_{reader}")


class RunFacts(StrictModel):
    """The facts of a replication's run store the document states."""

    name: str
    store: str
    status: str
    moot_version: str
    fingerprint: str
    wall_s: float
    sessions: int
    copied_calls: int = 0  # calls copied from other runs' stores (calls_from): their time is not in wall_s
    models: tuple[str, ...]
    planned: int  # results a complete run holds (questions x seeds x conditions)
    conditions: tuple[str, ...]  # in the experiment's order
    # vote@k of every pool of the run per task (``moot.analysis.budget_pools.vote_at_k``: each question's P(vote@k
    # right)), for the equal-budget comparison; none where the run has no condition of 1 round and 2 or more agents
    vote_pools: tuple[VotePool, ...] = ()
    pool: str | None = None  # the run's default pool (``budget_matching.default_pool``): the frontier's vote@k curve
    # (task, condition, pool): the pool sampled with the condition's own round-0 request
    # (``budget_matching.matched_pools``; None: none was); a pool that is the largest of its kind is not listed (it
    # is not compared with itself)
    budget_pools: tuple[tuple[str, str, str | None], ...] = ()
    # (condition, a single agent?, why a debate's gain over a single agent is not split or None): what the split
    # of debate gains into voting and exchange needs of each condition (``gains.single_agent``, ``no_split_reason``)
    roles: tuple[tuple[str, bool, str | None], ...] = ()
    # the same pools with the replies read by each other documented reader that reads them (``VotePool.reader``),
    # for the equal-budget verdicts' reader sensitivity
    reader_pools: tuple[VotePool, ...] = ()
    # each arm's round-0 request and protocol per task (``moot.analysis.differs``): what else compared arms differ in
    profiles: tuple[ArmProfile, ...] = ()
    # each reader's agreement with the store's hand-labelled samples: (sample, reader, agreed, labelled replies it
    # applies to), the samples docs/results/readers/NAME.jsonl ("labelled": moot's reader fixes were made from it)
    # and readers/held-out/NAME.jsonl ("held-out": drawn after, none of the first's replies); moot's is the stored
    # answers' (``reader_check.accuracies``); empty: the store has no sample
    reader_checks: tuple[tuple[str, str, int, int], ...] = ()

    def reader_counts(self) -> dict[str, tuple[int, int]]:
        """reader -> (agreed, labelled) over every sample of the store."""
        out: dict[str, tuple[int, int]] = {}
        for _sample, reader, agreed, n in self.reader_checks:
            a, m = out.get(reader, (0, 0))
            out[reader] = (a + agreed, m + n)
        return out

    def accuracies(self) -> dict[str, float] | None:
        """reader -> its validated accuracy on this store, over all its labelled replies (None: no sample)."""
        counts = self.reader_counts()
        return {r: agreed / n for r, (agreed, n) in counts.items() if n} if counts else None


COLUMNS = tuple(ResultRow.model_fields)
# the summaries' earlier headers: a summary moot wrote then is still its own to replace
EARLIER_COLUMNS = (
    tuple(c for c in COLUMNS if c != "round0_correct"),  # before the debate gains split (issue 55)
    tuple(c for c in COLUMNS if c not in ("correct_paper", "correct_strict", "round0_correct")),  # before readers
)


def read_papers(path: Path = PAPERS) -> Papers:
    """The papers file, validated: each replication's file, paper and figures."""
    try:
        papers = Papers.model_validate(read_toml(path))
    except ValidationError as exc:
        raise _format_error(exc, str(path)) from None
    files = [p.file for p in papers.paper]
    if len(set(files)) != len(files):
        raise ConfigError(f"{path}: a replication file is named twice")
    return papers


# -- summaries ---------------------------------------------------------------------------------
def summarise(store_path: Path, labels: Mapping[str, Path] | None = None) -> tuple[RunFacts, list[ResultRow]]:
    """A run store's facts and one row per stored result, in the store's order (the order ``moot report``
    reads them in, so that its bootstrap resamples the questions alike; the store is read, never written);
    ``labels``: hand-labelled samples of its replies by name, on which each reader is validated (``reader_check``)."""
    from moot.analysis.gains import no_split_reason, round0_correct, single_agent
    from moot.analysis.readers import reread
    from moot.runner.store import RunStore
    from moot.runner.summary import usage, used_calls

    store = RunStore.read(store_path)
    try:
        meta = store.run_meta()
        conditions = store.conditions()
        results = list(store.iter_results())
        models: set[str] = set()
        calls = list(store.iter_calls())  # read once: the models and the usage
        for c in calls:
            models.add(c.model_name)
        sessions = [s for s in store.sessions() if s.made_calls]  # the run's cost: a replay adds none
        per_unit = usage(calls, [used_calls(r) for r in results], {}, lambda unit: unit)
        pools, default, matched = _vote_pools(store)
        rows = []
        for r in results:
            u = per_unit[r.key]
            readings = reread(r, conditions.get(r.condition))
            rows.append(
                ResultRow(
                    condition=r.condition,
                    task=r.task,
                    question_id=r.result.question.id,
                    seed=r.seed,
                    status=r.result.status,
                    correct=r.result.correct,
                    rounds_used=r.result.rounds_used,
                    calls=u.used_calls,
                    prompt_tokens=u.used_prompt_tokens,
                    completion_tokens=u.used_completion_tokens,
                    paid_calls=u.calls,
                    paid_prompt_tokens=u.prompt_tokens,
                    paid_completion_tokens=u.completion_tokens,
                    correct_paper=readings["paper"],
                    correct_strict=readings["strict"],
                    round0_correct=round0_correct(r.result),
                )
            )
        facts = RunFacts(
            name=meta.name,
            store=str(store_path),
            status=meta.status,
            moot_version=meta.moot_version,
            fingerprint=meta.fingerprint_hash,
            wall_s=round(sum(s.wall_s for s in sessions), 1),
            sessions=len(sessions),
            copied_calls=int(store.meta().get("copied_calls", 0)),
            models=tuple(sorted(models)),
            planned=meta.config.planned_units(),
            conditions=tuple(c.name for c in meta.config.conditions),
            vote_pools=pools.get(MOOT, ()),
            reader_pools=tuple(v for reader, vs in pools.items() if reader != MOOT for v in vs),
            pool=default,
            budget_pools=tuple((t, c, p) for (t, c), p in matched.items()),
            roles=tuple(
                (name, single_agent(c.protocol), no_split_reason(c.protocol)) for name, c in conditions.items()
            ),
            profiles=tuple(arm_profiles(store).values()),
            reader_checks=tuple(c for name, path in (labels or {}).items() for c in _reader_checks(name, path, store)),
        )
    finally:
        store.close()
    return facts, rows


def _reader_checks(name: str, labels: Path, store: RunStore) -> list[tuple[str, str, int, int]]:
    """Each reader's agreement with the labels (``reader_check.reader_accuracy``), moot's as its stored answers."""
    from moot.analysis.reader_check import STORED, reader_accuracy

    checked = {a.reader: a for a in reader_accuracy(labels, store)}
    moot = checked.pop(STORED, None)
    checked.pop(MOOT, None)  # moot's current code: the stored answers are what the verdicts rest on
    rows = [] if moot is None else [(name, MOOT, moot.agreed, moot.n)]
    return rows + [(name, r, a.agreed, a.n) for r, a in checked.items() if a.n]


def _vote_pools(
    store: RunStore,
) -> tuple[dict[str, tuple[VotePool, ...]], str | None, dict[tuple[str, str], str | None]]:
    """The run's pools per task by reader (``budget_pools.pools_by_reader``), its default pool
    (``budget_matching.default_pool``, where it is a pool) and the pool each condition is matched to
    (``budget_matching.matched_pools``); empty where the run has no pool with stored answers."""
    from moot.analysis.budget_matching import default_pool, is_pool, matched_pool_names
    from moot.analysis.budget_pools import pools_by_reader
    from moot.analysis.report import AnalysisError

    try:
        pool = default_pool(store)
        if not any(is_pool(c) for c in store.conditions().values()):
            return {}, None, {}
        default = pool if is_pool(store.conditions()[pool]) else None
        return pools_by_reader(store), default, matched_pool_names(store)
    except AnalysisError:  # no condition of 1 round, or no pool has stored answers yet
        return {}, None, {}


def rows_csv(rows: Iterable[ResultRow]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: int(v) if isinstance(v, bool) else v for k, v in row.model_dump().items()})  # None: ""
    return out.getvalue()


def facts_json(facts: RunFacts) -> str:
    return json.dumps(facts.model_dump(mode="json"), indent=2) + "\n"


def read_summary(folder: Path, file: str) -> tuple[RunFacts, list[ResultRow]] | None:
    """The summary of replication ``file`` in ``folder`` (None when there is none yet)."""
    facts_path, rows_path = folder / f"{file}.json", folder / f"{file}.csv"
    if not facts_path.exists() and not rows_path.exists():
        return None
    try:
        facts = RunFacts.model_validate_json(facts_path.read_text(encoding="utf-8"))
        with rows_path.open(encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f)
            if tuple(reader.fieldnames or ()) != COLUMNS:
                raise ConfigError(f"{rows_path}: the columns are not {', '.join(COLUMNS)}")
            rows = [ResultRow.model_validate(line) for line in reader]
    except OSError as exc:
        raise ConfigError(f"cannot read the summary of {file!r} in {folder}: {exc.strerror or exc}") from None
    except ValidationError as exc:
        raise ConfigError(f"the summary of {file!r} in {folder} is malformed: {exc.errors()[0]['msg']}") from None
    return facts, rows
