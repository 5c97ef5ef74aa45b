"""Biographies: loading Du et al.'s schema, bullet extraction, the judge (scripted model), Du et al.'s
evaluation rules, and the condition's judge setting."""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from typing import Any

import pytest

from moot.backends.base import GenerationRequest
from moot.backends.config import ScriptedBackendConfig
from moot.backends.scripted import ScriptedBackend
from moot.calls import Caller
from moot.debate.agents import Agent, AgentSpec
from moot.debate.protocol_presets import resolve_protocol
from moot.errors import ConfigError
from moot.runner.config import ExperimentConfig
from moot.runner.config_files import parse_experiment
from moot.runner.config_resolve import resolve
from moot.runner.evaluate import evaluate
from moot.runner.experiment import run_experiment
from moot.runner.store import RunStore
from moot.tasks import MetricContext, ParseStatus, get_task
from moot.tasks.biographies import (
    JUDGE,
    SKIP_RULE,
    Verdict,
    bullets,
    judge_biography,
    parse_verdict,
    person_name,
    skip_reason,
)

evaluate_module = importlib.import_module("moot.runner.evaluate")

FIXTURES = Path(__file__).parent / "fixtures" / "tasks"


def test_question_wording_and_extraction() -> None:
    task = get_task("biographies", data=FIXTURES / "biographies_article.json")
    ada = task.items()[0]  # type: ignore[attr-defined]
    assert task.render(ada) == (
        "Give a bullet point biography of Ada Quillfeather highlighting their contributions and achievements "
        "as a computer scientist, with each fact separated with a new line character. "  # Du's trailing space
    )
    extraction = task.extract("Here you go:\n\n- Born in 1961.\n- Designed Quill.\n")
    assert extraction.answer == "Here you go:\nBorn in 1961.\nDesigned Quill."
    assert task.extract("   \n").status is ParseStatus.UNPARSED
    assert task.score("anything", ada) is False  # judged by judge_biography, never here
    assert person_name("Adele Goldberg (computer scientist)") == "Adele Goldberg"


async def test_judge_asks_once_per_fact_and_counts_calls() -> None:
    task = get_task("biographies", data=FIXTURES / "biographies_article.json")
    ada = task.items()[0]  # type: ignore[attr-defined]
    verdicts = {
        "invented": "I am a teapot",
        "Brindlemoor": "Yes.",
        "Quill programming": "No, it says 1990.",
        "Medal": "Uncertain",
    }

    def judge(request, index):  # type: ignore[no-untyped-def]
        prompt = request.messages[0].content
        return next(v for k, v in verdicts.items() if k in prompt.split("consistent with the fact below?")[1])

    backend = ScriptedBackend(judge)
    caller = Caller()
    biography = "- Ada was born in 1961.\n- She created Quill in 1990."
    score = await judge_biography(biography, ada, backend, caller, seed=3)

    assert score.calls == caller.usage.calls == 4 == len(ada.metadata["facts"])
    assert score.verdicts == (Verdict.UNPARSED, Verdict.CONSISTENT, Verdict.INCONSISTENT, Verdict.UNCERTAIN)
    assert score.precision == 0.5  # 1 consistent / (1 consistent + 1 inconsistent)
    first = backend.requests[1]
    assert first.messages[0].content == JUDGE.format(
        person="Ada Quillfeather",
        biography="Ada was born in 1961. She created Quill in 1990.",
        fact=ada.metadata["facts"][1],
    )
    assert first.temperature == 0.0
    assert len({r.seed for r in backend.requests}) == 4


async def test_precision_is_none_when_nothing_is_decided() -> None:
    task = get_task("biographies", data=FIXTURES / "biographies.jsonl")
    cora = task.items()[0]  # type: ignore[attr-defined]
    score = await judge_biography("- something", cora, ScriptedBackend(["uncertain", "I am a teapot"]), Caller())
    assert score.precision is None and score.count(Verdict.UNCERTAIN) == score.count(Verdict.UNPARSED) == 1


