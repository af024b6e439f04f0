"""A sample's side inputs as its solver sees them: embeddings of its texts that stream in while it runs.

A task that names texts for a sample (`SideInputs.side_texts`) gets them embedded beside the LLM calls (`embedfeed.py` in
the driver, `embedboard.py` for samples inside replica actors); its solver finds an `Embeddings` in `Side.embeddings`
and awaits rows only when a step needs them, so its first calls never wait for the embedder.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np


class EmbeddingFailed(Exception):
    """The embedder could not give a sample its embeddings (the sample fails at step `embedding` with this reason)."""


class Embeddings:
    """A sample's text embeddings, fetched the first time a step needs them (`window` consults them only when the
    model's answer names no known event, and then only the rows up to its window's end)."""

    def __init__(self, source: np.ndarray | Callable[[], Awaitable[np.ndarray]],
                 partial: Callable[[int], Awaitable[np.ndarray]] | None = None) -> None:
        self._source = source
        self._partial = partial  # n -> at least the first n rows, while the rest are still being embedded
        self._array: np.ndarray | None = source if isinstance(source, np.ndarray) else None

    @classmethod
    def of(cls, emb: "np.ndarray | Embeddings | None") -> "Embeddings | None":
        return emb if emb is None or isinstance(emb, Embeddings) else cls(emb)

    async def get(self) -> np.ndarray:
        if self._array is None:
            self._array = await self._source()  # type: ignore[operator]
        return self._array

    async def upto(self, n: int) -> np.ndarray:
        """At least the first n rows (all of them where no partial source is known)."""
        if self._array is not None or self._partial is None:
            return await self.get()
        return await self._partial(n)


def pack(emb: np.ndarray) -> dict[str, Any]:
    """Embeddings as base64 float32 (a quarter of the size of a JSON list of floats) with their shape."""
    a = np.ascontiguousarray(emb, dtype=np.float32)
    return {"shape": list(a.shape), "b64": base64.b64encode(a.tobytes()).decode("ascii")}


def unpack(packed: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(packed["b64"]), dtype=np.float32).reshape(packed["shape"])
