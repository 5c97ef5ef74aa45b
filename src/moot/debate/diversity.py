"""Diversity-aware initialisation (Zhu et al.): from a pool of M candidate first answers, greedily keep
the N that add most to answer diversity."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Similarity = Callable[[str, str], float]

_TOKEN = re.compile(r"\w+")


def jaccard(a: str, b: str) -> float:
    """Token Jaccard similarity |A ∩ B| / |A ∪ B| over lower-cased word tokens (1.0 for two empty texts)."""
    left, right = set(_TOKEN.findall(a.lower())), set(_TOKEN.findall(b.lower()))
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


@dataclass(frozen=True)
class Candidate:
    text: str
    answer: str | None


def select_diverse(pool: Sequence[Candidate], n: int, similarity: Similarity = jaccard) -> list[int]:
    """Indices of ``n`` candidates chosen greedily by marginal contribution to diversity.

    Each step prefers a candidate whose parsed answer is not yet selected (a new hypothesis);
    if none is left, a remaining parsed candidate; only when no parsed candidate is left, an
    unparsed one. Among those, it takes the one whose text is least similar to the texts already
    selected (its maximum similarity to them is smallest); ties go to the earliest in the pool.
    Unparsed candidates never count as a new answer and are never preferred to a parsed one.
    """
    if not 0 < n <= len(pool):
        raise ValueError(f"cannot select {n} of {len(pool)} candidates")
    chosen: list[int] = []
    while len(chosen) < n:
        seen = {pool[i].answer for i in chosen}
        remaining = [i for i in range(len(pool)) if i not in chosen]
        parsed = [i for i in remaining if pool[i].answer is not None]
        fresh = [i for i in parsed if pool[i].answer not in seen]
        options = fresh or parsed or remaining

        def closeness(i: int) -> float:
            return max((similarity(pool[i].text, pool[j].text) for j in chosen), default=0.0)

        chosen.append(min(options, key=lambda i: (closeness(i), i)))
    return chosen


def answer_diversity(answers: Sequence[str | None]) -> tuple[float, float]:
    """(distinct parsed answers / N, Shannon entropy in bits of the answer distribution, unparsed as one value)."""
    if not answers:
        return 0.0, 0.0
    distinct = len({a for a in answers if a is not None}) / len(answers)
    counts = Counter(answers)
    entropy = -sum(c / len(answers) * math.log2(c / len(answers)) for c in counts.values())
    return distinct, entropy


def text_diversity(texts: Sequence[str], similarity: Similarity = jaccard) -> float:
    """Mean pairwise 1 - similarity (0 for fewer than two texts)."""
    pairs = [(i, j) for i in range(len(texts)) for j in range(i + 1, len(texts))]
    if not pairs:
        return 0.0
    return sum(1 - similarity(texts[i], texts[j]) for i, j in pairs) / len(pairs)


JACCARD_MEASURE = "1 - token jaccard"


def retained_diversity(groups: Sequence[Sequence[str]]) -> tuple[list[float], str]:
    """DAR's measure of retained diversity for each group of kept replies, with the measure's name: mean
    pairwise 1 - cosine of MiniLM embeddings when the embeddings extra is installed (every group's texts
    encoded in one call), else mean pairwise 1 - token Jaccard. A report measures it from stored texts;
    a debate never does."""
    from moot.debate import embeddings

    if embeddings.available():
        return embeddings.group_diversities(groups), embeddings.MEASURE
    return [text_diversity(texts) for texts in groups], JACCARD_MEASURE


def similarity_function(name: str) -> Similarity:
    if name == "embedding":
        from moot.debate.embeddings import embedding_similarity

        return embedding_similarity
    return jaccard
