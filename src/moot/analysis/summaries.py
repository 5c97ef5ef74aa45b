"""The statistics of one condition and of one pair of conditions on a task, from their lean transcripts
(``moot.analysis.transcripts``): accuracy with its interval, rounds, transitions, oracles, diversity,
calibration, retention and efficiency, DAR's best round, the task's own metric, and the paired tests.

The question (task, question id) is the statistical unit; seeds repeat it. Accuracy intervals, paired tests
and round differences combine each question's seeds first (see ``moot.analysis.stats_repeats``); descriptive
counts (rounds, transitions, oracles, diversity, calibration) are counted over question x seed results.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from moot.analysis import stats, stats_repeats
from moot.analysis.calibration import Calibration, ConfidenceSpread, calibrate, confidence_spread, to_probabilities
from moot.analysis.records import BestRound, ConditionReport, Efficiency, PairReport, ReplyCounts
from moot.analysis.transcripts import (
    QuestionKey,
    Transcript,
    TurnView,
    UnitKey,
    finite,
    judge_correct,
    topology_peers,
)
from moot.analysis.transitions import (
    agent_changes,
    first_to_final,
    initial_diversity,
    oracle,
    round_to_round,
)
from moot.runner.config import ResolvedCondition
from moot.runner.summary import Usage

JUDGE_SCALE = 100.0  # judges and moderators state confidence on 0-100


def reply_counts(turns: Iterable[TurnView], confidence_asked: bool, rulings: tuple[int, int] = (0, 0)) -> ReplyCounts:
    """Count the agents' replies ``turns``: unparsed, truncated and (where asked) missing a confidence;
    ``rulings``: the judges' and moderators' verdicts and how many of them no reader of JSON-like rulings
    can read (``Transcript.rulings``, ``rulings_unreadable``), which count as unreadable, never guessed."""
    listed = list(turns)
    return ReplyCounts(
        replies=len(listed),
        unparsed=sum(not t.parsed for t in listed),
        truncated=sum(t.truncated for t in listed),
        confidence_missing=sum(t.confidence is None for t in listed) if confidence_asked else None,
        rulings=rulings[0],
        rulings_unreadable=rulings[1],
        reasoned=sum(t.reasoned for t in listed),
        reasoning_tokens=sum(t.reasoning_tokens or 0 for t in listed),
        reasoning_only=sum(t.reasoning_only for t in listed),
    )


def _calibration(
    transcripts: list[Transcript], agent_scale: float | None
) -> tuple[Calibration | None, Calibration | None, ConfidenceSpread | None]:
    """Agents' stated confidences (on their protocol's 0..scale) and judges' (0-100) against correctness;
    the judges' and moderators' confidences also in the stopping study's bins, with median and IQR."""
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
            if r.judge is not None and r.judge.confidence is not None:
                judge_conf.append(float(r.judge.confidence))
                judge_right.append(judge_correct(r.judge, r.turns, t.gold))
    agents = calibrate(to_probabilities(agent_conf, agent_scale), agent_right) if agent_conf else None
    judge = calibrate(to_probabilities(judge_conf, JUDGE_SCALE), judge_right) if judge_conf else None
    spread = confidence_spread(judge_conf, judge_right) if judge_conf else None
    return agents, judge, spread


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _efficiency(condition: ResolvedCondition | None, transcripts: list[Transcript]) -> Efficiency | None:
    """Retention's forwarded replies, fallbacks, filter cost and kept diversity; None when no round records it."""
    records = [r.retention for t in transcripts for r in t.rounds if r.retention is not None]
    if not records:
        return None
    peers = topology_peers(condition)
    diversities = [d for x in records if (d := finite(x.diversity)) is not None]
    anlls = [a for t in transcripts for r in t.rounds for turn in r.turns if (a := finite(turn.anll)) is not None]
    perplexities = [
        p for t in transcripts for r in t.rounds for turn in r.turns if (p := finite(turn.perplexity)) is not None
    ]
    measures = list(dict.fromkeys(x.diversity_measure for x in records if x.diversity_measure))
    return Efficiency(
        rules=tuple(dict.fromkeys(x.rule for x in records)),
        rounds=len(records),
        forwarded=sum(x.forwarded for x in records),
        full=None if peers is None else len(records) * sum(len(p) for p in peers),
        fallbacks=sum(x.fallback for x in records),
        filter_calls=sum(x.filter_calls for x in records),
        filter_prompt_tokens=sum(x.filter_prompt_tokens for x in records),
        filter_completion_tokens=sum(x.filter_completion_tokens for x in records),
        diversity=_mean(diversities),
        diversity_measure=", ".join(measures) or None,
        anll=_mean(anlls),
        anll_turns=len(anlls),
        perplexity=_mean(perplexities),
    )


def by_question(transcripts: Iterable[Transcript]) -> dict[QuestionKey, dict[int, Transcript]]:
    """Results grouped by question (in first-seen order), each question's by seed."""
    out: dict[QuestionKey, dict[int, Transcript]] = {}
    for t in transcripts:
        out.setdefault(t.question, {})[t.seed] = t
    return out


def _correct(groups: Mapping[QuestionKey, Mapping[int, Transcript]]) -> list[dict[int, bool]]:
    return [{s: t.correct for s, t in g.items()} for g in groups.values()]


def _metrics(groups: Mapping[QuestionKey, Mapping[int, Transcript]]) -> list[dict[int, float | None]]:
    """Each question's metric values by seed, over the results the task scored."""
    return [{s: t.metric for s, t in g.items() if t.scored} for g in groups.values()]


