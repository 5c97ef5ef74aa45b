"""The report's tables as plain text cells, shared by the terminal, Markdown and HTML renderers."""

from __future__ import annotations

import re
from dataclasses import dataclass

from moot.analysis.calibration import Calibration
from moot.analysis.formatting import DASH, fixed, interval, p_value, percent
from moot.analysis.report import ConditionReport, PairReport, Report, TaskReport
from moot.analysis.transitions import Transitions


@dataclass(frozen=True)
class Table:
    key: str  # a stable identifier (HTML id, tests)
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""


_NUMERIC = re.compile(r"^[\s\d.,+\-<>\[\]$/=%∞—()s]*$")


def numeric_columns(table: Table) -> list[bool]:
    """Columns whose every cell is a number, count, interval or ratio (right-aligned by the renderers)."""
    return [
        bool(table.rows) and all(_NUMERIC.match(row[i]) is not None for row in table.rows)
        for i in range(len(table.columns))
    ]


@dataclass(frozen=True)
class Section:
    task: str
    tables: tuple[Table, ...]
    notes: tuple[str, ...] = ()


ROUND_ANSWER = "A round's answer is its majority, or its judge's or moderator's where the protocol takes theirs."


def _count(n: int | None) -> str:
    return DASH if n is None else f"{n:,}"


def _cost(x: float | None) -> str:
    return DASH if x is None else f"${fixed(x, 4)}"


def _ratio(k: int, n: int) -> str:
    return f"{k}/{n} = {fixed(k / n)}" if n else DASH


def odds_ratio_text(p: PairReport) -> str:
    o = p.accuracy.odds_ratio
    return f"{fixed(o.estimate, 2)} {interval(o.low, o.high, 2)}"


def difference_text(mean: float, low: float, high: float, digits: int = 3) -> str:
    return f"{fixed(mean, digits, sign=True)} {interval(low, high, digits)}"


def overview(task: TaskReport) -> Table:
    rows = []
    for c in task.conditions:
        u = c.usage
        rows.append(
            (
                c.name,
                c.protocol,
                str(c.accuracy.n),
                str(c.accuracy.successes),
                fixed(c.accuracy.estimate),
                interval(c.accuracy.low, c.accuracy.high),
                str(c.unparsed),
                str(c.abstained),
                str(c.errors),
                fixed(c.mean_rounds, 2),
                _count(u.calls),
                _count(u.used_calls),
                _count(u.prompt_tokens + u.completion_tokens),
                _cost(u.cost),
                f"{fixed(u.latency_s, 1)} s",
            )
        )
    return Table(
        "overview",
        "Accuracy and cost",
        (
            "condition",
            "protocol",
            "n",
            "right",
            "accuracy",
            "95% Wilson CI",
            "unparsed",
            "abstained",
            "errors",
            "mean rounds",
            "calls paid",
            "calls used",
            "tokens paid",
            "cost",
            "model time",
        ),
        tuple(rows),
        "Unparsed, abstained and errored questions are scored wrong. Calls paid are the calls a condition made; "
        "calls used include round-0 calls shared with other conditions and replays. Rounds count round 0.",
    )


def rounds_table(task: TaskReport) -> Table:
    rows = []
    for c in task.conditions:
        distribution = "; ".join(f"R{r}: {n}" for r, n, _ in c.rounds)
        by_stop = "; ".join(f"R{r}: {k}/{n}" for r, n, k in c.rounds)
        reasons = "; ".join(f"{reason}: {n}" for reason, n in c.stop_reasons)
        total = str(sum(r * n for r, n, _ in c.rounds))
        rows.append((c.name, fixed(c.mean_rounds, 2), total, distribution, by_stop, reasons))
    return Table(
        "rounds",
        "Rounds used and stopping",
        (
            "condition",
            "mean rounds",
            "total rounds",
            "stopping distribution",
            "right by stopping round",
            "stop reasons",
        ),
        tuple(rows),
    )


