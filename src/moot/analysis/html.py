"""The report as a self-contained HTML file: tables, embedded plots and a transcript viewer.

Works offline: CSS and JavaScript are inline, plots are base64 PNGs, nothing is fetched. Every
piece of model text goes through Jinja's autoescaping, and a Content-Security-Policy allows only
the page's own script (by its sha256) and data: images, so a reply containing markup shows as
text and cannot run.

A large run's transcripts are paged (``write_html``): the report's page holds the statistics, the
plots and the first ``PAGE_SIZE`` transcripts; the others go to pages of ``PAGE_SIZE`` beside it
(REPORT-files/transcripts-0002.html, ...), each as self-contained as the report, with the same
filters and policy, linked from the report and from each other. Transcripts are rendered one at a
time and pages streamed to disk, so the file and the memory of writing it stay bounded.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from moot.analysis.formatting import fixed
from moot.analysis.records import Report

PAGE_SIZE = 500  # transcripts on the report's page and on each further page of a large run
PAGE_BYTES = 8 * 2**20  # a page also closes before its transcripts pass 8 MiB (long replies)

SCRIPT = """
(function () {
  var ids = ["f-task", "f-condition", "f-correct", "f-changed"];
  function value(id) { var e = document.getElementById(id); return e ? e.value : ""; }
  function apply() {
    var task = value("f-task"), condition = value("f-condition");
    var correct = value("f-correct"), changed = value("f-changed");
    var items = document.querySelectorAll(".transcript"), shown = 0;
    for (var i = 0; i < items.length; i++) {
      var d = items[i].dataset;
      var ok = (!task || d.task === task) && (!condition || d.condition === condition) &&
               (!correct || d.correct === correct) && (!changed || d.changed === changed);
      items[i].hidden = !ok;
      if (ok) { shown++; }
    }
    document.getElementById("f-count").textContent = shown + " of " + items.length + " shown";
  }
  function openAll(open) {
    var items = document.querySelectorAll(".transcript");
    for (var i = 0; i < items.length; i++) { if (!items[i].hidden) { items[i].open = open; } }
  }
  ids.forEach(function (id) {
    var e = document.getElementById(id);
    if (e) { e.addEventListener("change", apply); }
  });
  document.getElementById("expand-all").addEventListener("click", function () { openAll(true); });
  document.getElementById("collapse-all").addEventListener("click", function () { openAll(false); });
  apply();
})();
"""

SCRIPT_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1200px;
       padding: 1rem 1.5rem 4rem; color: #1d232b; background: #fcfcfd; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { margin-top: 2.2rem; border-bottom: 2px solid #d6dbe3; }
h3 { margin: 1.6rem 0 .4rem; font-size: 1.05rem; }
.meta { color: #5b6675; margin: 0; }
nav a { margin-right: 1rem; }
table.data { border-collapse: collapse; margin: .3rem 0; font-variant-numeric: tabular-nums; }
table.data th, table.data td { border: 1px solid #d6dbe3; padding: .25rem .55rem; text-align: left; }
table.data th { background: #eef1f5; } table.data .num { text-align: right; } table.data td.num { white-space: nowrap; }
table.data tbody tr:nth-child(even) { background: #f6f8fa; }
.note { color: #5b6675; font-size: .9em; max-width: 70rem; margin: .2rem 0 1rem; }
.plots { display: flex; flex-wrap: wrap; gap: 1rem; }
figure { margin: 0; background: white; border: 1px solid #d6dbe3; padding: .4rem; }
figure img { max-width: 100%; display: block; }
figcaption { color: #5b6675; font-size: .9em; }
.filters { position: sticky; top: 0; background: #fcfcfd; padding: .5rem 0; border-bottom: 1px solid #d6dbe3;
           display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; z-index: 1; }
.transcript { border: 1px solid #d6dbe3; border-left: 5px solid #c0392b; margin: .4rem 0; background: white; }
.transcript.right { border-left-color: #27864a; }
.transcript > summary { cursor: pointer; padding: .35rem .6rem; }
.transcript .body { padding: 0 .8rem .6rem; }
.round { border-top: 1px dashed #d6dbe3; padding-top: .3rem; }
.round h4 { margin: .3rem 0; }
.turn { margin: .3rem 0 .5rem 1rem; }
.turn-head { font-size: .95em; }
.ok { color: #27864a; font-weight: 600; } .bad { color: #c0392b; font-weight: 600; }
pre { white-space: pre-wrap; word-break: break-word; background: #f4f6f8; padding: .4rem .6rem; margin: .2rem 0;
      font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; max-height: 24rem; overflow: auto; }
.shown summary { color: #5b6675; cursor: pointer; font-size: .9em; }
.role { font-size: .8em; text-transform: uppercase; color: #5b6675; }
.vote { margin: .2rem 0 .4rem 1rem; }
.retention { margin: .2rem 0 .4rem 1rem; color: #3d4754; }
.retention summary { color: #5b6675; cursor: pointer; font-size: .9em; }
.retained { font-size: .9em; color: #3d4754; }
nav.pages { display: flex; flex-wrap: wrap; gap: .3rem 1rem; margin: .4rem 0 1rem; }
[hidden] { display: none !important; }
"""

