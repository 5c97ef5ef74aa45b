"""The report's tables as plain text cells, shared by the terminal, Markdown and HTML renderers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from moot.analysis.budget import EqualBudget, VotePool
from moot.analysis.calibration import Calibration, bin_label
from moot.analysis.formatting import DASH, fixed, interval, p_value, percent
from moot.analysis.readers import READERS, TaskReaders, readers_note, verdict_cells
from moot.analysis.report import ConditionReport, PairReport, Report, TaskReport
from moot.analysis.stats import SeedSpread
from moot.analysis.transitions import Transitions


@dataclass(frozen=True)
class Table:
    key: str  # a stable identifier (HTML id, tests)
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""


_NUMERIC = re.compile(r"^[\s\d.,+\-<>\[\]$/=%∞—()s±x]*$")


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
        return "; ".join(f"s{v.seed}: {_ratio(round(v.total), v.n)}" for v in s.per_seed)
    return "; ".join(f"s{v.seed}: {fixed(v.mean, digits)}" for v in s.per_seed)


def counted_note(task: TaskReport) -> str:
    """With repeated seeds, descriptive tables count question x seed results and say so."""
    return f" Counted over question x seed results ({task.unit})." if task.repeated else ""


def _with(note: str, extra: str) -> str:
    return (note + extra).strip()


def odds_ratio_text(p: PairReport) -> str:
    o = p.accuracy.odds_ratio
    return f"{fixed(o.estimate, 2)} {interval(o.low, o.high, 2)}"


def difference_text(mean: float, low: float, high: float, digits: int = 3) -> str:
    return f"{fixed(mean, digits, sign=True)} {interval(low, high, digits)}"


def overview(task: TaskReport) -> Table:
    rows = []
    scored = task.accuracy_applies
    for c in task.conditions:
        u = c.usage
        seeds = c.seed_accuracy.seeds if c.seed_accuracy is not None else 1
        n = f"{c.questions} x {seeds}" if task.repeated else str(c.accuracy.n)
        rows.append(
            (
                c.name,
                c.protocol,
                n,
                str(c.accuracy.successes) if scored else DASH,
                fixed(c.accuracy.estimate) if scored else DASH,
                interval(c.accuracy.low, c.accuracy.high) if scored else DASH,
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
    note = f"{task.unit}. "
    if task.repeated:
        note += (
            "n is questions x seeds and right counts question x seed results; the accuracy is the mean over "
            "questions of each question's accuracy over its seeds, and its interval a cluster percentile "
            "bootstrap over questions (a question's seeds resampled together), never Wilson on questions x seeds. "
        )
    if not scored:
        note += f"Task {task.task} is scored by its own metric ({task.metric_name}), not by accuracy. "
    return Table(
        "overview",
        "Accuracy and cost",
        (
            "condition",
            "protocol",
            "n",
            "right",
            "accuracy",
            "95% CI (questions)" if task.repeated else "95% Wilson CI",
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
        note + "Unparsed, abstained and errored questions are scored wrong. Calls paid are the calls a condition "
        "made; calls used are every call its debates needed (a diverse round 0's whole candidate pool included), "
        "round-0 calls shared with other conditions and replays too. Rounds count round 0.",
    )


def seeds_table(task: TaskReport) -> Table:
    """With repeated seeds: accuracy per seed, mean ± std over seeds, and the question-level estimate."""
    rows = []
    for c in task.conditions:
        s = c.seed_accuracy
        if s is None:
            continue
        rows.append(
            (
                c.name,
                str(c.questions),
                str(s.seeds),
                per_seed_text(s),
                spread_text(s),
                fixed(c.accuracy.estimate),
                interval(c.accuracy.low, c.accuracy.high),
            )
        )
    return Table(
        "seeds",
        "Accuracy per seed and over seeds",
        ("condition", "questions", "seeds", "per seed", "mean ± std over seeds", "accuracy (questions)", "95% CI"),
        tuple(rows),
        f"{task.unit}. Per seed: right answers of that seed's questions. Mean ± std: the per-seed accuracies' mean "
        "and sample standard deviation (ddof = 1) over seeds, as DAR reports. Accuracy (questions): the mean over "
        "questions of each question's accuracy over its seeds, with a cluster percentile bootstrap interval "
        "(questions resampled with all their seeds).",
    )


def best_round_table(task: TaskReport) -> Table:
    """DAR's reporting for peer-style debates: final and best-round accuracy, mean ± std over seeds."""
    rows = []
    for c in task.conditions:
        b = c.best_round
        if b is None:
            continue
        rows.append(
            (
                c.name,
                str(b.final.seeds),
                spread_text(b.final),
                "; ".join(f"R{r}: {fixed(s.mean)}" for r, s in b.by_round),
                str(b.best_round),
                spread_text(b.best),
                per_seed_text(b.best, counts=False),
            )
        )
    return Table(
        "best-round",
        "DAR-style: best round, mean ± std over seeds",
        (
            "condition",
            "seeds",
            "final accuracy",
            "majority-vote accuracy by debate round (mean over seeds)",
            "best round",
            "best-round accuracy",
            "best round per seed",
        ),
        tuple(rows),
        "Peer-style debates (agents voting each round) with a debate round. Each debate round r >= 1 is scored by "
        "its majority vote (a question that stopped earlier keeps its last vote; an errored one counts wrong); the "
        "best round maximises the mean over seeds, one round for every seed. Best-over-rounds, as DAR's paper "
        "reports, is an optimistic selection made after seeing the results; the final accuracy is not selected. "
        "± is the sample standard deviation over seeds (ddof = 1), shown with two or more seeds.",
    )


