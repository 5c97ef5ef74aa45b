"""Runs as pandas DataFrames, for a notebook or a script: ``moot.open`` and ``moot.compare``.

    run = moot.open("runs/replicate/du.sqlite")       # or several stores: shards, runs of other experiments
    run.results()     # one row per condition x task x question x seed
    run.turns()       # one row per condition x task x question x seed x round x agent
    run.calls()       # one row per stored model call
    run.questions()   # one row per task x question
    moot.compare(run, "society", "single")            # the paired comparison ``moot compare`` prints

Every column, its dtype and its meaning are listed in ``COLUMNS`` (``columns("results")`` shows them as a
frame). Text is pandas' ``string`` dtype (missing: ``<NA>``), counts ``int64`` (``Int64`` where a value may be
unknown), flags ``bool`` (``boolean`` where unknown is possible), measures ``float64`` (missing: NaN). Two
columns hold Python objects rather than JSON text: ``results.votes`` (a dict answer -> votes of the deciding
round) and ``questions.metadata`` (the question's metadata dict).

Every frame starts with ``run``: the store's file name without ``.sqlite`` (made unique with ``-2``, ``-3``
... where two stores share a name), so that several stores concatenate into one frame. ``results`` and
``turns`` end with the condition's settings, read from the stored resolved conditions (``SETTINGS``).

Cost is in US dollars at the experiment's ``[prices]``, priced as moot's equal-budget comparison prices it
(``moot.analysis.budget``) and its usage totals (``moot.runner.summary.usage``); NaN where a model it used has no
price. A store is opened read-only for each frame (``RunStore.read``): reading changes no byte of it, and a run in
progress can be read while it writes; each call reads the store as it is then.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moot.errors import MootError

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

    from moot.analysis.records import PairReport
    from moot.runner.config import ResolvedCondition
    from moot.runner.store import RunStore

_UNIT = {
    "condition": ("string", "the condition's name (an arm of the experiment)"),
    "task": ("string", "the task (benchmark)"),
    "question": ("string", "the question's id within its task"),
    "seed": ("int64", "the run seed this result was made with (repeats of a question)"),
}

# the condition's settings, from the stored resolved condition (``RunStore.conditions``)
SETTINGS: dict[str, tuple[str, str]] = {
    "protocol": ("string", "the protocol preset the condition runs"),
    "agents": ("Int64", "its number of agents"),
    "rounds": ("Int64", "its rounds, counting round 0 (the cap, with adaptive stopping)"),
    "topology": ("string", "who hears whom (component kind)"),
    "history": ("string", "chat history or a fresh prompt each round (component kind)"),
    "initializer": ("string", "how round 0 is made (component kind)"),
    "retention": ("string", "which previous-round replies agents hear (component kind)"),
    "stopping": ("string", "when the debate stops (component kind)"),
    "aggregation": ("string", "how the final answer is chosen (component kind)"),
    "tie_rule": ("string", "how a tied vote is broken: first, random or abstain"),
    "confidence_asked": ("boolean", "whether agents are asked to state a confidence"),
    "backend": ("string", "the agents' backend kind(s), comma-separated where they differ"),
    "model": ("string", "the agents' configured model name(s), comma-separated where they differ"),
    "temperature": ("float64", "the agents' sampling temperature (NaN where agents differ)"),
    "top_p": ("float64", "the agents' top_p (NaN where agents differ)"),
    "max_tokens": ("Int64", "the agents' token limit per reply (<NA> where agents differ)"),
}

COLUMNS: dict[str, dict[str, tuple[str, str]]] = {
    "results": {
        "run": ("string", "the store it was read from (file name without .sqlite, made unique)"),
        **_UNIT,
        "answer": ("string", "the system's final answer (<NA>: none)"),
        "gold": ("string", "the question's gold answer"),
        "correct": ("bool", "whether the final answer is right (unparsed, abstained and error count wrong)"),
        "status": ("string", "answered, unparsed (no readable final answer), abstained (a tie under abstain) or error"),
        "stop_reason": ("string", "why the debate ended: max_rounds, consensus, error, ..."),
        "error": ("string", "the failed call's error (<NA>: none)"),
        "rounds_used": ("int64", "rounds the debate ran, counting round 0"),
        "votes": ("object", "dict answer -> votes in the deciding (last) round; unparsed replies do not vote"),
        "calls": (
            "int64",
            "model calls the debate used (agents' turns, pool candidates, judges, filters), shared "
            "round-0 calls included",
        ),
        "prompt_tokens": ("int64", "prompt tokens of those calls"),
        "completion_tokens": ("int64", "completion tokens of those calls"),
        "reasoning_tokens": ("Int64", "of the agents' completion tokens, reasoning (<NA>: none counted)"),
        "cost": (
            "float64",
            "US dollars of those calls at the run's [prices], cached prompt tokens at their price (NaN: unpriced)",
        ),
        "metric": ("float64", "the task's own score where accuracy does not apply (biographies); else NaN"),
        "session": ("int64", "the session (run or rerun of the experiment) that stored it"),
        **SETTINGS,
    },
    "turns": {
        "run": ("string", "the store it was read from"),
        **_UNIT,
        "round": ("int64", "the round: 0 is the independent answers"),
        "agent": ("string", "the agent's name"),
        "answer": ("string", "the answer read from the reply (<NA>: unparsed)"),
        "parse_status": ("string", "how the answer was read: parsed, unparsed, ..."),
        "correct": ("boolean", "whether the answer is right (<NA>: not scored)"),
        "confidence": ("float64", "the stated confidence on the protocol's scale (NaN: none)"),
        "finish_reason": ("string", "why the reply ended: stop, length (cut off), ..."),
        "prompt_tokens": ("int64", "the reply's prompt tokens"),
        "completion_tokens": ("int64", "the reply's completion tokens"),
        "reasoning_tokens": ("Int64", "of those, reasoning (<NA>: unknown or none)"),
        "latency_s": ("float64", "seconds the reply took"),
        "call_seed": ("Int64", "the call's seed (<NA>: unknown)"),
        "call_key": ("string", "the key of the stored call that made it (<NA>: none); see calls()"),
        "call_model": ("string", "the configured model name of that call (<NA>: no call)"),
        "cost": ("float64", "US dollars of the reply's tokens at that model's price (NaN: unpriced or no call)"),
        "text": ("string", "the reply's content"),
        "reasoning": ("string", "the reply's reasoning, read apart from its content (<NA>: none)"),
        **SETTINGS,
    },
    "calls": {
        "run": ("string", "the store it was read from"),
        "key": ("string", "the call's key in the store (a call made again is stored as KEY~SESSION)"),
        **_UNIT,
        "round": ("int64", "the round it was made for"),
        "agent": ("string", "the agent (or helper: judge, moderator, filter) it was made for"),
        "samples": ("int64", "completions asked for in the one call"),
        "backend": ("string", "the backend kind"),
        "model": ("string", "the configured model name (what prices are keyed by)"),
        "served_model": ("string", "the model id the backend reported"),
        "prompt_tokens": ("int64", "prompt tokens"),
        "completion_tokens": ("int64", "completion tokens"),
        "cached_tokens": ("int64", "of the prompt tokens, those the server reported cached (0: none reported)"),
        "latency_s": ("float64", "seconds the call took"),
        "batched": ("bool", "answered in a provider batch (at the price's batch share)"),
        "session": ("int64", "the session that made it"),
        "created_at": ("float64", "when it was stored, Unix time in seconds"),
        "cost": ("float64", "US dollars at the run's [prices] (NaN: the model has no price)"),
    },
    "questions": {
        "run": ("string", "the store it was read from"),
        "task": ("string", "the task (benchmark)"),
        "question": ("string", "the question's id within its task"),
        "prompt": ("string", "the question as the task renders it"),
        "gold": ("string", "the gold answer"),
        "metadata": ("object", "the question's metadata, a dict"),
    },
}


def columns(table: str) -> pd.DataFrame:
    """``COLUMNS[table]`` as a frame of column, dtype and meaning: what ``run.<table>()`` holds."""
    import pandas as pd

    if table not in COLUMNS:
        raise MootError(f"no table {table!r}; tables: {', '.join(COLUMNS)}")
    rows = [(name, dtype, meaning) for name, (dtype, meaning) in COLUMNS[table].items()]
    return pd.DataFrame(rows, columns=["column", "dtype", "meaning"])


def _frame(table: str, rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """``rows`` as a frame with ``COLUMNS[table]``'s columns, in order, and dtypes."""
    import pandas as pd

    spec = COLUMNS[table]
    frame = pd.DataFrame(list(rows), columns=list(spec))
    return frame.astype({name: dtype for name, (dtype, _) in spec.items()})


