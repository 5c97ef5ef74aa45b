"""The replications document (docs/results.md): each paper's figures beside moot's, from stored runs.

``moot results`` reads the papers' table (docs/results/papers.toml: for each replication file under
examples/replicate/, the figures its paper reports and the directions it states in words, transcribed with
where they stand), summarises each replication's run store (runs/replicate/NAME.sqlite) as one CSV row per
result and a JSON file of the run's facts (docs/results/NAME.csv, NAME.json), then renders the document
from those summaries alone. The
summaries ship, and so do the stores, finished or under way (a run under way resumes from a fresh clone), so
``--check`` verifies the document against the summaries anywhere, and the summaries against every store
that is there.

No number is written by hand: every figure is computed here by the functions ``moot report`` uses
(``moot.analysis.stats``, ``stats_repeats``): accuracy with the question as the unit (Wilson; with repeated seeds the
cluster bootstrap), paired differences with the exact McNemar test (a sign test on questions with
repeated seeds) and the paired bootstrap interval, Holm's adjustment over a paper's comparisons; calls
and tokens are ``moot.runner.summary.usage`` per question.

This module is the command (``update``, ``check``); the summaries are made in ``results_summaries``, the
statistics in ``results_figures`` and the page's text in ``results_page``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from moot.analysis.results_page import MARKER, _draws_frontier, picture_name, render
from moot.analysis.results_summaries import (
    COLUMNS,
    DOCUMENT,
    EARLIER_COLUMNS,
    EXPERIMENTS,
    PAPERS,
    STORES,
    SUMMARIES,
    Papers,
    RunFacts,
    facts_json,
    read_papers,
    read_summary,
    rows_csv,
    summarise,
)
from moot.errors import ConfigError, MootError
from moot.outputs import check_output, write_output


# -- the command --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Paths:
    papers: Path = PAPERS
    summaries: Path = SUMMARIES
    stores: Path = STORES
    document: Path = DOCUMENT
    experiments: Path = EXPERIMENTS


def _same_experiment(file: Path, facts: RunFacts) -> None:
    """Refuse a store made from another version of its experiment file: the document links the file, so
    its figures must be that file's."""
    from moot.runner.config_files import load_experiment
    from moot.runner.config_resolve import experiment_hash

    if experiment_hash(load_experiment(file)) != facts.fingerprint:
        raise MootError(
            f"{facts.store} holds another experiment than {file} describes now (the file was changed after the "
            "run); rerun the file into a new store, or restore the file"
        )


def fresh_summaries(papers: Papers, paths: Paths) -> dict[str, tuple[str, str]]:
    """For each replication whose store exists: its summary files' text (JSON, CSV)."""
    out = {}
    for p in papers.paper:
        store = paths.stores / f"{p.file}.sqlite"
        if store.exists():
            samples = {
                "labelled": paths.summaries / "readers" / f"{p.file}.jsonl",
                "held-out": paths.summaries / "readers" / "held-out" / f"{p.file}.jsonl",
            }
            try:
                facts, rows = summarise(store, {k: v for k, v in samples.items() if v.exists()})
            except MootError as exc:
                raise MootError(f"{store}: {exc}") from None
            experiment = paths.experiments / f"{p.file}.toml"
            if experiment.exists():
                _same_experiment(experiment, facts)
            out[p.file] = (facts_json(facts), rows_csv(rows))
    return out


def _write(path: Path, text: str, generated: bool) -> None:
    """Write moot's own output ``path`` (a summary, the document); a file there that moot did not make is
    refused (``generated``: the file carries the marker or is a summary moot wrote)."""
    check_output(path, default=generated or not path.exists())
    write_output(path, lambda target: target.write_text(text, encoding="utf-8"))


def _write_picture(path: Path, png: bytes) -> None:
    check_output(path, default=True)  # moot's own name for it, beside its own summaries
    write_output(path, lambda target: target.write_bytes(png))


def _ours(path: Path, first_line: str) -> bool:
    try:
        with path.open(encoding="utf-8") as f:
            return f.readline().rstrip("\n") == first_line
    except (OSError, UnicodeDecodeError):
        return False


def _document(papers: Papers, paths: Paths) -> str:
    """The document as the summaries in ``paths.summaries`` make it."""
    return render(papers, {p.file: read_summary(paths.summaries, p.file) for p in papers.paper})


def frontier_picture(store: Path) -> bytes | None:
    """The accuracy-cost frontier of a store as a PNG (``plots.frontier_plot`` of its report), or None where it
    has no pool of 2 or more answers to draw vote@k from."""
    from moot.analysis.plots import frontier_plot
    from moot.analysis.report import build_report

    plot = frontier_plot(build_report(store))
    return None if plot is None else plot.png


def update(paths: Paths = Paths()) -> list[Path]:
    """Summarise the stores that exist, draw their frontier pictures and rewrite the document; return the files
    written."""
    papers = read_papers(paths.papers)
    written = []
    for file, (facts, rows) in fresh_summaries(papers, paths).items():
        for suffix, text, firsts in (
            (".json", facts, ("{",)),
            (".csv", rows, (",".join(COLUMNS), *(",".join(c) for c in EARLIER_COLUMNS))),
        ):
            target = paths.summaries / f"{file}{suffix}"
            _write(target, text, any(_ours(target, first) for first in firsts))
            written.append(target)
        png = frontier_picture(paths.stores / f"{file}.sqlite")
        if png is not None:
            target = paths.summaries / picture_name(file)
            _write_picture(target, png)
            written.append(target)
    text = _document(papers, paths)
    _write(paths.document, text, _ours(paths.document, MARKER))
    written.append(paths.document)
    return written


def check(paths: Paths = Paths()) -> list[str]:
    """What is out of date: summaries that differ from their stores (where the stores exist) and a document
    that differs from its summaries. Empty when everything agrees."""
    papers = read_papers(paths.papers)
    problems = []
    for file, texts in fresh_summaries(papers, paths).items():
        for suffix, text in zip((".json", ".csv"), texts):
            target = paths.summaries / f"{file}{suffix}"
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                problems.append(f"{target} differs from {paths.stores / file}.sqlite")
    try:
        text = _document(papers, paths)
    except ConfigError as exc:  # a summary of an older layout (columns added since): regenerate it
        return [*problems, f"{paths.document} cannot be made from the summaries: {exc}"]
    if not paths.document.exists() or paths.document.read_text(encoding="utf-8") != text:
        problems.append(f"{paths.document} differs from the summaries in {paths.summaries}")
    for p in papers.paper:  # a picture's bytes depend on matplotlib's version: it is checked to be there
        summary = read_summary(paths.summaries, p.file)
        picture = paths.summaries / picture_name(p.file)
        if summary is not None and _draws_frontier(summary[0]) and not picture.exists():
            problems.append(f"{picture} is missing (the document shows it): run `moot results` where the store is")
    return problems