HEAD = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
      content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{{ script_hash }}'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>moot report: {{ report.name }}{{ title_suffix }}</title>
<style>{{ style }}</style>
</head>
<body>
"""

FILTERS = """<div class="filters">
{% if tasks|length > 1 %}<label>Task <select id="f-task"><option value="">all</option>{% for t in tasks %}<option value="{{ t }}">{{ t }}</option>{% endfor %}</select></label>{% endif %}
<label>Condition <select id="f-condition"><option value="">all</option>{% for c in report.condition_names %}<option value="{{ c }}">{{ c }}</option>{% endfor %}</select></label>
<label>Final answer <select id="f-correct"><option value="">all</option><option value="1">right</option><option value="0">wrong</option></select></label>
<label>Answer changed <select id="f-changed"><option value="">all</option><option value="1">changed</option><option value="0">unchanged</option></select></label>
<button id="expand-all" type="button">expand shown</button><button id="collapse-all" type="button">collapse all</button>
<span id="f-count"></span>
</div>
"""

# one transcript (a <details> element): rendered one at a time, so a large run's pages stream
TRANSCRIPT = """<details class="transcript {{ 'right' if t.correct else 'wrong' }}" data-task="{{ t.task }}" data-condition="{{ t.condition }}"
         data-correct="{{ 1 if t.correct else 0 }}" data-changed="{{ 1 if t.changed else 0 }}" data-question="{{ t.question_id }}">
