"""The report's tables as plain text cells, shared by the terminal, Markdown and HTML renderers.

Each table is declared by its columns (``moot.analysis.columns``): a header and how a row's item (a condition,
or one of its records) becomes its cell. Where the headers are fixed the columns are constants; where they
depend on the task (repeated seeds, the confidence bins) a function declares them. This module holds the
tables of one row per condition; the tables that compare conditions are in ``moot.analysis.compare_tables``,
and their names are importable from here too. ``moot.analysis.report_sections`` lists every table of a task
(``sections``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from moot.analysis.calibration import Bin, Calibration, ConfidenceSpread, bin_label
from moot.analysis.columns import (
    Column,
    Part,
    Table,
    cost,
    count,
    dash_unless,
    numeric_columns,
    owned,
    parts,
    ratio,
    table,
)
from moot.analysis.compare_tables import (
    METRIC_PAIRS_NOTE,
    compare_readers_table,
    comparison_tables,
    difference_text,
    equal_budget_rows_table,
    metric_pairs_table,
    odds_ratio_text,
    pairs_table,
    reader_tables,
    readers_accuracy_table,
    readers_pairs_table,
    round_difference_table,
    seed_pairs_table,
    vote_at_k_table,
)
from moot.analysis.formatting import DASH, fixed, interval, percent
from moot.analysis.records import BestRound, ConditionReport, Efficiency, ReplyCounts, TaskReport
from moot.analysis.stats import MetricSummary, SeedSpread
from moot.analysis.transitions import AgentChanges, Diversity, Oracle, Transitions

__all__ = [  # the tables of one condition per row, and the names other modules import from here
    "METRIC_PAIRS_NOTE",
    "ROUND_ANSWER",
    "Table",
    "agents_table",
    "best_round_table",
    "by_round_table",
    "calibration_tables",
    "compare_readers_table",
    "comparison_tables",
    "counted_note",
    "difference_text",
    "diversity_table",
    "efficiency_table",
    "equal_budget_rows_table",
    "judge_confidence_table",
    "metric_pairs_table",
    "metric_table",
    "numeric_columns",
    "odds_ratio_text",
    "oracle_table",
    "overview",
    "pairs_table",
    "per_seed_text",
    "reader_tables",
    "readers_accuracy_table",
    "readers_pairs_table",
    "replies_table",
    "round_difference_table",
    "rounds_table",
    "seed_pairs_table",
    "seeds_table",
    "spread_text",
    "steps_table",
    "transitions_table",
    "vote_at_k_table",
]


ROUND_ANSWER = "A round's answer is its majority, or its judge's or moderator's where the protocol takes theirs."


def spread_text(s: SeedSpread | None, digits: int = 3) -> str:
    """Mean ± sample std over seeds ("0.667 ± 0.058"); the mean alone with one seed."""
    if s is None or not s.per_seed:
        return DASH
    if s.seeds == 1:
        return fixed(s.mean, digits)
    return f"{fixed(s.mean, digits)} ± {fixed(s.std, digits)}"


def per_seed_text(s: SeedSpread, counts: bool = True, digits: int = 3) -> str:
    """Each seed's figure: "s0: 4/6 = 0.667; s1: 3/6 = 0.500" (``counts``), or "s0: 0.812; s1: 0.790"."""
    if counts:
        return "; ".join(f"s{v.seed}: {ratio(round(v.total), v.n)}" for v in s.per_seed)
    return "; ".join(f"s{v.seed}: {fixed(v.mean, digits)}" for v in s.per_seed)


def counted_note(task: TaskReport) -> str:
    """With repeated seeds, descriptive tables count question x seed results and say so."""
    return f" Counted over question x seed results ({task.unit})." if task.repeated else ""


# -- the owners of the rows: a condition, a pair --------------------------------------------------------------
CONDITION: tuple[Column[ConditionReport], ...] = (Column("condition", lambda c: c.name),)