def _same(values: Iterable[Any]) -> Any:
    """The one value all of ``values`` share, else None."""
    distinct = list(dict.fromkeys(values))
    return distinct[0] if len(distinct) == 1 else None


def _settings(condition: ResolvedCondition | None) -> dict[str, Any]:
    """``SETTINGS`` of a stored condition (all missing for a result whose condition the store does not list)."""
    if condition is None:
        return dict.fromkeys(SETTINGS)
    p, agents = condition.protocol, condition.agents
    return {
        "protocol": p.name,
        "agents": p.agents,
        "rounds": p.rounds,
        "topology": p.topology.kind,
        "history": p.history.kind,
        "initializer": p.initializer.kind,
        "retention": p.retention.kind,
        "stopping": p.stopping.kind,
        "aggregation": p.aggregation.kind,
        "tie_rule": p.tie_rule,
        "confidence_asked": p.confidence is not None,
        "backend": ", ".join(dict.fromkeys(a.backend.kind for a in agents)),
        "model": ", ".join(dict.fromkeys(a.backend.model_name() for a in agents)),
        "temperature": _same(a.sampling.temperature for a in agents),
        "top_p": _same(a.sampling.top_p for a in agents),
        "max_tokens": _same(a.sampling.max_tokens for a in agents),
    }


