"""The tables that compare conditions: the paired tests of a task's pairs (accuracy, rounds, the task's
metric), reader sensitivity, ``moot compare``'s tables, and debate against vote@k at equal cost
(``moot.analysis.budget``). Declared by their columns (``moot.analysis.columns``) like ``moot.analysis.tables``,
which lists them in the report; ``comparison_tables``, the measure/value lists of ``moot compare``, are
written out row by row.
"""

from __future__ import annotations

from collections.abc import Sequence

from moot.analysis.budget import EqualBudget
from moot.analysis.budget_costs import UNITS
from moot.analysis.budget_pools import VoteAtK, VotePool
from moot.analysis.columns import Column, Part, Table, owned, parts, ratio, table
from moot.analysis.differs import ALSO_DIFFERS_NOTE, POOL_DIFFERS_NOTE, also_differs
from moot.analysis.formatting import DASH, fixed, interval, p_value
from moot.analysis.frontier import Point, task_frontier
from moot.analysis.gains import gains_table
from moot.analysis.readers import (
    READERS,
    ConditionReaders,
    PairReaders,
    ReaderVerdict,
    TaskReaders,
    readers_note,
    verdict_cells,
)
from moot.analysis.records import PairReport, TaskReport
from moot.analysis.stats import MetricComparison, Proportion, RoundDifference, SeedMcNemar


def odds_ratio_text(p: PairReport) -> str:
    o = p.accuracy.odds_ratio
    return f"{fixed(o.estimate, 2)} {interval(o.low, o.high, 2)}"


def difference_text(mean: float, low: float, high: float, digits: int = 3) -> str:
    return f"{fixed(mean, digits, sign=True)} {interval(low, high, digits)}"


# the owner of a pair's rows: conditions A and B
PAIR: tuple[Column[PairReport], ...] = (Column("A", lambda p: p.a), Column("B", lambda p: p.b))


# -- per pair of conditions ----------------------------------------------------------------------------------
def pairs_columns(repeated: bool, holm: bool) -> tuple[Column[PairReport], ...]:
    """The paired accuracy test: McNemar's on questions, or with repeated seeds the sign test on questions."""
    if repeated:
        head = ("questions", "A better", "B better", "sign-test p")
        odds = "odds A better (95% CI)"
    else:
        head = ("n", "A only", "B only", "McNemar p")
        odds = "matched OR (95% CI)"
    holm_column: tuple[Column[PairReport], ...] = (Column("Holm p", lambda p: p_value(p.holm_p)),) if holm else ()
    return (
        *PAIR,
        Column(head[0], lambda p: str(p.accuracy.n)),
        Column(head[1], lambda p: str(p.accuracy.a_only)),
        Column(head[2], lambda p: str(p.accuracy.b_only)),
        Column(head[3], lambda p: p_value(p.accuracy.mcnemar_p)),
        *holm_column,
        Column(odds, odds_ratio_text),
        Column(
            "accuracy A - B (95% CI)",
            lambda p: difference_text(
                p.accuracy.difference, p.accuracy.difference_ci.low, p.accuracy.difference_ci.high
            ),
        ),
        Column("oracle A or B", lambda p: ratio(p.accuracy.oracle, p.accuracy.oracle_n)),
        Column("also differs", lambda p: also_differs(p.differs)),
    )


def pairs_table(task: TaskReport) -> Table:
    holm = any(p.holm_p is not None for p in task.pairs)
    if task.repeated:
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
    note += ". " + ALSO_DIFFERS_NOTE
    return table("pairs", "Paired accuracy comparisons", pairs_columns(task.repeated, holm), task.pairs, note)


SEED_PAIRS_COLUMNS: tuple[Column[SeedMcNemar], ...] = (
    Column("seed", lambda t: str(t.seed)),
    Column("questions", lambda t: str(t.n)),
    Column("A only", lambda t: str(t.a_only)),
    Column("B only", lambda t: str(t.b_only)),
    Column("McNemar p", lambda t: p_value(t.p)),
)


def seed_pairs_table(task: TaskReport) -> Table:
    """With repeated seeds: each seed's exact McNemar test on its own questions."""
    return table(
        "pairs-by-seed",
        "Paired accuracy comparisons per seed",
        owned(PAIR, SEED_PAIRS_COLUMNS),
        (Part(p, t) for p in task.pairs for t in p.accuracy.per_seed),
        "Each seed on its own: discordant questions and the exact two-sided McNemar test. Shown per seed, not "
        "combined (seeds repeat the same questions); the test on questions is in the table above.",
    )


