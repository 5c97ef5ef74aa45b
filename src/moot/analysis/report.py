"""A run's report, read from its store: per task and condition, every figure the tables and plots show.

``build_report`` reads results, turns, calls, questions, conditions, meta and sessions. It uses
what the store holds: calibration appears once turns (or judges) carry confidences, and the
retention and efficiency figures once debate rounds record which replies were forwarded.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from moot.analysis import stats
from moot.analysis.calibration import Calibration, calibrate, to_probabilities
from moot.analysis.formatting import percent
from moot.analysis.transitions import (
    AgentChanges,
    Diversity,
    Oracle,
    Trajectory,
    Transitions,
    agent_changes,
    first_to_final,
    initial_diversity,
    oracle,
    round_to_round,
)
from moot.debate.topology import Topology
from moot.errors import MootError
from moot.runner.store import RunStore
from moot.runner.summary import helper_usage

UnitKey = tuple[str, str, int]  # task, question id, seed
JUDGED = ("judge", "moderator")  # aggregations whose answer is a judge's or moderator's, not the majority
JUDGE_SCALE = 100.0  # judges and moderators state confidence on 0-100


def _protocol(config: dict[str, Any]) -> dict[str, Any]:
    protocol = config.get("protocol", {})
    return protocol if isinstance(protocol, dict) else {}


class AnalysisError(MootError):
    """A report or comparison cannot be made (no results, unknown condition or task)."""


# -- transcripts ------------------------------------------------------------------------
@dataclass(frozen=True)
class TurnView:
    agent: str
    text: str
    answer: str | None
    parsed: bool
    correct: bool
    confidence: float | None  # as stored (0-1 or 0-100)
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    shown_new: tuple[tuple[str, str], ...]  # (role, content) added to the agent's context this round
    shown: tuple[tuple[str, str], ...]  # (role, content): everything the agent was shown
    retained: str | None  # rounds >= 1 with retention: whose previous replies the agent heard, and why
    nll: float | None = None  # uncertainty of the reply from its log-probabilities, where they were asked
    anll: float | None = None
    perplexity: float | None = None


@dataclass(frozen=True)
class RoundView:
    index: int
    turns: tuple[TurnView, ...]
    votes: tuple[tuple[str, int], ...]
    winner: str | None
    winner_correct: bool
    judge: dict[str, Any] | None  # a judge's or moderator's verdict after the round
    system_answer: str | None  # the round's answer as the protocol aggregates (majority, or the judge's)
    system_correct: bool
    pool: dict[str, Any] | None = None  # a diversity-aware round 0: candidates sampled and the ones retained
    retention: dict[str, Any] | None = None  # rounds >= 1: the previous replies forwarded (RetentionRecord)


@dataclass(frozen=True)
class Transcript:
    """One question under one condition, as the viewer shows it."""

    task: str
    question_id: str
    seed: int
    condition: str
    prompt: str
    gold: str
    rounds: tuple[RoundView, ...]
    final_answer: str | None
    status: str
    correct: bool
    rounds_used: int
    stop_reason: str
    error: str | None
    final_judge: dict[str, Any] | None = None  # a separate final judge's verdict, where the protocol has one

    @property
    def key(self) -> UnitKey:
        return (self.task, self.question_id, self.seed)

    def trajectory(self) -> Trajectory:
        agents = tuple(t.agent for t in self.rounds[0].turns) if self.rounds else ()
        return Trajectory(
            agents=agents,
            answers=tuple(tuple(t.answer for t in r.turns) for r in self.rounds),
            correct=tuple(tuple(t.correct for t in r.turns) for r in self.rounds),
            system_answers=tuple(r.system_answer for r in self.rounds),
            system_correct=tuple(r.system_correct for r in self.rounds),
            final_answer=self.final_answer, final_correct=self.correct, rounds_used=self.rounds_used,
        )  # fmt: skip

    @property
    def changed(self) -> bool:
        """Some agent changed its answer between rounds, or the system's answer changed."""
        t = self.trajectory()
        return t.any_agent_changed or t.system_changed


# -- per condition ----------------------------------------------------------------------
@dataclass(frozen=True)
class Usage:
    """Calls and tokens: ``calls``/tokens/cost/model time are what the condition paid for; ``used_calls``
    counts every call its debates used (agents' turns, judges, moderators, filters, scorers), including
    calls shared with another condition or replayed."""

    calls: int
    used_calls: int
    prompt_tokens: int
    completion_tokens: int
    used_tokens: int
    cost: float | None  # None when a model has no price
    model_time_s: float


