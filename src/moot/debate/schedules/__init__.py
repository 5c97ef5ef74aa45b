"""Schedules: who speaks when within a round. One interface, two implementations, each next to its
own prompts: Du et al.'s simultaneous peers (``peers``) and Liang et al.'s debaters in turn with a
moderator and a final judge (``liang``). A protocol names its schedule in the field ``style``.

A schedule declares what it offers the other components, so that they check capabilities, not names:
the protocol slots it reads (``slots``; a protocol that sets another one is refused), whether its agents
are peers (``has_peers``) and whether a moderator rules each round (``moderated``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from moot.debate.records import JudgeVerdict, RoundRecord, StopReason
from moot.debate.registry import Component

if TYPE_CHECKING:
    from moot.debate.context import Debate


# The protocol slots that only some schedules read (stopping and aggregation serve every schedule).
SLOTS = frozenset(
    {
        "topology",
        "history",
        "rendering",
        "initializer",
        "confidence",
        "uncertainty_cue",
        "vote_cue",
        "cues",
        "retention",
    }
)


class Schedule(Component):
    family = "schedule"
    # The protocol slots (of SLOTS) it reads: a protocol that sets any other one to anything but its default
    # is refused, rather than silently ignored. A schedule that does not say reads them all.
    slots: ClassVar[frozenset[str]] = SLOTS
    # Its agents answer together, each hears its peers' previous replies, all vote each round, and it asks the
    # stopping rule's ``verdict`` after each round (Du et al.): what consensus, stability and a judge need.
    has_peers: ClassVar[bool] = False
    # A moderator rules after each round and its ruling is the round's verdict (Liang et al.).
    moderated: ClassVar[bool] = False

    def start(self, debate: Debate) -> None:
        """Set every agent's initial messages."""
        raise NotImplementedError

    async def play(self, debate: Debate, round_index: int) -> RoundRecord:
        """Play one round; ``debate.records`` holds the rounds before it."""
        raise NotImplementedError

    async def finish(self, debate: Debate, stop_reason: StopReason) -> JudgeVerdict | None:
        """A final verdict after the last round, where the schedule has one."""
        return None

    def calls_per_round(self, protocol: Any) -> str:
        """Model calls per round, in words, for `moot protocols` (``protocol`` is the ProtocolSpec)."""
        return ""

    def topology_text(self, protocol: Any) -> str:
        """Who hears whom, in words."""
        topology = protocol.topology
        return f"{topology.describe(protocol)}, density {topology.density(protocol.agents):.2f}"

    def moderator_states_confidence(self, protocol: Any) -> bool:
        """Its moderator is asked for a confidence (what stopping 'moderator_confidence' reads)."""
        return False

    def shares_round0(self) -> bool:
        """Its round 0 is the agents' independent answers to the plain question (shareable across conditions)."""
        return False
