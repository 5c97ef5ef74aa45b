"""The report's plots as PNG images (matplotlib's Agg canvas; no pyplot, no global backend change).

Every text in a plot is plain text: condition and task names are user input, so a ``$`` never starts
mathtext (two of them in a name made matplotlib's parser fail), LaTeX is never used whatever the
user's matplotlibrc says, and a name starting with ``_`` still shows in a legend. Error bars are
never negative: intervals are clipped to [0, 1] around the estimate first.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from moot.analysis.report import ConditionReport, Report
from moot.analysis.stats import proportion_interval


@dataclass(frozen=True)
class Plot:
    key: str
    title: str
    png: bytes

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


def _figure(width: float = 5.6, height: float = 3.5) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    return figure, figure.add_subplot()


def _plain(figure: Any) -> None:
    """Every text of ``figure`` as plain text: no mathtext (``Text(parse_math=False)``), no LaTeX."""
    from matplotlib.text import Text

    for text in figure.findobj(Text):
        text.set_parse_math(False)
        text.set_usetex(False)


def _legend(ax: Any, handles: list[Any], labels: list[str]) -> None:
    """A legend with these labels as given: handles and labels passed explicitly, so that a label
    starting with "_" is shown (matplotlib leaves those out of an automatic legend)."""
    if handles:
        ax.legend(handles, labels, fontsize="small")


LABEL = "point-label"  # the gid of a point's name (``_label``), placed by ``_place_labels``
# where a point's name may go, in points from the point: right and above first, then below, left, further
LABEL_OFFSETS = ((6, 4, "left"), (6, -12, "left"), (-6, 4, "right"), (-6, -12, "right"), (6, 14, "left"),
                 (6, -22, "left"), (-6, 14, "right"), (-6, -22, "right"))  # fmt: skip


def _label(ax: Any, text: str, x: float, y: float) -> None:
    """A point's name beside it, with a thin leader line to the point so that a name pushed off by its neighbours
    still says whose it is; ``_place_labels`` moves it off other names and points when the figure is drawn."""
    ax.annotate(text, (x, y), textcoords="offset points", xytext=LABEL_OFFSETS[0][:2], fontsize="small",
                parse_math=False, gid=LABEL, in_layout=False,
                arrowprops={"arrowstyle": "-", "color": "grey", "linewidth": 0.6, "shrinkA": 1, "shrinkB": 4})  # fmt: skip


def _cost_axis(ax: Any, costs: Sequence[float]) -> None:
    """The x axis of costs on a log scale where they span ten times or more (a single agent's few hundred
    tokens beside a debate's thousands, which a linear axis crowds into one corner), with plain numbers
    at 1, 2 and 5 of each power of ten; else left linear. A zero cost keeps the axis linear."""
    if not costs or min(costs) <= 0 or max(costs) < 10 * min(costs):
        return
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in display units


def _overlap(a: Box, b: Box) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def _place_labels(figure: Any) -> None:
    """Each axes' point names, left to right, at the offset of ``LABEL_OFFSETS`` (the first of those tried in
    order) where the name covers the least of the names already placed and of the points (counting ten times),
    of the error bars and curves (once), leaving the axes counting ten times: so the names of points close
    together (two conditions of nearly the same cost and accuracy) do not print over each other or off the plot,
    and keep off a neighbour's interval or the vote@k line where they can."""
    from matplotlib.collections import LineCollection
    from matplotlib.text import Annotation, Text

    renderer = figure.canvas.get_renderer()
    for ax in figure.axes:
        labels = [a for a in ax.findobj(Annotation) if a.get_gid() == LABEL]
        anchors = [tuple(ax.transData.transform(a.xy)) for a in labels]
        taken: list[Box] = [(x - 4, y - 4, x + 4, y + 4) for x, y in anchors]  # each point's marker, then names
        lines: list[Box] = []
        segments = [s[[0, -1]] for c in ax.collections if isinstance(c, LineCollection) for s in c.get_segments()]
        drawn = (line for line in ax.lines if line.get_linestyle() != "None")  # not markers alone (fmt="o")
        for line in (line for line in drawn if len(line.get_xydata()) > 1):  # curves (vote@k, the frontier)
            xy = line.get_xydata()
            segments += [xy[i : i + 2] for i in range(len(xy) - 1)]
        for segment in segments:  # each error bar and curve segment, 2 px either side
            (x0, y0), (x1, y1) = ax.transData.transform(segment)
            lines.append((min(x0, x1) - 2, min(y0, y1) - 2, max(x0, x1) + 2, max(y0, y1) + 2))
        frame = ax.get_window_extent(renderer)
        inside: Box = (frame.x0, frame.y0, frame.x1, frame.y1)
        for label, _ in sorted(zip(labels, anchors), key=lambda pair: pair[1]):
            best: tuple[float, Box] | None = None
            for dx, dy, align in LABEL_OFFSETS:
                label.set_position((dx, dy))
                label.set_horizontalalignment(align)
                e = Text.get_window_extent(label, renderer)  # the name alone, not its leader line
                box: Box = (e.x0, e.y0, e.x1, e.y1)
                outside = e.width * e.height - _overlap(box, inside)
                covered = sum(_overlap(box, t) for t in taken)
                score = 10 * (outside + covered) + sum(_overlap(box, line) for line in lines)
                if best is None or score < best[0]:
                    best, chosen = (score, box), (dx, dy, align)
            assert best is not None
            label.set_position(chosen[:2])
            label.set_horizontalalignment(chosen[2])
            taken.append(best[1])