# -- per condition -----------------------------------------------------------------------------------------
def overview_columns(task: TaskReport) -> tuple[Column[ConditionReport], ...]:
    """Accuracy (dashes where the task is scored by its own metric alone), failures, rounds and cost."""
    scored = task.accuracy_applies

    def n(c: ConditionReport) -> str:
        seeds = c.seed_accuracy.seeds if c.seed_accuracy is not None else 1
        return f"{c.questions} x {seeds}" if task.repeated else str(c.accuracy.n)

    return (
        *CONDITION,
        Column("protocol", lambda c: c.protocol),
        Column("n", n),
        Column("right", dash_unless(scored, lambda c: str(c.accuracy.successes))),
        Column("accuracy", dash_unless(scored, lambda c: fixed(c.accuracy.estimate))),
        Column(
            "95% CI (questions)" if task.repeated else "95% Wilson CI",
            dash_unless(scored, lambda c: interval(c.accuracy.low, c.accuracy.high)),
        ),
        Column("unparsed", lambda c: str(c.unparsed)),
        Column("abstained", lambda c: str(c.abstained)),
        Column("errors", lambda c: str(c.errors)),
        Column("mean rounds", lambda c: fixed(c.mean_rounds, 2)),
        Column("calls paid", lambda c: count(c.usage.calls)),
        Column("calls used", lambda c: count(c.usage.used_calls)),
        Column("tokens paid", lambda c: count(c.usage.prompt_tokens + c.usage.completion_tokens)),
        Column("cost", lambda c: cost(c.usage.cost)),
        Column("model time", lambda c: f"{fixed(c.usage.latency_s, 1)} s"),
    )


def overview(task: TaskReport) -> Table:
    note = f"{task.unit}. "
    if task.repeated:
        note += (
            "n is questions x seeds and right counts question x seed results; the accuracy is the mean over "
            "questions of each question's accuracy over its seeds, and its interval a cluster percentile "
            "bootstrap over questions (a question's seeds resampled together), never Wilson on questions x seeds. "
        )
    if not task.accuracy_applies:
        note += f"Task {task.task} is scored by its own metric ({task.metric_name}), not by accuracy. "
    return table(
        "overview",
        "Accuracy and cost",
        overview_columns(task),
        task.conditions,
        note + "Unparsed, abstained and errored questions are scored wrong. Calls paid are the calls a condition "
        "made; calls used are every call its debates needed (a diverse round 0's whole candidate pool included), "
        "round-0 calls shared with other conditions and replays too. Rounds count round 0.",
    )


SEEDS_COLUMNS: tuple[Column[Part[ConditionReport, SeedSpread]], ...] = (
    Column("condition", lambda r: r.of.name),
    Column("questions", lambda r: str(r.of.questions)),
    Column("seeds", lambda r: str(r.part.seeds)),
    Column("per seed", lambda r: per_seed_text(r.part)),
    Column("mean ± std over seeds", lambda r: spread_text(r.part)),
    Column("accuracy (questions)", lambda r: fixed(r.of.accuracy.estimate)),
    Column("95% CI", lambda r: interval(r.of.accuracy.low, r.of.accuracy.high)),
)


def seeds_table(task: TaskReport) -> Table:
    """With repeated seeds: accuracy per seed, mean ± std over seeds, and the question-level estimate."""
    return table(
        "seeds",
        "Accuracy per seed and over seeds",
        SEEDS_COLUMNS,
        parts(task.conditions, lambda c: c.seed_accuracy),
        f"{task.unit}. Per seed: right answers of that seed's questions. Mean ± std: the per-seed accuracies' mean "
        "and sample standard deviation (ddof = 1) over seeds, as DAR reports. Accuracy (questions): the mean over "
        "questions of each question's accuracy over its seeds, with a cluster percentile bootstrap interval "
        "(questions resampled with all their seeds).",
    )


BEST_ROUND_COLUMNS: tuple[Column[BestRound], ...] = (
    Column("seeds", lambda b: str(b.final.seeds)),
    Column("final accuracy", lambda b: spread_text(b.final)),
    Column(
        "majority-vote accuracy by debate round (mean over seeds)",
        lambda b: "; ".join(f"R{r}: {fixed(s.mean)}" for r, s in b.by_round),
    ),
    Column("best round", lambda b: str(b.best_round)),
    Column("best-round accuracy", lambda b: spread_text(b.best)),
    Column("best round per seed", lambda b: per_seed_text(b.best, counts=False)),
)