def _nan(cost: float | None) -> float:
    return math.nan if cost is None else cost


def _unique_names(paths: Sequence[Path]) -> tuple[str, ...]:
    """Each store's file name without its suffix; a name taken already gets -2, -3, ..."""
    names: list[str] = []
    for path in paths:
        name, n = path.stem, 1
        while name in names:
            n += 1
            name = f"{path.stem}-{n}"
        names.append(name)
    return tuple(names)


class Run:
    """One or more run stores, read as DataFrames (``moot.open``). Each method reads the stores again, read-only:
    a run in progress shows what it has stored so far. Columns: ``COLUMNS``."""

    def __init__(self, paths: Sequence[Path]):
        from moot.runner.store import RunStore

        if not paths:
            raise MootError("moot.open: name at least one run store")
        for path in paths:  # each is a readable moot store, or a one-line error now
            RunStore.read(path).close()
        self.paths: tuple[Path, ...] = tuple(paths)
        self.names: tuple[str, ...] = _unique_names(paths)

    def __repr__(self) -> str:
        return f"Run({', '.join(f'{n}: {p}' for n, p in zip(self.names, self.paths))})"

    @property
    def path(self) -> Path:
        """The store, where the run is one store (``moot.compare`` reads one)."""
        if len(self.paths) != 1:
            raise MootError(
                f"this run is {len(self.paths)} stores ({', '.join(self.names)}); open the one to compare alone"
            )
        return self.paths[0]

    def _stores(self) -> Iterator[tuple[str, RunStore]]:
        """(name, store) of each store, opened read-only one at a time and closed after."""
        from moot.runner.store import RunStore

        for name, path in zip(self.names, self.paths):
            store = RunStore.read(path)
            try:
                yield name, store
            finally:
                store.close()

    def conditions(self) -> dict[str, ResolvedCondition]:
        """The stored resolved conditions by name (of the first store that names each)."""
        out: dict[str, ResolvedCondition] = {}
        for _, store in self._stores():
            for name, condition in store.conditions().items():
                out.setdefault(name, condition)
        return out

    def results(self) -> pd.DataFrame:
        """One row per condition x task x question x seed: the final answer, whether it is right, what the debate
        used and cost, and the condition's settings (``COLUMNS["results"]``)."""
        return _frame("results", (row for name, store in self._stores() for row in _result_rows(name, store)))

    def turns(self) -> pd.DataFrame:
        """One row per condition x task x question x seed x round x agent: each reply, its answer and tokens
        (``COLUMNS["turns"]``)."""
        return _frame("turns", (row for name, store in self._stores() for row in _turn_rows(name, store)))

    def calls(self) -> pd.DataFrame:
        """One row per stored model call, in the order they were stored (``COLUMNS["calls"]``). A round-0 call
        that conditions share is stored, and paid, once, under the condition that made it."""
        return _frame("calls", (row for name, store in self._stores() for row in _call_rows(name, store)))

    def questions(self) -> pd.DataFrame:
        """One row per task x question, in the run's order (``COLUMNS["questions"]``)."""
        return _frame(
            "questions",
            (
                {"run": name, "task": task, "question": qid, "prompt": q.prompt, "gold": q.gold, "metadata": q.metadata}
                for name, store in self._stores()
                for (task, qid), q in store.questions().items()
            ),
        )


