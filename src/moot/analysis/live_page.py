"""The live view's page (``moot view``): HTML, the report's style and one script, served by ``moot.analysis.live``.

The script polls ``/api/progress`` every 2 seconds and reloads the transcript list when a result is stored.
It builds every element with ``createElement`` and sets every piece of data as ``textContent``, never as
markup, and the page's Content-Security-Policy (``CSP``) allows only this script (by its sha256) and
requests to the page's own server: a model's ``<script>`` or ``onerror`` shows as text and never runs.
"""

from __future__ import annotations

import base64
import hashlib

from moot.analysis.html import STYLE

SCRIPT = r"""
(function () {
  "use strict";
  var POLL_MS = 2000;
  var state = { offset: 0, limit: 50, version: null, open: null, conditions: "", timer: null, asked: 0 };

  function $(id) { return document.getElementById(id); }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) { continue; }
      parent.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return parent;
  }
  function int(n) { return n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US"); }
  function fixed(x, d) { return x === null || x === undefined ? "—" : Number(x).toFixed(d); }
  function cost(x) {
    if (x === null || x === undefined) { return "—"; }
    return x === 0 ? "$0" : "$" + Number(x).toFixed(x < 1 ? 4 : 2);
  }
  function duration(s) {
    if (s === null || s === undefined) { return "—"; }
    s = Math.round(s);
    if (s < 60) { return s + " s"; }
    var m = Math.floor(s / 60);
    if (m < 60) { return m + " min " + String(s % 60).padStart(2, "0") + " s"; }
    var h = Math.floor(m / 60);
    return h + " h " + String(m % 60).padStart(2, "0") + " min";
  }
  function mark(ok) { return el("span", ok ? "✓" : "✗", ok ? "ok" : "bad"); }
  function answer(a) { return a === null || a === undefined ? "·" : a; }

  function get(url) {
    return fetch(url, { cache: "no-store" }).then(function (r) {
      return r.json().then(function (data) {
        if (!r.ok) { throw new Error(data.error || ("HTTP " + r.status)); }
        return data;
      });
    });
  }
  function problem(err) { $("error").textContent = err ? String(err.message || err) : ""; }

  // -- progress ------------------------------------------------------------------------
  function cells(tr, c, total) {
    var frac = c.planned ? Math.min(1, c.done / c.planned) : 0;
    var done = el("td", null, "num done");
    done.dataset.done = c.done;
    done.dataset.planned = c.planned;
    var bar = el("div", null, "bar"), fill = el("div", null, "fill");
    fill.style.width = (100 * frac).toFixed(1) + "%";
    add(bar, fill);
    add(done, el("span", int(c.done) + " / " + int(c.planned), "count"), bar);
    add(tr, done);
    if (total) {
      add(tr, el("td", "", "num"), el("td", "", "num"));
    } else {
      add(tr, el("td", fixed(c.accuracy, 3), "num accuracy"),
        el("td", c.low === null ? "—" : "[" + fixed(c.low, 3) + ", " + fixed(c.high, 3) + "]", "num interval"));
    }
    add(tr, el("td", int(c.unparsed), "num unparsed"), el("td", int(c.errors), "num errors"),
      el("td", int(c.failed_calls), "num failed"), el("td", int(c.calls), "num calls"),
      el("td", int(c.prompt_tokens) + " + " + int(c.completion_tokens), "num tokens"),
      el("td", cost(c.cost), "num cost"),
      el("td", c.planned > 0 && c.done >= c.planned ? "done" : duration(c.eta_s), "num eta"));
  }

  function renderProgress(p) {
    document.title = "moot view: " + p.name;
    $("name").textContent = "moot view: " + p.name;
    $("path").textContent = p.path;
    $("status").textContent = p.status + (p.session.running ? " (session " + p.session.id + ")" : "");
    $("status").className = p.status === "running" ? "ok" : "";
    $("updated").textContent = new Date(p.now * 1000).toLocaleTimeString("en-GB");
    $("ci-note").textContent = p.seeds > 1
      ? "Intervals: 95%, the question as the unit (cluster bootstrap over " + p.seeds + " seeds)."
      : "Intervals: 95% Wilson.";
    var body = $("progress-body");
    body.replaceChildren();
    p.conditions.forEach(function (c) {
      var tr = el("tr");
      tr.dataset.condition = c.name;
      add(tr, el("td", c.name, "name"));
      cells(tr, c, false);
      add(body, tr);
    });
    var foot = $("progress-total");
    foot.replaceChildren();
    var tr = el("tr");
    tr.id = "total";
    add(tr, el("th", "total"));
    cells(tr, p.total, true);
    add(foot, tr);
    var names = p.conditions.map(function (c) { return c.name; });
    if (names.join("\n") !== state.conditions) {
      state.conditions = names.join("\n");
      var select = $("f-condition"), chosen = select.value;
      select.replaceChildren(el("option", "every condition"));
      select.firstChild.value = "";
      names.forEach(function (n) { var o = el("option", n); o.value = n; add(select, o); });
      select.value = names.indexOf(chosen) >= 0 ? chosen : "";
    }
    var version = p.version.join(":");
    if (version !== state.version) {
      state.version = version;
      loadResults();
    }
  }

  function poll() {
    get("/api/progress").then(function (p) { problem(null); renderProgress(p); })
      .catch(problem)
      .then(function () { state.timer = setTimeout(poll, POLL_MS); });
  }

  // -- the transcript list -------------------------------------------------------------
  function loadResults() {
    var params = new URLSearchParams({
      condition: $("f-condition").value, outcome: $("f-outcome").value, q: $("f-q").value,
      offset: String(state.offset), limit: String(state.limit)
    });
    var asked = ++state.asked;  // a slower, older answer never overwrites a newer one
    get("/api/results?" + params.toString())
      .then(function (page) { if (asked === state.asked) { renderResults(page); } }).catch(problem);
  }

  function renderResults(page) {
    var body = $("results-body");
    body.replaceChildren();
    page.items.forEach(function (r) {
      var tr = el("tr", null, "result" + (r.correct ? " right" : " wrong"));
      tr.dataset.condition = r.condition;
      tr.dataset.question = r.question_id;
      tr.dataset.seed = r.seed;
      tr.tabIndex = 0;
      var status = r.status === "answered" ? "" : r.status;
      add(tr, add(el("td"), mark(r.correct)), el("td", r.question_id, "qid"), el("td", r.seed, "num"),
        el("td", r.condition), el("td", answer(r.final_answer), "answer"), el("td", r.gold, "answer"),
        el("td", status, r.status === "error" ? "bad" : ""), el("td", r.prompt, "prompt"));
      var key = [r.condition, r.task, r.question_id, r.seed].join("\u0000");
      if (state.open === key) { tr.classList.add("open"); }
      function choose() { openTranscript(r); }
      tr.addEventListener("click", choose);
      tr.addEventListener("keydown", function (e) { if (e.key === "Enter") { choose(); } });
      add(body, tr);
    });
    var first = page.total ? page.offset + 1 : 0, last = page.offset + page.items.length;
    $("page-info").textContent = int(first) + "–" + int(last) + " of " + int(page.total);
    $("prev").disabled = page.offset <= 0;
    $("next").disabled = last >= page.total;
    if (!page.total) { add(body, add(el("tr"), el("td", "no finished question matches", "empty"))); }
  }

  function refilter() { state.offset = 0; loadResults(); }

  // -- one transcript ------------------------------------------------------------------
  function openTranscript(r) {
    state.open = [r.condition, r.task, r.question_id, r.seed].join("\u0000");
    var rows = document.querySelectorAll("#results-body tr.result");
    rows.forEach(function (row) {
      row.classList.toggle("open", row.dataset.condition === r.condition &&
        row.dataset.question === r.question_id && row.dataset.seed === String(r.seed));
    });
    var params = new URLSearchParams({ condition: r.condition, task: r.task, question_id: r.question_id,
      seed: String(r.seed) });
    get("/api/transcript?" + params.toString()).then(renderTranscript).catch(problem);
  }

  function details(summary, cls) {
    var d = el("details", null, cls);
    add(d, el("summary", summary));
    return d;
  }

  function renderTurn(turn) {
    var div = el("div", null, "turn");
    div.dataset.agent = turn.agent;
    var head = el("div", null, "turn-head");
    add(head, el("b", turn.agent), " → answer ", el("b", turn.parsed ? turn.answer : "· (unparsed)"), " ",
      mark(turn.correct));
    var bits = [];
    if (turn.confidence !== null) { bits.push("confidence " + fixed(turn.confidence, 2)); }
    bits.push(turn.finish_reason, int(turn.prompt_tokens) + " + " + int(turn.completion_tokens) + " tokens");
    add(head, " · " + bits.join(" · "));
    if (turn.reasoning_only) { add(head, " · ", el("span", "no content after reasoning", "bad")); }
    add(div, head);
    var n = turn.shown_new.length;
    var shown = details("shown this round: " + n + " message" + (n === 1 ? "" : "s") +
      (turn.shown_count !== n ? " (context " + turn.shown_count + ")" : ""), "shown");
    turn.shown_new.forEach(function (m) {
      add(shown, add(el("div", null, "msg"), el("span", m[0], "role"), el("pre", m[1])));
    });
    add(div, shown);
    if (turn.retained !== null) { add(div, add(el("div", null, "retained"), el("span", "retained", "role"), " " + turn.retained)); }
    if (turn.reasoning !== null) { add(div, add(details("reasoning", "reasoning"), el("pre", turn.reasoning))); }
    add(div, el("pre", turn.text, "reply"));
    if (turn.seen !== null) { add(div, add(details("what its peers were shown of it", "seen"), el("pre", turn.seen))); }
    return div;
  }

  function verdict(label, v) {
    var d = el("div", null, "vote");
    add(d, label + ": answer ", el("b", answer(v.answer)), v.confidence !== null ? ", confidence " + v.confidence : "");
    if (v.text) { add(d, add(details(label + "'s reply", "shown"), el("pre", v.text))); }
    return d;
  }

  function renderTranscript(t) {
    var box = $("transcript");
    box.replaceChildren();
    box.hidden = false;
    var title = el("h3", null, "t-title");
    add(title, mark(t.correct), " ", el("span", t.question_id), " · seed " + t.seed + " · " + t.condition);
    add(box, title);
    add(box, add(el("p"), "Question (" + t.task + "):"), el("pre", t.prompt, "prompt"));
    var meta = add(el("p"), "gold ", el("b", t.gold), " · final ", el("b", answer(t.final_answer)),
      " (" + t.status + ") after " + t.rounds_used + " round" + (t.rounds_used === 1 ? "" : "s") +
      " · stop: " + t.stop_reason);
    if (t.error) { add(meta, " · error: ", el("code", t.error, "bad")); }
    add(box, meta);
    t.rounds.forEach(function (r) {
      var div = el("div", null, "round");
      div.dataset.round = r.index;
      add(div, el("h4", "Round " + r.index));
      if (r.pool) { add(div, el("div", "candidate pool: " + r.pool.sampled + " sampled, " + r.pool.kept + " retained", "retention")); }
      if (r.retention) {
        add(div, el("div", "retention " + r.retention.rule + (r.retention.fallback ? " (fallback: all kept)" : "") +
          " · kept " + (r.retention.kept.join(", ") || "none"), "retention"));
      }
      r.turns.forEach(function (turn) { add(div, renderTurn(turn)); });
      var vote = el("div", null, "vote");
      var tally = r.votes.map(function (v) { return v[0] + " ×" + v[1]; }).join(", ") || "no parsed answer";
      add(vote, "vote: " + tally + " → ", el("b", answer(r.winner)), " ", mark(r.winner_correct));
      add(div, vote);
      if (r.judge) { add(div, verdict("judge", r.judge)); }
      add(box, div);
    });
    if (t.final_judge) { add(box, verdict("final judge", t.final_judge)); }
  }

  // -- controls ------------------------------------------------------------------------
  var typing = null;
  $("f-q").addEventListener("input", function () { clearTimeout(typing); typing = setTimeout(refilter, 250); });
  $("f-condition").addEventListener("change", refilter);
  $("f-outcome").addEventListener("change", refilter);
  $("prev").addEventListener("click", function () { state.offset = Math.max(0, state.offset - state.limit); loadResults(); });
  $("next").addEventListener("click", function () { state.offset += state.limit; loadResults(); });
  poll();
})();
"""

