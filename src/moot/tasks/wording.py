"""How a task's debate prompts are worded: Du et al.'s chat-history debate, and Choi et al.'s questions.

``DebateWording`` is one task's text of Du et al.'s update prompt (their release's construct_message):
an opening, each peer's reply under a heading, a request to update, and a format request; and the
prompt of an agent that hears nobody (self-reflection). Du et al. word it per task: math/gen_math.py
(arithmetic), gsm/gen_gsm.py (GSM8K), mmlu/gen_mmlu.py (MMLU) and biography/gen_conversation.py
(biographies, whose last round has its own request). The texts below are theirs, whitespace included.

Tasks Du et al. never ran take a documented default (``TaskBase.debate_wording``): MMLU's wording for
multiple-choice tasks, the arithmetic wording with the task's own format request otherwise.

``ChoiWording`` is Choi et al.'s question (Debate or Vote, src/data/*.py, reused unchanged by DAR)
and format request (src/evaluator.py, get_instruction_suffix), which asks for ``{final answer: X}``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from moot.tasks.extract import choi_choice


@dataclass(frozen=True)
class DebateWording:
    """The text of a debate prompt in chat history: ``opening``, then each peer's reply as
    "\\n\\n {peer}: ```reply```", then ``request`` (``final_request`` in the last round, when set), then
    ``instruction``. ``reflection`` is the whole prompt of an agent that hears nobody."""

    opening: str
    peer: str
    request: str
    instruction: str
    reflection: str
    final_request: str | None = None


def du_arithmetic(instruction: str = "Make sure to state your answer at the end of the response.") -> DebateWording:
    """Du et al.'s arithmetic wording (math/gen_math.py); exact with the default ``instruction``.

    With another ``instruction`` (the default for tasks Du et al. never ran) the reflection prompt
    is "Can you verify that your answer is correct. Please reiterate your answer. <instruction>"."""
    du = instruction == "Make sure to state your answer at the end of the response."
    return DebateWording(
        opening="These are the recent/updated opinions from other agents: ",
        peer="One agent response",
        request="\n\n Use these opinions carefully as additional advice, can you provide an updated answer?",
        instruction=f" {instruction}" if instruction else "",
        reflection="Can you verify that your answer is correct. Please reiterate your answer, making sure to state "
        "your answer at the end of the response."
        if du
        else f"Can you verify that your answer is correct. Please reiterate your answer. {instruction}".rstrip(),
    )


def du_gsm8k(problem: str) -> DebateWording:
    """Du et al.'s GSM8K wording (gsm/gen_gsm.py): the update prompt restates the problem."""
    return DebateWording(
        opening="These are the solutions to the problem from other agents: ",
        peer="One agent solution",
        request="\n\n Using the solutions from other agents as additional information, can you provide your answer "
        f"to the math problem? \n The original math problem is {problem}.",
        instruction=" Your final answer should be a single numerical number, in the form \\boxed{answer}, at the end "
        "of your response.",
        # as sent: their reflection string is not .format()ted, so its braces stay doubled
        reflection="Can you double check that your answer is correct. Please reiterate your answer, with your final "
        "answer a single numerical number, in the form \\boxed{{answer}}.",
    )


DU_MMLU = DebateWording(
    opening="These are the solutions to the problem from other agents: ",
    peer="One agent solution",
    request="\n\n Using the reasoning from other agents as additional advice, can you give an updated answer? "
    "Examine your solution and that other agents step by step.",
    instruction=" Put your answer in the form (X) at the end of your response.",
    reflection="Can you double check that your answer is correct. Put your final answer in the form (X) at the end "
    "of your response.",
)
"""Du et al.'s MMLU wording (mmlu/gen_mmlu.py); the default of every multiple-choice task."""


def du_biographies(person: str) -> DebateWording:
    """Du et al.'s biographies wording (biography/gen_conversation.py): no format request; the last
    round asks to "closely examine" the biographies instead."""
    return DebateWording(
        opening=f"Here are some bullet point biographies of {person} given by other agents: ",
        peer="Agent response",
        request=f"\n\n Using these other biographies of {person} as additional advice, what is your updated bullet "
        f"point biography of the computer scientist {person}?",
        instruction="",
        reflection="Closely examine your biography and provide an updated bullet point biography.",
        final_request="\n\n Closely examine your biography and the biography of other agents and provide an updated "
        "bullet point biography.",
    )


@dataclass(frozen=True)
class ChoiWording:
    """Choi et al.'s question text and the format request appended to it in every round (DAR's code
    appends it the same way); ``answer_form`` shows an answer as their evaluator writes it, e.g. "(A)";
    ``read`` is how their evaluator reads a reply, where it differs from the task's own extractor."""

    question: str
    instruction: str
    answer_form: str = "{}"
    read: Callable[[str], str | None] | None = None  # their evaluator's reading of a reply; None: the task's

    def answer(self, answer: str | None) -> str:
        """An answer as Choi et al.'s evaluator writes it ("" when there is none)."""
        return self.answer_form.format(answer) if answer is not None else ""


CHOI_NUMBER = (
    " Make sure to state your final answer in curly brackets at the very end of your response, just like: "
    '"{final answer: 123}".'
)
"""Choi et al.'s GSM8K format request (evaluator.py, get_instruction_suffix)."""
CHOI_DECIMAL = (
    " Make sure to state your final answer in curly brackets at the very end of your response, just like: "
    '"{final answer: 12.34}".'
)
"""Choi et al.'s arithmetic format request."""
CHOI_CHOICE = (
    " Make sure to state your final answer choice in curly brackets at the very end of your response, just like: "
    '"{final answer: (A)}".'
)
"""Choi et al.'s multiple-choice format request (hellaswag, MMLU, CSQA, HH-RLHF)."""


def choi_choice_wording(question: str) -> ChoiWording:
    """A multiple-choice question in Choi et al.'s form: their format request, answers written "(A)",
    replies read by their ``evaluate_mcq`` (``choi_choice``)."""
    return ChoiWording(question, CHOI_CHOICE, "({})", read=choi_choice)


def choi_choices(stem: str, choices: list[str] | tuple[str, ...]) -> str:
    """Choi et al.'s multiple-choice template (mmlu_*.py, csqa.py): the stem, each choice on its own
    line as "(A) text", then a blank line."""
    lines = "".join(f"\n({'ABCDEFGHIJ'[i]}) {c}" for i, c in enumerate(choices))
    return f"{stem}{lines}\n\n"