def _result_rows(name: str, store: RunStore) -> Iterator[dict[str, Any]]:
    from moot.analysis.budget_costs import condition_pricer
    from moot.runner.summary import used_calls

    conditions = store.conditions()
    settings = {n: _settings(c) for n, c in conditions.items()}
    spend = condition_pricer(store)  # budget's pricing: one priced model per condition
    cached = store.cached_prompt_tokens()
    for r in store.iter_results():
        result = r.result
        used = used_calls(r)
        known = [t.reasoning_tokens for rec in result.rounds for t in rec.turns if t.reasoning_tokens is not None]
        cost = spend(r.condition, used.calls, used.prompt_tokens, used.completion_tokens, cached.get(r.key, 0)).cost
        yield {
            "run": name,
            "condition": r.condition,
            "task": r.task,
            "question": result.question.id,
            "seed": r.seed,
            "answer": result.final_answer,
            "gold": result.question.gold,
            "correct": bool(result.correct),
            "status": result.status.value,
            "stop_reason": str(result.stop_reason),
            "error": result.error,
            "rounds_used": result.rounds_used,
            "votes": dict(result.rounds[-1].vote.counts) if result.rounds else {},
            "calls": used.calls,
            "prompt_tokens": used.prompt_tokens,
            "completion_tokens": used.completion_tokens,
            "reasoning_tokens": sum(known) if known else None,
            "cost": _nan(cost),
            "metric": math.nan if r.metric is None else r.metric,
            "session": r.session,
            **settings.get(r.condition, _settings(None)),
        }


def _turn_rows(name: str, store: RunStore) -> Iterator[dict[str, Any]]:
    from moot.analysis.budget_costs import priced

    prices = store.run_meta().config.prices
    models = {call.key: call.model_name for call in store.iter_calls()}
    settings = {n: _settings(c) for n, c in store.conditions().items()}
    for r in store.iter_results():
        unit = {"condition": r.condition, "task": r.task, "question": r.result.question.id, "seed": r.seed}
        for record in r.result.rounds:
            for t in record.turns:
                key = r.call_keys.get((t.round, t.agent)) or None
                model = models.get(key) if key is not None else None
                price = prices.get(model) if model is not None else None
                yield {
                    "run": name,
                    **unit,
                    "round": t.round,
                    "agent": t.agent,
                    "answer": t.answer,
                    "parse_status": str(t.parse_status.value),
                    "correct": t.correct,
                    "confidence": math.nan if t.confidence is None else t.confidence,
                    "finish_reason": t.finish_reason,
                    "prompt_tokens": t.prompt_tokens,
                    "completion_tokens": t.completion_tokens,
                    "reasoning_tokens": t.reasoning_tokens,
                    "latency_s": t.latency_s,
                    "call_seed": t.seed,
                    "call_key": key,
                    "call_model": model,
                    "cost": _nan(priced(1, t.prompt_tokens, t.completion_tokens, price).cost),
                    "text": t.text,
                    "reasoning": t.reasoning,
                    **settings.get(r.condition, _settings(None)),
                }


def _call_rows(name: str, store: RunStore) -> Iterator[dict[str, Any]]:
    from moot.runner.summary import usage

    prices = store.run_meta().config.prices
    for c in store.iter_calls():
        cost = usage([c], (), prices, lambda unit: 0)[0].cost  # the run's usage totals' pricing, batch share included
        yield {
            "run": name,
            "key": c.key,
            "condition": c.condition,
            "task": c.task,
            "question": c.question_id,
            "seed": c.seed,
            "round": c.round,
            "agent": c.agent,
            "samples": c.sample_count,
            "backend": c.backend,
            "model": c.model_name,
            "served_model": c.model,
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "cached_tokens": c.cached_tokens,
            "latency_s": c.latency_s,
            "batched": c.batched,
            "session": c.session,
            "created_at": c.created_at,
            "cost": _nan(cost),
        }


