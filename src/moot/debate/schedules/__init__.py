"""Schedules: who speaks when within a round. One interface, two implementations, each next to its
own prompts: Du et al.'s simultaneous peers (``peers``) and Liang et al.'s debaters in turn with a
moderator and a final judge (``liang``). A protocol names its schedule in the field ``style``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moot.debate.records import JudgeVerdict, RoundRecord
from moot.debate.registry import Component

if TYPE_CHECKING:
    from moot.debate.context import Debate


class Schedule(Component):
    family = "schedule"

    def start(self, debate: Debate) -> None:
        """Set every agent's initial messages."""
        raise NotImplementedError

    async def play(self, debate: Debate, round_index: int) -> RoundRecord:
        """Play one round; ``debate.records`` holds the rounds before it."""
        raise NotImplementedError

    async def finish(self, debate: Debate, stop_reason: str) -> JudgeVerdict | None:
        """A final verdict after the last round, where the schedule has one."""
        return None

    def calls_per_round(self, protocol: Any) -> str:
        """Model calls per round, in words, for `moot protocols` (``protocol`` is the ProtocolSpec)."""
        return ""

    def topology_text(self, protocol: Any) -> str:
        """Who hears whom, in words."""
        topology = protocol.topology
        return f"{topology.describe(protocol)}, density {topology.density(protocol.agents):.2f}"

    def shares_round0(self) -> bool:
        """Its round 0 is the agents' independent answers to the plain question (shareable across conditions)."""
        return False
