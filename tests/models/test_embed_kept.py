"""`models.embedstore.embed_kept`: the store's read-through, beside the store it reads (AER's retrieval calls it):
the texts the store holds for the embedder's identity are not embedded again, the rest are embedded and kept; a
read-only store gives what it holds and keeps nothing new; without a store every text is embedded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from emocaustics.models.embedstore import EmbeddingStore, embed_kept


class Counting:
    """Two-dimensional vectors from a text's length; counts the texts it is asked for."""

    identity = "counting#1"

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.asked += texts
        return np.asarray([[len(t), 1.0] for t in texts], dtype=np.float32)


def test_kept_texts_are_not_embedded_again(tmp_path: Path) -> None:
    emb = Counting()
    store = EmbeddingStore(tmp_path)
    first = asyncio.run(embed_kept(emb, store, ["ab", "c"]))
    second = asyncio.run(embed_kept(emb, store, ["c", "ab", "dddd"]))
    store.close()
    assert emb.asked == ["ab", "c", "dddd"]
    assert np.allclose(second[:2], first[::-1]) and np.allclose(np.linalg.norm(second, axis=1), 1.0)


def test_a_read_only_store_keeps_nothing_new(tmp_path: Path) -> None:
    emb = Counting()
    store = EmbeddingStore(tmp_path, read_only=True)
    asyncio.run(embed_kept(emb, store, ["ab"]))
    asyncio.run(embed_kept(emb, store, ["ab"]))
    assert emb.asked == ["ab", "ab"] and not (tmp_path / "embeddings.sqlite").exists()


def test_without_a_store_every_text_is_embedded() -> None:
    emb = Counting()
    got = asyncio.run(embed_kept(emb, None, ["x", "x"]))
    assert emb.asked == ["x", "x"] and got.shape == (2, 2)
