"""Retention and efficiency in reports: runs of DAR, its baselines and standard debate with the scripted
'numbers' model, and the figures checked by hand (and against the store) in the report, Markdown and HTML."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from moot.analysis import build_report
from moot.analysis.html import report_html
from moot.analysis.records import ConditionReport, Report
from moot.analysis.render import print_report, report_markdown
from moot.backends.base import GenerationRequest
from moot.backends.scripted import SCRIPTED_MODELS, seeded_numbers
from moot.debate.embeddings import MEASURE, embedding_diversity
from moot.runner.config_files import parse_experiment
from tests import helpers
from tests.helpers import WriteRun, arithmetic_experiment, query

QUESTIONS = 2
PICKED = "<b>keep</b> [1, 4]"  # the picky filter's reply: agents 1 and 4, with markup the report must escape
RING = {0: [1, 3], 1: [0, 2], 2: [1, 3], 3: [0, 2]}  # ring k=1 over 4 agents, by hand
FULL = {i: [j for j in range(4) if j != i] for i in range(4)}
# agents answering from only three numbers: four of them always repeat one, so 'distinct' keeps fewer
COARSE = [{"backend": {"kind": "scripted", "model": "coarse"}}] * 4
CONDITIONS = [
    {"name": "single", "protocol": "single"},
    {"name": "society", "protocol": "society"},  # 3 agents, round 0 and one debate round
    {"name": "dar", "protocol": "dar"},  # 4 agents, full topology, rounds 0-2
    {"name": "dar-distinct", "protocol": "dar-distinct", "agents": COARSE},
    {"name": "mad-m2", "protocol": "mad-m2"},
    {"name": "ring-distinct", "protocol": "dar-distinct", "topology": {"kind": "ring", "k": 1}, "agents": COARSE},
    {"name": "dar-picky", "protocol": "dar", "judge": {"backend": {"kind": "scripted", "model": "picky"}}},
]


def picky(request: GenerationRequest, index: int) -> str:
    """A filter that always keeps agents 1 and 4 (otherwise the 'numbers' model)."""
    if "choose a subset of agent_ids" in request.messages[-1].content:
        return PICKED
    return seeded_numbers(request, index)


def coarse(request: GenerationRequest, index: int) -> str:
    """The 'numbers' model's reply, its number taken modulo 3."""
    number = int(seeded_numbers(request, index).rstrip(".").rsplit(" ", 1)[1]) % 3
    return f"Working through it step by step, the answer is {number}."


@pytest.fixture(scope="module")
def run(write_run: WriteRun) -> Path:
    experiment = arithmetic_experiment("retention", CONDITIONS, QUESTIONS, seeds=[0])
    return write_run("retention", experiment, {"picky": picky, "coarse": coarse})


@pytest.fixture(scope="module")
def report(run: Path) -> Report:
    return build_report(run, resamples=200)


def retention_records(path: Path, condition: str) -> list[dict[str, Any]]:
    rows = query(path, "SELECT votes FROM results WHERE condition = ?", condition)
    return [v["retention"] for (votes,) in rows for v in json.loads(votes) if v.get("retention")]


def conditions(report: Report) -> dict[str, ConditionReport]:
    (task,) = report.tasks
    return {c.name: c for c in task.conditions}