def _png(figure: Any) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    _plain(figure)
    figure.draw_without_rendering()  # a layout may add tick labels: made, then plain too
    _plain(figure)
    _place_labels(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _entries(report: Report, accuracy: bool = False) -> list[tuple[str, ConditionReport]]:
    """(label, condition) over every task; labels carry the task when there are several. ``accuracy``: only
    the tasks scored by accuracy (not a task scored only by its own metric, such as biographies)."""
    several = len(report.tasks) > 1
    return [
        (f"{t.task}/{c.name}" if several else c.name, c)
        for t in report.tasks
        if t.accuracy_applies or not accuracy
        for c in t.conditions
    ]


def error_bar(estimate: float, low: float, high: float) -> tuple[float, float]:
    """An interval as the distances below and above ``estimate`` (error bars): never negative, the
    interval first clipped to [0, 1] around the estimate (``stats.proportion_interval``); 0 where unknown."""
    if math.isnan(estimate):
        return 0.0, 0.0
    low, high = proportion_interval(estimate, low, high)
    estimate = min(max(estimate, 0.0), 1.0)
    below = estimate - low if not math.isnan(low) else 0.0
    above = high - estimate if not math.isnan(high) else 0.0
    return max(below, 0.0), max(above, 0.0)


def _error(condition: ConditionReport) -> tuple[float, float]:
    """The accuracy interval (Wilson; with repeated seeds the cluster bootstrap over questions) as error bars."""
    a = condition.accuracy
    return error_bar(a.estimate, a.low, a.high)


def accuracy_plot(report: Report) -> Plot:
    figure, ax = _figure()
    entries = _entries(report, accuracy=True)
    xs = list(range(len(entries)))
    if entries:
        ys = [c.accuracy.estimate for _, c in entries]
        low, high = zip(*(_error(c) for _, c in entries))
        ax.errorbar(xs, ys, yerr=[list(low), list(high)], fmt="o", capsize=5, color="#1f5f8b")
    ax.set_xticks(xs, [label for label, _ in entries], rotation=20 if len(entries) > 4 else 0, parse_math=False)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.grid(axis="y", alpha=0.3)
    repeated = any(t.repeated for t in report.tasks)
    ax.set_title("Accuracy with 95% intervals over questions" if repeated else "Accuracy with 95% Wilson intervals")
    return Plot("accuracy", "Accuracy per condition", _png(figure))


def by_round_plot(report: Report) -> Plot:
    figure, ax = _figure()
    handles, labels = [], []
    for label, c in _entries(report, accuracy=True):
        rounds = [r for r, n, _ in c.accuracy_by_round if n]
        acc = [k / n for _, n, k in c.accuracy_by_round if n]
        handles += ax.plot(rounds, acc, marker="o")
        labels.append(label)
    ax.set_xlabel("round (0 = independent answers)")
    ax.set_ylabel("accuracy of the round's answer")
    ax.set_ylim(0, 1)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    _legend(ax, handles, labels)
    ax.set_title("Accuracy by round (questions reaching the round)")
    return Plot("by-round", "Accuracy by round", _png(figure))


def stopping_plot(report: Report) -> Plot:
    figure, ax = _figure()
    entries = _entries(report)
    rounds = sorted({r for _, c in entries for r, _, _ in c.rounds})
    width = 0.8 / max(1, len(entries))
    handles = []
    for i, (_, c) in enumerate(entries):
        counts = dict((r, n) for r, n, _ in c.rounds)
        handles.append(ax.bar([x + i * width for x in range(len(rounds))], [counts.get(r, 0) for r in rounds], width))
    ax.set_xticks([x + width * (len(entries) - 1) / 2 for x in range(len(rounds))], [str(r) for r in rounds])
    ax.set_xlabel("rounds used (counting round 0)")
    ax.set_ylabel("questions")
    _legend(ax, handles, [label for label, _ in entries])
    ax.set_title("Stopping distribution")
    return Plot("stopping", "Stopping distribution", _png(figure))


def reliability_plot(report: Report) -> Plot | None:
    found = [
        (label, source, k)
        for label, c in _entries(report)
        for source, k in (("agents", c.calibration), ("judge", c.judge_calibration))
        if k is not None
    ]
    if not found:
        return None
    figure, ax = _figure(4.6, 3.9)
    handles = ax.plot([0, 1], [0, 1], linestyle="--", color="grey")
    labels = ["perfect calibration"]
    for label, source, k in found:
        bins = [b for b in k.bins if b.n]
        handles += ax.plot([b.mean_confidence for b in bins], [b.accuracy for b in bins], marker="o")
        labels.append(f"{label} ({source})")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("stated confidence")
    ax.set_ylabel("accuracy")
    _legend(ax, handles, labels)
    ax.set_title("Reliability diagram")
    return Plot("reliability", "Reliability diagram", _png(figure))


def cost_plot(report: Report) -> Plot:
    figure, ax = _figure()
    entries = _entries(report, accuracy=True)
    priced = all(c.usage.cost is not None for _, c in entries) and any(c.usage.cost for _, c in entries)
    costs = []
    for label, c in entries:
        n = max(1, c.accuracy.n)
        x = (c.usage.cost or 0.0) / n if priced else c.usage.used_tokens / n
        y = c.accuracy.estimate
        below, above = _error(c)
        ax.errorbar([x], [y], yerr=[[below], [above]], fmt="o", capsize=4)
        _label(ax, label, x, y)
        costs.append(x)
    _cost_axis(ax, costs)
    ax.set_xlabel("cost per question (USD)" if priced else "tokens used per question")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.set_title("Cost against accuracy")
    return Plot("cost", "Cost against accuracy", _png(figure))


ONE_TASK = ("#1f5f8b", "#d08c2a", "grey")  # a task's points, vote@k curve and frontier
TASK_HUES = ("#1f5f8b", "#b5651d", "#5a7d2a", "#7b3f8c")  # with several tasks: all three in the task's hue


def frontier_plot(report: Report) -> Plot | None:
    """Accuracy against tokens used per question (left) and calls per question (right): every condition (with
    its interval, as ``accuracy_plot``), the vote@k curve of the run's pool (``TaskReport.vote_pool``, k = 1..K)
    and each measure's frontier (``moot.analysis.frontier``): the points, conditions and vote@k alike, that no
    other point of the task beats, more accurate at a cost no higher or as accurate for less (a dashed line through them;
    conditions on it ringed). Tokens are on a log axis where they span ten times or more (``_cost_axis``); calls,
    a few small counts, on a linear one. None where no task scored by accuracy has a pool."""
    from matplotlib.figure import Figure

    from moot.analysis.frontier import task_frontier

    tasks = [t for t in report.tasks if t.accuracy_applies and t.vote_pool is not None]
    if not tasks:
        return None
    figure = Figure(figsize=(10.4, 4.8), dpi=100, layout="constrained")
    axes = figure.subplots(1, 2, sharey=True)
    several = len(tasks) > 1
    handles: list[Any] = []
    labels: list[str] = []
    for measure, ax in zip(("tokens", "calls"), axes):
        first = measure == "tokens"  # the legend is drawn once, from the left panel's handles
        costs: list[float] = []
        for i, t in enumerate(tasks):
            pool = t.vote_pool
            assert pool is not None
            points = task_frontier(t)
            point_colour, curve_colour, front_colour = (TASK_HUES[i % len(TASK_HUES)],) * 3 if several else ONE_TASK
            cost = (lambda p: p.tokens) if first else (lambda p: p.calls)
            on = (lambda p: p.on_tokens_frontier) if first else (lambda p: p.on_calls_frontier)
            conditions = [p for p in points if p.k is None]
            for p in conditions:
                below, above = error_bar(p.accuracy, p.low, p.high)
                ax.errorbar([cost(p)], [p.accuracy], yerr=[[below], [above]], fmt="o", capsize=4, color=point_colour)
                label = f"{t.task}/{p.name}" if several else p.name
                _label(ax, label, cost(p), p.accuracy)
            votes = [p for p in points if p.k is not None]
            line = ax.plot([cost(p) for p in votes], [p.accuracy for p in votes], marker=".", color=curve_colour)
            front = sorted((cost(p), p.accuracy) for p in points if on(p))
            dashed = ax.plot(
                [x for x, _ in front], [y for _, y in front], linestyle="--", color=front_colour, alpha=0.7
            )
            costs += [cost(p) for p in points]
            ringed = [p for p in conditions if on(p)]
            ring = ax.scatter([cost(p) for p in ringed], [p.accuracy for p in ringed], s=160, facecolors="none",
                              edgecolors="#2a8d3c", linewidths=1.5)  # fmt: skip
            if first:
                prefix = f"{t.task}: " if several else ""
                handles += [*line, *dashed] + ([ring] if ringed else [])
                labels += [f"{prefix}vote@k of {pool.condition} (k = 1..{pool.agents})", f"{prefix}frontier"]
                labels += [f"{prefix}conditions on the frontier"] if ringed else []
        if first:  # calls are a few small counts: their axis stays linear
            _cost_axis(ax, costs)
        ax.set_xlabel("tokens used per question" if first else "calls per question")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("accuracy")
    figure.legend(handles, labels, loc="outside lower center", ncols=3, fontsize="small")  # off the points
    figure.suptitle("Accuracy-cost frontier against vote@k")
    return Plot("frontier", "Accuracy-cost frontier", _png(figure))


def plots(report: Report) -> list[Plot]:
    """Every plot the report's data allow, in display order."""
    out = [accuracy_plot(report), by_round_plot(report), stopping_plot(report)]
    if (reliability := reliability_plot(report)) is not None:
        out.append(reliability)
    out.append(cost_plot(report))
    if (frontier := frontier_plot(report)) is not None:
        out.append(frontier)
    return out
