"""Du et al.'s simultaneous schedule: in round 0 the initialiser gives every agent its first answer;
in round r >= 1 the retention rule picks which round r-1 replies are forwarded, each agent hears the
kept replies of its topology's peers (rendered by the protocol's rendering, with its cues), and all
agents answer at once. Its prompts are in moot.debate.prompts."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Literal

from moot.backends.base import Message
from moot.debate.records import JudgeVerdict, RetentionRecord, RoundRecord, StopReason
from moot.debate.registry import register
from moot.debate.schedules import Schedule
from moot.seeds import derive_seed

if TYPE_CHECKING:
    from moot.debate.context import Debate


def with_cues(debate: Debate, message: Message, previous: RoundRecord | None) -> Message:
    """``message`` with the protocol's cues: the last vote before it, the confidence request after it."""
    cues = debate.protocol.cues
    before = debate.protocol.history.cue_prefix(cues, previous) if previous is not None else ""
    return Message(message.role, before + message.content + "".join(c.instruction() for c in cues))


@register
class Peers(Schedule):
    kind: Literal["peers"] = "peers"
    has_peers = True

    def start(self, debate: Debate) -> None:
        debate.histories = [debate.protocol.history.first_messages(debate, a) for a in debate.agents]
        for history in debate.histories:
            history[-1] = with_cues(debate, history[-1], None)

    def shares_round0(self) -> bool:
        return True

    def describe(self, protocol: Any = None) -> str:
        return "peers"

    def calls_per_round(self, protocol: Any) -> str:
        helpers = " + 1 judge call" if protocol.stopping.needs_helper else ""
        helpers += " + 1 filter call from round 1" if protocol.retention.needs_helper else ""
        helpers += " + 1 aggregator call after the last round" if protocol.aggregation.needs_helper else ""
        candidates = protocol.initializer.calls_note(protocol.agents)
        return f"{protocol.agents} agent call{'s' if protocol.agents > 1 else ''}{helpers}{candidates}"

    async def play(self, debate: Debate, round_index: int) -> RoundRecord:
        protocol, r = debate.protocol, round_index
        pool = retained = None
        if r == 0:
            turns, pool = await protocol.initializer.first_round(debate)
        else:
            retained = await self._forward(debate, debate.records[-1])
            turns = list(
                await asyncio.gather(*(debate.speak(a, debate.histories[i], r) for i, a in enumerate(debate.agents)))
            )
        if protocol.history.keeps_replies():
            for history, turn in zip(debate.histories, turns):
                history.append(Message("assistant", turn.peer_text))
        vote = protocol.aggregation.round_vote(
            debate.records, turns, protocol.tie_rule, derive_seed(debate.seed, debate.question.id, "tie", r)
        )
        verdict = await protocol.stopping.verdict(debate, turns, r)
        return RoundRecord(index=r, turns=tuple(turns), vote=vote, judge=verdict, pool=pool, retention=retained)

    async def finish(self, debate: Debate, stop_reason: StopReason) -> JudgeVerdict | None:
        """The aggregation's own ruling after the last round (a Mixture-of-Agents aggregator), if it has one."""
        return await debate.protocol.aggregation.conclude(debate)

    async def _forward(self, debate: Debate, previous: RoundRecord) -> RetentionRecord:
        """Choose the replies to forward, then give every agent its next prompt; what was kept and at what cost.

        The kept replies' diversity is not measured here (no embedding model on the debate's path): a report
        computes it from their stored texts."""
        protocol, turns = debate.protocol, previous.turns
        kept = await protocol.retention.keep(debate, previous)
        chosen = list(range(len(turns))) if kept.indices is None else kept.indices
        forwarded = 0
        for i, peer_ids in enumerate(protocol.topology.peers(protocol.agents)):
            peers = [turns[j] for j in peer_ids if j in chosen]
            if not peers and kept.indices is not None and protocol.retention.refills:
                peers = [turns[j] for j in peer_ids]  # DAR: an agent left with no kept peer hears them all
            forwarded += len(peers)
            messages = protocol.history.next_messages(debate, i, turns[i], peers)
            messages[-1] = with_cues(debate, messages[-1], previous)
            debate.histories[i] = messages
        return RetentionRecord(
            rule=protocol.retention.kind,
            kept=tuple(turns[i].agent for i in chosen),
            fallback=kept.indices is None,
            forwarded=forwarded,
            filter_text=kept.filter_text,
            filter_calls=kept.filter_calls,
            filter_prompt_tokens=kept.filter_prompt_tokens,
            filter_completion_tokens=kept.filter_completion_tokens,
        )
