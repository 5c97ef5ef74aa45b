"""The one registry type (moot.registry) and the extension kinds that became instances of it: its rules for
names, taken names, loading and look-ups; and the kinds that were closed tables before (parametrised task names,
data-file formats, answer formats, the backends whose --model is a GGUF name)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from moot.backends.settings import BACKEND_KINDS
from moot.errors import ConfigError
from moot.registry import Registry, same_definition
from moot.tasks.answer_formats import ANSWER_FORMATS, AnswerFormat
from moot.tasks.base import Extraction, Question
from moot.tasks.datafile import FILE_FORMATS, TextFileTask, data_file_task
from moot.tasks.registry import BUILT_IN, PARAMETRISED, TASKS


class First:
    pass


class Second:
    pass


def test_a_taken_name_is_refused_naming_both_and_the_same_definition_replaces_itself() -> None:
    registry: Registry[type] = Registry("widget")
    assert registry.register("a", First) is First
    assert registry.register("a", First) is First  # the same class again: no error
    with pytest.raises(ConfigError) as refused:
        registry.register("a", Second)
    assert str(refused.value) == (
        "widget 'a' is already registered by tests.test_registry_type.First; "
        "tests.test_registry_type.Second cannot register it too"
    )
    assert registry["a"] is First and list(registry) == ["a"]


def test_a_class_of_the_same_name_from_another_module_is_another_definition() -> None:
    one = type("Plateau", (), {"__module__": "plugin_one", "marker": 1})
    two = type("Plateau", (), {"__module__": "plugin_two", "marker": 2})
    again = type("Plateau", (), {"__module__": "plugin_one", "marker": 3})  # its module run again
    assert not same_definition(one, two)  # no source to compare: never the same
    assert same_definition(one, again)


def test_an_equal_record_made_again_is_the_same_and_another_is_refused() -> None:
    registry: Registry[AnswerFormat] = Registry("answer format")
    registry.register("f", AnswerFormat(None, str.upper))
    registry.register("f", AnswerFormat(None, str.upper))  # its module run again: equal
    with pytest.raises(ConfigError, match="answer format 'f' is already registered"):
        registry.register("f", AnswerFormat(None, str.lower))


def test_two_lambdas_of_one_module_are_told_apart_by_their_source() -> None:
    make_one = lambda: 1  # noqa: E731
    make_two = lambda: 2  # noqa: E731
    assert make_one.__qualname__ == make_two.__qualname__
    registry: Registry[Any] = Registry("factory")
    registry.register("x", make_one)
    with pytest.raises(ConfigError, match="factory 'x' is already registered"):
        registry.register("x", make_two)


def test_a_name_check_and_the_error_type_are_the_kinds_own() -> None:
    registry: Registry[int] = Registry(
        "rule", check_name=lambda name: None if name.isidentifier() else f"bad name {name!r}", error=ValueError
    )
    with pytest.raises(ValueError, match="bad name 'a b'"):
        registry.register("a b", 1)
    registry.register("ab", 1)
    with pytest.raises(ValueError, match="unknown rule 'abc'; did you mean ab"):
        registry.lookup("abc")
    with pytest.raises(ValueError, match="unknown rule 'zzz'; known rules: ab"):
        registry.lookup("zzz")


def test_the_loader_runs_once_on_the_first_read_and_sees_what_is_registered_so_far() -> None:
    seen: list[list[str]] = []

    def load() -> None:
        registry.register("loaded", 2)
        seen.append(list(registry))  # a read while loading: no second load

    registry: Registry[int] = Registry("thing", load=load)
    registry.register("early", 1)  # registering does not load
    assert seen == []
    assert "loaded" in registry and list(registry) == ["early", "loaded"]
    assert len(registry) == 2 and seen == [["early", "loaded"]]


def test_reorder_is_stable() -> None:
    registry: Registry[int] = Registry("n")
    for name, value in (("c", 2), ("a", 1), ("b", 2), ("d", 1)):
        registry.register(name, value)
    registry.reorder(lambda value: value)
    assert list(registry) == ["a", "d", "c", "b"]


# -- tasks -------------------------------------------------------------------------------------------------
def test_moot_s_tasks_register_themselves_in_the_built_in_modules_order() -> None:
    modules = [getattr(TASKS[name], "__module__", "") for name in TASKS]
    moot_modules = [m for m in modules if m in BUILT_IN]
    assert moot_modules == sorted(moot_modules, key=BUILT_IN.index)
    assert list(TASKS)[:4] == ["arithmetic", "gsm8k", "math", "mmlu"]
    assert set(PARAMETRISED) >= {"mmlu", "hh-rlhf", "chess-move", "knights", "gsm8k"}
    with pytest.raises(ConfigError, match="a task's name has no spaces"):
        TASKS.register("two words", TextFileTask)


# -- data-file formats ---------------------------------------------------------------------------------------
class UpperFileTask(TextFileTask):
    """A plug-in's format: the text format, but read in capitals."""

    format: ClassVar[str] = "upper"

    def extract(self, text: str) -> Extraction:
        return Extraction.of(text.strip().splitlines()[-1].upper())

    def score(self, answer: str, question: Question) -> bool:
        return answer == str(question.gold).upper()