@dataclass(frozen=True)
class Efficiency:
    """What retention forwarded, and what choosing it cost, over the debate rounds (r >= 1) that record it.

    ``forwarded`` counts the replies shown to agents, summed over agents, rounds and questions; ``full``
    is what forwarding every reply would have shown in the protocol's topology (None if unknown).
    """

    rules: tuple[str, ...]
    rounds: int  # debate rounds with a retention record, summed over questions
    forwarded: int
    full: int | None
    fallbacks: int  # rounds whose filter selection was invalid or empty, so every reply was kept
    filter_calls: int
    filter_prompt_tokens: int
    filter_completion_tokens: int
    diversity: float | None  # mean over rounds of the kept replies' diversity
    diversity_measure: str | None
    anll: float | None  # mean ANLL of the condition's turns that record one
    anll_turns: int
    perplexity: float | None  # mean perplexity of the turns that record one

    @property
    def forwarded_per_round(self) -> float:
        return self.forwarded / self.rounds if self.rounds else math.nan

    @property
    def full_per_round(self) -> float | None:
        return None if self.full is None or not self.rounds else self.full / self.rounds

    @property
    def fewer(self) -> float | None:
        """The share of replies not forwarded, against forwarding every reply (0 for rule "all")."""
        return None if not self.full else 1 - self.forwarded / self.full

    @property
    def comparison(self) -> str:
        """E.g. "42 of 48 replies forwarded, 12.5% fewer than forwarding every reply"."""
        if self.full is None:
            return f"{self.forwarded:,} replies forwarded (the topology is unknown: no comparison)"
        if self.fewer is None:
            return f"{self.forwarded:,} replies forwarded (the topology forwards none)"
        share = f"{percent(self.fewer)} fewer" if self.fewer >= 0 else f"{percent(-self.fewer)} more"
        return f"{self.forwarded:,} of {self.full:,} replies forwarded, {share} than forwarding every reply"


@dataclass(frozen=True)
class ConditionReport:
    name: str
    protocol: str
    agents: int
    accuracy: stats.Proportion
    unparsed: int
    abstained: int
    errors: int
    mean_rounds: float
    rounds: tuple[tuple[int, int, int], ...]  # (rounds used, questions, right)
    stop_reasons: tuple[tuple[str, int], ...]
    accuracy_by_round: tuple[tuple[int, int, int], ...]  # (round, questions reaching it, system answer right)
    usage: Usage
    first_to_final: tuple[tuple[int, Transitions], ...]
    first_to_final_total: Transitions
    round_to_round: tuple[tuple[int, Transitions], ...]
    agent_changes: tuple[AgentChanges, ...]
    oracle: Oracle
    diversity: Diversity | None
    calibration: Calibration | None  # agents' stated confidences
    judge_calibration: Calibration | None  # a judge's confidence in its answer after each round
    efficiency: Efficiency | None = None  # None when no round records retention


@dataclass(frozen=True)
class PairReport:
    a: str
    b: str
    accuracy: stats.PairedComparison
    holm_p: float | None  # with three or more conditions: McNemar p adjusted over all pairs of the task
    rounds: stats.RoundDifference


@dataclass(frozen=True)
class TaskReport:
    task: str
    units: int  # (question, seed) pairs with a result under some condition
    conditions: tuple[ConditionReport, ...]
    pairs: tuple[PairReport, ...]
    cochran: stats.CochranQ | None


@dataclass(frozen=True)
class Report:
    name: str
    path: str
    status: str
    moot_version: str
    wall_s: float
    seed: int
    resamples: int
    condition_names: tuple[str, ...]
    tasks: tuple[TaskReport, ...]
    transcripts: tuple[Transcript, ...]


# -- reading the store --------------------------------------------------------------------
Messages = tuple[tuple[str, str], ...]  # (role, content)


def _messages(raw: str | None) -> Messages:
    if not raw:
        return ()
    try:
        return tuple((str(m.get("role", "")), str(m.get("content", ""))) for m in json.loads(raw))
    except (ValueError, AttributeError):
        return ()


def _new_messages(shown: Messages, before: Messages | None) -> Messages:
    """What was added to an agent's context since its previous turn (its own reply excluded)."""
    if before is None or shown[: len(before)] != before:
        return shown
    added = shown[len(before) :]
    return added[1:] if added and added[0][0] == "assistant" else added


