"""The Hugging Face hub loaders, through ``datasets.load_dataset``, on local folders laid out as
the hub repositories are (README configs, Parquet/CSV/JSON-lines files); no network.

Rows are synthetic (GPQA's especially: its items are never written anywhere)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from moot.errors import ConfigError
from moot.tasks import get_task, load_hub

datasets = pytest.importorskip("datasets", reason="the hub loaders need the datasets package")


@pytest.fixture(autouse=True)
def offline_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No network, and a datasets cache inside the test's folder."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "cache")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)


def parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def readme(repo: Path, configs: dict[str, dict[str, str]]) -> None:
    """A dataset card whose YAML declares each config's files per split, as hub repos do."""
    lines = ["---", "configs:"]
    for name, splits in configs.items():
        lines += [f"- config_name: {name}", "  data_files:"]
        lines += [f"  - split: {split}\n    path: {path}" for split, path in splits.items()]
    repo.mkdir(parents=True, exist_ok=True)
    (repo / "README.md").write_text("\n".join([*lines, "---", "", "A local copy for tests."]) + "\n")


def test_gsm8k_from_the_hub_layout(tmp_path: Path) -> None:
    repo = tmp_path / "openai-gsm8k"
    rows = [{"question": "1 + 1?", "answer": "1 + 1 = 2\n#### 2"}, {"question": "2 * 500?", "answer": "#### 1,000"}]
    parquet(repo / "main" / "test-00000-of-00001.parquet", rows)
    parquet(repo / "main" / "train-00000-of-00001.parquet", rows[:1])
    readme(repo, {"main": {"train": "main/train-*", "test": "main/test-*"}})
    task = load_hub(get_task("gsm8k"), str(repo))
    assert [(q.id, q.gold) for q in task.items("test")] == [("gsm8k-test-0", "2"), ("gsm8k-test-1", "1000")]
    assert [q.id for q in task.items("train")] == ["gsm8k-train-0"]
    assert task.provenance()["hub"]["config"] == "main"


def test_mmlu_subject_configs(tmp_path: Path) -> None:
    repo = tmp_path / "cais-mmlu"
    configs = {}
    for subject in ("anatomy", "virology"):
        rows = [
            {"question": f"{subject} q{i}", "subject": subject, "choices": ["a", "b", "c", "d"], "answer": i}
            for i in range(3)
        ]
        parquet(repo / subject / "test-00000-of-00001.parquet", rows)
        configs[subject] = {"test": f"{subject}/test-*"}
    readme(repo, configs)
    task = load_hub(get_task("mmlu:anatomy,virology"), str(repo))
    items = task.items()
    assert [q.id for q in items][:2] == ["mmlu-anatomy-test-0", "mmlu-anatomy-test-1"]
    assert [q.gold for q in items] == ["A", "B", "C"] * 2
    assert items[3].metadata["subject"] == "virology"


def test_csqa_hellaswag_arc_from_the_hub_layout(tmp_path: Path) -> None:
    csqa = tmp_path / "tau-commonsense_qa"
    parquet(
        csqa / "data" / "validation-00000-of-00001.parquet",
        [
            {
                "id": "abc",
                "question": "Where is milk kept?",
                "question_concept": "milk",
                "choices": {"label": list("ABCDE"), "text": ["oven", "fridge", "car", "bag", "sea"]},
                "answerKey": "B",
            },
        ],
    )
    readme(csqa, {"default": {"validation": "data/validation-*"}})
    q = load_hub(get_task("csqa"), str(csqa)).items()[0]
    assert (q.id, q.gold) == ("csqa-abc", "B")

    hellaswag = tmp_path / "Rowan-hellaswag"  # the layout of its refs/convert/parquet revision
    parquet(
        hellaswag / "default" / "validation" / "0000.parquet",
        [
            {
                "ind": 4,
                "activity_label": "Cooking",
                "ctx_a": "A man cracks an egg.",
                "ctx_b": "he",
                "ctx": "",
                "endings": ["fries it.", "[title] Eats it.", "sings.", "flies."],
                "source_id": "x",
                "split": "val",
                "split_type": "indomain",
                "label": "1",
            },
        ],
    )
    readme(hellaswag, {"default": {"validation": "default/validation/*.parquet"}})
    q = load_hub(get_task("hellaswag"), str(hellaswag)).items()[0]
    assert q.prompt.startswith("Cooking: A man cracks an egg. He\n\n(A) fries it.\n(B) Eats it.")
    assert q.gold == "B"

    arc = tmp_path / "allenai-ai2_arc"
    parquet(
        arc / "ARC-Challenge" / "test-00000-of-00001.parquet",
        [
            {
                "id": "X_1",
                "question": "Pick two.",
                "choices": {"text": ["1", "2", "3"], "label": ["1", "2", "3"]},
                "answerKey": "2",
            },
        ],
    )
    readme(arc, {"ARC-Challenge": {"test": "ARC-Challenge/test-*"}})
    q = load_hub(get_task("arc-challenge"), str(arc)).items()[0]
    assert (q.id, q.gold, q.metadata["original_labels"]) == ("arc-challenge-X_1", "B", ["1", "2", "3"])