def by_round_table(task: TaskReport) -> Table:
    rows = []
    for c in task.conditions:
        for r, n, k in c.accuracy_by_round:
            rows.append((c.name, str(r), str(n), str(k), fixed(k / n) if n else DASH))
    return Table(
        "by-round",
        "Accuracy of each round's answer",
        ("condition", "round", "questions reaching it", "right", "accuracy"),
        tuple(rows),
        ROUND_ANSWER,
    )


def pairs_table(task: TaskReport) -> Table:
    holm = any(p.holm_p is not None for p in task.pairs)
    columns = (
        ("A", "B", "n", "A only", "B only", "McNemar p")
        + (("Holm p",) if holm else ())
        + ("matched OR (95% CI)", "accuracy A - B (95% CI)", "oracle A or B")
    )
    rows = []
    for p in task.pairs:
        s = p.accuracy
        row: tuple[str, ...] = (p.a, p.b, str(s.n), str(s.a_only), str(s.b_only), p_value(s.mcnemar_p))
        row += (p_value(p.holm_p),) if holm else ()
        row += (
            odds_ratio_text(p),
            difference_text(s.difference, s.difference_ci.low, s.difference_ci.high),
            _ratio(s.oracle, s.n),
        )
        rows.append(row)
    note = (
        "A only and B only are discordant questions; exact two-sided McNemar test; the matched odds ratio is "
        "A only / B only with an exact (Clopper-Pearson) interval; the accuracy difference has a paired percentile "
        "bootstrap interval"
    )
    if holm:
        note += "; Holm's adjustment runs over every pair of this task"
    if task.cochran is not None:
        q = task.cochran
        note += (
            f". Cochran's Q over all conditions: Q = {fixed(q.statistic, 2)}, df = {q.df}, "
            f"p = {p_value(q.p)} (n = {q.n})"
        )
    return Table("pairs", "Paired accuracy comparisons", columns, tuple(rows), note + ".")


def round_difference_table(task: TaskReport) -> Table:
    rows = []
    for p in task.pairs:
        d = p.rounds
        rows.append(
            (
                p.a,
                p.b,
                str(d.n),
                str(d.sign.fewer),
                str(d.sign.tied),
                str(d.sign.more),
                difference_text(d.mean, d.ci.low, d.ci.high, 2),
                fixed(d.median, 1),
                p_value(d.sign.p),
            )
        )
    return Table(
        "round-differences",
        "Paired differences in rounds used (B - A)",
        ("A", "B", "n", "B fewer", "tied", "B more", "mean diff. (95% CI)", "median", "sign-test p"),
        tuple(rows),
        "Exact two-sided sign test, ties excluded; percentile bootstrap interval of the mean difference.",
    )


def _transition_cells(t: Transitions) -> tuple[str, ...]:
    return (str(t.n), str(t.right_right), str(t.wrong_right), str(t.right_wrong), str(t.wrong_wrong), str(t.changed))


def transitions_table(task: TaskReport) -> Table:
    rows = []
    for c in task.conditions:
        for r, t in c.first_to_final:
            rows.append((c.name, str(r), *_transition_cells(t)))
        rows.append((c.name, "total", *_transition_cells(c.first_to_final_total)))
    return Table(
        "transitions",
        "Round 0 to final answer, by stopping round",
        ("condition", "rounds used", "n", "R→R", "W→R", "R→W", "W→W", "answer changed"),
        tuple(rows),
        "R right, W wrong: round 0's answer, then the final answer. " + ROUND_ANSWER + " Questions that ended "
        "with an error are left out of this and the following tables.",
    )


def steps_table(task: TaskReport) -> Table:
    rows = []
    for c in task.conditions:
        for r, t in c.round_to_round:
            rows.append((c.name, f"{r - 1}→{r}", *_transition_cells(t)))
    return Table(
        "steps",
        "Round-to-round transitions of each round's answer",
        ("condition", "rounds", "n", "R→R", "W→R", "R→W", "W→W", "answer changed"),
        tuple(rows),
    )


