"""Du et al.'s arithmetic task: a+b*c+d-e*f over six integers drawn uniformly from [0, 30).

The question wording, format request and debate wording are Du et al.'s (math/gen_math.py of
their release; moot.tasks.wording). The ``choi`` templates are Choi et al.'s arithmetic question
and "{final answer: 12.34}" request (src/data/arithmetics.py, src/evaluator.py), asked of Du et
al.'s expression: Choi et al.'s own generator ends with a division, e÷f. The system prompt is moot's: small models compute this well
only when told to work step by step (Qwen2.5 1.5B: 1-2/20 without, 11/20 with).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from moot.errors import ConfigError
from moot.limits import MAX_GENERATED_QUESTIONS, check_at_most
from moot.tasks.base import Extraction, Question, TaskBase
from moot.tasks.extract import choi_number, last_number, numbers_equal
from moot.tasks.registry import TASKS
from moot.tasks.wording import CHOI_DECIMAL, ChoiWording

LOW, HIGH = 0, 30  # integers are drawn from [LOW, HIGH)

STEP_BY_STEP = (
    "You are a careful calculator. Follow the order of operations: first compute each "
    "multiplication, then add and subtract from left to right, writing every intermediate "
    "result. End your response with the final number."
)


def gold_value(a: int, b: int, c: int, d: int, e: int, f: int) -> int:
    """The exact value of a+b*c+d-e*f, computed without eval."""
    return a + b * c + d - e * f


_ID = re.compile(r"arithmetic-s(-?\d+)-(\d+)")
_OPERATORS = {"+": r"\+", "-": "[-\u2212]", "*": r"(?:\*|×|\\times|\\cdot)"}


def restatement(expression: str) -> re.Pattern[str]:
    """The question's expression ("20+9*11+13-5*1") as a reply restates it: its numbers and operators in order,
    spaced or not, "*" written as "*", "×", "\\times" or "\\cdot", "-" as a minus sign; not inside a longer
    number or product ("120+9*11+13-5*1", "...-5*12", "...-5*1*2")."""
    parts = [_OPERATORS.get(token, token) for token in re.findall(r"\d+|[-+*]", expression)]
    return re.compile(r"(?<![\d.])" + r"\s*".join(parts) + r"(?!\.?\d|\s*(?:[*×]|\\times|\\cdot))")


class ArithmeticTask(TaskBase):
    name = "arithmetic"
    answer_format = "arithmetic"
    description = "evaluate a+b*c+d-e*f over six random integers in [0, 30)"
    splits: tuple[str, ...] = ("generated",)
    answer_instruction = "Make sure to state your answer at the end of the response."
    offline_note = "generated (Du et al.'s a+b*c+d-e*f)"
    metric_description = "accuracy (numeric equality)"
    source_url = "Du et al. 2024"

    def __init__(self, system_prompt: str | None = STEP_BY_STEP):
        self.system_prompt = system_prompt

    def questions(self, count: int, seed: int, split: str | None = None) -> list[Question]:
        """``count`` questions from a generator seeded with ``seed``; the first k are the same for any count >= k
        (at most ``MAX_GENERATED_QUESTIONS``)."""
        check_at_most(count, MAX_GENERATED_QUESTIONS, f"the question count of generated task {self.name}")
        rng = random.Random(seed)
        items = []
        for i in range(count):
            terms = [rng.randrange(LOW, HIGH) for _ in range(6)]
            a, b, c, d, e, f = terms
            items.append(
                Question(
                    id=f"arithmetic-s{seed}-{i}",
                    prompt=f"{a}+{b}*{c}+{d}-{e}*{f}",
                    gold=str(gold_value(*terms)),
                    metadata={"terms": terms},
                )
            )
        return items

    def by_ids(self, ids: Sequence[str], split: str | None = None) -> list[Question]:
        """Questions by id ("arithmetic-s<seed>-<index>", index below ``MAX_GENERATED_QUESTIONS``):
        regenerated from their seed, each seed's questions once."""
        wanted: list[tuple[int, int]] = []
        for qid in ids:
            match = _ID.fullmatch(qid)
            if match is None or len(match.group(1)) > 20:
                raise ConfigError(f"{qid[:100]!r} is not an arithmetic question id (arithmetic-s<seed>-<index>)")
            digits = match.group(2).lstrip("0") or "0"
            if len(digits) > 9 or int(digits) >= MAX_GENERATED_QUESTIONS:
                raise ConfigError(
                    f"question {qid[:100]!r}: the index of a generated question is below {MAX_GENERATED_QUESTIONS:,}"
                )
            wanted.append((int(match.group(1)), int(digits)))
        counts: dict[int, int] = {}
        for seed, index in wanted:
            counts[seed] = max(counts.get(seed, 0), index + 1)
        generated = {seed: self.questions(count, seed) for seed, count in counts.items()}
        return [generated[seed][index] for seed, index in wanted]

    def render(self, question: Question) -> str:
        return f"What is the result of {question.prompt}? {self.answer_instruction}"

    def choi_wording(self, question: Question) -> ChoiWording:
        return ChoiWording(f"What is the result of {question.prompt}?", CHOI_DECIMAL, read=choi_number)

    def extract(self, text: str) -> Extraction:
        return Extraction.of(last_number(text))

    def read_reply(self, text: str, question: Question) -> Extraction:
        """As ``extract``, except that the question's expression restated in running text ("the result of
        \\(20 + 9 \\cdot 11 + 13 - 5 \\cdot 1\\) is", a truncated reply's last words) holds no answer: its
        numbers are passed over (``restatement``)."""
        return Extraction.of(last_number(text, restatement(question.prompt)))

    def score(self, answer: str, question: Question) -> bool:
        return numbers_equal(answer, question.gold)


TASKS.register("arithmetic", ArithmeticTask)