def test_gpqa_gated_csv_configs_with_synthetic_rows(tmp_path: Path) -> None:
    repo = tmp_path / "Idavidrein-gpqa"
    repo.mkdir()
    header = "Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer 3,Record ID,Subdomain\n"
    for variant in ("main", "diamond"):
        (repo / f"gpqa_{variant}.csv").write_text(
            header + f"SYNTHETIC {variant}: 2+2?,4,3,5,22,recSYN{variant},Synthetic\n"
        )
    readme(repo, {f"gpqa_{v}": {"train": f"gpqa_{v}.csv"} for v in ("main", "diamond")})
    main = load_hub(get_task("gpqa"), str(repo)).items()
    diamond = load_hub(get_task("gpqa-diamond"), str(repo)).items()
    assert [q.id for q in main] == ["gpqa-recSYNmain"] and [q.id for q in diamond] == ["gpqa-recSYNdiamond"]
    q = main[0]
    assert q.metadata["choices"][q.metadata["order"].index(0)] == "4"
    assert q.gold == "ABCD"[q.metadata["order"].index(0)]


def test_quality_hub_conversion_and_hard_subset(tmp_path: Path) -> None:
    repo = tmp_path / "emozilla-quality"
    rows = [
        {"article": "A short story.", "question": "Who?", "options": ["a", "b", "c", "d"], "answer": 2, "hard": False},
        {"article": "A short story.", "question": "Why?", "options": ["a", "b", "c", "d"], "answer": 0, "hard": True},
    ]
    parquet(repo / "data" / "validation-00000-of-00001.parquet", rows)
    readme(repo, {"default": {"validation": "data/validation-*"}})
    assert [(q.id, q.gold) for q in load_hub(get_task("quality"), str(repo)).items("dev")] == [
        ("quality-dev-0", "C"),
        ("quality-dev-1", "A"),
    ]
    assert [q.id for q in load_hub(get_task("quality-hard"), str(repo)).items("dev")] == ["quality-dev-1"]


def test_hh_rlhf_subsets(tmp_path: Path) -> None:
    repo = tmp_path / "Anthropic-hh-rlhf"
    for subset, reply in (("harmless-base", "I won't help with that."), ("helpful-base", "Sure: 4.")):
        (repo / subset).mkdir(parents=True)
        with gzip.open(repo / subset / "test.jsonl.gz", "wt") as handle:
            pair = {
                "chosen": f"\n\nHuman: Hi\n\nAssistant: {reply}",
                "rejected": "\n\nHuman: Hi\n\nAssistant: Go away.",
            }
            handle.write(json.dumps(pair) + "\n")
    both = load_hub(get_task("hh-rlhf"), str(repo)).items()
    assert len(both) == 2
    harmless = load_hub(get_task("hh-rlhf:harmless-base"), str(repo)).items()
    assert len(harmless) == 1 and "I won't help with that." in harmless[0].prompt


def test_hub_failures_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"could not load hf://datasets/.*nowhere.*gated dataset: accept its terms"):
        load_hub(get_task("gpqa"), str(tmp_path / "nowhere")).items()
    repo = tmp_path / "bad-gsm8k"
    parquet(repo / "main" / "test-00000-of-00001.parquet", [{"question": "q", "answer": 12}])
    readme(repo, {"main": {"test": "main/test-*"}})
    with pytest.raises(
        ConfigError, match=r"hf://datasets/.*bad-gsm8k/main \[test\]: row 1: field 'answer' must be a string"
    ):
        load_hub(get_task("gsm8k"), str(repo)).items()
