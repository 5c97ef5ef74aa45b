"""A run's report, read from its store: per task and condition, every figure the tables and plots show.

``build_report`` reads results, turns, calls, questions, conditions, meta and sessions. It uses
what the store holds: calibration appears once turns (or judges) carry confidences, the
retention and efficiency figures once debate rounds record which replies were forwarded, and
a task metric's figures once results carry the task's own score. ``compare_conditions`` is the paired
comparison of two conditions.

The store is read one result at a time (``RunStore.iter_results``): the statistics keep a lean copy of
each transcript (answers, correctness, confidences; no texts), and ``Report.transcripts`` reads the
full transcripts from the store again when iterated (``moot.analysis.transcripts.StoredTranscripts``), so
that a report of a 20,000-question run fits in memory and its HTML streams page by page.

The report's jobs live in modules of their own: ``moot.analysis.transcripts`` (a stored result as the viewer
shows it, and reading results from the store), ``moot.analysis.records`` (the report's frozen records) and
``moot.analysis.summaries`` (the statistics of a condition and of a pair of conditions); this module builds
the report from them. The names other modules import from here are kept here (``__all__``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path

from moot.analysis import stats, stats_repeats
from moot.analysis.budget import EqualBudget
from moot.analysis.budget_costs import Measure
from moot.analysis.budget_pools import VotePool
from moot.analysis.differs import ArmProfile, arm_profiles, pair_differences
from moot.analysis.gains import GainRow, TaskGains, task_gains
from moot.analysis.readers import MOOT, Accuracies, correctness_by_reader, get_reader, reread, task_readers
from moot.analysis.records import ConditionReport, PairReport, Report, TaskReport
from moot.analysis.summaries import by_question, condition_report, pair_report
from moot.analysis.transcripts import (
    AnalysisError,
    Diversities,
    ResultKey,
    StoredTranscripts,
    Transcript,
    UnitKey,
    open_run,
    transcript,
    with_diversity,
)
from moot.backends.base import served_model
from moot.backends.engine_record import read_engines
from moot.errors import MootError
from moot.runner.config import ResolvedCondition
from moot.runner.records import StoredCall
from moot.runner.store import RunStore
from moot.runner.summary import Usage, UsedCalls, usage, used_calls

__all__ = [
    "BUDGET_MEASURE",
    "AnalysisError",
    "ConditionReport",
    "PairReport",
    "Report",
    "TaskReport",
    "build_report",
    "compare_conditions",
    "task_metric",
    "under_reader",
]


def task_metric(task: str) -> tuple[str | None, bool]:
    """The task card's description of its metric (None when the task is unknown here) and whether accuracy
    applies: as the task declares it (``TaskBase.accuracy_applies``; biographies is scored by fact precision
    alone); for a task that does not declare it, unless its description is known and does not mention
    accuracy; for a task unknown here, yes."""
    from moot.tasks import get_task

    try:
        instance = get_task(task)
    except MootError:
        return None, True
    declared = getattr(instance, "accuracy_applies", None)
    description = getattr(instance, "metric_description", None)
    if not isinstance(description, str):
        try:
            description = instance.card().metric
        except MootError:
            return None, declared if isinstance(declared, bool) else True
    return description, declared if isinstance(declared, bool) else "accuracy" in description.lower()


def _task_report(
    task: str,
    names: list[str],
    conditions: dict[str, ResolvedCondition],
    transcripts: list[Transcript],
    usage: dict[tuple[str, str], Usage],
    seed: int,
    resamples: int,
    rereads: Mapping[ResultKey, Mapping[str, bool | None]] | None = None,
    accuracies: Accuracies | None = None,
) -> TaskReport:
    results: dict[str, dict[UnitKey, Transcript]] = {n: {} for n in names}
    for t in transcripts:
        results[t.condition][t.key] = t
    present = [n for n in names if results[n]]
    reports = tuple(
        condition_report(
            n, conditions.get(n), list(results[n].values()), usage.get((n, task), Usage(cost=None)), seed, resamples
        )
        for n in present
    )
    scored = any(c.metric is not None for c in reports)
    metric_name, accuracy_applies = task_metric(task) if scored else (None, True)
    pairs = [
        pair_report(a, b, results, seed, resamples, metric_name, accuracy_applies)
        for i, a in enumerate(present)
        for b in present[i + 1 :]
    ]
    sensitivity = None
    if rereads is not None and accuracy_applies:
        sensitivity = task_readers(
            correctness_by_reader(rereads, task),
            {n: conditions.get(n) for n in present},
            [(p.a, p.b) for p in pairs],
            len(present) >= 3,  # Holm over the task's pairs, as the pairs table
            seed,
            resamples,
            accuracies,
        )
    cochran = None
    if len(present) >= 3:
        adjusted = stats.holm([p.accuracy.mcnemar_p for p in pairs])
        pairs = [replace(p, holm_p=h) for p, h in zip(pairs, adjusted)]
        groups = {n: by_question(results[n].values()) for n in present}
        common = [q for q in groups[present[0]] if all(q in groups[n] for n in present)]
        cochran = stats_repeats.cochran_q_repeats(
            [[{s: t.correct for s, t in groups[n][q].items()} for n in present] for q in common]
        )
    return TaskReport(
        task,
        len({t.key for t in transcripts}),
        reports,
        tuple(pairs),
        cochran,
        questions=len({t.question for t in transcripts}),
        seeds=tuple(sorted({t.seed for t in transcripts})),
        metric_name=metric_name,
        accuracy_applies=accuracy_applies,
        readers=sensitivity,
    )


def under_reader(t: Transcript, correct: Mapping[str, bool | None], reader: str) -> Transcript:
    """``t`` with its final answer scored as ``reader`` reads it (moot's where the reader does not apply).
    Only the final correctness changes: rounds, transitions and oracles keep moot's reading."""
    value = correct.get(reader)
    return t if reader == MOOT or value is None else replace(t, correct=value)


def build_report(
    run: RunStore | Path | str,
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
    reader: str = MOOT,
    accuracies: Accuracies | None = None,
) -> Report:
    """The report of a stored run (a path or an open store). ``seed`` and ``resamples`` fix every bootstrap;
    ``reader`` (``moot.analysis.readers``) scores the final answers of the main tables (default: moot's own);
    ``accuracies``: the readers' validated accuracies on the store (``moot.analysis.reader_check``), so that a
    reader that misreads the model breaks no verdict (``readers.breaking``).

    The store is read one result at a time; the statistics keep each result's lean transcript and the
    calls it used, and ``Report.transcripts`` reads the full transcripts again when iterated."""
    get_reader(reader)  # an unknown name fails before any work
    store, owned = open_run(run)
    try:
        if store.count("results") == 0:
            raise AnalysisError(f"{store.path} holds no results yet")
        meta = store.run_meta()
        conditions = store.conditions()
        transcripts: list[Transcript] = []
        used: list[UsedCalls] = []
        diversities = Diversities()
        measured: list[int] = []  # the transcripts with rounds whose retained diversity the report measures
        rereads: dict[ResultKey, dict[str, bool | None]] = {}  # each result's correctness under each reader
        gain_rows: list[GainRow] = []  # each result's and its round-0 vote's correctness (moot's reading)
        for r in store.iter_results():
            rereads[r.key] = reread(r, conditions.get(r.condition))
            transcripts.append(
                under_reader(transcript(r, conditions.get(r.condition), lean=True), rereads[r.key], reader)
            )
            used.append(used_calls(r))
            gain_rows.append(GainRow.of(r))
            if diversities.add(r):
                measured.append(len(transcripts) - 1)
        diversities.flush()
        for i in measured:
            t = transcripts[i]
            transcripts[i] = with_diversity(t, diversities.values.get(t.result_key), diversities.measure)
        names = list(dict.fromkeys([*conditions, *(t.condition for t in transcripts)]))
        models: Counter[tuple[str, str]] = Counter()
        paid = usage(_counted(store.iter_calls(), models), used, meta.config.prices, lambda unit: (unit[0], unit[1]))
        tasks = list(dict.fromkeys(t.task for t in transcripts))
        by_task: dict[str, list[Transcript]] = {task: [] for task in tasks}
        for t in transcripts:
            by_task[t.task].append(t)
        reports = [
            _task_report(task, names, conditions, by_task[task], paid, seed, resamples, rereads, accuracies)
            for task in tasks
        ]
        budgets = _budgets(store, conditions, seed, resamples, accuracies)
        reports = [
            replace(t, vote_pool=budgets[t.task][0], vote_pools=budgets[t.task][1], equal_budget=budgets[t.task][2])
            if t.task in budgets
            else t
            for t in reports
        ]
        reports = [replace(t, gains=_gains(t, conditions, gain_rows, seed, resamples)) for t in reports]
        profiles = arm_profiles(store)
        reports = [replace(t, pairs=tuple(_differing(p, t.task, profiles) for p in t.pairs)) for t in reports]
        return Report(
            name=meta.name,
            path=str(store.path),
            status=meta.status,
            moot_version=meta.moot_version,
            wall_s=float(sum(s.wall_s for s in store.sessions())),
            seed=seed,
            resamples=resamples,
            condition_names=tuple(names),
            tasks=tuple(reports),
            transcripts=StoredTranscripts(
                store.path, (t.result_key for t in transcripts), diversities.values, diversities.measure
            ),
            reader=reader,
            models=tuple((name, model, n) for (name, model), n in sorted(models.items())),
            engines=tuple((name, e.describe()) for name, e in sorted(read_engines(store.meta()).items())),
        )
    finally:
        if owned:
            store.close()


def _counted(calls: Iterable[StoredCall], models: Counter[tuple[str, str]]) -> Iterator[StoredCall]:
    """``calls``, counting on the way which model answered each under its configured name."""
    for call in calls:
        models[(call.model_name, served_model(call.model))] += 1
        yield call


def _gains(
    task: TaskReport, conditions: Mapping[str, ResolvedCondition], rows: list[GainRow], seed: int, resamples: int
) -> TaskGains | None:
    """The task's compared pairs of a debate and a single agent, split into voting and exchange
    (``moot.analysis.gains``; moot's reading of the answers); None where no pair has a single agent."""
    if not task.accuracy_applies:
        return None
    protocols = {name: c.protocol for name, c in conditions.items()}
    return task_gains(task.task, [(p.a, p.b) for p in task.pairs], protocols, rows, seed, resamples)


def _differing(pair: PairReport, task: str, profiles: Mapping[tuple[str, str], ArmProfile]) -> PairReport:
    """``pair`` with what else its two arms differ in on ``task`` (``moot.analysis.differs``)."""
    return replace(pair, differs=pair_differences(profiles, pair.a, pair.b, task))


BUDGET_MEASURE: Measure = "tokens"  # the report's equal-budget comparison: debates against vote@k at equal tokens


def _budgets(
    store: RunStore,
    conditions: Mapping[str, ResolvedCondition],
    seed: int,
    resamples: int,
    accuracies: Accuracies | None = None,
) -> dict[str, tuple[VotePool | None, tuple[VotePool, ...], tuple[EqualBudget, ...] | None]]:
    """Per task: the vote@k of the run's default pool (the frontier's), of every pool, and every other condition
    against the vote@k of the pool sampled with its own round-0 request at equal tokens
    (``moot.analysis.budget.equal_budget_table``, Holm over the whole table), where the run has a pool: a
    condition of 1 round with K >= 2 agents. Empty otherwise, or where the pools cannot be read: the report never
    fails for it. Correctness is moot's reading of the answers."""
    from moot.analysis.budget import equal_budget_table
    from moot.analysis.budget_matching import default_pool, is_pool

    if len(conditions) < 2 or not any(is_pool(c) for c in conditions.values()):
        return {}
    try:
        default = default_pool(store)
        pools, rows = equal_budget_table(store, None, BUDGET_MEASURE, seed, resamples, accuracies=accuracies)
    except (MootError, ValueError, KeyError, IndexError, ArithmeticError):
        return {}
    out: dict[str, tuple[VotePool | None, tuple[VotePool, ...], tuple[EqualBudget, ...] | None]] = {}
    for task in dict.fromkeys(p.task for p in pools):
        mine = tuple(p for p in pools if p.task == task)
        first = next((p for p in mine if p.condition == default), None)
        out[task] = (first, mine, tuple(r for r in rows if r.task == task) or None)
    return out


def compare_conditions(
    run: RunStore | Path | str,
    a: str,
    b: str,
    task: str | None = None,
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
    reader: str = MOOT,
    accuracies: Accuracies | None = None,
) -> list[tuple[str, PairReport]]:
    """The paired comparison of conditions A and B, per task (or on one ``task``); ``reader`` scores the final
    answers of the main tables (``under_reader``), and each pair is shown under every reader beside, judged by
    the readers' validated ``accuracies`` on the store (``build_report``)."""
    get_reader(reader)
    store, owned = open_run(run)
    try:
        conditions = store.conditions()
        known = list(conditions)
        for name in (a, b):
            if name not in known:
                raise AnalysisError(f"no condition {name!r} in {store.path}; conditions: {', '.join(known)}")
        if a == b:
            raise AnalysisError("compare two different conditions")
        transcripts = []
        rereads: dict[ResultKey, dict[str, bool | None]] = {}
        gain_rows: list[GainRow] = []
        for r in store.iter_results():
            if r.condition in (a, b):
                rereads[r.key] = reread(r, conditions.get(r.condition))
                transcripts.append(
                    under_reader(transcript(r, conditions.get(r.condition), lean=True), rereads[r.key], reader)
                )
                gain_rows.append(GainRow.of(r))
        tasks = list(dict.fromkeys(t.task for t in transcripts))
        if task is not None:
            if task not in tasks:
                raise AnalysisError(f"no results for task {task!r}; tasks: {', '.join(tasks) or 'none'}")
            tasks = [task]
        ran = {name: {t.task for t in transcripts if t.condition == name} for name in (a, b)}
        tasks = [name for name in tasks if name in ran[a] and name in ran[b]]
        if not tasks:  # a pair is paired on the same questions: arms of different tasks are not a pair
            raise AnalysisError(
                f"conditions {a!r} ({', '.join(sorted(ran[a])) or 'no results'}) and {b!r} "
                f"({', '.join(sorted(ran[b])) or 'no results'}) ran no task in common in {store.path}"
            )
        profiles = arm_profiles(store)
        out = []
        for name in tasks:
            results: dict[str, dict[UnitKey, Transcript]] = {a: {}, b: {}}
            for t in transcripts:
                if t.task == name:
                    results[t.condition][t.key] = t
            scored = any(t.scored for r in results.values() for t in r.values())
            metric_name, accuracy_applies = task_metric(name) if scored else (None, True)
            pair = pair_report(a, b, results, seed, resamples, metric_name, accuracy_applies)
            if accuracy_applies:
                sensitivity = task_readers(
                    correctness_by_reader(rereads, name),
                    {a: conditions.get(a), b: conditions.get(b)},
                    [(a, b)],
                    False,
                    seed,
                    resamples,
                    accuracies,
                )
                protocols = {n: conditions[n].protocol for n in (a, b)}
                gains = task_gains(name, [(a, b)], protocols, gain_rows, seed, resamples)
                pair = replace(pair, readers=sensitivity, gains=gains)
            out.append((name, _differing(pair, name, profiles)))
        if not out or all(p.accuracy.n == 0 for _, p in out):
            raise AnalysisError(f"conditions {a!r} and {b!r} share no answered question in {store.path}")
        return out
    finally:
        if owned:
            store.close()
