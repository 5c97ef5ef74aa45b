"""DAR's filter (Nguyen et al. 2026): a helper call reads the previous round's replies labelled by agent
ID (and the last vote, when its cue is on) and returns the IDs to forward.

The prompt is DAR's (DA2I2-SLM/DAR, src/dev.py build_filter_prompt_batch and
build_normal_msg_with_ids_batch), whitespace included; the IDs are the agents' names, shown as the
Python list DAR shows. The criteria:

- ``dar``: DAR's ``filter_critical``, the opinions that differ the most and from the majority vote;
- ``certain`` / ``similar``: DAR's ``filter_certain`` and ``filter_support`` ablations.

The reply is read as DAR reads it (the last [...] list; IDs not among the agents are dropped; none left
is the fallback to all), a little more leniently: unquoted names and 1-based agent numbers count too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

from moot.backends.base import Message
from moot.debate.components.cues import dar_vote
from moot.debate.components.retention import Kept, Retention
from moot.debate.context import FILTER_NAME
from moot.debate.records import RoundRecord, Turn
from moot.debate.registry import register, template

if TYPE_CHECKING:
    from moot.debate.context import Debate


@template
def replies_with_ids(ids: Sequence[str], texts: Sequence[str], last_vote: str | None) -> str:
    """DAR's build_normal_msg_with_ids_batch: each reply under its agent's ID, then the last vote (when shown)."""
    text = "These are the recent opinions from other agents: Agent IDs and their responses:\n"
    text += "".join(f"\n{agent_id}:\n{reply}\n" for agent_id, reply in zip(ids, texts, strict=True))
    if last_vote is not None:
        text += f"\nMajority vote from last round: {last_vote}\n"
    return text


@template
def filter_messages(
    criterion: str, ids: Sequence[str], texts: Sequence[str], last_vote: str | None
) -> tuple[Message, ...]:
    """DAR's ID filter prompt (build_filter_prompt_batch): the task, the valid IDs, the replies, the criterion."""
    prompt = f"""
    Your ONLY task is to choose a subset of agent_ids.
    Return ONLY a Python-style list of agent_ids.
    Valid agent IDs: {list(ids)}

    Responses from agents: {replies_with_ids(ids, texts, last_vote)}
    """
    return (Message("user", prompt + criterion),)


_LIST = re.compile(r"\[(.*?)\]", re.DOTALL)
_MAX_LIST = 100_000  # characters of a list read as a Python literal


def _items(text: str) -> list[str] | None:
    """The items of the last [...] list in ``text`` (as a Python literal, else split at commas); None if no list."""
    lists = _LIST.findall(text)
    if not lists:
        return None
    inner = lists[-1]
    try:
        value = ast.literal_eval(f"[{inner}]") if len(inner) <= _MAX_LIST else None
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    if isinstance(value, list):
        return [str(v).strip() for v in value]
    return [item.strip().strip("'\"").strip() for item in inner.split(",")]


def _plain(text: str) -> str:
    return " ".join(text.split())


def parse_selection(text: str, ids: Sequence[str], replies: Sequence[Sequence[str]] = ()) -> list[int] | None:
    """0-based indices of the agents a filter reply keeps: the items of its last [...] list that are an
    agent ID, a 1-based agent number or one of ``replies[i]`` (the texts agent i's reply may be quoted
    as), whitespace aside. Items that are none of these are dropped, as DAR drops them; None when no
    item is left (the fallback)."""
    items = _items(text)
    if items is None:
        return None
    by_reply = {_plain(r): i for i in reversed(range(len(replies))) for r in replies[i]}
    kept = set()
    for item in items:
        if item in ids:
            kept.add(list(ids).index(item))
        elif item.isdigit() and 1 <= int(item) <= len(ids):
            kept.add(int(item) - 1)
        elif _plain(item) in by_reply:
            kept.add(by_reply[_plain(item)])
    return sorted(kept) or None


def agent_ids(turns: Sequence[Turn]) -> list[str]:
    """The IDs the filter sees: the agents' names (DAR's are its agent names too), else Agent1..AgentN
    when names repeat."""
    names = [t.agent for t in turns]
    return names if len(set(names)) == len(names) else [f"Agent{i}" for i in range(1, len(names) + 1)]


def filter_inputs(debate: Debate, previous: RoundRecord) -> tuple[list[str], list[str], str | None]:
    """The IDs, the replies as DAR's filter reads them (with the ANLL line when that cue is on) and the
    last vote (only when the vote cue is on), a number as DAR writes it ("7.0", ``dar_vote``), written as
    the history's templates write answers."""
    protocol, turns = debate.protocol, previous.turns
    texts = [t.peer_text + "".join(c.footnote(t) for c in protocol.cues) for t in turns]
    vote = None
    if protocol.vote_cue is not None:
        winner = dar_vote(previous.vote.winner)
        templates = getattr(protocol.history, "templates", "task")
        vote = debate.task.choi_wording(debate.question).answer(winner) if templates == "choi" else winner or ""
    return agent_ids(turns), texts, vote


class FilterRetention(Retention):
    """A helper model chooses the replies by ``criterion``."""

    criterion: ClassVar[str]
    needs_helper = True
    refills = True

    async def keep(self, debate: Debate, previous: RoundRecord) -> Kept:
        ids, texts, vote = filter_inputs(debate, previous)
        reply = await debate.ask(FILTER_NAME, filter_messages(self.criterion, ids, texts, vote), previous.index + 1)
        kept = parse_selection(reply.text, ids)
        return Kept(kept, reply.text, 1, reply.prompt_tokens, reply.completion_tokens)


@register
class DarFilter(FilterRetention):
    kind: Literal["dar"] = "dar"
    criterion = "Criteria: choose agents whose opinions differ the most and differ to majority vote answer."


@register
class CertainFilter(FilterRetention):
    kind: Literal["certain"] = "certain"
    criterion = "Criteria: choose the most certain agents."


@register
class SimilarFilter(FilterRetention):
    kind: Literal["similar"] = "similar"
    criterion = "Criteria: choose agents whose opinions are most similar to yours."