def test_dar_whose_filter_always_falls_back_forwards_every_reply(run: Path, report: Report) -> None:
    e = conditions(report)["dar"].efficiency
    assert e is not None and e.rules == ("dar",)
    assert e.rounds == 2 * QUESTIONS  # rounds 1 and 2 of each question
    assert (e.forwarded, e.forwarded_per_round, e.full, e.full_per_round) == (48, 12.0, 48, 12.0)  # 4 agents x 3 peers
    assert e.fewer == 0.0 and e.comparison == "48 of 48 replies forwarded, 0.0% fewer than forwarding every reply"
    assert e.fallbacks == e.rounds == 4  # "numbers" never answers with a list of ids
    (calls, prompt, completion) = query(
        run,
        "SELECT COUNT(*), SUM(prompt_tokens), SUM(completion_tokens) FROM calls "
        "WHERE condition = 'dar' AND agent = 'filter'",
    )[0]
    assert e.filter_calls == calls == 2 * QUESTIONS  # one filter call per debate round
    assert (e.filter_prompt_tokens, e.filter_completion_tokens) == (prompt, completion) and prompt > 0
    # the debate stores no diversity; the report measures the kept replies' stored texts (all 4: fallbacks)
    assert all(r["diversity"] is None and r["diversity_measure"] is None for r in retention_records(run, "dar"))
    replies: dict[tuple[str, int], list[str]] = {}
    for question, index, _, text in sorted(
        query(run, "SELECT question_id, round, agent, text FROM turns WHERE condition = 'dar'")
    ):
        replies.setdefault((question, index), []).append(text)
    kept = [replies[key] for key in sorted(replies) if key[1] < 2]  # rounds 0 and 1: what rounds 1 and 2 kept
    assert len(kept) == 4 and all(len(k) == 4 for k in kept)
    expected = [embedding_diversity(k) for k in kept]  # one round at a time, as a debate measured it
    assert e.diversity == pytest.approx(sum(expected) / 4, abs=1e-6) and e.diversity_measure == MEASURE
    ((mean_anll, turns, mean_perplexity),) = query(
        run, "SELECT AVG(anll), COUNT(anll), AVG(perplexity) FROM turns WHERE condition = 'dar'"
    )
    assert turns == 4 * 3 * QUESTIONS and e.anll_turns == turns
    assert e.anll == pytest.approx(mean_anll) and e.perplexity == pytest.approx(mean_perplexity)


def test_filters_that_keep_fewer_replies_forward_fewer(run: Path, report: Report) -> None:
    by_name = conditions(report)
    m2 = by_name["mad-m2"].efficiency  # keeps the better half: 2 kept agents hear 1 reply, 2 others hear 2
    assert m2 is not None and (m2.rules, m2.forwarded, m2.full, m2.fewer) == (("perplexity-top",), 24, 48, 0.5)
    assert (m2.fallbacks, m2.filter_calls, m2.filter_prompt_tokens) == (0, 0, 0)
    assert "50.0% fewer" in m2.comparison

    distinct = by_name["dar-distinct"].efficiency
    kept = [r["kept"] for r in retention_records(run, "dar-distinct")]
    assert distinct is not None and distinct.rounds == len(kept) == 4
    expected = sum(sum(1 for i in range(4) for j in FULL[i] if f"agent-{j + 1}" in k) for k in kept)
    assert expected == sum(3 * len(k) for k in kept)  # full topology: each kept reply reaches the 3 others
    assert distinct.forwarded == expected < 48 and distinct.full == 48
    assert distinct.fewer == pytest.approx(1 - expected / 48) and distinct.filter_calls == 0

    ring = by_name["ring-distinct"].efficiency  # the same filter on a ring: 4 x 2 peers if all were kept
    kept = [r["kept"] for r in retention_records(run, "ring-distinct")]
    expected = sum(sum(1 for i in range(4) for j in RING[i] if f"agent-{j + 1}" in k) for k in kept)
    assert ring is not None and (ring.forwarded, ring.full) == (expected, 8 * 4)
    assert ring.fewer == pytest.approx(1 - expected / 32)

    picky = by_name["dar-picky"].efficiency  # agents 1 and 4 kept: 1 + 2 + 2 + 1 replies heard per round
    assert picky is not None and (picky.forwarded, picky.full, picky.fewer, picky.fallbacks) == (24, 48, 0.5, 0)
    assert picky.filter_calls == 2 * QUESTIONS


def test_standard_debate_forwards_everything_and_single_has_no_retention(report: Report) -> None:
    by_name = conditions(report)
    society = by_name["society"].efficiency  # 3 agents x 2 peers, one debate round per question
    assert society is not None and society.rules == ("all",)
    assert (society.rounds, society.forwarded, society.full, society.fewer) == (QUESTIONS, 12, 12, 0.0)
    assert (society.fallbacks, society.filter_calls, society.anll, society.anll_turns) == (0, 0, None, 0)
    assert by_name["single"].efficiency is None
    single = [t for t in report.transcripts if t.condition == "single"]
    assert all(r.retention is None and all(turn.retained is None for turn in r.turns) for t in single for r in t.rounds)