def best_round_table(task: TaskReport) -> Table:
    """DAR's reporting for peer-style debates: final and best-round accuracy, mean ± std over seeds."""
    return table(
        "best-round",
        "DAR-style: best round, mean ± std over seeds",
        owned(CONDITION, BEST_ROUND_COLUMNS),
        parts(task.conditions, lambda c: c.best_round),
        "Peer-style debates (agents voting each round) with a debate round. Each debate round r >= 1 is scored by "
        "its majority vote (a question that stopped earlier keeps its last vote; an errored one counts wrong); the "
        "best round maximises the mean over seeds, one round for every seed. Best-over-rounds, as DAR's paper "
        "reports, is an optimistic selection made after seeing the results; the final accuracy is not selected. "
        "± is the sample standard deviation over seeds (ddof = 1), shown with two or more seeds.",
    )


REPLIES_COLUMNS: tuple[Column[ReplyCounts], ...] = (
    Column("replies", lambda r: f"{r.replies:,}"),
    Column("unparsed", lambda r: f"{r.unparsed:,}"),
    Column("truncated", lambda r: f"{r.truncated:,}"),
    Column(
        "confidence missing",
        lambda r: DASH if r.confidence_missing is None else f"{r.confidence_missing:,} of {r.replies:,}",
    ),
    Column("rulings unreadable", lambda r: f"{r.rulings_unreadable:,} of {r.rulings:,}" if r.rulings else DASH),
)


REASONING_COLUMNS: tuple[Column[ReplyCounts], ...] = (
    Column("with reasoning", lambda r: f"{r.reasoned:,}"),
    Column("reasoning tokens", lambda r: f"{r.reasoning_tokens:,}"),
    Column("no content after reasoning", lambda r: f"{r.reasoning_only:,}"),
)


def replies_table(task: TaskReport) -> Table:
    """The agents' replies per condition: unparsed, truncated by the token limit, confidence missing; and,
    where a reasoning model replied, its reasoning (shown only then, so other reports keep their columns)."""
    reasoning = any(c.replies is not None and c.replies.reasoned for c in task.conditions)
    note = (
        " With reasoning: replies whose reasoning was read apart from their content (a reasoning_content field "
        "or a <think> block); reasoning tokens: theirs, part of the completion tokens (as servers bill them); "
        "no content after reasoning: the reasoning never closed (the token limit inside it: also truncated) or "
        "nothing followed it, so the reply is unparsed: its answer is never read from the reasoning."
        if reasoning
        else ""
    )
    return table(
        "replies",
        "Agents' replies: unparsed, truncated, confidence missing; unreadable rulings",
        owned(CONDITION, REPLIES_COLUMNS + (REASONING_COLUMNS if reasoning else ())),
        parts(task.conditions, lambda c: c.replies),
        "Replies of every agent in every round. Truncated: cut off by the token limit (finish reason "
        '"length"); its answer may be incomplete. Confidence missing: no readable confidence where the '
        "protocol asks for one (— where it does not); the confidence-weighted vote gives it weight 0. Rulings "
        "unreadable: judges' and moderators' verdicts (after their repair call) that no reader of JSON-like "
        "rulings reads (strict JSON, JSON with LaTeX backslashes, Python literals); such a ruling has no "
        "answer and no confidence (— where the protocol has no judge)." + note,
    )


ROUNDS_COLUMNS: tuple[Column[ConditionReport], ...] = (
    *CONDITION,
    Column("mean rounds", lambda c: fixed(c.mean_rounds, 2)),
    Column("total rounds", lambda c: str(sum(r * n for r, n, _ in c.rounds))),
    Column("stopping distribution", lambda c: "; ".join(f"R{r}: {n}" for r, n, _ in c.rounds)),
    Column("right by stopping round", lambda c: "; ".join(f"R{r}: {k}/{n}" for r, n, k in c.rounds)),
    Column("stop reasons", lambda c: "; ".join(f"{reason}: {n}" for reason, n in c.stop_reasons)),
)


def rounds_table(task: TaskReport) -> Table:
    return table("rounds", "Rounds used and stopping", ROUNDS_COLUMNS, task.conditions, counted_note(task).strip())


# a round's (round, questions reaching it, right answers): ``ConditionReport.accuracy_by_round``
BY_ROUND_COLUMNS: tuple[Column[tuple[int, int, int]], ...] = (
    Column("round", lambda x: str(x[0])),
    Column("questions reaching it", lambda x: str(x[1])),
    Column("right", lambda x: str(x[2])),
    Column("accuracy", lambda x: fixed(x[2] / x[1]) if x[1] else DASH),
)


