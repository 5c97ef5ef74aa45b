"""A data file as a task, with no Python: each format on small hand-made files (prompt, extraction,
scoring, bad rows), the experiment keys and command-line flags, paths against the experiment file, a
scripted run, and the fingerprints of experiments written before these keys."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from moot.cli import app
from moot.errors import ConfigError
from moot.runner.config import TaskSelection, task_of
from moot.runner.config_files import load_experiment, parse_experiment
from moot.runner.config_resolve import experiment_hash
from moot.runner.options import AgentOptions, FileTaskOptions
from moot.runner.store import RunStore
from moot.tasks.base import ParseStatus
from moot.tasks.datafile import ChoiceFileTask, NumberFileTask, TextFileTask, data_file_task, normalise, text_answer

ROOT = Path(__file__).parent.parent


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path: Path, rows: list[dict[str, object]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


SUMS: list[dict[str, object]] = [
    {"q": "What is 2 + 3?", "a": 5},
    {"q": "What is half of 3?", "a": "1.5"},
    {"q": "1,000 + 1?", "a": "1,001"},
]


# -- number ---------------------------------------------------------------------------------------


def test_number_format_renders_reads_and_scores(tmp_path: Path) -> None:
    task = data_file_task(
        "sums", write_jsonl(tmp_path / "sums.jsonl", SUMS), "number", {"question": "q", "answer": "a"}
    )
    assert isinstance(task, NumberFileTask)
    first, second, third = task.items()
    assert (first.id, first.gold, second.gold, third.gold) == ("1", "5", "1.5", "1001")
    assert task.render(first) == "What is 2 + 3? Make sure to state your answer at the end of the response."
    reply = task.read_reply("2 + 3 makes 5, so the answer is 5.", first)
    assert (reply.answer, reply.status) == ("5", ParseStatus.PARSED)
    assert task.score("5.0", first) and not task.score("6", first)
    assert task.score(task.read_reply("Half of 3 is 1.50", second).answer or "", second)
    assert task.read_reply("I do not know.", first).status is ParseStatus.UNPARSED
    # Du et al.'s arithmetic wording, unchanged
    assert task.debate_wording(first).reflection == (
        "Can you verify that your answer is correct. Please reiterate your answer, making sure to state your "
        "answer at the end of the response."
    )
    assert task.card().metric == "accuracy (numeric equality)"


def test_number_format_from_csv_with_a_prompt_and_ids(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "sums.csv", [{"key": "k1", "x": "2", "y": "3", "sum": "5"}])
    task = data_file_task(
        "sums", path, "number", {"question": "x", "answer": "sum", "id": "key"}, prompt="Add {question} and {y}."
    )
    (question,) = task.items()
    assert (question.id, question.prompt, question.gold) == ("k1", "Add 2 and 3.", "5")
    provenance = task.provenance()
    assert provenance["format"] == "number" and provenance["fields"] == {"question": "x", "answer": "sum", "id": "key"}
    assert provenance["file"] == str(path) and len(provenance["sha256"]) == 64


def test_bad_number_rows_name_the_file_row_and_field(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [{"q": "ok", "a": 1}, {"q": "What?", "a": "five"}])
    with pytest.raises(
        ConfigError, match=r"bad.jsonl: row 2: field 'a' must be a number \(format number\), got 'five'"
    ):
        data_file_task("t", path, "number", {"question": "q", "answer": "a"})
    path = write_jsonl(tmp_path / "missing.jsonl", [{"q": "ok", "a": 1}, {"a": 2}])
    with pytest.raises(ConfigError, match=r"missing.jsonl: row 2: field 'q' is missing"):
        data_file_task("t", path, "number", {"question": "q", "answer": "a"})
    path = write_csv(tmp_path / "empty.csv", [{"q": "ok", "a": ""}])
    with pytest.raises(
        ConfigError, match=r"empty.csv: row 1: field 'a' is missing|empty.csv: row 1: field 'a' is empty"
    ):
        data_file_task("t", path, "number", {"question": "q", "answer": "a"})
    path = write_jsonl(tmp_path / "prompt.jsonl", [{"q": "ok", "a": 1}])
    with pytest.raises(ConfigError, match=r"prompt.jsonl: row 1: field 'unit' is missing"):
        data_file_task("t", path, "number", {"question": "q", "answer": "a"}, prompt="{question} in {unit}")
    with pytest.raises(ConfigError, match="no such file"):
        data_file_task("t", tmp_path / "absent.jsonl", "number", {"question": "q", "answer": "a"})


# -- choice ---------------------------------------------------------------------------------------

CAPITALS: list[dict[str, object]] = [
    {"question": "Capital of France?", "options": ["London", "Paris", "Rome"], "gold": "B"},
    {"question": "Capital of Peru?", "options": ["Lima", "Quito"], "gold": 0},
    {"question": "Capital of Japan?", "options": ["Osaka", "Kyoto", "Tokyo", "Nara"], "gold": "Tokyo"},
]
CHOICE_FIELDS = {"question": "question", "answer": "gold", "choices": "options"}


def test_choice_format_letters_du_wording_and_reading(tmp_path: Path) -> None:
    task = data_file_task("caps", write_jsonl(tmp_path / "caps.jsonl", CAPITALS), "choice", CHOICE_FIELDS)
    assert isinstance(task, ChoiceFileTask)
    france, peru, japan = task.items()
    assert (france.gold, peru.gold, japan.gold) == ("B", "A", "C")
    assert task.render(france) == (
        "Can you answer the following question as accurately as possible?\n\nCapital of France?\n\n"
        "(A) London\n(B) Paris\n(C) Rome\n\n"
        "Explain your answer, putting the answer in the form (X) at the end of your response."
    )
    assert task.debate_wording(france).instruction == " Put your answer in the form (X) at the end of your response."
    assert task.read_reply("Paris is the capital, so (B).", france).answer == "B"
    assert task.score("B", france) and not task.score("A", france)
    # a letter beyond the question's choices is no answer
    assert task.read_reply("The answer is (C).", peru).status is ParseStatus.UNPARSED
    assert task.read_reply("The answer is (D).", japan).answer == "D"
    assert task.read_answer("B", france).answer == "B"


def test_choice_format_from_csv_joins_choices_with_a_bar(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "caps.csv",
        [
            {"q": "Capital of Kenya?", "c": "Nairobi | Mombasa", "g": "a"},
            {"q": "Capital of Chad?", "c": "Abuja|N'Djamena", "g": "1"},
        ],
    )
    kenya, chad = data_file_task("caps", path, "choice", {"question": "q", "answer": "g", "choices": "c"}).items()
    assert kenya.metadata["choices"] == ["Nairobi", "Mombasa"] and kenya.gold == "A"
    assert chad.prompt.endswith("(A) Abuja\n(B) N'Djamena") and chad.gold == "B"


def test_bad_choice_rows_are_clear_errors(tmp_path: Path) -> None:
    def load(rows: list[dict[str, object]]) -> None:
        data_file_task("caps", write_jsonl(tmp_path / "bad.jsonl", rows), "choice", CHOICE_FIELDS)

    with pytest.raises(
        ConfigError, match=r"bad.jsonl: row 1: field 'gold' is 'D': not a letter A-C, a 0-based index below 3"
    ):
        load([{"question": "Q?", "options": ["x", "y", "z"], "gold": "D"}])
    with pytest.raises(
        ConfigError,
        match=r"row 1: field 'gold' is '1': ambiguous \(as an index choice B, as a choice's text choice A\)",
    ):
        write_csv(tmp_path / "bad.csv", [{"question": "Q?", "options": "1|2", "gold": "1"}])
        data_file_task("caps", tmp_path / "bad.csv", "choice", CHOICE_FIELDS)
    with pytest.raises(ConfigError, match=r"row 1: field 'options' must have 2 to 10 choices, got 1"):
        load([{"question": "Q?", "options": ["x"], "gold": 0}])
    with pytest.raises(ConfigError, match=r"row 1: field 'options' must be a list of strings, got a string"):
        load([{"question": "Q?", "options": "x|y", "gold": 0}])


# -- text -----------------------------------------------------------------------------------------


def test_normalise_is_squads() -> None:
    assert normalise("The Eiffel Tower.") == "eiffel tower"
    assert normalise("  an  APPLE, a day!") == "apple day"
    assert normalise("“Théâtre” — l’Odéon") == "théâtre lodéon"
    assert normalise("The") == ""


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("Let me think.\nParis is in France.\nAnswer: Paris", "Paris"),
        ("I believe the answer is **Paris**.", "**Paris**."),
        ("My final answer is: Lima\n\n", "Lima"),
        ("Answer:\n\n  Ottawa  \n", "Ottawa"),
        ("Answer: Rome. Actually, answer: Paris", "Paris"),
        ("Thinking...\nNairobi\n\n", "Nairobi"),
        ("", None),
        ("Answer: the.", None),
    ],
)
def test_text_answer_reads_the_stated_answer(reply: str, answer: str | None) -> None:
    assert text_answer(reply) == answer


def test_text_format_renders_and_scores_by_normalised_exact_match(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "caps.jsonl", [{"n": "c1", "country": "France", "city": "Paris"}])
    task = data_file_task(
        "caps", path, "text", {"question": "country", "answer": "city", "id": "n"}, prompt="Capital of {question}?"
    )
    assert isinstance(task, TextFileTask)
    (question,) = task.items()
    assert question.id == "c1"
    assert task.render(question) == (
        'Capital of France? Make sure to state your answer at the end of the response, as "Answer: <your answer>".'
    )
    assert task.score(task.read_reply("It is the city of light.\nAnswer: the paris!", question).answer or "", question)
    assert not task.score(task.read_reply("Answer: Paris, France", question).answer or "", question)
    assert "normalised exact match" in task.card().metric
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"country": "X", "city": "The."}])
    with pytest.raises(ConfigError, match=r"bad.jsonl: row 1: field 'city' is 'The.': nothing is left"):
        data_file_task("caps", bad, "text", {"question": "country", "answer": "city"})


def test_parquet_files_are_read(tmp_path: Path) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    parquet = pytest.importorskip("pyarrow.parquet")
    table = pyarrow.table({"q": ["Capital of Peru?"], "opts": [["Lima", "Quito"]], "g": [0]})
    parquet.write_table(table, tmp_path / "caps.parquet")
    (question,) = data_file_task(
        "caps", tmp_path / "caps.parquet", "choice", {"question": "q", "answer": "g", "choices": "opts"}
    ).items()
    assert (question.id, question.gold, question.metadata["choices"]) == ("1", "A", ["Lima", "Quito"])


# -- experiment keys and flags --------------------------------------------------------------------


def selection(**keys: object) -> TaskSelection:
    return TaskSelection.model_validate({"name": "mine", "data": "x.jsonl", "count": 1} | keys)


def test_task_selection_checks_the_file_task_keys() -> None:
    fields = {"question": "q", "answer": "a"}
    with pytest.raises(ValueError, match="needs data"):
        selection(data=None, format="number", fields=fields)
    with pytest.raises(ValueError, match="needs data"):
        selection(data="hub", format="number", fields=fields)
    with pytest.raises(ValueError, match="'gsm8k' is a built-in task"):
        selection(name="gsm8k", format="number", fields=fields)
    with pytest.raises(ValueError, match="'mmlu:anatomy' is a built-in task"):
        selection(name="mmlu:anatomy", format="number", fields=fields)
    with pytest.raises(ValueError, match="give format too"):
        selection(fields=fields)
    with pytest.raises(ValueError, match="give format too"):
        selection(prompt="Q: {question}")
    with pytest.raises(ValueError, match="format choice needs fields choices"):
        selection(format="choice", fields=fields)
    with pytest.raises(ValueError, match="unknown: label"):
        selection(format="number", fields=fields | {"label": "l"})
    with pytest.raises(ValueError, match="may not show the gold answer"):
        selection(format="number", fields=fields, prompt="{question} ({a})")
    with pytest.raises(ValueError, match="not a field name in braces"):
        selection(format="number", fields=fields, prompt="{question.upper}")
    with pytest.raises(ValueError, match="literal braces"):
        selection(format="number", fields=fields, prompt="{question")
    with pytest.raises(ValueError, match="format"):
        selection(format="essay", fields=fields)


def test_unset_file_keys_are_left_out_of_the_dump() -> None:
    assert set(selection().model_dump(mode="json")) == {"name", "data", "split", "count", "seed", "ids"}
    dumped = selection(format="text", fields={"question": "q", "answer": "a"}).model_dump(mode="json")
    assert (
        dumped["format"] == "text" and dumped["fields"] == {"question": "q", "answer": "a"} and "prompt" not in dumped
    )


def test_data_resolves_against_the_experiment_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "exp"
    (folder / "data").mkdir(parents=True)
    write_jsonl(folder / "data" / "sums.jsonl", SUMS)
    file = folder / "sums.toml"
    file.write_text(
        'name = "sums"\n[[tasks]]\nname = "sums"\ndata = "data/sums.jsonl"\nformat = "number"\ncount = 3\n'
        'fields = { question = "q", answer = "a" }\n[agent]\nbackend = { kind = "scripted", model = "numbers" }\n'
        '[[conditions]]\nname = "single"\nprotocol = "single"\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_experiment(Path("../exp/sums.toml"))
    assert config.tasks[0].data == "../exp/data/sums.jsonl"
    task = task_of(config.tasks[0])
    assert isinstance(task, NumberFileTask)
    assert [q.gold for q in task.items()] == ["5", "1.5", "1001"]
    # a file in the working directory keeps data as written (and so the fingerprint of older runs)
    monkeypatch.chdir(folder)
    assert load_experiment(Path("sums.toml")).tasks[0].data == "data/sums.jsonl"
    # without a file, data is relative to the working directory; hub is not a path
    table = {
        "name": "n",
        "tasks": [{"name": "gsm8k", "data": "hub", "count": 1}],
        "conditions": [{"name": "s", "protocol": "single"}],
    }
    assert parse_experiment(table, base=Path("/somewhere")).tasks[0].data == "hub"


def test_the_flags_make_the_experiment_files_task(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    from_file = load_experiment(Path("examples/data-task.toml"))
    flags = FileTaskOptions(
        format="text",
        fields=("question=country", "answer=capital", "id=id"),
        prompt="What is the capital of {question}?",
    )
    from_flags = AgentOptions.of(backend="local").experiment(
        ["single"], "capital-cities", 5, "examples/data/capitals.jsonl", flags
    )
    assert from_flags.tasks == from_file.tasks
    with pytest.raises(ConfigError, match="--field: 'question' is not KEY=COLUMN"):
        FileTaskOptions(format="text", fields=("question",)).field_table()
    with pytest.raises(ConfigError, match="options --task/--data/--format/--field/--prompt: .*built-in task"):
        AgentOptions.of().experiment(["single"], "gsm8k", 5, "examples/data/capitals.jsonl", flags)


def test_the_file_task_flags_are_refused_with_an_experiment_file() -> None:
    result = CliRunner().invoke(app, ["run", str(ROOT / "examples/data-task.toml"), "--format", "text"])
    assert result.exit_code != 0
    assert "--format cannot be combined with an experiment file" in result.output


def test_a_scripted_run_of_the_example_stores_its_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the example's data path is relative to the example, not to here
    output = tmp_path / "run.sqlite"
    result = CliRunner().invoke(app, ["run", str(ROOT / "examples/data-task.toml"), "--output", str(output)])
    assert result.exit_code == 0, result.output
    store = RunStore.read(output)
    try:
        results = store.results()
        assert len(results) == 10  # 5 questions x 2 conditions
        assert {q for (_, q) in store.questions()} == {"france", "japan", "kenya", "peru", "canada"}
        (provenance,) = store.meta()["task_provenance"]
        assert provenance["format"] == "text" and provenance["task"] == "capital-cities"
        assert provenance["fields"] == {"question": "country", "answer": "capital", "id": "id"}
    finally:
        store.close()


# -- fingerprints of experiments written before the file task keys ----------------------------------


def test_older_experiments_keep_their_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hashes below were computed before ``format``, ``fields`` and ``prompt`` existed."""
    monkeypatch.chdir(ROOT)
    assert experiment_hash(load_experiment(Path("examples/scripted-smoke.toml"))) == (
        "bfe84e3a807b6bf1ddd9447aa72c20ab8f8ba9936b4c6e49cf63fe0d570cdaea"
    )
    assert experiment_hash(load_experiment(Path("examples/replicate/du.toml"))) == (
        "2aadf00f73d9349d1144b39d9782e09b43932ff051741aa42560c78283bff4e6"
    )


