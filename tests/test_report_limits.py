"""The report at its limits: intervals at 0% and 100%, names that look like markup or mathtext, and runs too
large for one page (issue 14, items 12, 13 and 15)."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from statsmodels.stats.proportion import proportion_confint

from moot.analysis import build_report
from moot.analysis import plots as plots_module
from moot.analysis.html import SCRIPT_HASH, pages_folder, report_html, write_html
from moot.analysis.plots import error_bar, plots
from moot.analysis.records import Report
from moot.analysis.stats import Proportion, proportion_interval, wilson
from moot.analysis.stats_repeats import question_accuracy
from moot.backends.base import GenerationRequest
from moot.runner.store import RunStore
from tests.fixtures.analysis_run import MODELS, PAYLOAD, experiment
from tests.helpers import WriteRun, arithmetic_experiment, write_store

_EXPRESSION = re.compile(r"result of (\d+)\+(\d+)\*(\d+)\+(\d+)-(\d+)\*(\d+)")


def _gold(request: GenerationRequest) -> int:
    match = _EXPRESSION.search(next(m.content for m in request.messages if m.role == "user"))
    assert match is not None
    a, b, c, d, e, f = (int(x) for x in match.groups())
    return a + b * c + d - e * f


def always_right(request: GenerationRequest, index: int) -> str:
    return f"So the answer is {_gold(request)}."


def always_wrong(request: GenerationRequest, index: int) -> str:
    return f"So the answer is {_gold(request) + 1}."


def scripted_run(path: Path, model: str, questions: int, conditions: list[dict]) -> Path:
    table = arithmetic_experiment("limits", conditions, questions, model, seeds=[0])
    return write_store(path, table, {"right": always_right, "wrong": always_wrong})


@pytest.fixture(scope="module")
def small_run(write_run: WriteRun) -> Path:
    """single, vote and society on 4 questions: 12 transcripts."""
    return write_run("limits", experiment(questions=4), MODELS)


@pytest.fixture(scope="module")
def small_report(small_run: Path) -> Report:
    return build_report(small_run, resamples=200)


def interval_ok(p: Proportion) -> bool:
    return 0 <= p.low <= p.estimate <= p.high <= 1


# -- item 12: intervals at 0% and 100% --------------------------------------------------------------------------
def _raw_misses(n: int, k: int) -> bool:
    """statsmodels' Wilson bound at 0/n or n/n misses 0 or 1 by a rounding error (5.6e-17, 0.9999999999999999)."""
    low, high = proportion_confint(k, n, method="wilson")
    return bool(low != 0) if k == 0 else bool(high != 1)


OFF_AT_0 = [n for n in range(1, 201) if _raw_misses(n, 0)]
OFF_AT_N = [n for n in range(1, 201) if _raw_misses(n, n)]


def test_wilson_intervals_and_error_bars_at_0_and_n_correct_for_every_n_up_to_200() -> None:
    assert OFF_AT_0 and OFF_AT_N  # the cause: the raw bounds miss 0 or 1 for many n
    for n in range(1, 201):
        for k in (0, n):
            p = wilson(k, n)
            assert interval_ok(p) and p.estimate == k / n, (n, k, p)
            assert (p.low == 0.0) if k == 0 else (p.high == 1.0)
            below, above = error_bar(p.estimate, p.low, p.high)
            assert below >= 0 and above >= 0, (n, k)
            low, high = proportion_confint(k, n, method="wilson")  # straight from statsmodels, unclipped
            below, above = error_bar(k / n, float(low), float(high))
            assert below >= 0 and above >= 0, (n, k)


def test_cluster_bootstrap_intervals_at_0_and_n_correct_for_every_n_up_to_200() -> None:
    for n in range(1, 201):
        for right in (False, True):
            p = question_accuracy([{0: right, 1: right}] * n, resamples=100)
            assert p.method == "cluster bootstrap" and interval_ok(p) and p.estimate == float(right)
            assert min(error_bar(p.estimate, p.low, p.high)) >= 0
    for n in (2, 3, 7, 50, 199):  # one question wrong once: a real bootstrap near 1
        p = question_accuracy([{0: True, 1: False}] + [{0: True, 1: True}] * (n - 1), resamples=200)
        assert interval_ok(p) and min(error_bar(p.estimate, p.low, p.high)) >= 0