def by_round_table(task: TaskReport) -> Table:
    return table(
        "by-round",
        "Accuracy of each round's answer",
        owned(CONDITION, BY_ROUND_COLUMNS),
        (Part(c, x) for c in task.conditions for x in c.accuracy_by_round),
        ROUND_ANSWER + counted_note(task),
    )


TRANSITIONS_COLUMNS: tuple[Column[Transitions], ...] = (
    Column("n", lambda t: str(t.n)),
    Column("R→R", lambda t: str(t.right_right)),
    Column("W→R", lambda t: str(t.wrong_right)),
    Column("R→W", lambda t: str(t.right_wrong)),
    Column("W→W", lambda t: str(t.wrong_wrong)),
    Column("answer changed", lambda t: str(t.changed)),
)


class Step(NamedTuple):
    """A row of the transition tables: a condition's transitions over some rounds (``rounds``: their label)."""

    condition: str
    rounds: str
    transitions: Transitions


def _step_columns(rounds: str) -> tuple[Column[Step], ...]:
    return (
        Column("condition", lambda s: s.condition),
        Column(rounds, lambda s: s.rounds),
        *(c.over(lambda s: s.transitions) for c in TRANSITIONS_COLUMNS),
    )


def transitions_table(task: TaskReport) -> Table:
    steps = []
    for c in task.conditions:
        steps += [Step(c.name, str(r), t) for r, t in c.first_to_final]
        steps.append(Step(c.name, "total", c.first_to_final_total))
    return table(
        "transitions",
        "Round 0 to final answer, by stopping round",
        _step_columns("rounds used"),
        steps,
        "R right, W wrong: round 0's answer, then the final answer. " + ROUND_ANSWER + " Questions that ended "
        "with an error are left out of this and the following tables." + counted_note(task),
    )


def steps_table(task: TaskReport) -> Table:
    return table(
        "steps",
        "Round-to-round transitions of each round's answer",
        _step_columns("rounds"),
        (Step(c.name, f"{r - 1}→{r}", t) for c in task.conditions for r, t in c.round_to_round),
        counted_note(task).strip(),
    )


ORACLE_COLUMNS: tuple[Column[Oracle], ...] = (
    Column("n", lambda o: str(o.n)),
    Column("final", lambda o: ratio(o.final, o.n)),
    Column("any round's answer right", lambda o: ratio(o.any_round, o.n)),
    Column("any agent in any round right", lambda o: ratio(o.any_turn, o.n)),
    Column("recovery gap", lambda o: f"{o.gap} ({fixed(o.gap / o.n) if o.n else DASH})"),
)


def oracle_table(task: TaskReport) -> Table:
    return table(
        "oracle",
        "Oracle accuracy and recovery gap",
        owned(CONDITION, ORACLE_COLUMNS),
        parts(task.conditions, lambda c: c.oracle),
        "The recovery gap counts questions on which some agent gave the right answer but the final answer is wrong."
        + counted_note(task),
    )


AGENTS_COLUMNS: tuple[Column[AgentChanges], ...] = (
    Column("agent", lambda a: a.agent),
    Column("round pairs", lambda a: str(a.steps)),
    Column("changed answer", lambda a: str(a.changed)),
    Column("wrong→right", lambda a: str(a.wrong_to_right)),
    Column("right→wrong", lambda a: str(a.right_to_wrong)),
)


def agents_table(task: TaskReport) -> Table:
    return table(
        "agents",
        "Per-agent answer changes between consecutive rounds",
        owned(CONDITION, AGENTS_COLUMNS),
        (Part(c, a) for c in task.conditions for a in c.agent_changes if a.steps != 0),
        counted_note(task).strip(),
    )


DIVERSITY_COLUMNS: tuple[Column[Diversity], ...] = (
    Column("n", lambda d: str(d.n)),
    Column("agents N", lambda d: str(d.agents)),
    Column("distinct answers", lambda d: fixed(d.mean_distinct, 2)),
    Column("unanimous", lambda d: ratio(d.unanimous, d.n)),
    Column("round-0 answer right", lambda d: ratio(d.majority_correct, d.n)),
    Column("Pass@1", lambda d: fixed(d.pass_at[0])),
    Column("Pass@N", lambda d: fixed(d.pass_at[-1])),
)