def oracle_table(task: TaskReport) -> Table:
    rows = []
    for c in task.conditions:
        o = c.oracle
        rows.append(
            (
                c.name,
                str(o.n),
                _ratio(o.final, o.n),
                _ratio(o.any_round, o.n),
                _ratio(o.any_turn, o.n),
                f"{o.gap} ({fixed(o.gap / o.n) if o.n else DASH})",
            )
        )
    return Table(
        "oracle",
        "Oracle accuracy and recovery gap",
        ("condition", "n", "final", "any round's answer right", "any agent in any round right", "recovery gap"),
        tuple(rows),
        "The recovery gap counts questions on which some agent gave the right answer but the final answer is wrong.",
    )


def agents_table(task: TaskReport) -> Table:
    rows = []
    for c in task.conditions:
        for a in c.agent_changes:
            if a.steps == 0:
                continue
            rows.append((c.name, a.agent, str(a.steps), str(a.changed), str(a.wrong_to_right), str(a.right_to_wrong)))
    return Table(
        "agents",
        "Per-agent answer changes between consecutive rounds",
        ("condition", "agent", "round pairs", "changed answer", "wrong→right", "right→wrong"),
        tuple(rows),
    )


def diversity_table(task: TaskReport) -> Table | None:
    shown = [c for c in task.conditions if c.diversity is not None and c.diversity.agents > 1]
    if not shown:
        return None
    rows = []
    for c in shown:
        d = c.diversity
        assert d is not None
        rows.append(
            (
                c.name,
                str(d.n),
                str(d.agents),
                fixed(d.mean_distinct, 2),
                _ratio(d.unanimous, d.n),
                _ratio(d.majority_correct, d.n),
                fixed(d.pass_at[0]),
                fixed(d.pass_at[-1]),
            )
        )
    return Table(
        "diversity",
        "Round-0 diversity and Pass@N",
        ("condition", "n", "agents N", "distinct answers", "unanimous", "round-0 answer right", "Pass@1", "Pass@N"),
        tuple(rows),
        "Pass@k is the unbiased estimator over the N round-0 answers of each question.",
    )


def efficiency_table(task: TaskReport) -> Table | None:
    """Per condition with retention: replies forwarded against forwarding every reply, and the filter's cost."""
    shown = [c for c in task.conditions if c.efficiency is not None]
    if not shown:
        return None
    rows = []
    for c in shown:
        e = c.efficiency
        assert e is not None
        fewer = e.fewer
        versus = DASH if fewer is None else f"{percent(fewer)} fewer" if fewer >= 0 else f"{percent(-fewer)} more"
        rows.append(
            (
                c.name,
                ", ".join(e.rules),
                str(e.rounds),
                _count(e.forwarded),
                fixed(e.forwarded_per_round, 2),
                fixed(e.full_per_round, 2),
                versus,
                _ratio(e.fallbacks, e.rounds),
                _count(e.filter_calls),
                _count(e.filter_prompt_tokens),
                _count(e.filter_completion_tokens),
                fixed(e.diversity),
                e.diversity_measure or DASH,
                fixed(e.anll),
                fixed(e.perplexity, 2),
            )
        )
    comparisons = "; ".join(f"{c.name}: {c.efficiency.comparison}" for c in shown if c.efficiency is not None)
    return Table(
        "efficiency",
        "Retention and efficiency",
        (
            "condition",
            "retention",
            "debate rounds",
            "forwarded",
            "forwarded per round",
            "per round if all kept",
            "vs. forwarding every reply",
            "fallbacks",
            "filter calls",
            "filter prompt tokens",
            "filter completion tokens",
            "kept diversity",
            "diversity measure",
            "mean ANLL",
            "mean perplexity",
        ),
        tuple(rows),
        "Debate rounds are rounds 1 and later, summed over questions. Forwarded counts the previous round's "
        'replies shown to agents, summed over agents; "if all kept" is the count that forwarding every reply '
        "would give in the protocol's topology. A fallback is a filter selection that was invalid or empty, "
        "so every reply was kept. Filter calls and their tokens are also counted in the overview's calls. "
        "Kept diversity is the mean over rounds of the kept replies' mean pairwise diversity; ANLL and "
        "perplexity are averaged over the turns that record them (log-probabilities asked). " + comparisons + ".",
    )


