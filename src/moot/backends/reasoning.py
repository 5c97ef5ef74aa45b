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

Tags are matched as nested: a ``<think>`` inside a block opens an inner one, and the block ends at the
``</think>`` that closes the outer one (the whole of it, inner tags as written, is reasoning). A closed block
later in the content (after a first sentence) is reasoning too, the text before and after it the content; an
opening tag after the start that never closes is the content's own text ("I write <think> tags."). When the
server sends a reasoning field and the content holds a block as well, both are the reasoning (the field
first), the block's text once where it repeats the field (llama-server's ``deepseek-legacy`` format).
"""

from __future__ import annotations

from dataclasses import dataclass

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
PARTS = "\n\n"  # what joins pieces of reasoning, or of content around a block


@dataclass(frozen=True)
class Split:
    """A reply as content and reasoning; ``reasoning`` is None when the reply has none. A block that never
    closed is all reasoning: its content is empty."""

    content: str
    reasoning: str | None


def split_reasoning(content: str, field: str | None = None) -> Split:
    """``content`` (and the server's reasoning ``field``, if it sent one) as content and reasoning: the
    field, then the text of every ``<think>`` block of the content not already in the field, joined."""
    own = _split_tags(content)
    if not field:
        return own
    if own.reasoning and own.reasoning.strip() != field.strip():
        return Split(own.content, field + PARTS + own.reasoning)
    return Split(own.content, field)


def _split_tags(content: str) -> Split:
    """``content`` as content and the reasoning its tags mark (see the module's docstring); one pass over the
    tags, so that a reply of many thousands of them takes no longer than reading it."""
    tags = _tags(content)
    reasoning: list[str] = []
    kept: list[str] = []
    position, i = 0, 0
    close = _unopened_close(tags)
    if close is not None:  # the template opened the block in the prompt
        reasoning.append(content[: tags[close][0]])
        position, i = tags[close][0] + len(THINK_CLOSE), close + 1
    while i < len(tags):
        start, step = tags[i]
        if step < 0 or start < position:  # a closing tag outside any block: the content's own text
            i += 1
            continue
        end = _matching_close(tags, i)
        if end is None:  # never closes: all reasoning at the start, the content's own text after it
            if not content[position:start].strip() and not any(k.strip() for k in kept):
                reasoning.append(content[start + len(THINK_OPEN) :])
                position = len(content)
            break
        kept.append(content[position:start])
        reasoning.append(content[start + len(THINK_OPEN) : tags[end][0]])
        position, i = tags[end][0] + len(THINK_CLOSE), end + 1
    if not reasoning:
        return Split(content, None)
    kept.append(content[position:])
    return Split(_joined(kept), _joined(reasoning))


def _joined(pieces: list[str]) -> str:
    return PARTS.join(p.strip() for p in pieces if p.strip())


def _tags(content: str) -> list[tuple[int, int]]:
    """Every tag of ``content``, in order: (position, +1 for an opening tag, -1 for a closing one)."""
    found: list[tuple[int, int]] = []
    for tag, step in ((THINK_OPEN, 1), (THINK_CLOSE, -1)):
        at = content.find(tag)
        while at >= 0:
            found.append((at, step))
            at = content.find(tag, at + len(tag))
    return sorted(found)


def _unopened_close(tags: list[tuple[int, int]]) -> int | None:
    """The index in ``tags`` of the first closing tag that closes no opening one (the template opened it)."""
    depth = 0
    for index, (_, step) in enumerate(tags):
        if step < 0 and depth == 0:
            return index
        depth += step
    return None


def _matching_close(tags: list[tuple[int, int]], opening: int) -> int | None:
    """The index in ``tags`` of the closing tag of the opening one at ``opening``, inner blocks counted."""
    depth = 0
    for index in range(opening, len(tags)):
        depth += tags[index][1]
        if depth == 0:
            return index
    return None
