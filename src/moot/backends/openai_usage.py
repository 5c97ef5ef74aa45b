"""Token accounting of the ``openai`` backend (moot.backends.openai_api): the bound on a token count a reply may
give, what one sample may spend of ``tokens_per_minute`` (moot.backends.routing's ``TokenBudget`` paces them), and
the token count and pieces a server's ``/tokenize`` answers with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

MAX_COUNT = 2**53  # a token count is below this: beyond it no count is exact in a float, or fits a store

_Count = Annotated[int, Field(ge=0, lt=MAX_COUNT)]


@dataclass(frozen=True)
class _Cost:
    """What one sample may spend of ``tokens_per_minute``: its prompt's estimate and ``max_tokens``, and how
    to read what it spent from its read reply (None: the reply does not say)."""

    prompt: int
    max_tokens: int
    spent: Callable[[Any], int | None]


def _tokens(data: Any) -> tuple[int, list[str] | None] | None:
    """The token count and pieces of a ``/tokenize`` answer: llama-server's ``tokens`` of ``{id, piece}``
    (``with_pieces``), vLLM's ``tokens`` of ids (no pieces); None for any other answer."""
    tokens = data.get("tokens") if isinstance(data, dict) else None
    if not isinstance(tokens, list):
        return None
    if all(isinstance(t, dict) and isinstance(t.get("piece"), str) for t in tokens):
        return len(tokens), [t["piece"] for t in tokens]
    if all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        return len(tokens), None
    return None
