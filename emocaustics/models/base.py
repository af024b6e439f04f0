"""The one interface every model backend offers (vLLM actor, OpenAI-compatible endpoint, smoke model, embedders).

Extraction and scoring code talk only to these protocols; the spec string picks the backend
(see `emocaustics.models.spec`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True, slots=True)
class Sampling:
    max_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = 0

    def key(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p, "seed": self.seed}


@dataclass(frozen=True, slots=True)
class ChatRequest:
    messages: tuple[dict[str, str], ...]  # [{"role": "system"|"user"|"assistant", "content": ...}]
    schema: dict | None = None  # JSON schema the answer must follow (structured output where the backend has it)
    sampling: Sampling = field(default_factory=Sampling)
    affinity: str | None = None  # e.g. the dialogue id: requests with the same affinity go to the same replica
    # vLLM's request priority (lower is served first) for engines under scheduling_policy="priority": minus the number
    # of calls of this dialogue that must wait for this one in sequence, so that long sequential chains are not queued
    # behind independent calls (critical path first). Not part of the answer, nor of the response-cache key.
    priority: int = 0
    # True: the caller waits on this answer before it can build its next request (a window chain's step, a merge of a
    # chain's answers, a re-ask of a bad answer). A model with `batch: true` (models/batch.py) sends such requests
    # live; the others (independent calls: the default) go through the provider's batch API. Not part of the cache key.
    live: bool = False


@dataclass(slots=True)
class Completion:
    text: str
    parsed: Any = None  # the JSON value when a schema was given and the text parsed (possibly after repair)
    error: str | None = None  # why this request failed for good (after retries); text may then be ""
    prompt_tokens: int = 0
    generated_tokens: int = 0
    cached: bool = False
    repaired: bool = False  # json-repair had to fix the text
    batched: bool = False  # answered through a provider's batch API (billed at the batch price: models/prices.py)

    @property
    def ok(self) -> bool:
        return self.error is None


@runtime_checkable
class LLM(Protocol):
    name: str  # the spec string, used in cache keys and reports

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        """One Completion per request, same order. Never raises for a single bad request: it sets `error`."""
        ...


@runtime_checkable
class Embedder(Protocol):
    name: str

    async def embed(self, texts: list[str]) -> np.ndarray:
        """An (n, d) float32 array of L2-normalised embeddings, so that cosine is a dot product."""
        ...