def _peers(config: dict[str, Any]) -> list[list[int]] | None:
    """Who hears whom in the condition's topology (agent indices), or None when the config does not say."""
    protocol = _protocol(config)
    agents = protocol.get("agents") or len(config.get("agents", []))
    if not agents:
        return None
    try:
        return Topology(**(protocol.get("topology") or {})).peers(int(agents))
    except (MootError, ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        return None


def _retention(vote: dict[str, Any]) -> dict[str, Any] | None:
    retention = vote.get("retention")
    return retention if isinstance(retention, dict) else None


def _retained_text(
    retention: dict[str, Any], agent: str, order: list[str], peers: list[list[int]] | None, agents: int
) -> str:
    """What one agent heard of the previous round: "heard agent-1, agent-4 (dar kept 2 of 4)"."""
    rule = str(retention.get("rule", "?"))
    kept = [str(a) for a in retention.get("kept") or []]
    if retention.get("fallback"):
        why = f"{rule} fallback: filter selection invalid or empty, kept all {len(kept)}"
    elif rule == "all":
        why = "all replies kept"
    else:
        why = f"{rule} kept {len(kept)} of {agents}"
    if peers is not None and agent in order and order.index(agent) < len(peers):
        heard = [order[j] for j in peers[order.index(agent)] if j < len(order) and order[j] in kept]
        return f"heard {', '.join(heard) or 'no peer'} ({why})"
    return f"kept {', '.join(kept) or 'none'} ({why})"


def _judge_correct(judge: dict[str, Any], turns: Iterable[TurnView], gold: str) -> bool:
    if "correct" in judge and judge["correct"] is not None:
        return bool(judge["correct"])
    answer = judge.get("answer")
    if answer is None:
        return False
    right = {t.answer for t in turns if t.correct}
    return answer in right or str(answer).strip() == gold.strip()


def read_transcripts(store: RunStore) -> list[Transcript]:
    """Every stored result with its rounds, in question, seed and condition order."""
    questions = {(q["task"], q["question_id"]): q for q in store.rows("questions")}
    conditions = store.conditions()
    order = {name: [a["name"] for a in config.get("agents", [])] for name, config in conditions.items()}
    by_judge = {name for name, config in conditions.items() if _protocol(config).get("aggregation") in JUDGED}
    topology = {name: _peers(config) for name, config in conditions.items()}
    turns: dict[tuple[str, str, str, int], dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for t in store.rows("turns"):
        turns[(t["condition"], t["task"], t["question_id"], t["seed"])][t["round"]].append(t)
    transcripts = []
    for r in store.rows("results"):
        key = (r["condition"], r["task"], r["question_id"], r["seed"])
        question = questions.get((r["task"], r["question_id"]), {"prompt": "", "gold": ""})
        agent_order = order.get(r["condition"], [])
        votes = {v.get("round"): v for v in json.loads(r["votes"] or "[]") if isinstance(v, dict)}
        previous: dict[str, Messages] = {}
        rounds: list[RoundView] = []
        for index, rows in sorted(turns[key].items()):
            rows.sort(key=lambda t: agent_order.index(t["agent"]) if t["agent"] in agent_order else len(agent_order))
            vote = votes.get(index, {})
            retention = _retention(vote) if index > 0 else None
            agents = len(agent_order) or (len(rounds[-1].turns) if rounds else len(rows))
            views = []
            for t in rows:
                shown = _messages(t["shown"])
                retained = t.get("retained")
                if retained is None and retention is not None:
                    retained = _retained_text(retention, t["agent"], agent_order, topology.get(r["condition"]), agents)
                views.append(
                    TurnView(
                        agent=t["agent"], text=t["text"], answer=t["answer"], parsed=t["parse_status"] == "parsed",
                        correct=bool(t["correct"]), confidence=t.get("confidence"), finish_reason=t["finish_reason"],
                        prompt_tokens=t["prompt_tokens"], completion_tokens=t["completion_tokens"],
                        shown_new=_new_messages(shown, previous.get(t["agent"])), shown=shown,
                        retained=retained, nll=t.get("nll"), anll=t.get("anll"), perplexity=t.get("perplexity"),
                    )  # fmt: skip
                )
                previous[t["agent"]] = shown
            winner = vote.get("winner")
            judge = vote.get("judge") if isinstance(vote.get("judge"), dict) else None
            winner_correct = winner is not None and any(v.correct and v.answer == winner for v in views)
            system = (judge.get("answer"), _judge_correct(judge, views, question["gold"])) if (
                judge is not None and r["condition"] in by_judge) else (winner, winner_correct)  # fmt: skip
            rounds.append(
                RoundView(
                    index=index, turns=tuple(views), votes=tuple((str(a), int(n)) for a, n in vote.get("counts", [])),
                    winner=winner, winner_correct=winner_correct, judge=judge, system_answer=system[0],
                    system_correct=system[1], pool=vote.get("pool") if isinstance(vote.get("pool"), dict) else None,
                    retention=retention,
                )  # fmt: skip
            )
        final_judge = json.loads(r["final_judge"]) if r.get("final_judge") else None
        transcripts.append(
            Transcript(
                task=r["task"], question_id=r["question_id"], seed=r["seed"], condition=r["condition"],
                prompt=question["prompt"], gold=question["gold"], rounds=tuple(rounds), final_answer=r["final_answer"],
                status=r["status"], correct=bool(r["correct"]), rounds_used=r["rounds_used"],
                stop_reason=r["stop_reason"], error=r["error"],
                final_judge=final_judge if isinstance(final_judge, dict) else None,
            )  # fmt: skip
        )
    question_index = {k: i for i, k in enumerate(questions)}
    condition_index = {name: i for i, name in enumerate(conditions)}
    transcripts.sort(
        key=lambda t: (question_index.get((t.task, t.question_id), len(question_index)), t.seed,
                       condition_index.get(t.condition, len(condition_index)))
    )  # fmt: skip
    return transcripts


def _usage(store: RunStore) -> dict[tuple[str, str], Usage]:
    """Paid and used calls per (condition, task), priced from the run's [prices]."""
    prices = store.meta().get("config", {}).get("prices", {}) or {}
    paid: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0, 0, 0.0, 0.0])
    unpriced: set[tuple[str, str]] = set()
    for c in store.rows("calls"):
        key = (c["condition"], c["task"])
        p = paid[key]
        p[0] += 1
        p[1] += c["prompt_tokens"]
        p[2] += c["completion_tokens"]
        p[3] += c["latency_s"]
        price = prices.get(c["model_name"])
        if price is None:
            unpriced.add(key)
        else:
            p[4] += (c["prompt_tokens"] * price["prompt"] + c["completion_tokens"] * price["completion"]) / 1e6
    used: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for t in store.rows("turns"):
        u = used[(t["condition"], t["task"])]
        u[0] += 1
        u[1] += t["prompt_tokens"] + t["completion_tokens"]
    for r in store.rows("results"):  # judge, moderator, filter and scorer calls are used too
        calls, prompt_tokens, completion_tokens = helper_usage(r)
        u = used[(r["condition"], r["task"])]
        u[0] += calls
        u[1] += prompt_tokens + completion_tokens
    keys = set(paid) | set(used)
    return {
        k: Usage(
            calls=int(paid[k][0]), used_calls=used[k][0], prompt_tokens=int(paid[k][1]),
            completion_tokens=int(paid[k][2]), used_tokens=used[k][1],
            cost=None if k in unpriced else float(paid[k][4]), model_time_s=float(paid[k][3]),
        )  # fmt: skip
        for k in keys
    }


