"""DAR's text-based filtering ablation (``filter_nonindex``, Nguyen et al. 2026, Table 3): the filter is
asked for the retained responses themselves rather than their agent IDs.

The prompt is DAR's (src/dev.py build_filter_prompt_batch, the ``nonindex`` branch), whitespace
included. DAR reads the reply with its ID parser, so a list of response texts keeps nothing and every
reply is forwarded; here an item that is one of the replies' texts (whitespace aside) keeps that agent,
an agent ID or number keeps it as the ID filter does, and anything else is dropped (none left: the
fallback to all, recorded). What is forwarded is always the agent's own reply, never the filter's copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from moot.backends.base import Message
from moot.debate.components.retention import Kept, Retention
from moot.debate.components.retention.filter import filter_inputs, parse_selection, replies_with_ids
from moot.debate.context import FILTER_NAME
from moot.debate.records import RoundRecord
from moot.debate.registry import register, template

if TYPE_CHECKING:
    from moot.debate.context import Debate


@template
def text_filter_messages(ids: Sequence[str], texts: Sequence[str], last_vote: str | None) -> tuple[Message, ...]:
    """DAR's text-based filter prompt (``filter_nonindex``)."""
    prompt = f"""
            Your ONLY task is to choose a subset of responses.
            Return ONLY a Python-style list of responses.

            Responses from agents: {replies_with_ids(ids, texts, last_vote)}
            Criteria: choose responses whose opinions differ the most and differ to majority vote answer.
            """
    return (Message("user", prompt),)


@register
class TextFilter(Retention):
    kind: Literal["dar-text"] = "dar-text"
    needs_helper = True
    refills = True

    async def keep(self, debate: Debate, previous: RoundRecord) -> Kept:
        ids, texts, vote = filter_inputs(debate, previous)
        reply = await debate.ask(FILTER_NAME, text_filter_messages(ids, texts, vote), previous.index + 1)
        kept = parse_selection(
            reply.text, ids, [(t.text, t.peer_text, shown) for t, shown in zip(previous.turns, texts)]
        )
        return Kept(kept, reply.text, 1, reply.prompt_tokens, reply.completion_tokens)