def test_a_stored_runs_tasks_dump_as_stored() -> None:
    """The tasks of runs/replicate/du.sqlite's stored config dump exactly as stored (read-only)."""
    store = ROOT / "runs" / "replicate" / "du.sqlite"
    if not store.is_file():
        pytest.skip("runs/replicate/du.sqlite is not in this checkout")
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        (raw,) = db.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()
    stored = json.loads(raw)["tasks"]
    assert [TaskSelection.model_validate(t).model_dump(mode="json") for t in stored] == stored
    config = load_experiment(ROOT / "examples" / "replicate" / "du.toml")
    assert [t.model_dump(mode="json") for t in config.tasks] == stored


def test_a_data_file_task_without_count_takes_every_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As lm-eval and Inspect do: no count and no ids is the whole file, in its order, and the run's listing
    plans as many questions as the file has rows (read from the store, since the config holds no count)."""
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "examples/data-task.toml").read_text().replace("count = 5\n", "")
    (tmp_path / "data").mkdir()
    rows = [{"id": f"c{i}", "country": f"country {i}", "capital": f"city {i}"} for i in range(7)]
    write_jsonl(tmp_path / "data" / "capitals.jsonl", rows)
    (tmp_path / "all.toml").write_text(text)
    config = load_experiment(tmp_path / "all.toml")
    assert config.tasks[0].count is None and config.tasks[0].ids is None
    output = tmp_path / "run.sqlite"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "all.toml"), "--output", str(output)])
    assert result.exit_code == 0, result.output
    store = RunStore.read(output)
    try:
        assert sorted(q for (_, q) in store.questions()) == [f"c{i}" for i in range(7)]
        assert len(store.results()) == 14  # 7 rows x 2 conditions
        assert store.listing().planned_units == 14
    finally:
        store.close()
    # the quick-run options: --format without --questions is every row too (a built-in task keeps its 5)
    flags = FileTaskOptions(format="text", fields=("question=country", "answer=capital", "id=id"))
    quick = AgentOptions.of(backend="scripted").experiment(["single"], "caps", None, "data/capitals.jsonl", flags)
    assert quick.tasks[0].count is None
    assert AgentOptions.of(backend="scripted").experiment(["single"], "arithmetic").tasks[0].count == 5
    with pytest.raises(ValidationError, match="give count or ids"):
        TaskSelection(name="arithmetic")
    with pytest.raises(ValidationError, match="not both"):
        TaskSelection(name="arithmetic", count=2, ids=("a", "b"))
