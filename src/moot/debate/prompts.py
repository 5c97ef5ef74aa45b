"""Every prompt a debate sends is rendered here, the same for every backend.

The debate and reflection wording of the ``chat`` history mode is Du et al.'s (their
release's math/gen_math.py, construct_message); the ``fresh`` mode's wording follows
Choi et al. / DAR's single-turn debate message (src/main.py, get_new_message). The final
sentence is the task's format request, which both repeat in every round.
"""

from __future__ import annotations

from collections.abc import Sequence

from moot.backends.base import Message
from moot.debate.records import Turn
from moot.tasks.base import Question, Task


def initial_messages(task: Task, question: Question, persona: str | None) -> list[Message]:
    messages = system_messages(task, persona)
    messages.append(Message("user", task.render(question)))
    return messages


def system_messages(task: Task, persona: str | None) -> list[Message]:
    system = persona if persona is not None else task.system_prompt
    return [Message("system", system)] if system else []


def _confidence_note(turn: Turn, scale: int | None) -> str:
    if scale is None:
        return ""
    stated = "not stated" if turn.confidence is None else f"{turn.confidence:g}/{scale}"
    return f" (confidence {stated})"


def _uncertainty_note(turn: Turn, show: bool) -> str:
    if not show:
        return ""
    value = "unknown" if turn.anll is None else f"{turn.anll:.4f}"
    return f"\nUncertainty score (Average Negative Log Likelihood) for this response: {value}"


def render_peers(
    peers: Sequence[Turn], rendering: str, confidence_scale: int | None = None, uncertainty: bool = False
) -> str:
    """``du``: each peer's reply in turn (Du et al.); ``grouped``: replies grouped by extracted answer,
    with the number of agents behind each (ReConcile's "k agents think the answer is X"). With a
    ``confidence_scale``, each reply carries its agent's stated confidence (Zhu et al.); with
    ``uncertainty``, its ANLL in DAR's wording."""
    if rendering == "du":
        return "".join(
            f"\n\n One agent response{_confidence_note(t, confidence_scale)}: ```{t.text}```"
            + _uncertainty_note(t, uncertainty)
            for t in peers
        )
    groups: dict[str | None, list[Turn]] = {}
    for turn in peers:
        groups.setdefault(turn.answer, []).append(turn)
    parts = []
    for answer, turns in groups.items():
        who = f"{len(turns)} agent{'s' if len(turns) > 1 else ''}"
        head = f"{who} think the answer is {answer}:" if answer is not None else f"{who} gave no clear answer:"
        parts.append(
            "\n\n" + head + "".join(
                f"\n{_confidence_note(t, confidence_scale)} ```{t.text}```" + _uncertainty_note(t, uncertainty)
                for t in turns
            )
        )
    return "".join(parts)


def agreement_sentence(agreement: int | None) -> str:
    if agreement is None:
        return ""
    return (
        f" Agree with the other agents' reasoning about {agreement * 10}% of the time, "
        "and only when it holds up; otherwise defend your own answer."
    )


def vote_note(last_vote: str | None) -> str:
    """DAR's last-vote cue, prepended to a round's prompt."""
    return f"Majority vote from last round: {last_vote if last_vote is not None else 'none'}\n\n"


def debate_message(
    task: Task, peers: Sequence[Turn], rendering: str = "du", agreement: int | None = None,
    confidence_scale: int | None = None, uncertainty: bool = False,
) -> Message:  # fmt: skip
    """Du et al.'s update prompt (chat history): the peers' latest replies, then a request to update."""
    return Message(
        "user",
        "These are the recent/updated opinions from other agents: "
        + render_peers(peers, rendering, confidence_scale, uncertainty)
        + "\n\n Use these opinions carefully as additional advice, can you provide an updated answer?"
        + agreement_sentence(agreement)
        + " "
        + task.answer_instruction,
    )


def reflection_message(task: Task) -> Message:
    """Du et al.'s prompt for an agent with no peers in a later round (self-refinement)."""
    return Message(
        "user", "Can you verify that your answer is correct? Please reiterate your answer. " + task.answer_instruction
    )


def fresh_message(
    task: Task, question: Question, own: Turn, peers: Sequence[Turn], rendering: str = "du",
    agreement: int | None = None, confidence_scale: int | None = None, uncertainty: bool = False,
) -> Message:  # fmt: skip
    """A single-turn round prompt (Choi et al. / DAR): peers' replies, the agent's own last reply, the question."""
    if peers:
        opening = (
            "These are the recent opinions from other agents: "
            + render_peers(peers, rendering, confidence_scale, uncertainty) + "\n\n"
        )  # fmt: skip
        closing = "Use these opinions carefully as additional advice to revise your recent opinion"
    else:
        opening = ""
        closing = "Verify your recent opinion carefully and revise it if needed"
    return Message(
        "user",
        f"{opening}This was your most recent opinion: ```{own.text}```\n\n{closing} to give your final answer "
        f"to the question: {task.render(question)}{agreement_sentence(agreement if peers else None)}",
    )
