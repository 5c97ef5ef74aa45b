"""Answer formats: how the documented readers other than moot's own read replies in one format.

A task declares the format its replies are in (``Task.answer_format``: "arithmetic", "gsm8k", "mmlu", "choice",
"knights:<n>", or a plug-in's own); ``moot report``'s reader-sensitivity tables re-read its stored replies with
the format's paper parser and strict reader (moot.analysis.readers, which registers moot's formats). A task
without a registered format is read by moot's reader alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from moot.registry import Registry

ReadFn = Callable[[str], str | None]  # a reply's text -> a canonical answer, or None (unparsed)


@dataclass(frozen=True)
class AnswerFormat:
    """The paper's own parser of replies in this format (None: no paper has one) and the strict reader, which
    takes only the format the prompt asks for."""

    paper: ReadFn | None
    strict: ReadFn


# answer format -> its readers; a plug-in task that declares its own ``answer_format`` registers it here
ANSWER_FORMATS: Registry[AnswerFormat] = Registry("answer format")
