"""Embed every distinct text once, then answer cosine similarities from matrix products.

The reference implementation embeds two texts per comparison; here a whole batch of dialogues contributes its
texts to one set, the set is embedded in large batches, and each pair's cosine is a row-wise dot product of
L2-normalised vectors (one `einsum` over all pairs). Empty texts are never embedded (callers skip them).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from emocaustics.models.base import Embedder


@dataclass(slots=True)
class SimilarityTable:
    """Cosines for a known set of (a, b) pairs; `sim(a, b)` answers them, symmetric."""

    values: dict[tuple[str, str], float] = field(default_factory=dict)
    texts_requested: int = 0  # text occurrences the pairs named (what per-pair embedding would have embedded)
    distinct_texts: int = 0  # what was actually embedded

    def sim(self, a: str, b: str) -> float:
        v = self.values.get((a, b))
        if v is None:
            v = self.values.get((b, a))
        if v is None:
            raise KeyError(f"no similarity computed for {a!r} vs {b!r}: the pair was not collected before embedding")
        return v


def clean_pairs(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Stripped, non-empty, non-identical pairs (the others have fixed similarities), de-duplicated, order kept."""
    stripped = ((a.strip(), b.strip()) for a, b in pairs)
    return list(dict.fromkeys((a, b) for a, b in stripped if a and b and a != b))


def distinct_texts(pairs: list[tuple[str, str]]) -> list[str]:
    return list(dict.fromkeys(t for pair in pairs for t in pair))  # each text once, in the order first named


def cosines(pairs: list[tuple[str, str]], texts: list[str], vectors: np.ndarray) -> dict[tuple[str, str], float]:
    if not pairs:
        return {}
    row = {t: i for i, t in enumerate(texts)}
    ia = np.fromiter((row[a] for a, _ in pairs), dtype=np.int64, count=len(pairs))
    ib = np.fromiter((row[b] for _, b in pairs), dtype=np.int64, count=len(pairs))
    sims = np.einsum("ij,ij->i", vectors[ia], vectors[ib])
    # float32 dot products of unit vectors can stray just outside [-1, 1]
    return dict(zip(pairs, np.clip(sims, -1.0, 1.0).astype(float).tolist()))


async def similarity_table(pairs: Iterable[tuple[str, str]], embedder: Embedder) -> SimilarityTable:
    """Embed the distinct texts of `pairs` once (one `embed` call; the embedder batches) and compute all cosines."""
    cleaned = clean_pairs(pairs)
    texts = distinct_texts(cleaned)
    vectors = await embedder.embed(texts) if texts else np.zeros((0, 1), dtype=np.float32)
    if len(texts) and vectors.shape[0] != len(texts):
        raise RuntimeError(f"embedder {embedder.name} returned {vectors.shape[0]} vectors for {len(texts)} texts")
    return SimilarityTable(cosines(cleaned, texts, vectors), texts_requested=2 * len(cleaned),
                           distinct_texts=len(texts))