def test_intervals_are_clipped_to_0_1_and_hold_the_estimate() -> None:
    assert proportion_interval(0.0, 5.6e-17, 0.3) == (0.0, 0.3)
    assert proportion_interval(1.0, 0.7, 0.9999999999999999) == (0.7, 1.0)
    assert proportion_interval(0.5, -0.1, 1.2) == (0.0, 1.0)
    assert proportion_interval(0.5, 0.6, 0.4) == (0.5, 0.5)
    assert all(math.isnan(x) for x in proportion_interval(math.nan, math.nan, math.nan))
    assert error_bar(1.0, 0.7, 0.9999999999999999) == pytest.approx((0.3, 0.0))
    assert error_bar(math.nan, math.nan, math.nan) == (0.0, 0.0) == error_bar(0.5, math.nan, math.nan)


def test_plots_never_draw_a_negative_error_bar(small_report: Report) -> None:
    """Intervals off by a rounding error (as any estimator's may be) are drawn, not refused by matplotlib."""
    (task,) = small_report.tasks
    single, vote, society = task.conditions
    off = (
        replace(single, accuracy=Proportion(4, 4, 1.0, 0.5, 0.9999999999999999)),
        replace(vote, accuracy=Proportion(0, 4, 0.0, 5.6e-17, 0.5)),
        replace(society, accuracy=Proportion(2, 4, 0.5, 0.6, 0.4)),
    )
    report = replace(small_report, tasks=(replace(task, conditions=off),))
    assert [p.key for p in plots(report)] == ["accuracy", "by-round", "stopping", "cost", "frontier"]


ORDER_N = sorted({*OFF_AT_0[:2], *OFF_AT_N[:2]})


@pytest.mark.parametrize("n", ORDER_N)
def test_a_real_report_with_plots_at_0_and_n_correct(tmp_path: Path, n: int) -> None:
    for model in ("right", "wrong"):
        path = scripted_run(tmp_path / f"{model}.sqlite", model, n, [{"name": "single", "protocol": "single"}])
        report = build_report(path, resamples=200)
        (c,) = report.tasks[0].conditions
        assert (c.accuracy.successes, c.accuracy.n) == ((n if model == "right" else 0), n)
        assert interval_ok(c.accuracy)
        page = report_html(report)
        assert page.count('<img alt="') == 4 and page.count('class="transcript ') == n


# -- item 13: names that look like mathtext or markup ---------------------------------------------------------
NAMES = [
    "$x$",
    "a$_$b",
    "cost $5 and $10",
    r"\frac{1}{2} \n",
    "_leading",
    "100% & 5%",
    "<script>window.__moot_pwned = 1</script>",
    '"><img src=x onerror="window.__moot_pwned = 2">',
    "{{ 7 * 7 }}",
]


def test_dollar_signs_in_condition_names_report_as_plain_text(tmp_path: Path) -> None:
    """Two $ in a name made matplotlib parse it as mathtext, and fail (a$_$b: ParseException)."""
    names = ["a$_$b", "$x^^$ 50%"]
    conditions = [{"name": names[0], "protocol": "single"}, {"name": names[1], "protocol": "vote", "agents": 3}]
    report = build_report(scripted_run(tmp_path / "dollars.sqlite", "right", 3, conditions), resamples=200)
    page = report_html(report)
    assert [c.name for c in report.tasks[0].conditions] == names
    assert all(f'<option value="{name}">{name}</option>' in page for name in names)