def peer_style(condition: ResolvedCondition | None) -> bool:
    """Agents that answer together and vote each round (the peer schedule, two or more agents, the final
    answer their vote, not a judge's) with at least one debate round: DAR's kind of debate."""
    if condition is None:
        return False
    p = condition.protocol
    return p.style.has_peers and p.agents >= 2 and not p.judged and p.rounds >= 2


def best_round_report(transcripts: list[Transcript]) -> BestRound | None:
    """The final and per-round majority-vote accuracy per seed and over seeds, and the best debate round.
    None without a debate round."""
    last = max((len(t.rounds) for t in transcripts), default=0)
    if last < 2:
        return None
    final: dict[int, list[float]] = defaultdict(list)
    rounds: dict[int, dict[int, list[float]]] = {r: defaultdict(list) for r in range(1, last)}
    for t in transcripts:
        final[t.seed].append(float(t.correct))
        for r in range(1, last):
            if t.status == "error" or not t.rounds:
                right = False
            else:
                right = t.rounds[min(r, len(t.rounds) - 1)].winner_correct
            rounds[r][t.seed].append(float(right))
    spreads = tuple((r, stats_repeats.seed_spread(by_seed)) for r, by_seed in rounds.items())
    best = max(spreads, key=lambda x: (x[1].mean, -x[0]))[0]
    return BestRound(stats_repeats.seed_spread(final), spreads, best)


def condition_report(
    name: str,
    condition: ResolvedCondition | None,
    transcripts: list[Transcript],
    usage: Usage,
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
) -> ConditionReport:
    # debate dynamics leave out questions that ended with an error (counted apart, scored wrong)
    trajectories = [t.trajectory() for t in transcripts if t.status != "error"]
    n = len(transcripts)
    groups = by_question(transcripts)
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
    scale = condition.protocol.stated_confidence_scale if condition is not None else None
    agents_cal, judge_cal, judge_spread = _calibration(transcripts, float(scale) if scale else None)
    per_seed: dict[int, list[float]] = defaultdict(list)
    for t in transcripts:
        per_seed[t.seed].append(float(t.correct))
    scored = any(t.scored for t in transcripts)
    return ConditionReport(
        name=name,
        protocol=condition.protocol.name if condition is not None else "",
        agents=len(condition.agents) if condition is not None else 0,
        accuracy=stats_repeats.question_accuracy(_correct(groups), seed, resamples),
        unparsed=sum(t.status == "unparsed" for t in transcripts),
        abstained=sum(t.status == "abstained" for t in transcripts),
        errors=sum(t.status == "error" for t in transcripts),
        mean_rounds=sum(t.rounds_used for t in transcripts) / n if n else math.nan,
        rounds=tuple((k, v[0], v[1]) for k, v in sorted(by_rounds.items())),
        stop_reasons=tuple(Counter(t.stop_reason for t in transcripts).most_common()),
        accuracy_by_round=tuple((k, v[0], v[1]) for k, v in sorted(by_round.items())),
        usage=usage,
        first_to_final=tuple(ftf.items()),
        first_to_final_total=ftf_total,
        round_to_round=tuple(round_to_round(trajectories).items()),
        agent_changes=tuple(agent_changes(trajectories)),
        oracle=oracle(trajectories),
        diversity=initial_diversity(trajectories),
        calibration=agents_cal,
        judge_calibration=judge_cal,
        efficiency=_efficiency(condition, transcripts),
        questions=len(groups),
        seed_accuracy=stats_repeats.seed_spread(per_seed),
        best_round=best_round_report(transcripts) if peer_style(condition) else None,
        judge_confidence=judge_spread,
        metric=stats_repeats.metric_summary(_metrics(groups), seed, resamples) if scored else None,
        replies=reply_counts(
            (turn for t in transcripts for r in t.rounds for turn in r.turns),
            condition is not None and condition.protocol.confidence is not None,
            (sum(t.rulings for t in transcripts), sum(t.rulings_unreadable for t in transcripts)),
        ),
    )


def pair_report(
    a: str,
    b: str,
    results: dict[str, dict[UnitKey, Transcript]],
    seed: int = 0,
    resamples: int = stats.DEFAULT_RESAMPLES,
    metric_name: str | None = None,
    accuracy_applies: bool = True,
) -> PairReport:
    """Compare conditions A and B on the questions both answered, the question as the unit: a question's
    seeds that both ran pair up and are combined per question (``stats_repeats.compare_repeats``); with one seed
    these are the exact McNemar test, matched odds ratio and paired bootstrap on questions."""
    ga, gb = by_question(results[a].values()), by_question(results[b].values())
    common = [q for q in ga if q in gb]
    ca = {q: ga[q] for q in common}
    cb = {q: gb[q] for q in common}
    scored = any(t.scored for g in (*ca.values(), *cb.values()) for t in g.values())
    seeds = {s for q in common for s in ca[q] if s in cb[q]}
    return PairReport(
        a=a,
        b=b,
        accuracy=stats_repeats.compare_repeats(_correct(ca), _correct(cb), seed, resamples),
        holm_p=None,
        rounds=stats_repeats.compare_rounds_repeats(
            [{s: t.rounds_used for s, t in g.items()} for g in ca.values()],
            [{s: t.rounds_used for s, t in g.items()} for g in cb.values()],
            seed,
            resamples,
        ),
        metric=stats_repeats.compare_metric(_metrics(ca), _metrics(cb), seed, resamples) if scored else None,
        metric_name=metric_name if scored else None,
        accuracy_applies=accuracy_applies,
        questions=sum(any(s in cb[q] for s in ca[q]) for q in common),
        seeds=len(seeds),
    )