def test_transcripts_say_whom_each_agent_heard(run: Path, report: Report) -> None:
    def first(condition: str) -> Any:
        return next(t for t in report.transcripts if t.condition == condition)

    dar = first("dar")
    assert dar.rounds[0].retention is None and all(t.retained is None for t in dar.rounds[0].turns)
    assert dar.rounds[1].retention is not None and dar.rounds[1].retention.fallback is True
    assert [t.retained for t in dar.rounds[1].turns] == [
        f"heard {others} (dar fallback: filter selection invalid or empty, kept all 4)"
        for others in (
            "agent-2, agent-3, agent-4",
            "agent-1, agent-3, agent-4",
            "agent-1, agent-2, agent-4",
            "agent-1, agent-2, agent-3",
        )
    ]
    assert all(t.anll is not None and t.perplexity is not None for r in dar.rounds for t in r.turns)

    picky = first("dar-picky")
    assert [t.retained for t in picky.rounds[2].turns] == [
        "heard agent-4 (dar kept 2 of 4)",
        "heard agent-1, agent-4 (dar kept 2 of 4)",
        "heard agent-1, agent-4 (dar kept 2 of 4)",
        "heard agent-1 (dar kept 2 of 4)",
    ]
    society = first("society")
    assert society.rounds[1].turns[0].retained == "heard agent-2, agent-3 (all replies kept)"
    m2 = first("mad-m2")
    retention = m2.rounds[1].retention
    assert retention is not None and len(retention.kept) == 2
    for i, turn in enumerate(m2.rounds[1].turns):
        heard = ", ".join(f"agent-{j + 1}" for j in FULL[i] if f"agent-{j + 1}" in retention.kept)
        assert turn.retained == f"heard {heard} (perplexity-top kept 2 of 4)"


def test_markdown_and_terminal_show_the_efficiency_table(report: Report) -> None:
    md = report_markdown(report)
    assert "### Retention and efficiency" in md
    assert "| dar | dar | 4 | 48 | 12.00 | 12.00 | 0.0% fewer | 4/4 = 1.000 | 4 |" in md
    assert "| mad-m2 | perplexity-top | 4 | 24 | 6.00 | 12.00 | 50.0% fewer | 0/4 = 0.000 | 0 | 0 | 0 |" in md
    assert "| society | all | 2 | 12 | 6.00 | 6.00 | 0.0% fewer | 0/2 = 0.000 | 0 | 0 | 0 |" in md
    assert "| single |" not in md.split("### Retention and efficiency")[1].split("###")[0]
    assert "society: 12 of 12 replies forwarded, 0.0% fewer than forwarding every reply" in md
    console = Console(record=True, width=250)
    print_report(report, console)
    assert "Retention and efficiency" in console.export_text()


def test_html_shows_the_table_retention_and_uncertainty_and_escapes_the_filter(report: Report) -> None:
    page = report_html(report)
    assert "<h3>Retention and efficiency</h3>" in page and 'data-key="efficiency"' in page
    assert "<td>50.0% fewer</td>" in page
    assert "heard agent-4 (dar kept 2 of 4)" in page
    assert "heard agent-2, agent-3, agent-4 (dar fallback: filter selection invalid or empty, kept all 4)" in page
    assert 'retention <b>dar</b> · <span class="bad">fallback</span>' in page
    assert " · ANLL 0.4" in page and " · perplexity 1." in page
    assert PICKED not in page and "&lt;b&gt;keep&lt;/b&gt; [1, 4]" in page  # the filter's reply is text
    assert page.count("<script") == 1


def test_used_calls_include_judges_and_filters(tmp_path: Path) -> None:
    """The report's and `moot run`'s accounting agree: used calls count helper calls as well as turns."""
    from moot.analysis import build_report
    from moot.runner.store import RunStore
    from moot.runner.summary import summarize

    path = tmp_path / "run.sqlite"
    config = parse_experiment(
        {
            "name": "helpers",
            "tasks": [{"name": "arithmetic", "count": 2}],
            "agent": {"backend": {"kind": "scripted", "model": "numbers"}},
            "conditions": [
                {"name": "dar", "protocol": "dar"},
                {"name": "adaptive", "protocol": "du-adaptive", "rounds": 2},
            ],
        }
    )
    helpers.run(config, path)
    (task,) = build_report(path, resamples=200).tasks
    conditions, _ = summarize(RunStore.open(path))
    by_name = {c.name: c for c in conditions}
    for c in task.conditions:
        # dar: 12 turns + 2 filter calls per question; du-adaptive: 6 turns + 2 judge calls per question
        assert c.usage.used_calls == by_name[c.name].usage.used_calls == {"dar": 2 * 14, "adaptive": 2 * 8}[c.name]


