"""A schedule written outside moot: agents speak one at a time. In round r >= 1 agent i hears each of its
peers' latest reply: this round's from the agents before it, the last round's from those after it. Round 0
is the peers schedule's (independent answers, shareable with a ``peers`` condition's).

It works with the built-in topology, history, rendering, initialiser and cues, declared in ``slots``; a
retention rule is refused (it forwards the latest replies, not a kept set). Use it from an experiment file
with ``plugins = ["relay.py"]`` and ``style = "relay"`` in a condition.
"""

from __future__ import annotations

from typing import Any, Literal

from moot.backends.base import Message
from moot.debate.context import Debate
from moot.debate.records import RoundRecord
from moot.debate.registry import register
from moot.debate.schedules import SLOTS
from moot.debate.schedules.peer import Peers, with_cues
from moot.seeds import derive_seed


@register
class Relay(Peers):
    kind: Literal["relay"] = "relay"
    slots = SLOTS - {"retention"}

    async def play(self, debate: Debate, round_index: int) -> RoundRecord:
        if round_index == 0:
            return await super().play(debate, round_index)
        protocol, previous = debate.protocol, debate.records[-1]
        latest = list(previous.turns)  # each agent's latest reply, in agent order
        for i, peers in enumerate(protocol.topology.peers(protocol.agents)):
            messages = protocol.history.next_messages(debate, i, latest[i], [latest[j] for j in peers])
            messages[-1] = with_cues(debate, messages[-1], previous)
            latest[i] = await debate.speak(debate.agents[i], messages, round_index)
            if protocol.history.keeps_replies():
                messages.append(Message("assistant", latest[i].text))
            debate.histories[i] = messages
        seed = derive_seed(debate.seed, debate.question.id, "tie", round_index)
        vote = protocol.aggregation.vote(latest, protocol.tie_rule, seed)
        verdict = await protocol.stopping.verdict(debate, latest, round_index)
        return RoundRecord(index=round_index, turns=tuple(latest), vote=vote, judge=verdict)

    def describe(self, protocol: Any = None) -> str:
        return "relay (agents in turn, each hearing its peers' latest replies)"
