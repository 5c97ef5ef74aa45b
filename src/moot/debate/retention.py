"""Retention: which of the previous round's replies the agents hear, chosen by agent ID so that
forwarded texts are never rewritten (DAR, Nguyen et al. 2026, and its baselines).

- ``all``: every reply (standard debate);
- ``dar``: a filter call reads the replies labelled by agent ID and the last vote and returns the IDs
  whose opinions differ the most from each other and from the majority;
- ``certain`` / ``similar``: the same filter asked for the most certain replies, or those closest to the
  majority (DAR's ablations);
- ``perplexity-top``: the ``retain_fraction`` of replies with the lowest perplexity of their generated
  tokens (MAD-M2's objective mask);
- ``distinct``: one reply per distinct extracted answer, the earliest agent's (DAR's hard filter).

The retained set is the same for every agent (each minus its own reply). An empty or invalid
filter selection falls back to keeping all, and the fallback is recorded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from moot.backends.base import Message
from moot.debate.records import Turn

FILTER_CRITERIA = {
    "dar": "choose agents whose opinions differ the most from each other and differ from the majority vote answer",
    "certain": "choose agents whose answers are the most certain and well-supported",
    "similar": "choose agents whose opinions agree the most with the majority vote answer",
}


def filter_messages(
    kind: str, question_text: str, turns: Sequence[Turn], last_vote: str | None
) -> tuple[Message, ...]:
    """The filter prompt (after DAR's filter_critical prompt): replies labelled by ID, the last vote."""
    replies = "".join(f"\n\nagent_id {i}: ```{t.text}```" for i, t in enumerate(turns, 1))
    prompt = (
        f"Question: {question_text}\n\nResponses of the agents:{replies}\n\n"
        f"Majority vote answer from this round: {last_vote if last_vote is not None else 'none'}\n\n"
        "Your ONLY task is to choose a subset of agent_ids. Return ONLY a Python-style list of agent_ids, "
        f"for example [1, 3]. Criteria: {FILTER_CRITERIA[kind]}."
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


def perplexity_top(turns: Sequence[Turn], fraction: float) -> list[int]:
    """Indices of the ceil(fraction x N) replies with the lowest perplexity (missing ranks last; ties by order)."""
    keep = max(1, math.ceil(fraction * len(turns)))
    ranked = sorted(range(len(turns)), key=lambda i: (turns[i].perplexity is None, turns[i].perplexity or 0.0, i))
    return sorted(ranked[:keep])


def distinct_answers(turns: Sequence[Turn]) -> list[int]:
    """The earliest reply of each distinct extracted answer (unparsed replies count as one answer)."""
    seen: set[str | None] = set()
    kept = []
    for i, turn in enumerate(turns):
        if turn.answer not in seen:
            seen.add(turn.answer)
            kept.append(i)
    return kept