@pytest.fixture
def upper_format() -> Iterator[None]:
    FILE_FORMATS.register("upper", UpperFileTask)
    yield
    FILE_FORMATS.pop("upper")


def test_a_registered_data_file_format_is_a_task_and_an_unknown_one_names_the_known(
    tmp_path: Path, upper_format: None
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"q": "Capital of France?", "a": "Paris"}) + "\n")
    task = data_file_task("caps", data, "upper", {"question": "q", "answer": "a"})
    [question] = task.items()
    answer = task.extract("I think it is\nparis").answer
    assert answer == "PARIS" and task.score(answer, question)
    with pytest.raises(ConfigError, match=r"unknown format 'lower'; choose number, choice, text or upper"):
        data_file_task("caps", data, "lower", {"question": "q", "answer": "a"})


def test_an_experiment_file_takes_a_registered_format(tmp_path: Path, upper_format: None) -> None:
    from moot.runner.config import TaskSelection

    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"q": "Capital of France?", "a": "Paris"}) + "\n")
    keys = {"name": "caps", "data": str(data), "fields": {"question": "q", "answer": "a"}}
    assert TaskSelection(format="upper", **keys).format == "upper"
    with pytest.raises(ValueError, match=r"unknown format 'lower'; choose number, choice, text or upper"):
        TaskSelection(format="lower", **keys)


# -- answer formats ----------------------------------------------------------------------------------------
def test_a_task_declaring_a_registered_answer_format_is_re_read_by_the_strict_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from moot.analysis import readers

    class Shouted(TextFileTask):
        answer_format = "shouted"

    monkeypatch.setattr(readers, "_task", lambda name: Shouted.__new__(Shouted) if name == "shouted-task" else None)
    strict, paper = readers.READERS["strict"], readers.READERS["paper"]
    assert not strict.applies("shouted-task")  # its format is not registered yet
    ANSWER_FORMATS.register("shouted", AnswerFormat(None, lambda text: text.upper() if text.isupper() else None))
    try:
        assert strict.applies("shouted-task") and not paper.applies("shouted-task")
        assert strict.read("shouted-task", "PARIS") == "PARIS"
        assert strict.read("shouted-task", "paris") is None
    finally:
        ANSWER_FORMATS.pop("shouted")


def test_moot_s_tasks_declare_the_answer_formats_the_readers_know() -> None:
    from moot.analysis.readers import task_kind
    from moot.tasks import get_task

    assert [task_kind(name) for name in ("arithmetic", "gsm8k", "mmlu", "csqa", "knights:4", "biographies")] == [
        "arithmetic",
        "gsm8k",
        "mmlu",
        "choice",
        "knights:4",
        None,
    ]
    assert type(get_task("gsm8k:math-verify")).answer_format == "gsm8k"
    assert {"arithmetic", "gsm8k", "mmlu", "choice", "knights:2", "knights:8"} <= set(ANSWER_FORMATS)


# -- backends ------------------------------------------------------------------------------------------------
def test_a_kind_says_whether_its_model_is_a_gguf_name() -> None:
    assert {kind for kind, cls in BACKEND_KINDS.items() if cls.gguf_model} == {"local", "llama-cpp"}