@pytest.mark.parametrize("bad", ['{"Ada": 3}', '{"Ada": ""}'])
def test_bad_article_json(tmp_path: Path, bad: str) -> None:
    from moot.errors import ConfigError

    path = tmp_path / "article.json"
    path.write_text(bad)
    with pytest.raises(ConfigError, match=r"article.json: row 1: field 'facts'"):
        get_task("biographies", data=path)


# --- Du et al.'s evaluation rules (biography/eval_conversation.py) ----------------------------


def test_bullets_are_cut_at_the_first_letter_as_du_does() -> None:
    # parse_bullets: each line from its first letter on; a line with no letter is dropped
    text = "- 1961: Born in Brindlemoor.\n  * Designed Quill  \n---\n\n3) Won the Medal\n-Taught at Eastvale"
    assert bullets(text) == ["Born in Brindlemoor.", "Designed Quill  ", "Won the Medal", "Taught at Eastvale"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Yes", Verdict.CONSISTENT),
        ("No.", Verdict.INCONSISTENT),
        ("Uncertain.", Verdict.UNCERTAIN),
        ("Yes, but I am uncertain about the town.", Verdict.UNCERTAIN),  # "uncertain" is looked for first
        ("No... on reflection, yes.", Verdict.CONSISTENT),  # then "yes", anywhere
        ("I'm not sure.", Verdict.INCONSISTENT),  # then "no", anywhere: "not" holds it
        ("I cannot tell.", Verdict.INCONSISTENT),
        ("Unknown", Verdict.INCONSISTENT),
        ("Consistent.", Verdict.UNPARSED),  # none of the three words
        ("Inconsistent", Verdict.UNPARSED),
        ("", Verdict.UNPARSED),
    ],
)
def test_verdicts_are_read_as_du_reads_them(reply: str, expected: Verdict) -> None:
    assert parse_verdict(reply) is expected


def test_a_single_bullet_under_400_characters_is_skipped() -> None:
    assert skip_reason("I'm sorry, I have no information about Ada Quillfeather.") == SKIP_RULE
    assert skip_reason("x" * 399) == SKIP_RULE
    assert skip_reason("x" * 400) is None  # Du: skipped only when shorter than 400
    assert skip_reason("- " + "y" * 399) == SKIP_RULE  # the marker is not counted
    assert skip_reason("- a\n- b") is None  # two bullets are judged however short
    assert skip_reason("") is None  # no bullet at all: Du's code judges it (an empty biography)


def _agent(name: str, reply: str) -> Agent:
    return Agent(AgentSpec(name=name, backend=ScriptedBackendConfig()), ScriptedBackend([reply] * 8))


def _judge_by_fact(request: GenerationRequest, index: int) -> str:
    fact = request.messages[0].content.split("consistent with the fact below?")[1]
    replies = {
        "invented": "Yes",
        "Brindlemoor": "Yes, but I am uncertain about the town.",
        "Quill programming": "No.",
        "Medal": "I'm not sure.",
    }
    return next(v for k, v in replies.items() if k in fact)