def diversity_table(task: TaskReport) -> Table | None:
    shown = parts(
        task.conditions, lambda c: c.diversity if c.diversity is not None and c.diversity.agents > 1 else None
    )
    if not shown:
        return None
    return table(
        "diversity",
        "Round-0 diversity and Pass@N",
        owned(CONDITION, DIVERSITY_COLUMNS),
        shown,
        "Pass@k is the unbiased estimator over the N round-0 answers of each question." + counted_note(task),
    )


def _versus(e: Efficiency) -> str:
    fewer = e.fewer
    return DASH if fewer is None else f"{percent(fewer)} fewer" if fewer >= 0 else f"{percent(-fewer)} more"


EFFICIENCY_COLUMNS: tuple[Column[Efficiency], ...] = (
    Column("retention", lambda e: ", ".join(e.rules)),
    Column("debate rounds", lambda e: str(e.rounds)),
    Column("forwarded", lambda e: count(e.forwarded)),
    Column("forwarded per round", lambda e: fixed(e.forwarded_per_round, 2)),
    Column("per round if all kept", lambda e: fixed(e.full_per_round, 2)),
    Column("vs. forwarding every reply", _versus),
    Column("fallbacks", lambda e: ratio(e.fallbacks, e.rounds)),
    Column("filter calls", lambda e: count(e.filter_calls)),
    Column("filter prompt tokens", lambda e: count(e.filter_prompt_tokens)),
    Column("filter completion tokens", lambda e: count(e.filter_completion_tokens)),
    Column("kept diversity", lambda e: fixed(e.diversity)),
    Column("diversity measure", lambda e: e.diversity_measure or DASH),
    Column("mean ANLL", lambda e: fixed(e.anll)),
    Column("mean perplexity", lambda e: fixed(e.perplexity, 2)),
)


def efficiency_table(task: TaskReport) -> Table | None:
    """Per condition with retention: replies forwarded against forwarding every reply, and the filter's cost."""
    shown: list[Part[ConditionReport, Efficiency]] = parts(task.conditions, lambda c: c.efficiency)
    if not shown:
        return None
    comparisons = "; ".join(f"{r.of.name}: {r.part.comparison}" for r in shown)
    return table(
        "efficiency",
        "Retention and efficiency",
        owned(CONDITION, EFFICIENCY_COLUMNS),
        shown,
        "Debate rounds are rounds 1 and later, summed over questions. Forwarded counts the previous round's "
        'replies shown to agents, summed over agents; "if all kept" is the count that forwarding every reply '
        "would give in the protocol's topology. A fallback is a filter selection that was invalid or empty, "
        "so every reply was kept. Filter calls and their tokens are also counted in the overview's calls. "
        "Kept diversity is the mean over rounds of the kept replies' mean pairwise diversity; ANLL and "
        "perplexity are averaged over the turns that record them (log-probabilities asked). "
        + comparisons
        + "."
        + counted_note(task),
    )


def metric_columns(repeated: bool) -> tuple[Column[MetricSummary], ...]:
    """A task metric's summary; per seed and over seeds only with repeated seeds."""
    return (
        Column("questions", lambda m: str(m.questions)),
        Column("results scored", lambda m: str(m.results)),
        Column("no value", lambda m: str(m.missing)),
        Column("mean", lambda m: fixed(m.mean)),
        Column("95% CI", lambda m: interval(m.ci.low, m.ci.high)),
        Column("per seed", dash_unless(repeated, lambda m: per_seed_text(m.seeds, counts=False))),
        Column("mean ± std over seeds", dash_unless(repeated, lambda m: spread_text(m.seeds))),
    )


def metric_table(task: TaskReport) -> Table:
    """A task's own metric per condition: mean over questions with a question-level bootstrap interval."""
    name = task.metric_name or "the task's own score"
    return table(
        "metric",
        f"Task metric: {name}",
        owned(CONDITION, metric_columns(task.repeated)),
        parts(task.conditions, lambda c: c.metric),
        f"{task.unit}. The task's own score of each result ({name}). Results whose value is None (the task could "
        "not score them) are left out and counted under no value. A question's value is its mean over its seeds; "
        "the mean is over questions, with a percentile bootstrap interval resampling questions (all their seeds "
        "together). Per seed: the mean over that seed's questions; ± is the sample standard deviation over seeds "
        "(ddof = 1).",
    )