def _calibration(
    transcripts: list[Transcript], agent_scale: float | None
) -> tuple[Calibration | None, Calibration | None]:
    """Agents' stated confidences (on their protocol's 0..scale) and judges' (0-100) against correctness."""
    agent_conf: list[float] = []
    agent_right: list[bool] = []
    judge_conf: list[float] = []
    judge_right: list[bool] = []
    for t in transcripts:
        for r in t.rounds:
            for turn in r.turns:
                if turn.confidence is not None:
                    agent_conf.append(float(turn.confidence))
                    agent_right.append(turn.correct)
            if r.judge is not None and r.judge.get("confidence") is not None:
                judge_conf.append(float(r.judge["confidence"]))
                judge_right.append(_judge_correct(r.judge, r.turns, t.gold))
    agents = calibrate(to_probabilities(agent_conf, agent_scale), agent_right) if agent_conf else None
    judge = calibrate(to_probabilities(judge_conf, JUDGE_SCALE), judge_right) if judge_conf else None
    return agents, judge


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _number(x: Any) -> float | None:
    """A finite stored number, or None."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def _efficiency(config: dict[str, Any], transcripts: list[Transcript]) -> Efficiency | None:
    """Retention's forwarded replies, fallbacks, filter cost and kept diversity; None when no round records it."""
    records = [r.retention for t in transcripts for r in t.rounds if r.retention is not None]
    if not records:
        return None
    peers = _peers(config)
    diversities = [d for x in records if (d := _number(x.get("diversity"))) is not None]
    anlls = [a for t in transcripts for r in t.rounds for turn in r.turns if (a := _number(turn.anll)) is not None]
    perplexities = [
        p for t in transcripts for r in t.rounds for turn in r.turns if (p := _number(turn.perplexity)) is not None
    ]  # fmt: skip
    measures = list(dict.fromkeys(str(x["diversity_measure"]) for x in records if x.get("diversity_measure")))
    return Efficiency(
        rules=tuple(dict.fromkeys(str(x.get("rule", "?")) for x in records)), rounds=len(records),
        forwarded=sum(int(x.get("forwarded") or 0) for x in records),
        full=None if peers is None else len(records) * sum(len(p) for p in peers),
        fallbacks=sum(bool(x.get("fallback")) for x in records),
        filter_calls=sum(int(x.get("filter_calls") or 0) for x in records),
        filter_prompt_tokens=sum(int(x.get("filter_prompt_tokens") or 0) for x in records),
        filter_completion_tokens=sum(int(x.get("filter_completion_tokens") or 0) for x in records),
        diversity=_mean(diversities), diversity_measure=", ".join(measures) or None,
        anll=_mean(anlls), anll_turns=len(anlls), perplexity=_mean(perplexities),
    )  # fmt: skip


