"""Every prompt a debate sends is rendered here, the same for every backend.

The debate and reflection wording is Du et al.'s (their release's
math/gen_math.py, construct_message); the final sentence is the task's format
request, which Du et al. repeat in every round.
"""

from __future__ import annotations

from collections.abc import Sequence

from moot.backends.base import Message
from moot.tasks.base import Question, Task


def initial_messages(task: Task, question: Question, persona: str | None) -> list[Message]:
    system = persona if persona is not None else task.system_prompt
    messages = [Message("system", system)] if system else []
    messages.append(Message("user", task.render(question)))
    return messages


def debate_message(task: Task, peer_replies: Sequence[str]) -> Message:
    """Du et al.'s update prompt: the other agents' latest replies, then a request to update."""
    parts = ["These are the recent/updated opinions from other agents: "]
    parts += [f"\n\n One agent response: ```{reply}```" for reply in peer_replies]
    parts.append(
        "\n\n Use these opinions carefully as additional advice, can you provide an updated answer? "
        + task.answer_instruction
    )
    return Message("user", "".join(parts))


def reflection_message(task: Task) -> Message:
    """Du et al.'s prompt for an agent with no peers in a later round."""
    return Message(
        "user", "Can you verify that your answer is correct? Please reiterate your answer. " + task.answer_instruction
    )