def replies_table(task: TaskReport) -> Table:
    """The agents' replies per condition: unparsed, truncated by the token limit, confidence missing."""
    rows = []
    for c in task.conditions:
        r = c.replies
        if r is None:
            continue
        missing = DASH if r.confidence_missing is None else f"{r.confidence_missing:,} of {r.replies:,}"
        rulings = f"{r.rulings_unreadable:,} of {r.rulings:,}" if r.rulings else DASH
        rows.append((c.name, f"{r.replies:,}", f"{r.unparsed:,}", f"{r.truncated:,}", missing, rulings))
    return Table(
        "replies",
        "Agents' replies: unparsed, truncated, confidence missing; unreadable rulings",
        ("condition", "replies", "unparsed", "truncated", "confidence missing", "rulings unreadable"),
        tuple(rows),
        "Replies of every agent in every round. Truncated: cut off by the token limit (finish reason "
        '"length"); its answer may be incomplete. Confidence missing: no readable confidence where the '
        "protocol asks for one (— where it does not); the confidence-weighted vote gives it weight 0. Rulings "
        "unreadable: judges' and moderators' verdicts (after their repair call) that no reader of JSON-like "
        "rulings reads (strict JSON, JSON with LaTeX backslashes, Python literals); such a ruling has no "
        "answer and no confidence (— where the protocol has no judge).",
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
        counted_note(task).strip(),
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
        ROUND_ANSWER + counted_note(task),
    )


