"""Peer rendering: how the previous round's replies are written into an agent's prompt.

``du``: each peer's reply in turn (Du et al.); ``grouped``: replies grouped by extracted answer, with
the number of agents behind each (ReConcile's "k agents think the answer is X"). Cues add a label
(a stated confidence) and a footnote (an ANLL) to each reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from moot.debate.components.cues import Cue
from moot.debate.records import Turn
from moot.debate.registry import Component, register, template


class Rendering(Component):
    family = "rendering"

    def render(self, peers: Sequence[Turn], cues: Sequence[Cue]) -> str:
        raise NotImplementedError


def _label(turn: Turn, cues: Sequence[Cue]) -> str:
    return "".join(c.label(turn) for c in cues)


def _footnote(turn: Turn, cues: Sequence[Cue]) -> str:
    return "".join(c.footnote(turn) for c in cues)


@register
class DuRendering(Rendering):
    kind: Literal["du"] = "du"

    @template
    def render(self, peers: Sequence[Turn], cues: Sequence[Cue]) -> str:
        return "".join(f"\n\n One agent response{_label(t, cues)}: ```{t.text}```" + _footnote(t, cues) for t in peers)


@register
class GroupedRendering(Rendering):
    kind: Literal["grouped"] = "grouped"

    @template
    def render(self, peers: Sequence[Turn], cues: Sequence[Cue]) -> str:
        groups: dict[str | None, list[Turn]] = {}
        for turn in peers:
            groups.setdefault(turn.answer, []).append(turn)
        parts = []
        for answer, turns in groups.items():
            who = f"{len(turns)} agent{'s' if len(turns) > 1 else ''}"
            head = f"{who} think the answer is {answer}:" if answer is not None else f"{who} gave no clear answer:"
            replies = "".join(f"\n{_label(t, cues)} ```{t.text}```" + _footnote(t, cues) for t in turns)
            parts.append("\n\n" + head + replies)
        return "".join(parts)
