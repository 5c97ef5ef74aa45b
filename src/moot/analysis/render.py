"""The report as terminal tables (rich) and as Markdown."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from moot.analysis.formatting import fixed
from moot.analysis.records import PairReport, Report
from moot.analysis.report_sections import sections
from moot.analysis.tables import Table, comparison_tables, numeric_columns
from moot.cli_output import fit_table, plural


def header_lines(report: Report) -> list[str]:
    return [*_run_lines(report), *_model_lines(report)]


def _model_lines(report: Report) -> list[str]:
    """The model that answered each configured name, and a warning where one name was answered by several
    (a server that changed its model between sessions of a run made before moot refused such a resume)."""
    by_name: dict[str, list[tuple[str, int]]] = {}
    for name, model, calls in report.models:
        by_name.setdefault(name, []).append((model, calls))
    lines = []
    for name, models in by_name.items():
        shown = ", ".join(f"{model} ({plural(calls, 'call')})" for model, calls in models)
        if len(models) == 1:
            lines.append(f"model {name}: {shown}")
        else:
            lines.append(f"warning: {name} was answered by {len(models)} models: {shown}")
    lines += [f"engine {name}: {engine}" for name, engine in report.engines]
    return lines


def _run_lines(report: Report) -> list[str]:
    return [
        f"run {report.name} ({report.path}), status {report.status or 'unknown'}, moot {report.moot_version}",
        f"wall time of its sessions {fixed(report.wall_s, 1)} s; "
        f"bootstrap: {report.resamples:,} resamples, seed {report.seed}",
        *(
            [
                f"final answers read by the {report.reader!r} reader (moot's where it does not apply); rounds, "
                "transitions and oracles keep moot's reading"
            ]
            if report.reader != "moot"
            else []
        ),
    ]


def rich_table(table: Table) -> RichTable:
    out = RichTable(
        title=escape(table.title),
        title_justify="left",
        caption=escape(table.note) or None,
        caption_justify="left",
        min_width=len(table.title),  # a narrow table keeps its title on one line
    )
    for column, numeric in zip(table.columns, numeric_columns(table)):
        out.add_column(escape(column), justify="right" if numeric else "left", overflow="fold")
    for row in table.rows:
        out.add_row(*(escape(cell) for cell in row))
    return out


# The columns a narrow terminal leaves out first, by table key (Markdown and HTML keep every column).
SECONDARY = {
    "overview": ("protocol", "abstained", "calls used", "tokens paid", "model time", "cost", "mean rounds", "right"),
    "equal-budget": ("task", "questions", "Holm p"),
    "gains": ("questions", "up / down", "p"),
    "pairs": ("oracle A or B", "Holm p", "odds A better (95% CI)", "matched OR (95% CI)"),
    "efficiency": (
        "filter completion tokens",
        "filter prompt tokens",
        "diversity measure",
        "mean perplexity",
        "per round if all kept",
        "debate rounds",
        "forwarded",
        "fallbacks",
        "mean ANLL",
        "filter calls",
    ),
}


def print_table(table: Table, console: Console) -> None:
    """``table`` at the console's width: cells wrap (text first; no value is cut) and, where it is still
    too wide, its secondary columns are left out, which a line under it names."""
    out = rich_table(table)
    text = [escape(c) for c, numeric in zip(table.columns, numeric_columns(table)) if not numeric]
    dropped = fit_table(out, console, [escape(c) for c in SECONDARY.get(table.key, ())], flexible=text)
    console.print(out)
    if dropped:
        console.print(
            f"not shown at this width: {', '.join(dropped)} (the HTML and Markdown reports have every column)",
            style="dim",
            markup=False,
        )


def print_report(report: Report, console: Console) -> None:
    """Every table of the report, task by task."""
    for line in header_lines(report):
        console.print(line, markup=False, soft_wrap=True)  # the run's path whole, however long
    for section in sections(report):
        console.rule(escape(f"task {section.task}"))
        for table in section.tables:
            print_table(table, console)


def print_comparison(pairs: list[tuple[str, PairReport]], console: Console) -> None:
    for task, pair in pairs:
        for table in comparison_tables(task, pair):
            print_table(table, console)


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown_table(table: Table) -> str:
    lines = [
        f"### {_cell(table.title)}",
        "",
        "| " + " | ".join(_cell(c) for c in table.columns) + " |",
        "|" + "|".join("---:" if numeric else "---" for numeric in numeric_columns(table)) + "|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
    if table.note:
        lines += ["", _cell(table.note)]
    return "\n".join(lines)


def report_markdown(report: Report) -> str:
    """The report's tables as one Markdown document."""
    parts = [f"# moot report: {_cell(report.name)}", "", *(f"- {_cell(line)}" for line in header_lines(report))]
    for section in sections(report):
        parts += ["", f"## Task {_cell(section.task)}"]
        for table in section.tables:
            parts += ["", markdown_table(table)]
    return "\n".join(parts) + "\n"
