"""History: what an agent's messages are in rounds r >= 1.

``chat``: each agent keeps its own multi-turn history, and each round adds Du et al.'s update prompt
(or their reflection prompt when it hears nobody); ``fresh``: a new single-turn prompt each round with
the question, the agent's last reply and its peers' replies (Choi et al. / DAR).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from moot.backends.base import Message
from moot.debate.prompts import debate_message, fresh_message, reflection_message, system_messages
from moot.debate.records import Turn
from moot.debate.registry import Component, register

if TYPE_CHECKING:
    from moot.debate.context import Debate

HISTORY_MODE = "chat: each agent keeps its own multi-turn history (Du et al.); fresh: one new prompt per round"


class History(Component):
    family = "history"

    def next_messages(self, debate: Debate, i: int, own: Turn, peers: Sequence[Turn]) -> list[Message]:
        """Agent ``i``'s messages for the next round, ending with the round's prompt (cues not yet added)."""
        raise NotImplementedError

    def keeps_replies(self) -> bool:
        """Whether an agent's own replies stay in its messages (chat) or not (fresh)."""
        return False


def _peers(debate: Debate, peers: Sequence[Turn]) -> str:
    return debate.protocol.rendering.render(peers, debate.protocol.cues)


@register
class ChatHistory(History):
    kind: Literal["chat"] = "chat"

    def next_messages(self, debate: Debate, i: int, own: Turn, peers: Sequence[Turn]) -> list[Message]:
        agreement = debate.agents[i].spec.agreement
        message = (
            debate_message(debate.task, _peers(debate, peers), agreement) if peers else reflection_message(debate.task)
        )
        return [*debate.histories[i], message]

    def keeps_replies(self) -> bool:
        return True

    def describe(self, protocol: Any = None) -> str:
        return "chat"


@register
class FreshHistory(History):
    kind: Literal["fresh"] = "fresh"

    def next_messages(self, debate: Debate, i: int, own: Turn, peers: Sequence[Turn]) -> list[Message]:
        agent = debate.agents[i]
        rendered = _peers(debate, peers) if peers else None
        message = fresh_message(debate.task, debate.question, own, rendered, agent.spec.agreement)
        return [*system_messages(debate.task, agent.spec.persona), message]
