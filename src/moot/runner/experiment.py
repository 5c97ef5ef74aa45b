"""Run an experiment durably: every condition x task x seed x question, stored call by call.

Rerunning on an existing store resumes it: stored results are kept, unfinished
questions are debated again with every call they had already made replayed from
the store, so a run killed at any moment and rerun ends with the same results
as an uninterrupted one. Rerunning a finished run (nothing pending) builds and checks no backend: no
model loads and no server is asked.

A run holds its store exclusively from the moment the experiment is opened until it is closed
(``moot.runner.store.StoreLock``): a second run on the same store is refused, naming the first.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import Field

from moot.backends.base import Backend, served_model
from moot.backends.config import BackendConfig
from moot.debate.agents import Agent
from moot.debate.components.history import HISTORY_MODE
from moot.debate.components.stopping import Stopping
from moot.debate.context import AGGREGATOR_NAME, FILTER_NAME, JUDGE_NAME, MODERATOR_NAME
from moot.debate.engine import ROUND_CONVENTION, run_debate
from moot.debate.protocols import ProtocolSpec
from moot.debate.records import DebateResult, FinalStatus, RoundRecord, StopReason
from moot.debate.registry import template_hashes
from moot.errors import ConfigError
from moot.runner.cache import CallCache, NotStored, RecordingCaller
from moot.runner.config import ExperimentConfig
from moot.runner.config_resolve import build_tasks, fingerprint_hash, resolve, results_fingerprint
from moot.runner.evaluate import build_agents, check_agents, request_widths
from moot.runner.session import RunOptions, RunOutcome
from moot.runner.shards import Shard, members
from moot.runner.spend import BudgetStop, Spent, reached, stored_spend
from moot.runner.store import RunStore, StoreError, StoreLock
from moot.runner.store.ledger import BatchLedger
from moot.runner.store_paths import _creates_folder, check_output, store_path
from moot.runner.summary import summary_json
from moot.runner.units import Unit, round0_sharing, select_questions
from moot.tasks import MetricContext
from moot.trace import Trace


class StopAfter(Stopping):
    """The runner's stand-in for a rule that decides for all questions at once (``_round_by_round``): every question
    stops after ``rounds`` rounds. Not registered: it never appears in an experiment file or a store."""

    kind: str = "stop-after"
    rounds: int = Field(ge=1)

    def reason(self, history: Sequence[RoundRecord]) -> str | None:
        return StopReason.MAX_ROUNDS if len(history) >= self.rounds else None


class Experiment:
    """An experiment bound to its store. Use ``await Experiment.open(...)`` then ``await run()``."""

    def __init__(self, config: ExperimentConfig, output: Path, shard: Shard | None = None):
        self.config = config
        self.output = output
        self.shard = shard  # None: the whole run; else only this shard's questions (moot.runner.shards)
        check_output(output)
        tasks = build_tasks(config)  # once: a data file of a million rows is read and checked once
        self.conditions = resolve(config, tasks=tasks)
        scoped = [c for c in self.conditions if c.protocol.stopping.dataset_scope]
        if shard is not None and scoped:
            raise ConfigError(
                f"condition {scoped[0].name!r} stops by {scoped[0].protocol.stopping.kind!r}, which decides for all "
                "its questions at once: a shard holds only some of them; run it without --shard"
            )
        self.fingerprint = results_fingerprint(config, self.conditions)
        # held until close(); a store whose folder does not exist yet is locked when it is created
        self._lock = StoreLock(output)
        self._store: RunStore | None = None
        self.sources: tuple[RunStore, ...] = ()
        self.missing_sources: tuple[Path, ...] = ()
        try:
            if output.parent.is_dir():
                self._lock.acquire()
            self._store = self._open_existing()
            self.sources, self.missing_sources = self._open_sources()
            self.tasks = dict(enumerate(tasks))
            self.questions = {
                i: select_questions(self.tasks[i], sel, f"tasks.{i}") for i, sel in enumerate(config.tasks)
            }
            # a shard's (task index, question id) pairs; None: every question
            self.members = (
                members(shard, [[q.id for q in self.questions[i]] for i in range(len(config.tasks))])
                if shard is not None
                else None
            )
        except BaseException:
            self.close()
            raise
        self._backends: dict[BackendConfig, Backend] = {}
        self._widths: dict[int, int] = {}  # requests one question sends each backend at once (by id)
        self.agents: dict[str, list[Agent]] = {}
        self.judges: dict[str, Agent] = {}
        self.cache: CallCache | None = None  # the running session's cache, for progress displays
        self._stop: BudgetStop | None = None  # the ``[budget]`` cap that stops the running session

    @property
    def store(self) -> RunStore:
        if self._store is None:
            raise RuntimeError("the store is created when the experiment first runs")
        return self._store

    def _open_existing(self) -> RunStore | None:
        """The existing store of this experiment, checked before anything is loaded; None if there is none."""
        if not self.output.exists() or RunStore.is_blank(self.output):
            return None
        return RunStore.open(self.output, accept=self._accept)

    def _accept(self, store: RunStore) -> None:
        """Refuse a store (read-only, before anything on disk changes) that holds another experiment's run,
        or another shard of this one."""
        if store.meta().get("fingerprint_hash") != fingerprint_hash(self.fingerprint):
            raise ConfigError(
                f"{self.output} holds a run of a different experiment (conditions, tasks, seeds or agents "
                "differ); choose another output path"
            )
        stored = Shard.from_meta(store.meta().get("shard"))
        if stored != self.shard:
            raise ConfigError(self._other_shard(stored))

    def _other_shard(self, stored: Shard | None) -> str:
        """Why this store is not this run's: it holds another shard, or the whole run, of this experiment."""
        if stored is None:
            return (
                f"{self.output} holds the whole run of this experiment, not shard {self.shard}; run it without "
                "--shard, or give the shard another output path"
            )
        hint = f"resume it with --shard {stored}"
        if self.shard is None:
            return f"{self.output} holds shard {stored} of this experiment, not the whole run; {hint}"
        return f"{self.output} holds shard {stored} of this experiment, not shard {self.shard}; {hint}"

    def _open_sources(self) -> tuple[tuple[RunStore, ...], tuple[Path, ...]]:
        """The stores named by ``calls_from``, opened read-only (a file that is not a moot store is refused
        here, before any model loads), and those that do not exist (their calls are made afresh). This
        run's own store is not a source of itself."""
        sources: list[RunStore] = []
        missing: list[Path] = []
        try:
            for path in self.config.calls_from:
                if not path.exists():
                    missing.append(path)
                elif not (self.output.exists() and path.samefile(self.output)):
                    sources.append(RunStore.read(path))
        except BaseException:
            for source in sources:
                source.close()
            raise
        return tuple(sources), tuple(missing)

    def _create_store(self) -> RunStore:
        meta = {
            "name": self.config.name,
            "fingerprint_hash": fingerprint_hash(self.fingerprint),
            "config": self.config.model_dump(mode="json"),
            "round_convention": ROUND_CONVENTION,
            "history_mode": HISTORY_MODE,
            "prompt_templates": template_hashes(),
            "round0_sharing": round0_sharing(self.conditions, self.config.share_round0),
            "topology_density": {c.name: c.protocol.topology.density(c.protocol.agents) for c in self.conditions},
            "task_provenance": [task.provenance() for task in self.tasks.values()],
            # each task's instruction (its system prompt), sent to the agents of every condition whose
            # protocol carries it (``instruction = "task"``, resolved in each stored condition)
            "instructions": {task.name: task.system_prompt for task in self.tasks.values()},
            "status": "created",
        }
        if self.shard is not None:  # what `moot merge` checks: this store holds shard I of N, and only it
            meta["shard"] = self.shard.meta()
        if _creates_folder(self.output):
            self.output.parent.mkdir(exist_ok=True)  # the one folder moot creates: never its parents
        conditions = {c.name: c.model_dump(mode="json") for c in self.conditions}
        return RunStore.create(self.output, meta, conditions, lock=self._lock)

    def units(self) -> Iterator[Unit]:
        """Question-major order, so that conditions sharing round 0 ask for it at about the same time. A
        shard's: only its questions, each whole (every seed and condition), in the same order."""
        for i in range(len(self.config.tasks)):
            task = self.tasks[i]
            for seed in self.config.seeds:
                for question in self.questions[i]:
                    if self.members is not None and (i, question.id) not in self.members:
                        continue
                    for condition in self.conditions:
                        yield Unit(condition, task, question, seed)

    async def _build_agents(self, running: set[str] | None = None) -> None:
        """Every condition's agents and judge, sharing one backend per distinct config, each checked once;
        backends sized to the conditions in ``running`` (those with questions to run this session;
        None: all), so a wide arm that has finished (or is not chosen) does not size the server."""
        for condition in self.conditions:
            self.agents[condition.name] = build_agents(condition.agents, self._backends)
            if condition.judge is not None:
                (self.judges[condition.name],) = build_agents([condition.judge], self._backends)
        if self.config.max_concurrency is not None:
            for backend in self._backends.values():
                cap = getattr(backend, "cap_concurrency", None)
                if cap is not None:
                    cap(self.config.max_concurrency)
        if self.config.batch:
            switches = [getattr(b, "use_batches", None) for b in self._backends.values()]
            if not any(switches):
                raise ConfigError("--batch: no backend of this run has a batch API (an openai backend has)")
            for use_batches in filter(None, switches):
                use_batches()
        groups = {
            c.name: [*self.agents[c.name], *([self.judges[c.name]] if c.name in self.judges else [])]
            for c in self.conditions
        }
        sizing = [group for name, group in groups.items() if running is None or name in running]
        self._widths = request_widths(sizing)
        await check_agents([a for group in groups.values() for a in group], sizing)
        models = {cfg.model_name(): {"backend": cfg.kind, "model_id": b.model_id} for cfg, b in self._backends.items()}
        engines = await self._engines()
        if self._store is None:  # created only once every model loads and every server answers
            self._store = self._create_store()
        else:
            self._same_models(models)
        self.store.set_metas({"models": models, "engines": engines})

    async def _engines(self) -> dict[str, Any]:
        """Each backend's engine, its version and the settings a rerun's equality depends on
        (moot.backends.engine_record), by configured model name; a backend that cannot say is left out."""
        engines: dict[str, Any] = {}
        for cfg, backend in self._backends.items():
            record = getattr(backend, "engine_record", None)
            if record is not None:
                engines[cfg.model_name()] = (await record()).model_dump(mode="json")
        return engines

    def _same_models(self, models: dict[str, dict[str, str]]) -> None:
        """Refuse to resume a run whose models are no longer those that answered it: a server that now
        serves another model under the same name (``-m`` not given: its only model) would mix two models'
        calls in one run, which no table could undo."""
        stored = self.store.meta().get("models") or {}
        for name, now in models.items():
            before = stored.get(name, {}).get("model_id") if isinstance(stored.get(name), dict) else None
            if isinstance(before, str) and served_model(before) != served_model(now["model_id"]):
                raise ConfigError(
                    f"{self.output} was answered by {served_model(before)!r} ({name}), but the backend now "
                    f"serves {served_model(now['model_id'])!r}: resuming would mix two models in one run. Serve "
                    "the same model again, or give this run another output"
                )

    def concurrency(self) -> int:
        """Questions in flight: enough to keep every backend's slots busy (its parallel requests over
        the requests one question sends it at once), unless the experiment sets it."""
        if self.config.concurrency is not None:
            return self.config.concurrency
        per_backend = (math.ceil(b.parallel / self._widths.get(id(b), 1)) for b in self._backends.values())
        return max(1, *per_backend)

    async def run(
        self,
        options: RunOptions = RunOptions(),
        on_result: Callable[[Unit, DebateResult], None] | None = None,
        on_start: Callable[[int], None] | None = None,
    ) -> RunOutcome:
        start = time.perf_counter()
        chosen = self._chosen(options)  # before any model loads
        total = sum(1 for _ in self.units())
        # a finished run replays from its store: with nothing pending no backend is built or checked (no
        # model loads, no server is asked), and the models stored with the run stay its record of them
        left = self._pending(self._store.done(), options) if self._store is not None else None
        idle = left is not None and not left
        budget = self.config.budget
        # a cap the store's calls have reached already: no question starts, so no backend is built either
        spent_before = stored_spend(self._store, self.config.prices) if budget and self._store is not None else Spent()
        capped = reached(budget, spent_before)
        if idle and self.store.meta().get("status") == "complete":
            # nor is anything written: the rerun computes nothing, so the store (one shipped with a
            # repository, say) stays byte for byte as it was
            if on_start is not None:
                on_start(0)
            return RunOutcome(self.output, total, total, 0, 0, 0, 0, 0, time.perf_counter() - start)
        if not idle and capped is None:
            running = {u.condition.name for u in left} if left is not None else chosen
            try:
                await self._build_agents(set(running) if running is not None else None)
            except BaseException:
                await self._close_backends()
                raise
        for i, selection in enumerate(self.config.tasks):
            self.store.add_questions(selection.name, self.questions[i])
        session: dict[str, Any] = {"use_cache": options.use_cache, "retry_errors": options.retry_errors}
        if chosen is not None:  # `--condition`: the arms this session ran, for the store's record
            session["conditions"] = sorted(chosen)
        if self.shard is not None:  # kept by `moot merge`: each merged session says which shard it ran
            session["shard"] = str(self.shard)
        self.store.start_session(session)
        ledger = BatchLedger(self.store)
        for backend in self._backends.values():
            use_ledger = getattr(backend, "use_ledger", None)
            if use_ledger is not None:
                use_ledger(ledger)
        cache = CallCache(
            self.store,
            use_cache=options.use_cache,
            share=self.config.share_round0,
            sources=self.sources,
            replay_only=options.replay_only,
            prices=self.config.prices,
            spent=spent_before,
        )
        self.cache = cache
        self._stop = capped
        status = "interrupted"
        failed = True
        try:
            if options.trace is not None:
                cache.trace = Trace(options.trace, self._trace_facts(), self.output)
            pending = self._pending(self.store.done(), options)
            if on_start is not None:
                on_start(len(pending))
            self.store.set_meta("status", "running")
            queue: asyncio.Queue[Unit] = asyncio.Queue()
            for unit in pending:
                if not unit.condition.protocol.stopping.dataset_scope:
                    queue.put_nowait(unit)
            unstored: list[Unit] = []
            workers = [
                asyncio.create_task(self._worker(queue, cache, on_result, unstored))
                for _ in range(min(self.concurrency(), queue.qsize()) if not queue.empty() else 0)
            ]
            await asyncio.gather(*workers)
            waiting = {u.key for u in pending if u.condition.protocol.stopping.dataset_scope}
            for group in self._dataset_groups(waiting):
                await self._round_by_round(group, waiting, cache, on_result, unstored)
            finished = "complete" if len(self.store.done()) == total else "incomplete"
            stop = self._stop if finished != "complete" else None
            # one transaction: a kill cannot leave a store that reads as complete without its summary (a
            # rerun, having nothing to compute, would never write it); before it, the run reads as killed
            metas: dict[str, Any] = {"status": finished, "summary": summary_json(self.store)}
            if budget is not None or self.store.meta().get("stop_reason") is not None:
                final = cache.spent.of(stop.measure) if stop is not None else None
                metas["stop_reason"] = stop.meta(final or 0.0, self.store.session) if stop is not None else None
            self.store.set_metas(metas)
            status = finished if stop is None else f"stopped:{stop.measure}"
            failed = False
            selected = sum(1 for u in self.units() if chosen is None or u.condition.name in chosen)
            return RunOutcome(
                self.output,
                total,
                selected - len(pending),
                len(pending) - len(unstored) - queue.qsize(),  # a cap leaves questions in the queue, not started
                cache.usage.calls,
                cache.replayed,
                cache.copied,
                cache.usage.errors,
                time.perf_counter() - start,
                len(unstored),
                stop,
                cache.spent if budget is not None else None,
            )
        finally:
            try:
                # stopped (Ctrl-C, a fault): say so; a run killed outright reads so too (RunStore.run_meta)
                if status == "interrupted":
                    self.store.set_meta("status", "interrupted")
                self.store.finish_session(status, cache.usage.calls, cache.replayed, cache.copied)
            except StoreError:
                if not failed:
                    raise  # else the fault that stopped the run (often the same one: a full disk) is shown
            finally:
                if cache.trace is not None:
                    cache.trace.close()
                await self._close_backends()

    def _dataset_groups(self, waiting: set[tuple[str, str, str, int]]) -> list[list[Unit]]:
        """Every unit of each condition, task and seed that has a ``waiting`` unit (``_round_by_round``)."""
        groups: dict[tuple[str, str, int], list[Unit]] = {}
        for unit in self.units():
            if unit.condition.protocol.stopping.dataset_scope:
                groups.setdefault((unit.condition.name, unit.task.name, unit.seed), []).append(unit)
        return [g for g in groups.values() if any(u.key in waiting for u in g)]

    def _trace_facts(self) -> dict[str, Any]:
        """What a trace's reader needs to know of the run: questions in flight, each backend's parallel
        requests (a managed server's slots) and their sum."""
        parallel = {cfg.model_name(): b.parallel for cfg, b in self._backends.items()}
        return {
            "output": str(self.output),
            "concurrency": self.concurrency(),
            "parallel": parallel,
            "slots": sum(parallel.values()),
        }

    def _pending(self, done: dict[tuple[str, str, str, int], str], options: RunOptions) -> list[Unit]:
        """The units still to run: those without a stored result, and with ``retry_errors`` those stored as
        errors; with ``options.conditions``, only those arms' units."""
        chosen = self._chosen(options)
        return [
            u
            for u in self.units()
            if (chosen is None or u.condition.name in chosen)
            and (u.key not in done or (options.retry_errors and done[u.key] == "error"))
        ]

    def _chosen(self, options: RunOptions) -> tuple[str, ...] | None:
        """The arms this session runs (None: all); a name the experiment does not have is a ConfigError."""
        chosen = options.conditions
        if chosen is not None and (unknown := sorted(set(chosen) - {c.name for c in self.conditions})):
            raise ConfigError(
                f"condition {unknown[0]!r} is not in this experiment; its conditions: "
                + ", ".join(c.name for c in self.conditions)
            )
        return chosen

    async def _close_backends(self) -> None:
        for backend in self._backends.values():
            await backend.aclose()

    async def _worker(
        self,
        queue: asyncio.Queue[Unit],
        cache: CallCache,
        on_result: Callable[[Unit, DebateResult], None] | None,
        left: list[Unit],
    ) -> None:
        while not queue.empty():
            if self._capped(cache):
                return  # a cap is reached: no new question starts; those in flight (other workers') finish
            unit = queue.get_nowait()
            caller = self._caller(unit, cache)
            try:
                result = await self._debate(unit, caller, unit.condition.protocol)
                await self._keep(unit, caller, result, on_result)
            except NotStored:
                left.append(unit)  # --replay-only: a later run makes its calls

    def _capped(self, cache: CallCache) -> bool:
        """Whether a ``[budget]`` cap is reached (then no new question, or round, starts)."""
        if self._stop is None:
            self._stop = reached(self.config.budget, cache.spent)
        return self._stop is not None

    def _caller(self, unit: Unit, cache: CallCache) -> RecordingCaller:
        """A caller that records each of the unit's calls, under the model name of the agent or helper making it."""
        agents = self.agents[unit.condition.name]
        place: dict[str, object] = {
            "condition": unit.condition.name,
            "task": unit.task.name,
            "question_id": unit.question.id,
            "seed": unit.seed,
        }
        names = {a.name: a.spec.backend.model_name() for a in agents}
        # the helper agent speaks as judge, Liang's moderator, a retention filter, an aggregator or a task's scorer
        helpers = (JUDGE_NAME, MODERATOR_NAME, FILTER_NAME, AGGREGATOR_NAME)
        names |= dict.fromkeys(helpers, self._scorer(unit).spec.backend.model_name())
        return RecordingCaller(cache, place, names)

    def _scorer(self, unit: Unit) -> Agent:
        """The model behind a task's own metric (biographies' fact checker): the condition's judge, else agent 1's
        backend (at temperature 0)."""
        return self.judges.get(unit.condition.name) or self.agents[unit.condition.name][0]

    async def _debate(self, unit: Unit, caller: RecordingCaller, protocol: ProtocolSpec) -> DebateResult:
        """The unit's debate under ``protocol`` (its condition's, or a round-by-round pass of it)."""
        judge = self.judges.get(unit.condition.name)
        return await run_debate(
            unit.question,
            unit.task,
            protocol,
            self.agents[unit.condition.name],
            caller=caller,
            seed=unit.seed,
            judge=judge if protocol.needs_judge else None,
        )

    async def _keep(
        self,
        unit: Unit,
        caller: RecordingCaller,
        result: DebateResult,
        on_result: Callable[[Unit, DebateResult], None] | None,
    ) -> None:
        """Score the unit's result by its task's own metric, if it has one, and store it."""
        scorer = self._scorer(unit)
        context = MetricContext(scorer.backend, caller, JUDGE_NAME, unit.seed)
        judge = self.judges.get(unit.condition.name)
        if judge is not None:
            sampling = judge.spec.sampling
            context = replace(context, temperature=sampling.temperature, max_tokens=sampling.max_tokens)
        scored = await unit.task.metric(result, context)
        metric, detail = (scored.value, scored.detail) if scored is not None else (None, None)
        self.store.add_result(unit.condition.name, unit.task.name, unit.seed, result, caller.keys, metric, detail)
        if on_result is not None:
            on_result(unit, result)

    async def _round_by_round(
        self,
        group: list[Unit],
        pending: set[tuple[str, str, str, int]],
        cache: CallCache,
        on_result: Callable[[Unit, DebateResult], None] | None,
        left: list[Unit],
    ) -> None:
        """One condition, task and seed whose stopping rule decides for all questions at once (``dataset_scope``):
        pass r plays every question to round r (the rounds before replayed from the store), then the rule looks at
        all of them; when it stops, or at the cap, the last pass's results are the condition's, and those of the
        ``pending`` units are stored. Every question is played, stored or not, because the rule reads them all."""
        protocol = group[0].condition.protocol
        rule = protocol.stopping
        limit = asyncio.Semaphore(self.concurrency())

        async def play(unit: Unit, rounds: int) -> tuple[RecordingCaller, DebateResult]:
            async with limit:
                caller = self._caller(unit, cache)
                trial = protocol.model_copy(update={"stopping": StopAfter(rounds=rounds)})
                return caller, await self._debate(unit, caller, trial)

        for rounds in range(1, protocol.rounds + 1):
            if self._capped(cache):
                return
            played = await asyncio.gather(*(play(u, rounds) for u in group), return_exceptions=True)
            if any(isinstance(p, NotStored) for p in played):
                left.extend(u for u in group if u.key in pending)  # --replay-only: a later run makes its calls
                return
            outcomes = [p for p in played if not isinstance(p, BaseException)]
            if len(outcomes) != len(played):
                raise next(p for p in played if isinstance(p, BaseException))
            answered = [r.rounds for _, r in outcomes if r.status != FinalStatus.ERROR]
            stable = rule.stop_dataset(answered, protocol.agents)
            if stable or rounds == protocol.rounds:
                reason = StopReason.DATASET_STABLE if stable else StopReason.MAX_ROUNDS
                for unit, (caller, result) in zip(group, outcomes, strict=True):
                    if unit.key in pending:
                        if result.status != FinalStatus.ERROR:
                            result = replace(result, stop_reason=reason)
                        await self._keep(unit, caller, result, on_result)
                return

    def close(self) -> None:
        """Close the store and let go of it."""
        try:
            for source in self.sources:
                source.close()
            self.sources = ()
            if self._store is not None:
                self._store.close()
                self._store = None
        finally:
            self._lock.release()


async def run_experiment(
    config: ExperimentConfig,
    output: Path | None = None,
    options: RunOptions = RunOptions(),
    shard: Shard | None = None,
    **callbacks: Any,
) -> RunOutcome:
    """Run ``config`` (only ``shard``'s questions, when given) into ``output`` or its default store."""
    experiment = Experiment(config, store_path(config, output, shard), shard)
    try:
        return await experiment.run(options, **callbacks)
    finally:
        experiment.close()