LIVE_STYLE = """
body { max-width: 1500px; }
header h1 { margin-bottom: 0; }
#error { margin-left: 1rem; }
td.done { min-width: 9rem; }
.bar { height: 5px; background: #e3e7ee; border-radius: 3px; margin-top: 3px; }
.bar .fill { height: 100%; background: #27864a; border-radius: 3px; transition: width .4s; }
.split { display: grid; grid-template-columns: minmax(0, 6fr) minmax(0, 5fr); gap: 1.2rem; align-items: start; }
@media (max-width: 1000px) { .split { grid-template-columns: minmax(0, 1fr); } }
.split > div { overflow-x: auto; }
#results { width: 100%; }
#results tr.result { cursor: pointer; }
#results tr.result:hover, #results tr.result.open { background: #e8f0fb; }
#results td.prompt { color: #3d4754; max-width: 12rem; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#results td.qid, #results td.answer { white-space: nowrap; }
#results td.empty { color: #5b6675; }
#transcript { border: 1px solid #d6dbe3; background: white; padding: .2rem .9rem .8rem; position: sticky; top: .5rem;
              max-height: calc(100vh - 1rem); overflow: auto; }
#transcript pre.prompt { max-height: 10rem; }
.t-title { margin-top: .6rem; }
.filters input[type=search] { min-width: 16rem; }
"""

