"""Uncertainty of a reply from the log-probabilities of the tokens actually generated (not the
top-ranked ones: MAD-M2's released code used the rank-1 token, a pitfall avoided here)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from moot.backends.base import TokenLogprob


@dataclass(frozen=True)
class Uncertainty:
    """Total negative log-likelihood, its average per token (ANLL, DAR's cue) and perplexity exp(ANLL)."""

    nll: float
    anll: float
    perplexity: float
    tokens: int


def uncertainty(logprobs: Sequence[TokenLogprob] | None) -> Uncertainty | None:
    """None when there are no log-probabilities (not asked, or an empty reply)."""
    if not logprobs:
        return None
    nll = -sum(t.logprob for t in logprobs)
    anll = nll / len(logprobs)
    return Uncertainty(nll=nll, anll=anll, perplexity=math.exp(anll), tokens=len(logprobs))