def judge_confidence_columns(bins: Sequence[Bin]) -> tuple[Column[ConfidenceSpread], ...]:
    """Judges' confidences: their spread, then the accuracy in each of ``bins`` (the study's, as labelled)."""

    def bin_column(i: int, b: Bin) -> Column[ConfidenceSpread]:
        return Column(f"accuracy, {bin_label(b)}", lambda k: ratio(k.bins[i].correct, k.bins[i].n))

    return (
        Column("verdicts", lambda k: str(k.n)),
        Column("median", lambda k: fixed(k.median, 1)),
        Column("IQR", lambda k: f"{fixed(k.q1, 1)}–{fixed(k.q3, 1)}"),
        Column("range", lambda k: f"{fixed(k.low, 1)}–{fixed(k.high, 1)}"),
        *(bin_column(i, b) for i, b in enumerate(bins)),
    )


def judge_confidence_table(task: TaskReport) -> Table:
    """Judges' and moderators' 0-100 confidences: median, IQR, range and accuracy in the stopping study's bins."""
    shown: list[Part[ConditionReport, ConfidenceSpread]] = parts(task.conditions, lambda c: c.judge_confidence)
    return table(
        "judge-confidence",
        "Judge and moderator confidence: accuracy by confidence bin",
        owned(CONDITION, judge_confidence_columns(shown[-1].part.bins if shown else ())),
        shown,
        "The confidence (0-100) a judge or moderator gave with its answer after each round, as in the stopping "
        "study's Table 7: bins 50-79, 80-89 and 90-100, and 0-49 below them so that none is dropped (a bin holds "
        "[low, next low), the last includes 100); accuracy k/n of the verdicts in each bin; IQR from the 25th to "
        "the 75th percentile (linear interpolation)." + counted_note(task),
    )


# the owner of a calibration's rows: (condition, source), the source "agents" or "judge"
SOURCE: tuple[Column[tuple[str, str]], ...] = (
    Column("condition", lambda o: o[0]),
    Column("source", lambda o: o[1]),
)
CALIBRATION_COLUMNS: tuple[Column[Calibration], ...] = (
    Column("answers", lambda k: str(k.n)),
    Column("mean confidence", lambda k: fixed(k.mean_confidence)),
    Column("accuracy", lambda k: fixed(k.correct / k.n if k.n else None)),
    Column("Brier", lambda k: fixed(k.brier)),
    Column("ECE", lambda k: fixed(k.ece)),
    Column("AUROC", lambda k: fixed(k.auroc)),
)
RELIABILITY_COLUMNS: tuple[Column[Bin], ...] = (
    Column("confidence", lambda b: f"{fixed(b.low, 1)}–{fixed(b.high, 1)}"),
    Column("answers", lambda b: str(b.n)),
    Column("accuracy", lambda b: ratio(b.correct, b.n)),
    Column("mean confidence", lambda b: fixed(b.mean_confidence)),
)


def _calibrations(task: TaskReport) -> list[Part[tuple[str, str], Calibration]]:
    out = []
    for c in task.conditions:
        if c.calibration is not None:
            out.append(Part((c.name, "agents"), c.calibration))
        if c.judge_calibration is not None:
            out.append(Part((c.name, "judge"), c.judge_calibration))
    return out


def calibration_tables(task: TaskReport) -> list[Table]:
    found = _calibrations(task)
    if not found:
        return []
    tables = [
        table(
            "calibration",
            "Calibration of stated confidence",
            owned(SOURCE, CALIBRATION_COLUMNS),
            found,
            "ECE over 10 equal-width bins; AUROC of confidence as a score for being right." + counted_note(task),
        ),
        table(
            "reliability",
            "Accuracy by confidence bin",
            owned(SOURCE, RELIABILITY_COLUMNS),
            (Part(k.of, b) for k in found for b in k.part.bins if b.n),
        ),
    ]
    if any(c.judge_confidence is not None for c in task.conditions):
        tables.append(judge_confidence_table(task))
    return tables