def pairs_table(task: TaskReport) -> Table:
    holm = any(p.holm_p is not None for p in task.pairs)
    repeated = task.repeated
    if repeated:
        head: tuple[str, ...] = ("A", "B", "questions", "A better", "B better", "sign-test p")
        ratio = "odds A better (95% CI)"
    else:
        head = ("A", "B", "n", "A only", "B only", "McNemar p")
        ratio = "matched OR (95% CI)"
    columns = head + (("Holm p",) if holm else ()) + (ratio, "accuracy A - B (95% CI)", "oracle A or B")
    rows = []
    for p in task.pairs:
        s = p.accuracy
        row: tuple[str, ...] = (p.a, p.b, str(s.n), str(s.a_only), str(s.b_only), p_value(s.mcnemar_p))
        row += (p_value(p.holm_p),) if holm else ()
        row += (
            odds_ratio_text(p),
            difference_text(s.difference, s.difference_ci.low, s.difference_ci.high),
            _ratio(s.oracle, s.oracle_n),
        )
        rows.append(row)
    if repeated:
        note = (
            f"{task.unit}; the question is the unit. Per question, each condition's accuracy over the seeds both "
            "ran; A better and B better count the questions on which A's or B's is higher (ties left out), tested "
            "by the exact two-sided sign test (McNemar's test when each question has one seed); the odds ratio is "
            "A better / B better with an exact (Clopper-Pearson) interval; the accuracy difference is the mean "
            "over questions with a cluster percentile bootstrap interval (questions resampled with all their "
            "seeds); the oracle counts question x seed results right under A or B. Each seed's own McNemar test "
            "is in the next table"
        )
    else:
        note = (
            "A only and B only are discordant questions; exact two-sided McNemar test; the matched odds ratio is "
            "A only / B only with an exact (Clopper-Pearson) interval; the accuracy difference has a paired "
            "percentile bootstrap interval"
        )
    if holm:
        note += "; Holm's adjustment runs over every pair of this task"
    if task.cochran is not None:
        q = task.cochran
        if q.test == "Friedman":
            note += (
                f". Friedman's test over all conditions on each question's accuracy over its seeds (Cochran's Q "
                f"with one seed): chi-square = {fixed(q.statistic, 2)}, df = {q.df}, p = {p_value(q.p)} "
                f"(n = {q.n} questions)"
            )
        else:
            note += (
                f". Cochran's Q over all conditions: Q = {fixed(q.statistic, 2)}, df = {q.df}, "
                f"p = {p_value(q.p)} (n = {q.n})"
            )
    return Table("pairs", "Paired accuracy comparisons", columns, tuple(rows), note + ".")


def seed_pairs_table(task: TaskReport) -> Table:
    """With repeated seeds: each seed's exact McNemar test on its own questions."""
    rows = tuple(
        (p.a, p.b, str(t.seed), str(t.n), str(t.a_only), str(t.b_only), p_value(t.p))
        for p in task.pairs
        for t in p.accuracy.per_seed
    )
    return Table(
        "pairs-by-seed",
        "Paired accuracy comparisons per seed",
        ("A", "B", "seed", "questions", "A only", "B only", "McNemar p"),
        rows,
        "Each seed on its own: discordant questions and the exact two-sided McNemar test. Shown per seed, not "
        "combined (seeds repeat the same questions); the test on questions is in the table above.",
    )


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
    note = "Exact two-sided sign test, ties excluded; percentile bootstrap interval of the mean difference."
    if task.repeated:
        note = f"{task.unit}; n counts questions: each question's rounds are its mean over the seeds both ran. " + note
    return Table(
        "round-differences",
        "Paired differences in rounds used (B - A)",
        ("A", "B", "n", "B fewer", "tied", "B more", "mean diff. (95% CI)", "median", "sign-test p"),
        tuple(rows),
        note,
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
        "with an error are left out of this and the following tables." + counted_note(task),
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
        counted_note(task).strip(),
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
        "The recovery gap counts questions on which some agent gave the right answer but the final answer is wrong."
        + counted_note(task),
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
        counted_note(task).strip(),
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
        "Pass@k is the unbiased estimator over the N round-0 answers of each question." + counted_note(task),
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
        "perplexity are averaged over the turns that record them (log-probabilities asked). "
        + comparisons
        + "."
        + counted_note(task),
    )


def metric_table(task: TaskReport) -> Table:
    """A task's own metric per condition: mean over questions with a question-level bootstrap interval."""
    rows = []
    for c in task.conditions:
        m = c.metric
        if m is None:
            continue
        rows.append(
            (
                c.name,
                str(m.questions),
                str(m.results),
                str(m.missing),
                fixed(m.mean),
                interval(m.ci.low, m.ci.high),
                per_seed_text(m.seeds, counts=False) if task.repeated else DASH,
                spread_text(m.seeds) if task.repeated else DASH,
            )
        )
    name = task.metric_name or "the task's own score"
    return Table(
        "metric",
        f"Task metric: {name}",
        ("condition", "questions", "results scored", "no value", "mean", "95% CI", "per seed", "mean ± std over seeds"),
        tuple(rows),
        f"{task.unit}. The task's own score of each result ({name}). Results whose value is None (the task could "
        "not score them) are left out and counted under no value. A question's value is its mean over its seeds; "
        "the mean is over questions, with a percentile bootstrap interval resampling questions (all their seeds "
        "together). Per seed: the mean over that seed's questions; ± is the sample standard deviation over seeds "
        "(ddof = 1).",
    )