def _condition_report(
    name: str, config: dict[str, Any], transcripts: list[Transcript], usage: Usage
) -> ConditionReport:
    # debate dynamics leave out questions that ended with an error (counted apart, scored wrong)
    trajectories = [t.trajectory() for t in transcripts if t.status != "error"]
    n = len(transcripts)
    right = sum(t.correct for t in transcripts)
    by_rounds: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for t in transcripts:
        by_rounds[t.rounds_used][0] += 1
        by_rounds[t.rounds_used][1] += t.correct
    by_round: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for t in transcripts:
        for r in t.rounds:
            by_round[r.index][0] += 1
            by_round[r.index][1] += r.system_correct
    ftf, ftf_total = first_to_final(trajectories)
    protocol = _protocol(config)
    scale = protocol.get("confidence_scale") if protocol.get("confidence") else None
    agents_cal, judge_cal = _calibration(transcripts, float(scale) if scale else None)
    return ConditionReport(
        name=name, protocol=str(protocol.get("name", "")),
        agents=len(config.get("agents", [])), accuracy=stats.wilson(right, n),
        unparsed=sum(t.status == "unparsed" for t in transcripts),
        abstained=sum(t.status == "abstained" for t in transcripts),
        errors=sum(t.status == "error" for t in transcripts),
        mean_rounds=sum(t.rounds_used for t in transcripts) / n if n else math.nan,
        rounds=tuple((k, v[0], v[1]) for k, v in sorted(by_rounds.items())),
        stop_reasons=tuple(Counter(t.stop_reason for t in transcripts).most_common()),
        accuracy_by_round=tuple((k, v[0], v[1]) for k, v in sorted(by_round.items())),
        usage=usage, first_to_final=tuple(ftf.items()), first_to_final_total=ftf_total,
        round_to_round=tuple(round_to_round(trajectories).items()), agent_changes=tuple(agent_changes(trajectories)),
        oracle=oracle(trajectories), diversity=initial_diversity(trajectories), calibration=agents_cal,
        judge_calibration=judge_cal, efficiency=_efficiency(config, transcripts),
    )  # fmt: skip


def pair_report(
    a: str, b: str, results: dict[str, dict[UnitKey, Transcript]], seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
) -> PairReport:  # fmt: skip
    """Compare conditions A and B on the questions (and seeds) both answered."""
    common = [k for k in results[a] if k in results[b]]
    ra = [results[a][k] for k in common]
    rb = [results[b][k] for k in common]
    return PairReport(
        a=a, b=b,
        accuracy=stats.compare_paired([t.correct for t in ra], [t.correct for t in rb], seed, resamples),
        holm_p=None,
        rounds=stats.compare_rounds([t.rounds_used for t in ra], [t.rounds_used for t in rb], seed, resamples),
    )  # fmt: skip