<summary>{% if t.correct %}<span class="ok">✓</span>{% else %}<span class="bad">✗</span>{% endif %}
<b>{{ t.question_id }}</b> (seed {{ t.seed }}{% if tasks|length > 1 %}, {{ t.task }}{% endif %}) · <b>{{ t.condition }}</b>
· final {{ t.final_answer if t.final_answer is not none else '·' }} · gold {{ t.gold }} · {{ t.rounds_used }} round{{ 's' if t.rounds_used != 1 }}
· stop: {{ t.stop_reason }}{% if t.status != 'answered' %} · {{ t.status }}{% endif %}{% if t.changed %} · answer changed{% endif %}</summary>
<div class="body">
<p>Question: <code>{{ t.prompt }}</code> · gold <b>{{ t.gold }}</b>{% if t.error %} · error: <code>{{ t.error }}</code>{% endif %}</p>
{% for r in t.rounds %}
<div class="round" data-round="{{ r.index }}">
<h4>Round {{ r.index }}</h4>
{% if r.pool %}{% set kept = r.pool.selected %}
<details class="shown pool"><summary>candidate pool: {{ r.pool.texts|length }} sampled, {{ kept|length }} retained</summary>
<table class="data"><thead><tr><th>#</th><th>from</th><th>answer</th><th>retained as</th><th>reply</th></tr></thead><tbody>
{% for text in r.pool.texts %}{% set i = loop.index0 %}<tr><td>{{ i }}</td><td>{{ r.pool.sources[i] if i < r.pool.sources|length }}</td>
<td>{{ r.pool.answers[i] if i < r.pool.answers|length }}</td>
<td>{% for k in kept %}{% if k == i %}agent {{ loop.index }} {% endif %}{% endfor %}</td><td><pre>{{ text }}</pre></td></tr>{% endfor %}
</tbody></table></details>{% endif %}
{% if r.retention %}{% set x = r.retention %}<div class="retention">retention <b>{{ x.rule }}</b>{% if x.fallback %} · <span class="bad">fallback</span>: the filter's selection was invalid or empty, all kept{% endif %}
· kept {{ x.kept|join(', ') or 'none' }} · {{ x.forwarded }} repl{{ 'y' if x.forwarded == 1 else 'ies' }} forwarded
{% if x.diversity is not none %}· kept diversity {{ fixed(x.diversity, 3) }}{% if x.diversity_measure %} ({{ x.diversity_measure }}){% endif %}{% endif %}
{% if x.filter_calls %}· filter: {{ x.filter_calls }} call{{ 's' if x.filter_calls != 1 }}, {{ x.filter_prompt_tokens }} + {{ x.filter_completion_tokens }} tokens{% endif %}
{% if x.filter_text is not none %}<details class="filter-reply"><summary>filter's reply</summary><pre>{{ x.filter_text }}</pre></details>{% endif %}</div>{% endif %}
{% for turn in r.turns %}
<div class="turn" data-agent="{{ turn.agent }}">
<div class="turn-head"><b>{{ turn.agent }}</b> → answer
{% if turn.parsed %}<b>{{ turn.answer }}</b>{% else %}<b>· (unparsed)</b>{% endif %}
{% if turn.correct %}<span class="ok">✓</span>{% else %}<span class="bad">✗</span>{% endif %}
{% if turn.confidence is not none %} · confidence {{ fixed(turn.confidence, 2) }}{% endif %}
{% if turn.anll is not none %} · ANLL {{ fixed(turn.anll, 3) }}{% endif %}{% if turn.perplexity is not none %} · perplexity {{ fixed(turn.perplexity, 2) }}{% endif %}
· {{ turn.finish_reason }} · {{ turn.prompt_tokens }} + {{ turn.completion_tokens }} tokens{% if turn.reasoning_tokens is not none %} ({{ turn.reasoning_tokens }} reasoning){% endif %}{% if turn.reasoning_only %} · <span class="bad">no content after reasoning</span>{% endif %}</div>
<details class="shown"><summary>shown this round: {{ turn.shown_new|length }} message{{ 's' if turn.shown_new|length != 1 }}{% if turn.shown|length != turn.shown_new|length %} (context {{ turn.shown|length }}){% endif %}</summary>
{% for role, content in turn.shown_new %}<div class="msg"><span class="role">{{ role }}</span><pre>{{ content }}</pre></div>{% endfor %}
</details>
{% if turn.retained is not none %}<div class="retained"><span class="role">retained</span> {{ turn.retained }}</div>{% endif %}
{% if turn.reasoning is not none %}<details class="reasoning"><summary>reasoning</summary><pre>{{ turn.reasoning }}</pre></details>{% endif %}
<pre class="reply">{{ turn.text }}</pre>
</div>
{% endfor %}
<div class="vote">vote: {% for answer, n in r.votes %}{{ answer }} ×{{ n }}{{ ', ' if not loop.last }}{% else %}no parsed answer{% endfor %}
→ <b>{{ r.winner if r.winner is not none else '·' }}</b> {% if r.winner_correct %}<span class="ok">✓</span>{% else %}<span class="bad">✗</span>{% endif %}
</div>
{% if r.judge %}<div class="vote">judge: answer <b>{{ r.judge.answer if r.judge.answer is not none else '·' }}</b>{% if r.judge.confidence is not none %}, confidence {{ r.judge.confidence }}{% endif %}
{% if r.system_answer != r.winner or r.system_correct != r.winner_correct %}→ round answer <b>{{ r.system_answer if r.system_answer is not none else '·' }}</b> {% if r.system_correct %}<span class="ok">✓</span>{% else %}<span class="bad">✗</span>{% endif %}{% endif %}
{% if r.judge.text %}<details class="shown"><summary>judge's reply</summary><pre>{{ r.judge.text }}</pre></details>{% endif %}</div>{% endif %}
</div>
{% endfor %}
{% if t.final_judge %}<div class="vote">final judge: answer <b>{{ t.final_judge.answer if t.final_judge.answer is not none else '·' }}</b>{% if t.final_judge.confidence is not none %}, confidence {{ t.final_judge.confidence }}{% endif %}
{% if t.final_judge.text %}<details class="shown"><summary>final judge's reply</summary><pre>{{ t.final_judge.text }}</pre></details>{% endif %}</div>{% endif %}
<p>Final answer <b>{{ t.final_answer if t.final_answer is not none else '·' }}</b> ({{ t.status }}) after {{ t.rounds_used }} round{{ 's' if t.rounds_used != 1 }}; stop reason: {{ t.stop_reason }}.</p>
</div>
</details>
"""

PAGES_NOTE = """{% if pages %}<p class="note" id="pages-note">This page shows transcripts {{ "{:,}".format(first) }}–{{ "{:,}".format(last) }} of {{ "{:,}".format(total) }}; the filters apply to the transcripts on this page. The others are on pages beside this report, in <code>{{ folder }}/</code>:</p>
<nav class="pages">{% for p in pages %}<a href="{{ p.href }}">page {{ p.number }}: {{ "{:,}".format(p.first) }}–{{ "{:,}".format(p.last) }}</a>{% endfor %}</nav>{% endif %}
"""

TEMPLATE = (
    HEAD
    + """<h1>moot report: {{ report.name }}</h1>
{% for line in header %}<p class="meta">{{ line }}</p>{% endfor %}
<nav><a href="#plots">Plots</a>{% for s in sections %}<a href="#task-{{ loop.index }}">Task {{ s.task }}</a>{% endfor %}<a href="#transcripts">Transcripts</a></nav>