ROUND_DIFFERENCE_COLUMNS: tuple[Column[RoundDifference], ...] = (
    Column("n", lambda d: str(d.n)),
    Column("B fewer", lambda d: str(d.sign.fewer)),
    Column("tied", lambda d: str(d.sign.tied)),
    Column("B more", lambda d: str(d.sign.more)),
    Column("mean diff. (95% CI)", lambda d: difference_text(d.mean, d.ci.low, d.ci.high, 2)),
    Column("median", lambda d: fixed(d.median, 1)),
    Column("sign-test p", lambda d: p_value(d.sign.p)),
)


def round_difference_table(task: TaskReport) -> Table:
    note = "Exact two-sided sign test, ties excluded; percentile bootstrap interval of the mean difference."
    if task.repeated:
        note = f"{task.unit}; n counts questions: each question's rounds are its mean over the seeds both ran. " + note
    return table(
        "round-differences",
        "Paired differences in rounds used (B - A)",
        owned(PAIR, ROUND_DIFFERENCE_COLUMNS),
        parts(task.pairs, lambda p: p.rounds),
        note,
    )


METRIC_PAIRS_COLUMNS: tuple[Column[MetricComparison], ...] = (
    Column("questions", lambda m: str(m.n)),
    Column("A higher", lambda m: str(m.a_higher)),
    Column("tied", lambda m: str(m.tied)),
    Column("B higher", lambda m: str(m.b_higher)),
    Column("sign-test p", lambda m: p_value(m.sign_p)),
    Column("Wilcoxon p", lambda m: p_value(m.wilcoxon_p)),
    Column("mean A - B (95% CI)", lambda m: difference_text(m.difference, m.ci.low, m.ci.high)),
    Column("pairs without value", lambda m: str(m.missing)),
)


def metric_pairs_table(task: TaskReport) -> Table:
    """Paired comparisons of a task's own metric: bootstrap interval of the mean difference, sign and Wilcoxon tests."""
    return table(
        "metric-pairs",
        "Paired task-metric comparisons",
        owned(PAIR, METRIC_PAIRS_COLUMNS),
        parts(task.pairs, lambda p: p.metric),
        METRIC_PAIRS_NOTE.format(unit=task.unit, name=task.metric_name or "see the task card"),
    )


METRIC_PAIRS_NOTE = (
    "{unit}; the question is the unit. Per question, d = A - B over the seeds where both have a value (averaged "
    "over those seeds); pairs where either value is None are left out and counted. Exact two-sided sign test on "
    "the questions' d (ties excluded); Wilcoxon signed-rank test (scipy, zero differences dropped); the mean "
    "difference has a paired percentile bootstrap interval over questions. Which direction is better is the "
    "task's: {name}."
)


# -- reader sensitivity ----------------------------------------------------------------------------------------
def _post_hoc_note(readers: TaskReaders) -> str:
    """One line naming the conditions re-read only in their final vote, or not re-read at all."""
    partial = [f"{c.name} ({c.note})" for c in readers.conditions if c.note != "re-read"]
    return f" Not re-read as a whole: {'; '.join(partial)}." if partial else ""


def verdict_columns(p_name: str) -> tuple[Column[ReaderVerdict], ...]:
    """A pair under one reader: accuracy A - B, the p its verdict rests on (headed ``p_name``), the verdict."""
    return (
        Column("A - B", lambda v: verdict_cells(v)[0]),
        Column(p_name, lambda v: verdict_cells(v)[1]),
        Column("verdict", lambda v: verdict_cells(v)[2]),
    )


def _estimate(accuracy: Proportion | None) -> str:
    """An accuracy's estimate (a dash where the reader does not apply)."""
    return DASH if accuracy is None else fixed(accuracy.estimate)


def readers_accuracy_columns(names: Sequence[str]) -> tuple[Column[ConditionReaders], ...]:
    """A condition's accuracy under each reader of ``names``, and how it was re-read."""

    def reader_column(name: str) -> Column[ConditionReaders]:
        return Column(name, lambda c: _estimate(dict(c.accuracy).get(name)))

    return (
        Column("condition", lambda c: c.name),
        *(reader_column(name) for name in names),
        Column("re-read", lambda c: c.note),
    )


def readers_accuracy_table(task: str, readers: TaskReaders) -> Table:
    """Each condition's accuracy under each documented reader, re-derived from the stored replies."""
    names = [name for name, _ in readers.conditions[0].accuracy] if readers.conditions else list(READERS)
    note = (
        "Accuracy with each reader of the final round's replies, re-voted with the condition's own aggregation "
        f"and tie rule, from the stored replies (no model call); {DASH}: the reader does not apply. "
        + readers_note(task)
    )
    return table(
        "readers-accuracy",
        "Reader sensitivity: accuracy by reader",
        readers_accuracy_columns(names),
        readers.conditions,
        note,
    )