def open(paths: str | Path | Run | Sequence[str | Path]) -> Run:
    """A run store (or several: shards, runs of other experiments) to read as DataFrames; see ``Run``.

    Nothing is read until a frame is asked for, but each store is checked now: a path that is not a moot store
    is a one-line error (``StoreError``)."""
    if isinstance(paths, Run):
        return paths
    if isinstance(paths, str | Path):
        return Run([Path(paths)])
    return Run([Path(p) for p in paths])


@dataclass(frozen=True)
class Comparison:
    """``moot.compare``'s result: per task, the paired comparison of conditions ``a`` and ``b`` (the records
    ``moot compare`` prints, ``moot.analysis.records.PairReport``). ``comparison["arithmetic"]`` is one task's;
    ``frame()`` the main figures as a DataFrame; ``show()`` prints the command's tables; a notebook shows them."""

    path: Path
    a: str
    b: str
    pairs: tuple[tuple[str, PairReport], ...]

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(task for task, _ in self.pairs)

    def __getitem__(self, task: str) -> PairReport:
        for name, pair in self.pairs:
            if name == task:
                return pair
        raise KeyError(f"no task {task!r} in this comparison; tasks: {', '.join(self.tasks)}")

    def frame(self) -> pd.DataFrame:
        """One row per task: questions, seeds, both accuracies, their difference (A - B) with its paired bootstrap
        95% interval, the 2x2 counts and the exact McNemar p (a sign test on questions with repeated seeds)."""
        import pandas as pd

        rows = [
            {
                "task": task,
                "a": self.a,
                "b": self.b,
                "questions": p.questions,
                "seeds": p.seeds,
                "accuracy_a": p.accuracy.accuracy_a,
                "accuracy_b": p.accuracy.accuracy_b,
                "difference": p.accuracy.difference,
                "ci_low": p.accuracy.difference_ci.low,
                "ci_high": p.accuracy.difference_ci.high,
                "both_right": p.accuracy.both_right,
                "a_only": p.accuracy.a_only,
                "b_only": p.accuracy.b_only,
                "both_wrong": p.accuracy.both_wrong,
                "mcnemar_p": p.accuracy.mcnemar_p,
            }
            for task, p in self.pairs
        ]
        return pd.DataFrame(rows).astype({"task": "string", "a": "string", "b": "string"})

    def show(self, console: Console | None = None) -> None:
        """Print the tables ``moot compare`` prints."""
        from moot.analysis.render import print_comparison
        from moot.cli_output import make_console

        print_comparison(list(self.pairs), console or make_console(piped=160))

    def _repr_markdown_(self) -> str:
        from moot.analysis.compare_tables import comparison_tables
        from moot.analysis.render import markdown_table

        return "\n\n".join(markdown_table(t) for task, pair in self.pairs for t in comparison_tables(task, pair))


def compare(
    run: Run | str | Path,
    a: str,
    b: str,
    task: str | None = None,
    *,
    seed: int = 0,
    resamples: int = 10_000,
    reader: str = "moot",
    labels: str | Path | None = None,
) -> Comparison:
    """The paired comparison of conditions ``a`` and ``b`` of one store, per task (or on ``task``): what ``moot
    compare RUN A B`` prints, computed by the same code (``moot.analysis.report.compare_conditions``) with the same
    defaults. ``labels``: a hand-labelled sample of the store's replies (``--labels``)."""
    from moot.analysis.report import compare_conditions

    path = open(run).path
    accuracies = None
    if labels is not None:
        from moot.analysis.reader_check import accuracies as validated
        from moot.analysis.reader_check import reader_accuracy

        accuracies = validated(reader_accuracy(Path(labels), path))
    pairs = compare_conditions(
        path, a, b, task=task, seed=seed, resamples=resamples, reader=reader, accuracies=accuracies
    )
    return Comparison(path, a, b, tuple(pairs))
