"""What of a reply is shown again: to the agent's peers, and in its own next prompt (a protocol's ``peer_view``).

A reasoning model's reply is its reasoning and its content (moot.backends.reasoning). Whether peers read the
reasoning changes the debate: a long chain of thought crowds the context and carries the reasoning errors
along with the answer, and papers differ (MAD-M2 masks text by perplexity; DeepSeek's guidance drops earlier
reasoning from a conversation). The view is a protocol setting, so it is recorded with every condition and
part of its fingerprint:

- ``content`` (the default): the content alone, the answer and whatever the model wrote after thinking;
- ``full``: the reasoning in a ``<think>`` block, then the content;
- ``reasoning:N``: as ``full`` with the reasoning cut to its first N tokens, counted by the model's own
  tokenizer where its backend can show it (llama-server and vLLM's ``/tokenize``), else by whitespace-separated
  words; a cut reasoning ends with " ...".

A reply without reasoning is shown as it is under every view.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from moot.backends.base import Backend
from moot.debate.registry import template

CONTENT, FULL = "content", "full"
_CUT = re.compile(r"reasoning:(?P<tokens>[1-9]\d*)")


def _valid(view: str) -> str:
    if view in (CONTENT, FULL) or _CUT.fullmatch(view):
        return view
    raise ValueError(f"peer_view must be 'content', 'full' or 'reasoning:N' (N tokens, N >= 1), got {view!r}")


PeerView = Annotated[str, AfterValidator(_valid)]


@template
def shown(reasoning: str, content: str) -> str:
    """A reply's reasoning and content as one text, as a thinking model writes them."""
    return f"<think>\n{reasoning}\n</think>\n\n{content}"


async def peer_text(view: str, content: str, reasoning: str | None, backend: Backend) -> str | None:
    """The text shown again of a reply under ``view``; None when that is its content (the reply's ``text``)."""
    if reasoning is None or view == CONTENT:
        return None
    if view == FULL:
        return shown(reasoning, content)
    match = _CUT.fullmatch(view)
    assert match is not None  # a validated view
    tokens = int(match["tokens"])
    pieces = await _pieces(backend, reasoning)
    if len(pieces) <= tokens:
        return shown(reasoning, content)
    return shown("".join(pieces[:tokens]).rstrip() + " ...", content)


async def _pieces(backend: Backend, text: str) -> list[str]:
    """``text`` as its model's tokens, where the backend can show them; else as words with the space
    before each (whose concatenation is the text, less leading spaces)."""
    token_pieces = getattr(backend, "token_pieces", None)
    if token_pieces is not None and (pieces := await token_pieces(text)) is not None:
        return list(pieces)
    return re.findall(r"\s*\S+", text)
