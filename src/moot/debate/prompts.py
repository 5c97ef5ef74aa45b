"""The prompts of the simultaneous-peer schedule, rendered here the same for every backend.

The debate and reflection wording of the ``chat`` history mode is Du et al.'s (their release's
math/gen_math.py, construct_message); the ``fresh`` mode's wording follows Choi et al. / DAR's
single-turn debate message (src/main.py, get_new_message). The final sentence is the task's format
request, which both repeat in every round. ``peers`` is the previous round's replies as the
protocol's rendering wrote them (moot.debate.components.rendering).
"""

from __future__ import annotations

from moot.backends.base import Message
from moot.debate.records import Turn
from moot.debate.registry import template
from moot.tasks.base import Question, Task


@template
def initial_messages(task: Task, question: Question, persona: str | None) -> list[Message]:
    messages = system_messages(task, persona)
    messages.append(Message("user", task.render(question)))
    return messages


@template
def system_messages(task: Task, persona: str | None) -> list[Message]:
    system = persona if persona is not None else task.system_prompt
    return [Message("system", system)] if system else []


@template
def agreement_sentence(agreement: int | None) -> str:
    if agreement is None:
        return ""
    return (
        f" Agree with the other agents' reasoning about {agreement * 10}% of the time, "
        "and only when it holds up; otherwise defend your own answer."
    )


@template
def debate_message(task: Task, peers: str, agreement: int | None = None) -> Message:
    """Du et al.'s update prompt (chat history): the peers' latest replies, then a request to update."""
    return Message(
        "user",
        "These are the recent/updated opinions from other agents: "
        + peers
        + "\n\n Use these opinions carefully as additional advice, can you provide an updated answer?"
        + agreement_sentence(agreement)
        + " "
        + task.answer_instruction,
    )


@template
def reflection_message(task: Task) -> Message:
    """Du et al.'s prompt for an agent with no peers in a later round (self-refinement)."""
    return Message(
        "user", "Can you verify that your answer is correct? Please reiterate your answer. " + task.answer_instruction
    )


@template
def fresh_message(
    task: Task, question: Question, own: Turn, peers: str | None, agreement: int | None = None
) -> Message:
    """A single-turn round prompt (Choi et al. / DAR): peers' replies, the agent's own last reply, the
    question; ``peers`` is None when the agent hears nobody."""
    if peers is not None:
        opening = "These are the recent opinions from other agents: " + peers + "\n\n"
        closing = "Use these opinions carefully as additional advice to revise your recent opinion"
    else:
        opening = ""
        closing = "Verify your recent opinion carefully and revise it if needed"
    return Message(
        "user",
        f"{opening}This was your most recent opinion: ```{own.text}```\n\n{closing} to give your final answer "
        f"to the question: {task.render(question)}{agreement_sentence(agreement if peers is not None else None)}",
    )