<h2 id="plots">Plots</h2>
<div class="plots">
{% for p in plots %}<figure data-key="{{ p.key }}"><img alt="{{ p.title }}" src="{{ p.data_uri }}"><figcaption>{{ p.title }}</figcaption></figure>
{% endfor %}</div>

{% for s in sections %}
<h2 id="task-{{ loop.index }}">Task {{ s.task }}</h2>
{% for t in s.tables %}
<h3>{{ t.title }}</h3>
<table class="data" data-task="{{ s.task }}" data-key="{{ t.key }}">
{% set numeric = numeric_columns(t) %}
<thead><tr>{% for c in t.columns %}<th{% if numeric[loop.index0] %} class="num"{% endif %}>{{ c }}</th>{% endfor %}</tr></thead>
<tbody>{% for row in t.rows %}<tr>{% for cell in row %}<td{% if numeric[loop.index0] %} class="num"{% endif %}>{{ cell }}</td>{% endfor %}</tr>{% endfor %}</tbody>
</table>
{% if t.note %}<p class="note">{{ t.note }}</p>{% endif %}
{% endfor %}
{% endfor %}

<h2 id="transcripts">Transcripts</h2>
"""
    + PAGES_NOTE
    + FILTERS
    + """{{ transcripts }}
<script>{{ script }}</script>
</body>
</html>
"""
)

# a further page of a large report's transcripts, linked from the report and from its neighbours
PAGE = (
    HEAD
    + """<h1>moot report: {{ report.name }}</h1>
<p class="meta">Transcripts {{ "{:,}".format(first) }}–{{ "{:,}".format(last) }} of {{ "{:,}".format(total) }} (page {{ number }})</p>
{% set links %}<nav class="pages"><a href="{{ report_href }}">the report</a><a href="{{ previous_href }}">previous page</a>{% if next_href %}<a href="{{ next_href }}">next page</a>{% endif %}</nav>{% endset %}{{ links }}
"""
    + FILTERS
    + """{{ transcripts }}
{{ links }}
<script>{{ script }}</script>
</body>
</html>
"""
)


@dataclass(frozen=True)
class TranscriptPage:
    """A further page of a large report's transcripts: its number (the report's own page is 1), the
    1-based indices of its first and last transcript, and its address from the report's page."""

    number: int
    first: int
    last: int
    href: str


def pages_folder(path: Path) -> Path:
    """Where ``write_html`` puts a large report's further transcript pages: beside the report, in
    REPORT-files/ (runs/NAME.report.html: runs/NAME.report-files/)."""
    return path.with_name(path.stem + "-files")


def page_name(number: int) -> str:
    return f"transcripts-{number:04d}.html"


PAGE_FILE = re.compile(r"transcripts-(\d{4,})\.html")


def check_pages(path: Path) -> None:
    """Refuse (ConfigError), before any work, a link planted where ``write_html`` writes the pages of the
    report at ``path``: its folder, or a page there (``moot.safe_files``; a repository can ship one)."""
    from moot.safe_files import check_file, check_folder

    folder = pages_folder(path)
    check_folder(folder)
    if folder.is_dir():
        for page in sorted(folder.iterdir()):
            if PAGE_FILE.fullmatch(page.name):
                check_file(page)


@functools.cache
def _templates() -> dict[str, Any]:
    from jinja2 import Environment

    environment = Environment(autoescape=True, trim_blocks=False, lstrip_blocks=False)
    return {
        name: environment.from_string(text) for name, text in (("main", TEMPLATE), ("page", PAGE), ("one", TRANSCRIPT))
    }


def _common(report: Report) -> dict[str, Any]:
    from markupsafe import Markup

    return {
        "report": report,
        "tasks": [t.task for t in report.tasks],
        "fixed": fixed,
        "style": Markup(STYLE),
        "script": Markup(SCRIPT),
        "script_hash": SCRIPT_HASH,
        "title_suffix": "",
    }


