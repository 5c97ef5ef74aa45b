"""History: what an agent's messages are, in round 0 and in rounds r >= 1.

``chat``: each agent keeps its own multi-turn history, and each round adds Du et al.'s update prompt in
the task's wording (or their reflection prompt when it hears nobody); ``fresh``: a new single-turn
prompt each round with the peers' replies, the last vote (its cue), the agent's last reply and the
question (DAR's build_normal_msg, after Choi et al.). ``templates`` (fresh only): ``task``, the task's
own question prompt; ``choi``, Choi et al.'s question templates and "{final answer: X}" format request
in every round, round 0 included (their setting, which DAR reuses).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from moot.backends.base import Message
from moot.debate.prompts import (
    choi_initial_messages,
    debate_message,
    fresh_message,
    initial_messages,
    reflection_message,
    synthesis_messages,
    system_messages,
)
from moot.debate.records import RoundRecord, Turn
from moot.debate.registry import Component, register
from moot.tasks.base import Extraction, Question, Task

if TYPE_CHECKING:
    from moot.debate.agents import Agent
    from moot.debate.components.cues import Cue
    from moot.debate.context import Debate

HISTORY_MODE = "chat: each agent keeps its own multi-turn history (Du et al.); fresh: one new prompt per round"


class History(Component):
    family = "history"

    def first_messages(self, debate: Debate, agent: Agent) -> list[Message]:
        """An agent's round-0 messages (cues not yet added): its system prompt and the task's question."""
        return initial_messages(debate.task, debate.question, debate.protocol.system_prompt(debate.task, agent.spec))

    def next_messages(self, debate: Debate, i: int, own: Turn, peers: Sequence[Turn]) -> list[Message]:
        """Agent ``i``'s messages for the next round, ending with the round's prompt (cues not yet added)."""
        raise NotImplementedError

    def cue_prefix(self, cues: Sequence[Cue], previous: RoundRecord) -> str:
        """What the cues put before a debate round's prompt (the last vote, in chat history)."""
        return "".join(c.prefix(previous) for c in cues)

    def keeps_replies(self) -> bool:
        """Whether an agent's own replies stay in its messages (chat) or not (fresh)."""
        return False

    def read(self, task: Task, question: Question, text: str) -> Extraction:
        """An agent's reply read for its answer: as the task reads it, unless the prompts' templates
        come with their own reader (Choi et al.'s)."""
        return task.read_reply(text, question)


def _peers(debate: Debate, peers: Sequence[Turn], heading: str = "One agent response") -> str:
    return debate.protocol.rendering.render(peers, debate.protocol.cues, heading)


@register
class ChatHistory(History):
    kind: Literal["chat"] = "chat"

    def next_messages(self, debate: Debate, i: int, own: Turn, peers: Sequence[Turn]) -> list[Message]:
        task, question = debate.task, debate.question
        if not peers:
            return [*debate.histories[i], reflection_message(task, question)]
        final = len(debate.records) == debate.protocol.rounds - 1  # the round now prepared is the last (the cap)
        heading = task.debate_wording(question).peer
        message = debate_message(task, question, _peers(debate, peers, heading), debate.agents[i].spec.agreement, final)
        return [*debate.histories[i], message]

    def keeps_replies(self) -> bool:
        return True

    def describe(self, protocol: Any = None) -> str:
        return "chat"


@register
class FreshHistory(History):
    kind: Literal["fresh"] = "fresh"
    templates: Literal["task", "choi"] = Field(
        default="task",
        description="task: the task's question prompt; choi: Choi et al.'s question templates and "
        '"{final answer: X}" format request (DAR\'s setting), round 0 included',
    )

    def first_messages(self, debate: Debate, agent: Agent) -> list[Message]:
        if self.templates == "choi":
            return choi_initial_messages(
                debate.task, debate.question, debate.protocol.system_prompt(debate.task, agent.spec)
            )
        return super().first_messages(debate, agent)

    def cue_prefix(self, cues: Sequence[Cue], previous: RoundRecord) -> str:
        return ""  # the last vote stands inside the prompt (next_messages)

    def next_messages(self, debate: Debate, i: int, own: Turn, peers: Sequence[Turn]) -> list[Message]:
        agent, task, question, cues = debate.agents[i], debate.task, debate.question, debate.protocol.cues
        if self.templates == "choi":
            wording = task.choi_wording(question)
            text, instruction, show = wording.question, wording.instruction, wording.answer
        else:
            text, instruction, show = task.render(question), "", _plain
        previous = debate.records[-1]
        message = fresh_message(
            text,
            instruction,
            own.peer_text + "".join(c.footnote(own) for c in cues),
            _peers(debate, peers) if peers else None,
            "".join(c.inline(previous, show) for c in cues),
            agent.spec.agreement,
            alone=len(debate.agents) == 1,
        )
        return [*system_messages(debate.protocol.system_prompt(task, agent.spec)), message]

    def read(self, task: Task, question: Question, text: str) -> Extraction:
        """With Choi et al.'s templates, a reply is read as their evaluator reads it where the task has
        that reading (arithmetic, GSM8K: ``choi_number``; multiple choice: ``choi_choice``), so the
        vote, the last-vote cue and the score are theirs."""
        if self.templates == "choi" and (reader := task.choi_wording(question).read) is not None:
            return Extraction.of(reader(text))
        return super().read(task, question, text)

    def describe(self, protocol: Any = None) -> str:
        return "fresh (Choi et al.'s templates)" if self.templates == "choi" else "fresh"


@register
class SynthesisHistory(History):
    """Mixture-of-Agents' layers (Wang et al. 2024): in round r >= 1 (layer r + 1) each proposer gets a new
    single-turn request, its system message followed by the Aggregate-and-Synthesize prompt with every kept reply
    of the previous layer (its own included, in agent order), then the question. Round 0 is the task's question,
    as in every peer protocol, so it is shared with them."""

    kind: Literal["synthesize"] = "synthesize"

    def next_messages(self, debate: Debate, i: int, own: Turn, peers: Sequence[Turn]) -> list[Message]:
        order = {agent.name: k for k, agent in enumerate(debate.agents)}
        replies = sorted([own, *peers], key=lambda turn: order.get(turn.agent, len(order)))
        system = debate.protocol.system_prompt(debate.task, debate.agents[i].spec)
        return synthesis_messages(debate.task, debate.question, system, [t.peer_text for t in replies])

    def describe(self, protocol: Any = None) -> str:
        return "synthesize (Mixture-of-Agents: each layer's proposers read the previous layer's replies)"


def _plain(answer: str | None) -> str:
    return answer if answer is not None else ""