def _renamed(report: Report, names: list[str]) -> Report:
    (task,) = report.tasks
    conditions = tuple(replace(c, name=name) for c, name in zip(task.conditions, names, strict=True))
    return replace(report, condition_names=tuple(names), tasks=(replace(task, conditions=conditions),))


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every figure the plots draw from here on, in order (``_png`` kept working)."""
    figures: list[Any] = []
    png = plots_module._png

    def keep(figure: Any) -> bytes:
        out = png(figure)
        figures.append(figure)
        return out

    monkeypatch.setattr(plots_module, "_png", keep)
    return figures


def test_plot_labels_are_plain_text_and_the_html_escapes_them(small_report: Report, drawn: list[Any]) -> None:
    from matplotlib.text import Text

    figures = drawn
    for i in range(0, len(NAMES), 3):
        names = NAMES[i : i + 3]
        figures.clear()
        report = _renamed(small_report, names)
        assert len(plots(report)) == 5  # the frontier too: the run has a vote pool
        for figure in figures:
            assert all(not t.get_parse_math() and not t.get_usetex() for t in figure.findobj(Text))
        accuracy, by_round = figures[0].axes[0], figures[1].axes[0]
        assert [t.get_text() for t in accuracy.get_xticklabels()] == names
        legend = by_round.get_legend()
        assert legend is not None and [t.get_text() for t in legend.get_texts()] == names  # "_leading" kept
        page = report_html(report)
        assert "__moot_pwned = 1</script>" not in page and "<img src=x" not in page
        assert page.count("<script") == 1
        for name in names:
            escaped = name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;")
            assert f"<td>{escaped}</td>" in page


# -- item 15: large runs page their transcripts ---------------------------------------------------------------
_TRANSCRIPT = re.compile(
    r'<details class="transcript [a-z]+" data-task="[^"]*" data-condition="([^"]*)"\s+'
    r'data-correct="[01]" data-changed="[01]" data-question="([^"]*)">'
)


def _transcripts(page: str) -> list[tuple[str, str]]:
    return _TRANSCRIPT.findall(page)


def _links(page: str) -> list[str]:
    return [unquote(h) for h in re.findall(r'href="([^"#]+)', page)]


def test_a_report_reads_its_store_one_result_at_a_time(small_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No list of every result or call is read (a 20,000-question run's would not fit in memory); the
    transcripts are read from the store again when iterated, in the run's order, texts and all."""

    def whole(self: RunStore) -> None:
        raise AssertionError("read the whole store at once")

    monkeypatch.setattr(RunStore, "results", whole)
    monkeypatch.setattr(RunStore, "calls", whole)
    report = build_report(small_run, resamples=200)
    transcripts = report.transcripts
    assert len(transcripts) == 12 and [t.condition for t in transcripts[:3]] == ["single", "vote", "society"]
    assert transcripts[-1] == list(transcripts)[11] and transcripts[0].question_id == transcripts[1].question_id
    assert PAYLOAD in transcripts[0].rounds[0].turns[0].text and transcripts[0].prompt
    with pytest.raises(IndexError):
        transcripts[12]


def test_large_reports_page_their_transcripts(small_report: Report, tmp_path: Path) -> None:
    out = tmp_path / "run.report.html"
    assert write_html(small_report, out, page_size=5) == out
    folder = pages_folder(out)
    assert folder == tmp_path / "run.report-files"
    assert sorted(p.name for p in folder.iterdir()) == ["transcripts-0002.html", "transcripts-0003.html"]
    pages = [out.read_text(), *((folder / n).read_text() for n in ("transcripts-0002.html", "transcripts-0003.html"))]
    # every transcript once, in the run's order: 5 on the report's page, then pages of 5
    assert [len(_transcripts(p)) for p in pages] == [5, 5, 2]
    assert sum((_transcripts(p) for p in pages), []) == [(t.condition, t.question_id) for t in small_report.transcripts]
    # the report keeps its statistics and plots and links every page; pages link the report and each other
    main, second, third = pages
    assert main.count('<img alt="') == 5 and 'data-key="overview"' in main
    assert "This page shows transcripts 1–5 of 12" in main and "page 3: 11–12" in main
    assert _links(main) == ["run.report-files/transcripts-0002.html", "run.report-files/transcripts-0003.html"]
    # the second page's previous page is the report's
    assert _links(second) == ["../run.report.html", "../run.report.html", "transcripts-0003.html"] * 2
    assert _links(third) == ["../run.report.html", "transcripts-0002.html"] * 2  # the last page: no next
    for page, where in zip(pages, (tmp_path, folder, folder)):
        assert all((where / link).is_file() for link in _links(page))
        # each page as safe and self-contained as the report: its own script only, by hash; the filters
        assert page.count("<script") == 1 and f"script-src 'sha256-{SCRIPT_HASH}'" in page
        assert 'id="f-condition"' in page and 'id="f-count"' in page
        assert "<script>window.__moot_pwned" not in page and "&lt;script&gt;window.__moot_pwned" in page
    # a page also closes at its byte budget (but holds one transcript at least)
    write_html(small_report, out, page_size=500, page_bytes=1)
    assert len(_transcripts(out.read_text())) == 1 and len(list(folder.iterdir())) == 11
    # a report that fits on one page removes the pages an earlier one left
    write_html(small_report, out)
    assert not folder.exists() and len(_transcripts(out.read_text())) == 12
    assert len(_transcripts(report_html(small_report))) == 12