PAGE = (
    """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>moot view</title>
<style>"""
    + STYLE
    + LIVE_STYLE
    + """</style>
</head>
<body>
<header>
<h1 id="name">moot view</h1>
<p class="meta">status <b id="status">…</b> · <span id="path"></span> · updated <span id="updated">…</span>
<span id="error" class="bad"></span></p>
</header>
<h2>Progress</h2>
<table class="data" id="progress">
<thead><tr><th>condition</th><th>done / planned</th><th>accuracy</th><th>95% CI</th><th>unparsed</th><th>errors</th>
<th>failed calls</th><th>calls</th><th>tokens (prompt + completion)</th><th>cost</th><th>ETA</th></tr></thead>
<tbody id="progress-body"></tbody>
<tfoot id="progress-total"></tfoot>
</table>
<p class="note"><span id="ci-note"></span> Calls, tokens and cost: the calls each condition paid for (stored under
it; shared round-0 calls count once). Cost at the run's [prices] (— without them). ETA: the questions left at this
session's rate; updated every 2 s.</p>
<h2>Transcripts</h2>
<div class="filters">
<label>Search <input id="f-q" type="search" placeholder="question text or id" autocomplete="off"></label>
<label>Condition <select id="f-condition"><option value="">every condition</option></select></label>
<label>Outcome <select id="f-outcome"><option value="">every one</option><option value="right">right</option>
<option value="wrong">wrong</option><option value="unparsed">unparsed</option><option value="abstained">abstained</option>
<option value="error">error</option></select></label>
<button id="prev" type="button">← newer</button><span id="page-info"></span><button id="next" type="button">older →</button>
</div>
<div class="split">
<div><table class="data" id="results">
<thead><tr><th></th><th>question</th><th>seed</th><th>condition</th><th>final</th><th>gold</th><th>status</th><th>prompt</th></tr></thead>
<tbody id="results-body"></tbody>
</table></div>
<section id="transcript" hidden></section>
</div>
<script>"""
    + SCRIPT
    + """</script>
</body>
</html>
"""
)

_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
CSP = (
    f"default-src 'none'; script-src 'sha256-{_HASH}'; style-src 'unsafe-inline'; connect-src 'self'; "
    "img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