def readers_pairs_table(task: str, readers: TaskReaders) -> Table:
    """Each compared pair's difference, p and verdict under each reader, and whether the verdict is robust."""
    p_name = "Holm p" if readers.adjusted else "McNemar p"
    pair: tuple[Column[PairReaders], ...] = (Column("A", lambda p: p.a), Column("B", lambda p: p.b))
    verdict: tuple[Column[ReaderVerdict], ...] = (Column("reader", lambda v: v.reader), *verdict_columns(p_name))
    note = (
        "Per pair and reader: accuracy A - B, the exact McNemar test (a sign test on questions with repeated "
        "seeds)"
        + (", Holm-adjusted over the task's pairs under the same reader" if readers.adjusted else "")
        + ", and the verdict (the sign of A - B; significant: p < 0.05). Robust: every applicable reader gives "
        "moot's verdict; else the readers that break it are named." + _post_hoc_note(readers)
    )
    return table(
        "readers-pairs",
        "Reader sensitivity: paired comparisons",
        (*owned(pair, verdict), Column("readers", lambda r: r.of.summary)),
        (Part(p, v) for p in readers.pairs for v in p.verdicts),
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


# -- moot compare ----------------------------------------------------------------------------------------------
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
            ("also differs", also_differs(pair.differs)),
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
                ("oracle A or B (question x seed results)", ratio(s.oracle, s.oracle_n)),
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
                ("oracle A or B", ratio(s.oracle, s.oracle_n)),
            ]
            note = (
                "Exact McNemar test, exact interval of the matched odds ratio, paired percentile bootstrap of the "
                "difference."
            )
        note += " " + ALSO_DIFFERS_NOTE
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
                    *(() if pair.accuracy_applies else (("also differs", also_differs(pair.differs)),)),
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
                "signed-rank test (zero differences dropped) on the questions' d."
                + ("" if pair.accuracy_applies else " " + ALSO_DIFFERS_NOTE),
            )
        )
    if pair.gains is not None:
        tables.append(gains_table(pair.gains, short=True))
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

    def accuracy_column(header: str, name: str) -> Column[Part[PairReaders, ReaderVerdict]]:
        return Column(header, lambda r: _estimate(accuracy.get(name, {}).get(r.part.reader)))

    columns = (
        Column("reader", lambda r: r.part.reader),
        accuracy_column(f"accuracy A = {pair.a}", pair.a),
        accuracy_column(f"accuracy B = {pair.b}", pair.b),
        *(c.over(_verdict) for c in verdict_columns("McNemar p")),
    )
    summary = pair.readers.pairs[0].summary if pair.readers.pairs else DASH
    note = (
        f"The verdict is {summary}. Each reader re-reads the final round's stored replies and re-votes them with "
        "the condition's aggregation and tie rule (no model call); exact McNemar test (a sign test with repeated "
        f"seeds); significant: p < 0.05; {DASH}: the reader does not apply. "
        + readers_note(task)
        + _post_hoc_note(pair.readers)
    )
    return table(
        "compare-readers",
        f"{pair.a} vs {pair.b} on {task}: reader sensitivity",
        columns,
        (Part(p, v) for p in pair.readers.pairs for v in p.verdicts),
        note,
    )


def _verdict(row: Part[PairReaders, ReaderVerdict]) -> ReaderVerdict:
    return row.part


# -- debate against voting at equal cost (moot.analysis.budget) ---------------------------------------------
VOTE_AT_K_COLUMNS: tuple[Column[VoteAtK], ...] = (
    Column("k", lambda r: str(r.k)),
    Column("accuracy", lambda r: fixed(r.accuracy)),
    Column("tokens/q", lambda r: fixed(r.tokens, 1)),
    Column("completion/q", lambda r: fixed(r.completion, 1)),
    Column("calls/q", lambda r: fixed(r.calls, 1)),
)


def vote_at_k_table(pool: VotePool) -> Table:
    """vote@k for k = 1..K of one pool on one task."""
    seeds = f", averaged over {pool.seeds} seeds" if pool.seeds > 1 else ""
    return table(
        f"vote-at-k-{pool.task}-{pool.condition}",
        f"vote@k from the pool {pool.condition!r} ({pool.agents} round-0 answers per question), {pool.task}",
        VOTE_AT_K_COLUMNS,
        pool.rows,
        f"Accuracy: the mean over {pool.questions} questions of the exact probability that a majority vote of k "
        f"answers drawn without replacement from the question's {pool.agents} is right{seeds} (ties: "
        f"{pool.tie_rule}; unparsed answers do not vote). Tokens (prompt + completion, counted alike), completion "
        f"tokens and calls: k/{pool.agents} of the pool's.",
    )


def _unmatched(r: EqualBudget, text: str) -> str:
    """A cell of an equal-budget row: ``text``, or a dash where no pool matches the debate."""
    return DASH if r.unmatched else text