def metric_pairs_table(task: TaskReport) -> Table:
    """Paired comparisons of a task's own metric: bootstrap interval of the mean difference, sign and Wilcoxon tests."""
    rows = []
    for p in task.pairs:
        m = p.metric
        if m is None:
            continue
        rows.append(
            (
                p.a,
                p.b,
                str(m.n),
                str(m.a_higher),
                str(m.tied),
                str(m.b_higher),
                p_value(m.sign_p),
                p_value(m.wilcoxon_p),
                difference_text(m.difference, m.ci.low, m.ci.high),
                str(m.missing),
            )
        )
    return Table(
        "metric-pairs",
        "Paired task-metric comparisons",
        (
            "A",
            "B",
            "questions",
            "A higher",
            "tied",
            "B higher",
            "sign-test p",
            "Wilcoxon p",
            "mean A - B (95% CI)",
            "pairs without value",
        ),
        tuple(rows),
        METRIC_PAIRS_NOTE.format(unit=task.unit, name=task.metric_name or "see the task card"),
    )


METRIC_PAIRS_NOTE = (
    "{unit}; the question is the unit. Per question, d = A - B over the seeds where both have a value (averaged "
    "over those seeds); pairs where either value is None are left out and counted. Exact two-sided sign test on "
    "the questions' d (ties excluded); Wilcoxon signed-rank test (scipy, zero differences dropped); the mean "
    "difference has a paired percentile bootstrap interval over questions. Which direction is better is the "
    "task's: {name}."
)