def test_names_of_points_close_together_do_not_print_over_each_other() -> None:
    """Four conditions of nearly the same cost and accuracy (society and gated in across are 300 tokens and 0.01
    apart), and one at the right edge: every name is placed off the others' names and off every point, inside the
    axes (the edge one to the left of its point)."""
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation, Text

    figure = Figure(figsize=(5.6, 3.5), dpi=100, layout="constrained")
    ax = figure.add_subplot()
    points = [(2600.0, 0.59), (2650.0, 0.585), (2966.0, 0.59), (2700.0, 0.6), (6000.0, 0.62)]
    ax.scatter(*zip(*points))
    ax.set_xlim(0, 6050)
    ax.set_ylim(0, 1)
    for i, (x, y) in enumerate(points):
        plots_module._label(ax, ["gated", "society", "du-adaptive", "vote-16", "mad-m2"][i], x, y)
    plots_module._png(figure)
    renderer = figure.canvas.get_renderer()
    boxes = [Text.get_window_extent(a, renderer) for a in figure.findobj(Annotation)]  # names, not leaders
    marks = [ax.transData.transform(p) for p in points]
    frame = ax.get_window_extent(renderer)
    for i, box in enumerate(boxes):
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1, i
        assert not any(box.overlaps(other) for other in boxes[i + 1 :]), i
        assert not any(box.x0 < x < box.x1 and box.y0 < y < box.y1 for x, y in marks), i
    assert boxes[-1].x1 < marks[-1][0]  # the edge point's name is on its left


def test_names_stay_off_the_intervals_of_neighbouring_points() -> None:
    """across's ten conditions at their tokens per question and accuracy, each with a 95% interval of about
    +-0.1 (docs/results.md): every name is off every other name, point and error bar. Before the bars counted,
    names crossed neighbours' bars (here single's crosses vote's; in across's picture gated's crossed
    confidence's). A bar is drawn about 2 px wide; the placement keeps names 2 px off either side, the test 1."""
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation, Text

    points = {"single": (228, 0.46), "vote": (694, 0.58), "du-adaptive": (1636, 0.57), "liang": (1942, 0.42),
              "gated": (2644, 0.59), "confidence": (2813, 0.45), "society": (2966, 0.59),
              "diverse-confidence": (3476, 0.30), "vote-16": (3769, 0.86), "mad-m2": (6056, 0.62)}  # fmt: skip
    figure = Figure(figsize=(5.6, 3.8), dpi=100, layout="constrained")
    ax = figure.add_subplot()
    ax.errorbar(*zip(*points.values()), yerr=0.09, fmt="o", capsize=4)
    ax.set_xlim(0, 6400)
    ax.set_ylim(0, 1)
    for name, (x, y) in points.items():
        plots_module._label(ax, name, x, y)
    plots_module._png(figure)
    renderer = figure.canvas.get_renderer()
    boxes = [Text.get_window_extent(a, renderer) for a in figure.findobj(Annotation)]  # names, not leaders
    marks = [ax.transData.transform(p) for p in points.values()]
    low, high = ax.transData.transform([(0, 0.0), (0, 0.09)])[:, 1]
    for i, box in enumerate(boxes):
        assert not any(box.overlaps(other) for other in boxes[i + 1 :]), i
        assert not any(
            box.x0 - 1 < x < box.x1 + 1 and box.y0 < y + high - low and y - (high - low) < box.y1 for x, y in marks
        ), i