def equal_budget_columns(measure: str, readers: bool = False) -> tuple[Column[EqualBudget], ...]:
    """A debate against the vote@k of the same budget from the pool sampled with its own round-0 request, its
    cost in ``measure`` per question; ``readers``: with the verdict under every reader (``EqualBudget.readers``)."""
    return (
        Column("task", lambda r: r.task),
        Column("debate", lambda r: r.debate),
        Column(f"{measure}/q", lambda r: fixed(r.debate_cost, 4 if measure == "cost" else 1)),
        Column("pool", lambda r: "no matched pool" if r.unmatched else r.pool),
        Column(
            "vote@k (cost)",
            lambda r: _unmatched(
                r,
                f"{r.k} ({fixed(r.vote_cost, 4 if measure == 'cost' else 1)})"
                + (" pool too small" if r.pool_too_small else ""),
            ),
        ),
        Column("questions", lambda r: _unmatched(r, str(r.n))),
        Column("debate", lambda r: fixed(r.debate_accuracy)),
        Column("vote@k", lambda r: fixed(r.vote_accuracy)),
        Column("difference", lambda r: _unmatched(r, difference_text(r.difference, r.ci.low, r.ci.high))),
        Column("p", lambda r: _unmatched(r, p_value(r.p) + ("" if r.exact else " (MC)"))),
        Column("Holm p", lambda r: p_value(r.holm_p)),
        *((Column("readers", lambda r: r.readers or DASH),) if readers else ()),
        Column("also differs", lambda r: _unmatched(r, also_differs(r.differs))),
    )


def equal_budget_rows_table(rows: Sequence[EqualBudget], key: str = "equal-budget") -> Table:
    """Each debate condition against the vote@k of the same budget: mean difference, interval, tests."""
    measure = rows[0].measure if rows else "tokens"
    small = any(r.pool_too_small for r in rows)
    unmatched = any(r.unmatched for r in rows)
    readers = any(r.readers for r in rows)
    return table(
        key,
        f"Debate against vote@k at equal {UNITS.get(measure, measure)}",
        equal_budget_columns(measure, readers),
        rows,
        f"Budget unit: {UNITS.get(measure, measure)} per question. pool: the condition sampled with the debate's "
        f"own round-0 request (model, messages, sampling), so that both start from the same prompt (or the one "
        "--pool names: also differs says what else differs then). vote@k: the "
        f"smallest k whose {measure} per question are at least the debate's. Difference: debate - "
        "vote@k per question (debate correctness averaged over seeds; vote@k its exact probability of being right), "
        "mean with paired bootstrap 95% interval over questions; p: two-sided sign-flip permutation test over "
        "questions (exact up to 20 questions, else 10,000 seeded flips, marked MC); Holm over the table."
        + (" Where the pool is smaller than the debate's budget, k = K." if small else "")
        + (
            " No matched pool: no pool was sampled with that debate's round-0 request, so no vote@k is set against "
            "it (another template's pool would measure the template)."
            if unmatched
            else ""
        )
        + (
            " Readers: the row re-derived with the pool's replies and the debate's final answers read by the paper's "
            "parser and the strict reader (Holm over each reader's table); robust where every reader that reads both "
            "agrees in direction and significance."
            if readers
            else ""
        )
        + " "
        + POOL_DIFFERS_NOTE,
    )


def _on(yes: bool) -> str:
    return "yes" if yes else "no"


FRONTIER_COLUMNS: tuple[Column[Point], ...] = (
    Column("point", lambda p: p.name),
    Column("tokens/q", lambda p: fixed(p.tokens, 1)),
    Column("calls/q", lambda p: fixed(p.calls, 1)),
    Column("accuracy", lambda p: fixed(p.accuracy)),
    Column("95% CI", lambda p: DASH if p.k is not None else interval(p.low, p.high)),
    Column("on the frontier (tokens)", lambda p: _on(p.on_tokens_frontier)),
    Column("on the frontier (calls)", lambda p: _on(p.on_calls_frontier)),
)


def frontier_table(task: TaskReport) -> Table:
    """The accuracy-cost frontier's points of one task (``moot.analysis.frontier``), as the plot shows them."""
    return table(
        f"frontier-{task.task}",
        f"Accuracy-cost frontier, {task.task}",
        FRONTIER_COLUMNS,
        task_frontier(task),
        "Every condition and the pool's vote@k; a point is on a frontier when no other is more accurate at a "
        "cost per question (tokens used, or calls) no higher, nor as accurate for less. A vote@k accuracy is an "
        "exact mean over the "
        "pool's questions (no interval). `moot report --figures DIR` writes these points as frontier.csv.",
    )
