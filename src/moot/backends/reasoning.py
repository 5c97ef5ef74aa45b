"""A reply's reasoning read apart from its content.

Reasoning models (DeepSeek-R1 and its distills, QwQ, Qwen3 with thinking) write a chain of thought before
their answer. Servers return it in one of three ways, and every backend reads all three alike:

- in a field of its own: ``reasoning_content`` (vLLM, SGLang, llama-server with ``--reasoning-format``,
  DeepSeek's API) or ``reasoning`` (vLLM's newer name, OpenRouter), the content holding the answer alone;
- in the content, as a ``<think>...</think>`` block at its start (a server that leaves the tags, or an
  in-process engine);
- in the content, ended by ``</think>`` with no opening tag, when the chat template itself opened the block
  in the prompt (DeepSeek-R1's and QwQ's templates do).

The answer is read from the content only. A block that never closes (the token limit hit inside it, or a
model that stopped there) leaves an empty content: the reply is unparsed (and truncated when cut off),
never an answer read out of the reasoning.
"""

from __future__ import annotations

from dataclasses import dataclass

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


@dataclass(frozen=True)
class Split:
    """A reply as content and reasoning; ``reasoning`` is None when the reply has none. A block that never
    closed is all reasoning: its content is empty."""

    content: str
    reasoning: str | None


def split_reasoning(content: str, field: str | None = None) -> Split:
    """``content`` (and the server's reasoning ``field``, if it sent one) as content and reasoning.

    A ``<think>`` block at the start of the content, or a content ended by ``</think>`` with no opening tag,
    is reasoning even when the field is also given (llama-server's ``deepseek-legacy`` format sends both):
    the field then wins, being the server's own reading."""
    own = _split_tags(content)
    if field:
        return Split(own.content, field)
    return own


def _split_tags(content: str) -> Split:
    stripped = content.lstrip()
    if stripped.startswith(THINK_OPEN):
        body = stripped[len(THINK_OPEN) :]
        end = body.find(THINK_CLOSE)
        if end < 0:
            return Split("", body.strip())
        return Split(body[end + len(THINK_CLOSE) :].strip(), body[:end].strip())
    end = content.find(THINK_CLOSE)
    if end >= 0 and THINK_OPEN not in content[:end]:
        return Split(content[end + len(THINK_CLOSE) :].strip(), content[:end].strip())
    return Split(content, None)