def test_a_debate_measures_no_diversity_and_the_report_measures_the_stored_texts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Retained diversity is off the debate's path: DAR and standard debate runs call nothing of the diversity
    or embeddings code, and the report measures the kept replies' stored texts (token Jaccard, by hand)."""
    from moot.debate import diversity, embeddings

    replies = {"w1": "alpha beta 5", "w2": "alpha gamma 5", "w3": "delta 7", "w4": "epsilon 9"}

    def keep_two(request: GenerationRequest, index: int) -> str:
        assert "choose a subset of agent_ids" in request.messages[-1].content  # the filter is its only call
        return "[1, 2]"

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("retained diversity was measured during a debate")

    for module, name in [
        (diversity, "retained_diversity"),
        (diversity, "text_diversity"),
        (diversity, "jaccard"),
        (embeddings, "available"),
        (embeddings, "_model"),
        (embeddings, "group_diversities"),
        (embeddings, "embedding_diversity"),
        (embeddings, "pairwise_similarity"),
    ]:
        monkeypatch.setattr(module, name, refuse)
    for model, text in replies.items():
        monkeypatch.setitem(SCRIPTED_MODELS, model, lambda request, index, text=text: text)
    monkeypatch.setitem(SCRIPTED_MODELS, "keep-two", keep_two)
    agents = [{"backend": {"kind": "scripted", "model": model}} for model in replies]
    config = parse_experiment(
        {
            "name": "measured",
            "tasks": [{"name": "arithmetic", "count": 1, "seed": 0}],
            "agent": {"backend": {"kind": "scripted", "model": "w1"}},
            "conditions": [
                {
                    "name": "dar",
                    "protocol": "dar",
                    "rounds": 2,
                    "agents": agents,
                    "judge": {"backend": {"kind": "scripted", "model": "keep-two"}},
                },
                {"name": "society", "protocol": "society", "rounds": 2, "agents": agents[:3]},
            ],
        }
    )
    path = tmp_path / "run.sqlite"
    helpers.run(config, path)
    monkeypatch.undo()
    records = {c: retention_records(path, c) for c in ("dar", "society")}
    assert [r["kept"] for r in records["dar"]] == [["agent-1", "agent-2"]] and not records["dar"][0]["fallback"]
    assert all(r["diversity"] is None and r["diversity_measure"] is None for rs in records.values() for r in rs)

    monkeypatch.setattr(embeddings, "available", lambda: False)  # token Jaccard: checked by hand
    report = build_report(path, resamples=200)
    dar, society = conditions(report)["dar"].efficiency, conditions(report)["society"].efficiency
    # dar kept agents 1 and 2: {alpha, beta, 5} and {alpha, gamma, 5} share 2 of 4 tokens
    assert dar is not None and dar.diversity == pytest.approx(1 - 2 / 4)
    # society kept all 3: 1 - 2/4 for agents 1 and 2; agent 3 shares no token with either
    assert society is not None and society.diversity == pytest.approx((0.5 + 1 + 1) / 3)
    assert dar.diversity_measure == society.diversity_measure == "1 - token jaccard"
    md = report_markdown(report)
    assert "| 0.500 | 1 - token jaccard |" in md and "| 0.833 | 1 - token jaccard |" in md
    kept = {t.condition: t.rounds[1].retention for t in report.transcripts}
    assert {c: (x.diversity, x.diversity_measure) for c, x in kept.items() if x is not None} == {
        "dar": (pytest.approx(0.5), "1 - token jaccard"),
        "society": (pytest.approx(2.5 / 3), "1 - token jaccard"),
    }
    page = report_html(report)
    assert "kept diversity 0.500 (1 - token jaccard)" in page and "kept diversity 0.833 (1 - token jaccard)" in page

    # a store written when debates measured it keeps its stored figure and measure's name
    (votes,) = query(path, "SELECT votes FROM results WHERE condition = 'dar'")[0]
    stored = json.loads(votes)
    stored[1]["retention"] |= {"diversity": 0.25, "diversity_measure": "1 - cosine, all-MiniLM-L6-v2"}
    db = sqlite3.connect(path)
    db.execute("UPDATE results SET votes = ? WHERE condition = 'dar'", (json.dumps(stored),))
    db.commit()
    db.close()
    old = conditions(build_report(path, resamples=200))["dar"].efficiency
    assert old is not None and (old.diversity, old.diversity_measure) == (0.25, "1 - cosine, all-MiniLM-L6-v2")