def test_a_name_stays_off_a_curve_drawn_through_its_first_place() -> None:
    """A curve (the vote@k line) running just above and right of a point, where a name goes first: the name
    goes to another place, off the curve."""
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation, Text

    figure = Figure(figsize=(4, 3), dpi=100, layout="constrained")
    ax = figure.add_subplot()
    ax.errorbar([0.5], [0.5], yerr=0.05, fmt="o", capsize=4)
    ax.plot([0.5, 0.6, 0.7, 0.9], [0.52, 0.52, 0.52, 0.52], marker=".")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    plots_module._label(ax, "society", 0.5, 0.5)
    plots_module._png(figure)
    (box,) = [Text.get_window_extent(a, figure.canvas.get_renderer()) for a in figure.findobj(Annotation)]
    (x0, y), (x1, _) = ax.transData.transform([(0.5, 0.52), (0.9, 0.52)])
    assert not (box.x0 < x1 and x0 < box.x1 and box.y0 < y < box.y1)


def _tick_labels(figure: Any, ax: Any) -> list[str]:
    """The x tick labels drawn inside the axes' limits."""
    figure.draw_without_rendering()
    low, high = ax.get_xlim()
    return [t.get_text() for t in ax.get_xticklabels() if low <= t.get_position()[0] <= high and t.get_text()]


def test_costs_spanning_ten_times_or_more_are_drawn_on_a_log_axis_with_plain_numbers() -> None:
    """stopping's conditions run from 228 to 17,000 tokens a question: on a linear axis six of them crowded into
    the first seventh. From a tenfold span the cost axis is logarithmic, its ticks plain numbers at 1, 2 and 5 of
    each power of ten; below it, or with a zero cost, it stays linear."""
    from matplotlib.figure import Figure

    def axis(costs: list[float]) -> tuple[Any, Any]:
        figure = Figure(figsize=(5.6, 3.5), dpi=100)
        ax = figure.add_subplot()
        ax.scatter(costs, [0.5] * len(costs))
        plots_module._cost_axis(ax, costs)
        return figure, ax

    figure, ax = axis([228.0, 700.0, 5000.0, 17000.0])
    assert ax.get_xscale() == "log"
    assert _tick_labels(figure, ax) == ["200", "500", "1,000", "2,000", "5,000", "10,000", "20,000"]
    figure, ax = axis([0.0004, 0.006])  # dollars a question
    assert ax.get_xscale() == "log" and _tick_labels(figure, ax) == ["0.0005", "0.001", "0.002", "0.005"]
    for costs in ([228.0, 2270.0], [0.0, 5000.0], [300.0]):
        assert axis(costs)[1].get_xscale() == "linear", costs


def test_the_frontier_draws_tokens_on_a_log_axis_calls_on_a_linear_one_and_every_name_with_a_leader(
    small_report: Report, drawn: list[Any]
) -> None:
    """A run whose tokens a question span ten times (a single agent's few hundred beside a debate's thousands):
    the frontier's token panel is logarithmic, its calls panel linear (a few small counts); each point's name
    has a thin line to its point, so a name pushed off by its neighbours still says whose it is."""
    from matplotlib.text import Annotation

    from moot.analysis.plots import LABEL, frontier_plot

    task = small_report.tasks[0]
    assert task.vote_pool is not None
    tokens_a_question = [200 if i == 0 else 4000 for i in range(len(task.conditions))]
    conditions = [
        replace(c, usage=replace(c.usage, used_prompt_tokens=c.accuracy.n * t, used_completion_tokens=0))
        for c, t in zip(task.conditions, tokens_a_question)
    ]
    report = replace(small_report, tasks=(replace(task, conditions=tuple(conditions)), *small_report.tasks[1:]))
    assert frontier_plot(report) is not None
    tokens, calls = drawn[-1].axes[:2]
    assert (tokens.get_xscale(), calls.get_xscale()) == ("log", "linear")
    names = [a for a in tokens.findobj(Annotation) if a.get_gid() == LABEL]
    assert len(names) == len(conditions) and all(a.arrow_patch is not None for a in names)
