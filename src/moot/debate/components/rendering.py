"""Peer rendering: how the previous round's replies are written into an agent's prompt.

``du``: each peer's reply in turn under the task's heading, "\n\n One agent response: ```reply```" (Du et
al.'s construct_message; "One agent solution" for GSM8K and MMLU, "Agent response" for biographies:
``DebateWording.peer``); ``dar``: "\nOne of the agents' response: \nreply\n" (DAR's build_normal_msg, the
fresh history's peers); ``grouped``: replies grouped by extracted answer, with the number of agents
behind each (ReConcile's "k agents think the answer is X"). Cues add a label (a stated confidence) and
a footnote (an ANLL) to each reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from moot.debate.components.cues import Cue
from moot.debate.records import Turn
from moot.debate.registry import Component, register, template


class Rendering(Component):
    family = "rendering"

    def render(self, peers: Sequence[Turn], cues: Sequence[Cue], heading: str = "One agent response") -> str:
        """The replies as shown to an agent; ``heading``: the task's name for one reply (Du et al.'s wording)."""
        raise NotImplementedError


def _label(turn: Turn, cues: Sequence[Cue]) -> str:
    return "".join(c.label(turn) for c in cues)


def _footnote(turn: Turn, cues: Sequence[Cue]) -> str:
    return "".join(c.footnote(turn) for c in cues)


@register
class DuRendering(Rendering):
    kind: Literal["du"] = "du"

    @template
    def render(self, peers: Sequence[Turn], cues: Sequence[Cue], heading: str = "One agent response") -> str:
        return "".join(f"\n\n {heading}{_label(t, cues)}: ```{t.peer_text}```" + _footnote(t, cues) for t in peers)


@register
class DarRendering(Rendering):
    kind: Literal["dar"] = "dar"

    @template
    def render(self, peers: Sequence[Turn], cues: Sequence[Cue], heading: str = "One agent response") -> str:
        """DAR's (and Choi et al.'s) peer replies; a footnote (the ANLL) is part of the reply, as theirs."""
        return "".join(
            f"\nOne of the agents' response{_label(t, cues)}: \n{t.peer_text}{_footnote(t, cues)}\n" for t in peers
        )


@register
class GroupedRendering(Rendering):
    kind: Literal["grouped"] = "grouped"

    @template
    def render(self, peers: Sequence[Turn], cues: Sequence[Cue], heading: str = "One agent response") -> str:
        groups: dict[str | None, list[Turn]] = {}
        for turn in peers:
            groups.setdefault(turn.answer, []).append(turn)
        parts = []
        for answer, turns in groups.items():
            who = f"{len(turns)} agent{'s' if len(turns) > 1 else ''}"
            head = f"{who} think the answer is {answer}:" if answer is not None else f"{who} gave no clear answer:"
            replies = "".join(f"\n{_label(t, cues)} ```{t.peer_text}```" + _footnote(t, cues) for t in turns)
            parts.append("\n\n" + head + replies)
        return "".join(parts)