def _task_report(
    task: str, names: list[str], configs: dict[str, Any], transcripts: list[Transcript],
    usage: dict[tuple[str, str], Usage], seed: int, resamples: int,
) -> TaskReport:  # fmt: skip
    results: dict[str, dict[UnitKey, Transcript]] = {n: {} for n in names}
    for t in transcripts:
        results[t.condition][t.key] = t
    present = [n for n in names if results[n]]
    empty = Usage(0, 0, 0, 0, 0, None, 0.0)
    conditions = tuple(
        _condition_report(n, configs.get(n, {}), list(results[n].values()), usage.get((n, task), empty))
        for n in present
    )
    pairs = [pair_report(a, b, results, seed, resamples) for i, a in enumerate(present) for b in present[i + 1 :]]
    cochran = None
    if len(present) >= 3:
        adjusted = stats.holm([p.accuracy.mcnemar_p for p in pairs])
        pairs = [PairReport(p.a, p.b, p.accuracy, h, p.rounds) for p, h in zip(pairs, adjusted)]
        common = [k for k in results[present[0]] if all(k in results[n] for n in present)]
        cochran = stats.cochran_q([[results[n][k].correct for n in present] for k in common])
    units = len({t.key for t in transcripts})
    return TaskReport(task, units, conditions, tuple(pairs), cochran)


def _open(run: RunStore | Path | str) -> tuple[RunStore, bool]:
    if isinstance(run, RunStore):
        return run, False
    return RunStore.open(Path(run)), True


def build_report(run: RunStore | Path | str, seed: int = 0, resamples: int = stats.DEFAULT_RESAMPLES) -> Report:
    """The report of a stored run (a path or an open store). ``seed`` and ``resamples`` fix every bootstrap."""
    store, owned = _open(run)
    try:
        if store.count("results") == 0:
            raise AnalysisError(f"{store.path} holds no results yet")
        meta = store.meta()
        configs = store.conditions()
        names = list(configs)
        transcripts = read_transcripts(store)
        for t in transcripts:
            if t.condition not in configs:
                names.append(t.condition)
                configs[t.condition] = {}
        usage = _usage(store)
        tasks = list(dict.fromkeys(t.task for t in transcripts))
        by_task = {task: [t for t in transcripts if t.task == task] for task in tasks}
        wall = sum(
            s["finished_at"] - s["started_at"] for s in store.sessions() if s["finished_at"] is not None
        )
        return Report(
            name=str(meta.get("name", store.path.stem)), path=str(store.path), status=str(meta.get("status", "")),
            moot_version=str(meta.get("moot_version", "")), wall_s=float(wall), seed=seed, resamples=resamples,
            condition_names=tuple(dict.fromkeys(names)),
            tasks=tuple(_task_report(task, names, configs, by_task[task], usage, seed, resamples) for task in tasks),
            transcripts=tuple(transcripts),
        )  # fmt: skip
    finally:
        if owned:
            store.close()


def compare_conditions(
    run: RunStore | Path | str, a: str, b: str, task: str | None = None, seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
) -> list[tuple[str, PairReport]]:  # fmt: skip
    """The paired comparison of conditions A and B, per task (or on one ``task``)."""
    store, owned = _open(run)
    try:
        known = list(store.conditions())
        for name in (a, b):
            if name not in known:
                raise AnalysisError(f"no condition {name!r} in {store.path}; conditions: {', '.join(known)}")
        if a == b:
            raise AnalysisError("compare two different conditions")
        transcripts = [t for t in read_transcripts(store) if t.condition in (a, b)]
        tasks = list(dict.fromkeys(t.task for t in transcripts))
        if task is not None:
            if task not in tasks:
                raise AnalysisError(f"no results for task {task!r}; tasks: {', '.join(tasks) or 'none'}")
            tasks = [task]
        out = []
        for name in tasks:
            results: dict[str, dict[UnitKey, Transcript]] = {a: {}, b: {}}
            for t in transcripts:
                if t.task == name:
                    results[t.condition][t.key] = t
            out.append((name, pair_report(a, b, results, seed, resamples)))
        if not out or all(p.accuracy.n == 0 for _, p in out):
            raise AnalysisError(f"conditions {a!r} and {b!r} share no answered question in {store.path}")
        return out
    finally:
        if owned:
            store.close()