def _calibrations(task: TaskReport) -> list[tuple[ConditionReport, str, Calibration]]:
    out = []
    for c in task.conditions:
        if c.calibration is not None:
            out.append((c, "agents", c.calibration))
        if c.judge_calibration is not None:
            out.append((c, "judge", c.judge_calibration))
    return out


def calibration_tables(task: TaskReport) -> list[Table]:
    found = _calibrations(task)
    if not found:
        return []
    summary = tuple(
        (
            c.name,
            source,
            str(k.n),
            fixed(k.mean_confidence),
            fixed(k.correct / k.n if k.n else None),
            fixed(k.brier),
            fixed(k.ece),
            fixed(k.auroc),
        )
        for c, source, k in found
    )
    bins = tuple(
        (
            c.name,
            source,
            f"{fixed(b.low, 1)}–{fixed(b.high, 1)}",
            str(b.n),
            _ratio(b.correct, b.n),
            fixed(b.mean_confidence),
        )
        for c, source, k in found
        for b in k.bins
        if b.n
    )
    return [
        Table(
            "calibration",
            "Calibration of stated confidence",
            ("condition", "source", "answers", "mean confidence", "accuracy", "Brier", "ECE", "AUROC"),
            summary,
            "ECE over 10 equal-width bins; AUROC of confidence as a score for being right.",
        ),
        Table(
            "reliability",
            "Accuracy by confidence bin",
            ("condition", "source", "confidence", "answers", "accuracy", "mean confidence"),
            bins,
        ),
    ]


def sections(report: Report) -> list[Section]:
    """Every table of the report, grouped by task."""
    out = []
    for task in report.tasks:
        tables = [overview(task), rounds_table(task), by_round_table(task)]
        if (e := efficiency_table(task)) is not None:
            tables.append(e)
        if task.pairs:
            tables += [pairs_table(task), round_difference_table(task)]
        tables += [transitions_table(task), steps_table(task), oracle_table(task), agents_table(task)]
        if (d := diversity_table(task)) is not None:
            tables.append(d)
        tables += calibration_tables(task)
        out.append(Section(task.task, tuple(t for t in tables if t.rows or t.key == "overview")))
    return out


def comparison_tables(task: str, pair: PairReport) -> list[Table]:
    """The two tables of ``moot compare``: accuracy and rounds, for one pair on one task."""
    s = pair.accuracy
    d = pair.rounds
    accuracy = Table(
        "compare-accuracy",
        f"{pair.a} vs {pair.b} on {task}: accuracy",
        (
            "n",
            f"{pair.a}",
            f"{pair.b}",
            "both right",
            "A only",
            "B only",
            "both wrong",
            "McNemar p",
            "matched OR (95% CI)",
            "accuracy A - B (95% CI)",
        ),
        (
            (
                str(s.n),
                fixed(s.accuracy_a),
                fixed(s.accuracy_b),
                str(s.both_right),
                str(s.a_only),
                str(s.b_only),
                str(s.both_wrong),
                p_value(s.mcnemar_p),
                odds_ratio_text(pair),
                difference_text(s.difference, s.difference_ci.low, s.difference_ci.high),
            ),
        ),
        "A = " + pair.a + ", B = " + pair.b + "; exact McNemar test, exact interval of the matched odds ratio, "
        "paired percentile bootstrap of the difference.",
    )
    rounds = Table(
        "compare-rounds",
        f"{pair.a} vs {pair.b} on {task}: rounds used (B - A)",
        ("n", "B fewer", "tied", "B more", "mean diff. (95% CI)", "median", "sign-test p"),
        (
            (
                str(d.n),
                str(d.sign.fewer),
                str(d.sign.tied),
                str(d.sign.more),
                difference_text(d.mean, d.ci.low, d.ci.high, 2),
                fixed(d.median, 1),
                p_value(d.sign.p),
            ),
        ),
    )
    return [accuracy, rounds]
