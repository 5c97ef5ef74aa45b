"""Biographies: loading Du et al.'s schema, bullet extraction, and the judge (scripted model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from moot.backends.scripted import ScriptedBackend
from moot.calls import Caller
from moot.tasks import ParseStatus, get_task
from moot.tasks.biographies import JUDGE, Verdict, judge_biography, person_name

FIXTURES = Path(__file__).parent / "fixtures" / "tasks"


def test_question_wording_and_extraction() -> None:
    task = get_task("biographies", data=FIXTURES / "biographies_article.json")
    ada = task.items()[0]  # type: ignore[attr-defined]
    assert task.render(ada) == (
        "Give a bullet point biography of Ada Quillfeather highlighting their contributions and achievements "
        "as a computer scientist, with each fact separated with a new line character."
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
    score = await judge_biography("- something", cora, ScriptedBackend(["uncertain", "not sure"]), Caller())
    assert score.precision is None and score.count(Verdict.UNCERTAIN) == 2


@pytest.mark.parametrize("bad", ['{"Ada": 3}', '{"Ada": ""}'])
def test_bad_article_json(tmp_path: Path, bad: str) -> None:
    from moot.errors import ConfigError

    path = tmp_path / "article.json"
    path.write_text(bad)
    with pytest.raises(ConfigError, match=r"article.json: row 1: field 'facts'"):
        get_task("biographies", data=path)
