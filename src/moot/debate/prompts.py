"""The prompts of the simultaneous-peer schedule, rendered here the same for every backend.

``chat`` history: the task's question prompt in round 0, then Du et al.'s update prompt in the task's
own wording (``Task.debate_wording``, moot.tasks.wording: arithmetic, GSM8K, MMLU and biographies as
their release words them, a documented default for the other tasks), or their self-reflection prompt
for an agent that hears nobody. ``peers`` is the previous round's replies as the protocol's rendering
wrote them (moot.debate.components.rendering).

``fresh`` history: DAR's single-turn round prompt (DA2I2-SLM/DAR, src/dev.py build_normal_msg and
get_new_message_global, Choi et al.'s get_new_message as DAR revised it), whitespace included: the
peers' replies, the last vote (when its cue is on), the agent's own last reply, then the question and
its format request. With the ``choi`` templates the question and format request are Choi et al.'s
(``Task.choi_wording``); otherwise they are the task's question prompt.
"""

from __future__ import annotations

from moot.backends.base import Message
from moot.debate.registry import template
from moot.tasks.base import Question, Task


@template
def initial_messages(task: Task, question: Question, system: str | None) -> list[Message]:
    messages = system_messages(system)
    messages.append(Message("user", task.render(question)))
    return messages


@template
def choi_initial_messages(task: Task, question: Question, system: str | None) -> list[Message]:
    """Round 0 with Choi et al.'s templates: their question, then their format request (``x + SUFFIX``)."""
    wording = task.choi_wording(question)
    return [*system_messages(system), Message("user", wording.question + wording.instruction)]


@template
def system_messages(system: str | None) -> list[Message]:
    """The agent's system message (``ProtocolSpec.system_prompt``: its persona, else the task's
    instruction unless the protocol's ``instruction`` is none), or no message."""
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
def debate_message(
    task: Task, question: Question, peers: str, agreement: int | None = None, final: bool = False
) -> Message:
    """Du et al.'s update prompt (chat history) in the task's wording: the opening, the peers' latest
    replies, the request to update (the last round's own request where the task has one, as
    biographies do), an agreement sentence when the agent has one, and the format request."""
    wording = task.debate_wording(question)
    request = wording.final_request if final and wording.final_request is not None else wording.request
    return Message("user", wording.opening + peers + request + agreement_sentence(agreement) + wording.instruction)


@template
def reflection_message(task: Task, question: Question) -> Message:
    """Du et al.'s prompt for an agent with no peers in a later round (self-refinement), in the task's wording."""
    return Message("user", task.debate_wording(question).reflection)


@template
def fresh_message(
    question: str,
    instruction: str,
    own: str,
    peers: str | None,
    vote: str = "",
    agreement: int | None = None,
    alone: bool = False,
) -> Message:
    """DAR's single-turn round prompt (src/dev.py), whitespace included (the 12 spaces before the question
    are their triple-quoted string's indentation).

    ``question`` and ``instruction``: the question and the format request appended after it; ``own``:
    the agent's last reply (with its cue footnotes); ``peers``: the rendered replies it hears (None: it
    hears nobody); ``vote``: the last-vote line; ``alone``: a one-agent debate (DAR's self-refinement
    prompt, without peers or vote)."""
    if alone:
        text = (
            f"This was your most recent opinion: {own}\n\n\n            Revise your recent opinion to give your "
            f"updated final answer to the question:\n{question}{instruction}"
        )
        return Message("user", text)
    if peers is not None:
        opening = "These are the recent opinions from other agents:\n" + peers
    else:
        opening = "You have no recent opinions from other agents.\n\n"
    text = (
        f"{opening}{vote}\nThis was your most recent opinion:\n{own}\n\n\nUse these opinions carefully as "
        "additional advice to revise your recent opinion to give your final answer to the question:\n"
        f"            {question}{instruction}{agreement_sentence(agreement if peers is not None else None)}"
    )
    return Message("user", text)


# Mixture-of-Agents' Aggregate-and-Synthesize prompt (Wang et al. 2024, "Mixture-of-Agents Enhances Large Language
# Model Capabilities", Table 1), reproduced for fidelity; their code adds it, with the numbered responses, to the
# system message after whatever system prompt the request already has.
MOA_SYNTHESIZE = (
    "You have been provided with a set of responses from various open-source models to the latest user query. "
    "Your task is to synthesize these responses into a single, high-quality response. It is crucial to critically "
    "evaluate the information provided in these responses, recognizing that some of it may be biased or incorrect. "
    "Your response should not simply replicate the given answers but should offer a refined, accurate, and "
    "comprehensive reply to the instruction. Ensure your response is well-structured, coherent, and adheres to the "
    "highest standards of accuracy and reliability.\n\nResponses from models:"
)


@template
def synthesis_messages(task: Task, question: Question, system: str | None, replies: list[str]) -> list[Message]:
    """A Mixture-of-Agents request: the system message (the agent's own, if any, then the Aggregate-and-Synthesize
    prompt with the replies numbered from 1), then the task's question prompt."""
    numbered = "".join(f"\n{i}. {reply}" for i, reply in enumerate(replies, 1))
    synthesize = MOA_SYNTHESIZE + numbered
    return [
        Message("system", f"{system}\n\n{synthesize}" if system else synthesize),
        Message("user", task.render(question)),
    ]
