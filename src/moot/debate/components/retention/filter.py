"""DAR's filter (Nguyen et al. 2026): a helper call reads the replies labelled by agent ID and the last
vote and returns the IDs to forward.

- ``dar``: the IDs whose opinions differ the most from each other and from the majority;
- ``certain`` / ``similar``: the most certain replies, or those closest to the majority (DAR's ablations).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

from moot.backends.base import Message
from moot.debate.components.retention import Kept, Retention
from moot.debate.context import FILTER_NAME
from moot.debate.records import RoundRecord, Turn
from moot.debate.registry import register, template

if TYPE_CHECKING:
    from moot.debate.context import Debate


@template
def filter_messages(
    criterion: str, question_text: str, turns: Sequence[Turn], last_vote: str | None
) -> tuple[Message, ...]:
    """The filter prompt (after DAR's filter_critical prompt): replies labelled by ID, the last vote."""
    replies = "".join(f"\n\nagent_id {i}: ```{t.text}```" for i, t in enumerate(turns, 1))
    prompt = (
        f"Question: {question_text}\n\nResponses of the agents:{replies}\n\n"
        f"Majority vote answer from this round: {last_vote if last_vote is not None else 'none'}\n\n"
        "Your ONLY task is to choose a subset of agent_ids. Return ONLY a Python-style list of agent_ids, "
        f"for example [1, 3]. Criteria: {criterion}."
    )
    return (Message("user", prompt),)


def parse_ids(text: str, n: int) -> list[int] | None:
    """0-based indices from the last [...] list of agent IDs 1..n in ``text``; None if absent or invalid."""
    lists = re.findall(r"\[([^\[\]]*)\]", text)
    if not lists:
        return None
    items = [item.strip().strip("'\"") for item in lists[-1].split(",") if item.strip()]
    ids = []
    for item in items:
        match = re.fullmatch(r"(?:agent[_ ]?(?:id)?\s*)?(\d+)", item, re.IGNORECASE)
        if match is None or not 1 <= int(match.group(1)) <= n:
            return None
        ids.append(int(match.group(1)) - 1)
    return sorted(set(ids)) or None


class FilterRetention(Retention):
    """A helper model chooses the replies by ``criterion``."""

    criterion: ClassVar[str]
    needs_helper = True

    async def keep(self, debate: Debate, previous: RoundRecord) -> Kept:
        turns, r = previous.turns, previous.index + 1
        messages = filter_messages(self.criterion, debate.task.render(debate.question), turns, previous.vote.winner)
        reply = await debate.ask(FILTER_NAME, messages, r)
        return Kept(parse_ids(reply.text, len(turns)), reply.text, 1, reply.prompt_tokens, reply.completion_tokens)


@register
class DarFilter(FilterRetention):
    kind: Literal["dar"] = "dar"
    criterion = "choose agents whose opinions differ the most from each other and differ from the majority vote answer"


@register
class CertainFilter(FilterRetention):
    kind: Literal["certain"] = "certain"
    criterion = "choose agents whose answers are the most certain and well-supported"


@register
class SimilarFilter(FilterRetention):
    kind: Literal["similar"] = "similar"
    criterion = "choose agents whose opinions agree the most with the majority vote answer"