def judge_confidence_table(task: TaskReport) -> Table:
    """Judges' and moderators' 0-100 confidences: median, IQR, range and accuracy in the stopping study's bins."""
    rows = []
    columns: tuple[str, ...] = ()
    for c in task.conditions:
        k = c.judge_confidence
        if k is None:
            continue
        columns = tuple(bin_label(b) for b in k.bins)
        rows.append(
            (
                c.name,
                str(k.n),
                fixed(k.median, 1),
                f"{fixed(k.q1, 1)}–{fixed(k.q3, 1)}",
                f"{fixed(k.low, 1)}–{fixed(k.high, 1)}",
                *(_ratio(b.correct, b.n) for b in k.bins),
            )
        )
    return Table(
        "judge-confidence",
        "Judge and moderator confidence: accuracy by confidence bin",
        ("condition", "verdicts", "median", "IQR", "range", *(f"accuracy, {c}" for c in columns)),
        tuple(rows),
        "The confidence (0-100) a judge or moderator gave with its answer after each round, as in the stopping "
        "study's Table 7: bins 50-79, 80-89 and 90-100, and 0-49 below them so that none is dropped (a bin holds "
        "[low, next low), the last includes 100); accuracy k/n of the verdicts in each bin; IQR from the 25th to "
        "the 75th percentile (linear interpolation)." + counted_note(task),
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
    tables = [
        Table(
            "calibration",
            "Calibration of stated confidence",
            ("condition", "source", "answers", "mean confidence", "accuracy", "Brier", "ECE", "AUROC"),
            summary,
            "ECE over 10 equal-width bins; AUROC of confidence as a score for being right." + counted_note(task),
        ),
        Table(
            "reliability",
            "Accuracy by confidence bin",
            ("condition", "source", "confidence", "answers", "accuracy", "mean confidence"),
            bins,
        ),
    ]
    if any(c.judge_confidence is not None for c in task.conditions):
        tables.append(judge_confidence_table(task))
    return tables


def _post_hoc_note(readers: TaskReaders) -> str:
    """One line naming the conditions re-read only in their final vote, or not re-read at all."""
    partial = [f"{c.name} ({c.note})" for c in readers.conditions if c.note != "re-read"]
    return f" Not re-read as a whole: {'; '.join(partial)}." if partial else ""


def readers_accuracy_table(task: str, readers: TaskReaders) -> Table:
    """Each condition's accuracy under each documented reader, re-derived from the stored replies."""
    names = [name for name, _ in readers.conditions[0].accuracy] if readers.conditions else list(READERS)
    rows = []
    for c in readers.conditions:
        cells = tuple(DASH if a is None else fixed(a.estimate) for _, a in c.accuracy)
        rows.append((c.name, *cells, c.note))
    note = (
        "Accuracy with each reader of the final round's replies, re-voted with the condition's own aggregation "
        f"and tie rule, from the stored replies (no model call); {DASH}: the reader does not apply. "
        + readers_note(task)
    )
    return Table(
        "readers-accuracy",
        "Reader sensitivity: accuracy by reader",
        ("condition", *names, "re-read"),
        tuple(rows),
        note,
    )


def readers_pairs_table(task: str, readers: TaskReaders) -> Table:
    """Each compared pair's difference, p and verdict under each reader, and whether the verdict is robust."""
    rows = []
    for pair in readers.pairs:
        for v in pair.verdicts:
            rows.append((pair.a, pair.b, v.reader, *verdict_cells(v), pair.summary))
    p_name = "Holm p" if readers.adjusted else "McNemar p"
    note = (
        "Per pair and reader: accuracy A - B, the exact McNemar test (a sign test on questions with repeated "
        "seeds)"
        + (", Holm-adjusted over the task's pairs under the same reader" if readers.adjusted else "")
        + ", and the verdict (the sign of A - B; significant: p < 0.05). Robust: every applicable reader gives "
        "moot's verdict; else the readers that break it are named." + _post_hoc_note(readers)
    )
    return Table(
        "readers-pairs",
        "Reader sensitivity: paired comparisons",
        ("A", "B", "reader", "A - B", p_name, "verdict", "readers"),
        tuple(rows),
        note,
    )


def reader_tables(task: TaskReport) -> list[Table]:
    """The reader-sensitivity tables of a task (none where accuracy does not apply)."""
    if task.readers is None or not task.accuracy_applies:
        return []
    tables = [readers_accuracy_table(task.task, task.readers)]
    if task.readers.pairs:
        tables.append(readers_pairs_table(task.task, task.readers))
    return tables


def show_best_round(task: TaskReport) -> bool:
    """The DAR-style table adds to the overview once a peer-style debate has two or more debate rounds (a
    best round to choose) or the run has several seeds (a spread over seeds)."""
    found = [c.best_round for c in task.conditions if c.best_round is not None]
    return bool(found) and (task.repeated or any(b.debate_rounds >= 2 for b in found))


def sections(report: Report) -> list[Section]:
    """Every table of the report, grouped by task."""
    out = []
    for task in report.tasks:
        tables = [overview(task)]
        if task.repeated and task.accuracy_applies:
            tables.append(seeds_table(task))
        if task.accuracy_applies and show_best_round(task):
            tables.append(best_round_table(task))
        if task.scored:
            tables.append(metric_table(task))
        tables += [replies_table(task), rounds_table(task)]
        if task.accuracy_applies:
            tables.append(by_round_table(task))
        if (e := efficiency_table(task)) is not None:
            tables.append(e)
        if task.pairs and task.scored:
            tables.append(metric_pairs_table(task))
        if task.pairs and task.accuracy_applies:
            tables.append(pairs_table(task))
            if task.repeated:
                tables.append(seed_pairs_table(task))
        if task.accuracy_applies and task.vote_pool is not None:
            tables.append(vote_at_k_table(task.vote_pool))
            if task.equal_budget:
                tables.append(equal_budget_rows_table(task.equal_budget))
        tables += reader_tables(task)
        if task.pairs:
            tables.append(round_difference_table(task))
        if task.accuracy_applies:  # right and wrong answers: none where a task is scored by its metric alone
            tables += [transitions_table(task), steps_table(task), oracle_table(task), agents_table(task)]
            if (d := diversity_table(task)) is not None:
                tables.append(d)
            tables += calibration_tables(task)
        out.append(Section(task.task, tuple(t for t in tables if t.rows or t.key == "overview")))
    return out


def comparison_tables(task: str, pair: PairReport) -> list[Table]:
    """The tables of ``moot compare`` for one pair on one task: accuracy (unless the task is scored only by
    its metric), the task metric (where results carry one) and rounds. Each is a two-column list of
    measures, so that it reads in 80 columns."""
    s = pair.accuracy
    d = pair.rounds
    repeated = s.repeats > 1 or d.repeats > 1
    columns = ("measure", "value")
    tables = []
    if pair.accuracy_applies:
        rows: list[tuple[str, str]] = [
            ("unit", pair.unit),
            (f"accuracy A = {pair.a}", fixed(s.accuracy_a)),
            (f"accuracy B = {pair.b}", fixed(s.accuracy_b)),
            ("accuracy A - B (95% CI)", difference_text(s.difference, s.difference_ci.low, s.difference_ci.high)),
        ]
        if repeated:
            rows += [
                ("questions: A better / B better", f"{s.a_only} / {s.b_only}"),
                (
                    "questions: tied (all right / all wrong / mixed)",
                    f"{s.both_right} / {s.both_wrong} / {s.mixed_ties}",
                ),
                ("sign-test p (questions; McNemar with one seed)", p_value(s.mcnemar_p)),
                ("odds A better (95% CI)", odds_ratio_text(pair)),
                ("oracle A or B (question x seed results)", _ratio(s.oracle, s.oracle_n)),
            ]
            rows += [
                (f"seed {t.seed}: A only / B only, McNemar p", f"{t.a_only} / {t.b_only}, p = {p_value(t.p)}")
                for t in s.per_seed
            ]
            note = (
                "The question is the unit: per question, each condition's accuracy over the seeds both ran; exact "
                "sign test on the questions where they differ; cluster percentile bootstrap of the difference "
                "(questions resampled with all their seeds). Each seed's McNemar test is shown on its own."
            )
        else:
            rows += [
                (
                    "both right / A only / B only / both wrong",
                    f"{s.both_right} / {s.a_only} / {s.b_only} / {s.both_wrong}",
                ),
                ("exact McNemar p", p_value(s.mcnemar_p)),
                ("matched OR (95% CI)", odds_ratio_text(pair)),
                ("oracle A or B", _ratio(s.oracle, s.oracle_n)),
            ]
            note = (
                "Exact McNemar test, exact interval of the matched odds ratio, paired percentile bootstrap of the "
                "difference."
            )
        tables.append(
            Table("compare-accuracy", f"{pair.a} vs {pair.b} on {task}: accuracy", columns, tuple(rows), note)
        )
    m = pair.metric
    if m is not None:
        name = pair.metric_name or "the task's own score"
        tables.append(
            Table(
                "compare-metric",
                f"{pair.a} vs {pair.b} on {task}: task metric",
                columns,
                (
                    ("metric", name),
                    ("unit", pair.unit),
                    ("questions with a paired value", str(m.n)),
                    ("pairs without a value (left out)", str(m.missing)),
                    (f"mean A = {pair.a}", fixed(m.mean_a)),
                    (f"mean B = {pair.b}", fixed(m.mean_b)),
                    ("mean A - B (95% CI)", difference_text(m.difference, m.ci.low, m.ci.high)),
                    ("questions: A higher / tied / B higher", f"{m.a_higher} / {m.tied} / {m.b_higher}"),
                    ("sign-test p", p_value(m.sign_p)),
                    ("Wilcoxon signed-rank p", p_value(m.wilcoxon_p)),
                ),
                "The question is the unit: d = A - B per question, averaged over the seeds where both have a "
                "value; paired percentile bootstrap over questions; exact sign test (ties excluded) and Wilcoxon "
                "signed-rank test (zero differences dropped) on the questions' d.",
            )
        )
    if pair.readers is not None:
        tables.append(compare_readers_table(task, pair))
    tables.append(
        Table(
            "compare-rounds",
            f"{pair.a} vs {pair.b} on {task}: rounds used (B - A)",
            columns,
            (
                ("questions" if repeated else "n", str(d.n)),
                ("B fewer / tied / B more", f"{d.sign.fewer} / {d.sign.tied} / {d.sign.more}"),
                ("mean diff. (95% CI)", difference_text(d.mean, d.ci.low, d.ci.high, 2)),
                ("median", fixed(d.median, 1)),
                ("sign-test p", p_value(d.sign.p)),
            ),
            "Exact two-sided sign test, ties excluded; percentile bootstrap interval of the mean difference"
            + ("; each question's rounds are its mean over the seeds both ran." if repeated else "."),
        )
    )
    return tables


def compare_readers_table(task: str, pair: PairReport) -> Table:
    """``moot compare``: the pair under each documented reader (accuracy of A and B, difference, p, verdict)."""
    assert pair.readers is not None
    accuracy = {c.name: dict(c.accuracy) for c in pair.readers.conditions}
    rows = []
    for p in pair.readers.pairs:
        for v in p.verdicts:
            a, b = accuracy.get(p.a, {}).get(v.reader), accuracy.get(p.b, {}).get(v.reader)
            rows.append(
                (
                    v.reader,
                    DASH if a is None else fixed(a.estimate),
                    DASH if b is None else fixed(b.estimate),
                    *verdict_cells(v),
                )
            )
    summary = pair.readers.pairs[0].summary if pair.readers.pairs else DASH
    note = (
        f"The verdict is {summary}. Each reader re-reads the final round's stored replies and re-votes them with "
        "the condition's aggregation and tie rule (no model call); exact McNemar test (a sign test with repeated "
        f"seeds); significant: p < 0.05; {DASH}: the reader does not apply. "
        + readers_note(task)
        + _post_hoc_note(pair.readers)
    )
    return Table(
        "compare-readers",
        f"{pair.a} vs {pair.b} on {task}: reader sensitivity",
        ("reader", f"accuracy A = {pair.a}", f"accuracy B = {pair.b}", "A - B", "McNemar p", "verdict"),
        tuple(rows),
        note,
    )


# -- debate against voting at equal cost (moot.analysis.budget) ---------------------------------------------
def vote_at_k_table(pool: VotePool) -> Table:
    """vote@k for k = 1..K of one pool on one task."""
    rows = tuple((str(r.k), fixed(r.accuracy), fixed(r.tokens, 1), fixed(r.calls, 1)) for r in pool.rows)
    seeds = f", averaged over {pool.seeds} seeds" if pool.seeds > 1 else ""
    return Table(
        f"vote-at-k-{pool.task}",
        f"vote@k from the pool {pool.condition!r} ({pool.agents} round-0 answers per question), {pool.task}",
        ("k", "accuracy", "tokens/q", "calls/q"),
        rows,
        f"Accuracy: the mean over {pool.questions} questions of the exact probability that a majority vote of k "
        f"answers drawn without replacement from the question's {pool.agents} is right{seeds} (ties: "
        f"{pool.tie_rule}; unparsed answers do not vote). Tokens and calls: k/{pool.agents} of the pool's.",
    )


def equal_budget_rows_table(rows: Sequence[EqualBudget], key: str = "equal-budget") -> Table:
    """Each debate condition against the vote@k of the same budget: mean difference, interval, tests."""
    cells = tuple(
        (
            r.task,
            r.debate,
            f"{fixed(r.debate_cost, 1)}",
            f"{r.k} ({fixed(r.vote_cost, 1)})" + (" pool too small" if r.pool_too_small else ""),
            str(r.n),
            fixed(r.debate_accuracy),
            fixed(r.vote_accuracy),
            difference_text(r.difference, r.ci.low, r.ci.high),
            p_value(r.p) + ("" if r.exact else " (MC)"),
            p_value(r.holm_p),
        )
        for r in rows
    )
    measure = rows[0].measure if rows else "tokens"
    pool = rows[0].pool if rows else ""
    small = any(r.pool_too_small for r in rows)
    return Table(
        key,
        f"Debate against vote@k of {pool!r} at equal {measure}",
        (
            "task",
            "debate",
            f"{measure}/q",
            "vote@k (cost)",
            "questions",
            "debate",
            "vote@k",
            "difference",
            "p",
            "Holm p",
        ),
        cells,
        f"vote@k: the smallest k whose {measure} per question are at least the debate's. Difference: debate - "
        "vote@k per question (debate correctness averaged over seeds; vote@k its exact probability of being right), "
        "mean with paired bootstrap 95% interval over questions; p: two-sided sign-flip permutation test over "
        "questions (exact up to 20 questions, else 10,000 seeded flips, marked MC); Holm over the table."
        + (" Where the pool is smaller than the debate's budget, k = K." if small else ""),
    )