async def test_metric_skips_unknowing_replies_and_records_it() -> None:
    task = get_task("biographies", data=FIXTURES / "biographies_article.json")
    ada = task.items()[0]  # type: ignore[attr-defined]
    agents = [
        _agent("agent-1", "- Ada was born in 1961.\n- She created Quill."),
        _agent("agent-2", "I'm sorry, but I don't have any information about Ada Quillfeather."),
        _agent("agent-3", "Here is the biography:\n1961: born in Brindlemoor.\n- She created Quill."),
    ]
    (result,) = (await evaluate(task, resolve_protocol("society", agents=3), agents, [ada])).results
    judge = ScriptedBackend(_judge_by_fact)
    context = MetricContext(judge, Caller(), "judge", 0, temperature=0.5, max_tokens=20)

    metric = await task.metric(result, context)

    assert metric is not None
    # agents 1 and 3 judged: per fact yes, uncertain, no, no -> 1 yes and 2 no each; pooled 2 / (2 + 4)
    assert metric.value == pytest.approx(1 / 3)
    assert metric.detail["skipped_replies"] == 1
    assert metric.detail["agent-2"] == {"verdicts": [], "precision": None, "calls": 0, "skipped": SKIP_RULE}
    verdicts = ["consistent", "uncertain", "inconsistent", "inconsistent"]
    assert metric.detail["agent-1"] == {"verdicts": verdicts, "precision": 1 / 3, "calls": 4, "skipped": None}
    assert metric.detail["agent-3"]["verdicts"] == verdicts
    assert len(judge.requests) == 2 * 4  # the skipped reply costs no call
    shown = {r.messages[0].content.split(": \n ")[1].split(" \n\n")[0] for r in judge.requests}
    assert shown == {
        "Ada was born in 1961. She created Quill.",
        "Here is the biography: born in Brindlemoor. She created Quill.",
    }
    assert {(r.temperature, r.max_tokens) for r in judge.requests} == {(0.5, 20)}  # the judge's own sampling


# --- the condition's judge in an experiment file ------------------------------------------------


def _config(people: Path, judge: dict[str, Any] | None, task: str = "biographies") -> ExperimentConfig:
    condition: dict[str, Any] = {"name": "society", "protocol": "society", "agents": 2}
    if judge is not None:
        condition["judge"] = judge
    selection = {"name": task, "count": 1} | ({"data": str(people)} if task == "biographies" else {})
    return parse_experiment(
        {
            "tasks": [selection],
            "agent": {"backend": {"kind": "scripted", "model": "writer"}},
            "conditions": [condition],
        }
    )


def test_a_condition_names_its_judge_and_the_resolved_config_keeps_it(tmp_path: Path) -> None:
    people = FIXTURES / "biographies.jsonl"
    judge = {"backend": {"kind": "scripted", "model": "checker"}}
    (condition,) = resolve(_config(people, judge))
    assert condition.judge is not None and condition.judge.backend.model_name() == "checker"
    assert condition.judge.sampling.temperature == 0.0  # the judge's default
    assert condition.model_dump(mode="json")["judge"]["backend"]["model"] == "checker"
    (plain,) = resolve(_config(people, None))
    assert plain.judge is None  # an old file without a judge resolves (and fingerprints) as before
    with pytest.raises(ConfigError, match=r"conditions.0.judge: protocol 'society' has no judge .* no task"):
        resolve(_config(people, judge, task="arithmetic"))
    with pytest.raises(ConfigError, match=r"conditions.0.judge.backend: unknown backend kind nonsense"):
        _config(people, {"backend": {"kind": "nonsense"}})


def test_the_named_judge_scores_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backends = {
        "writer": ScriptedBackend(lambda request, index: "- Cora was born in 1975.\n- She wrote a compiler."),
        "checker": ScriptedBackend(lambda request, index: "Yes."),
    }
    monkeypatch.setattr(evaluate_module, "make_backend", lambda cfg: backends[cfg.model])
    judge = {"backend": {"kind": "scripted", "model": "checker"}, "sampling": {"temperature": 0.0, "max_tokens": 9}}
    config = _config(FIXTURES / "biographies.jsonl", judge)
    path = tmp_path / "run.sqlite"
    asyncio.run(run_experiment(config, path))
    store = RunStore.open(path)
    try:
        (result,) = store.results()
        stored_judge = store.conditions()["society"].judge
    finally:
        store.close()
    assert result.metric == 1.0 and result.metric_detail["skipped_replies"] == 0
    assert len(backends["checker"].requests) == 2 * 2  # 2 agents x 2 facts, all asked of the checker
    assert all(r.max_tokens == 9 for r in backends["checker"].requests)
    assert not any("Consider the following biography" in r.messages[-1].content for r in backends["writer"].requests)
    assert stored_judge is not None and stored_judge.backend.model_name() == "checker"