def _pages(report: Report, page_size: int | None, page_bytes: int | None) -> Iterator[tuple[list[str], int, int]]:
    """The transcripts' HTML, one transcript at a time, in pages: (their HTML, first index, last index), the
    indices 1-based. A page closes at ``page_size`` transcripts, or before the one that would take it past
    ``page_bytes`` (None: no limit). The first page is always yielded, even with no transcript."""
    one = _templates()["one"]
    tasks = [t.task for t in report.tasks]
    page: list[str] = []
    size, first = 0, 1
    for i, t in enumerate(report.transcripts, 1):
        html = one.render(t=t, tasks=tasks, fixed=fixed)
        n = len(html.encode("utf-8"))
        full = page_size is not None and len(page) >= page_size
        if page and (full or (page_bytes is not None and size + n > page_bytes)):
            yield page, first, i - 1
            page, size, first = [], 0, i
        page.append(html)
        size += n
    yield page, first, first + len(page) - 1


def _main_context(
    report: Report, transcripts: list[str], last: int, pages: list[TranscriptPage], folder: str
) -> dict[str, Any]:
    from markupsafe import Markup

    from moot.analysis.plots import plots
    from moot.analysis.render import header_lines
    from moot.analysis.report_sections import sections
    from moot.analysis.tables import numeric_columns

    return _common(report) | {
        "header": header_lines(report),
        "sections": sections(report),
        "plots": plots(report),
        "numeric_columns": numeric_columns,
        "transcripts": Markup("\n".join(transcripts)),
        "pages": pages,
        "first": 1,
        "last": last,
        "total": len(report.transcripts),
        "folder": folder,
    }


def report_html(report: Report) -> str:
    """The whole report as one HTML document, every transcript on it (``write_html`` pages a large run's)."""
    transcripts, _, last = next(_pages(report, None, None))
    return str(_templates()["main"].render(_main_context(report, transcripts, last, [], "")))


def _write(path: Path, template: Any, context: dict[str, Any]) -> None:
    """Render ``template`` into ``path`` as a stream (no whole page in memory), whole or not at all."""
    from moot.outputs import write_output

    write_output(path, lambda target: template.stream(context).dump(str(target), encoding="utf-8"))


def write_html(
    report: Report, path: Path, page_size: int | None = PAGE_SIZE, page_bytes: int | None = PAGE_BYTES
) -> Path:
    """Write the report's HTML at ``path`` and return it.

    A run with at most ``page_size`` transcripts (and at most ``page_bytes`` of them) gets one
    self-contained file. A larger run's report page holds the statistics, plots and its first
    ``page_size`` transcripts; the others go to further pages of at most ``page_size`` (and
    ``page_bytes``) each, in ``pages_folder(path)`` (transcripts-0002.html, ...), linked from the report
    and from each other. Transcripts are read from the store and written one page at a time, so neither
    the file nor the memory of writing it grows with the run (a 20,000-question run: see
    benchmarks/report_size.py). Pages left there by an earlier, longer report are removed."""
    from markupsafe import Markup

    path.parent.mkdir(parents=True, exist_ok=True)
    folder = pages_folder(path)
    check_pages(path)  # and each page again as it is written (write_output)
    pages = _pages(report, page_size, page_bytes)
    first_page, _, first_last = next(pages)
    listed: list[TranscriptPage] = []
    report_href = "../" + quote(path.name)
    pending = next(pages, None)
    number = 2
    while pending is not None:
        following = next(pages, None)
        transcripts, first, last = pending
        folder.mkdir(exist_ok=True)
        previous = report_href + "#transcripts" if number == 2 else page_name(number - 1)
        context = _common(report) | {
            "title_suffix": f" (transcripts {first:,}–{last:,})",
            "transcripts": Markup("\n".join(transcripts)),
            "first": first,
            "last": last,
            "total": len(report.transcripts),
            "number": number,
            "report_href": report_href,
            "previous_href": previous,
            "next_href": page_name(number + 1) if following is not None else None,
        }
        _write(folder / page_name(number), _templates()["page"], context)
        listed.append(TranscriptPage(number, first, last, quote(folder.name) + "/" + page_name(number)))
        pending, number = following, number + 1
    _remove_stale_pages(folder, number - 1)
    context = _main_context(report, first_page, first_last, listed, folder.name)
    _write(path, _templates()["main"], context)
    return path


def _remove_stale_pages(folder: Path, last: int) -> None:
    """Remove the transcript pages numbered above ``last`` that an earlier, longer report left in ``folder``
    (only moot's own page names), and the folder once it is empty."""
    if not folder.is_dir():
        return
    for page in folder.iterdir():
        if (m := PAGE_FILE.fullmatch(page.name)) is not None and int(m.group(1)) > last and page.is_file():
            page.unlink()
    with contextlib.suppress(OSError):
        if not any(folder.iterdir()):
            folder.rmdir()
