"""Test doubles for the extraction tests.

`SchemaLLM` stands in for a model behind the `LLM` protocol (as the smoke model does, it answers with JSON that
follows the request's schema, but deterministically and instantly, so that the method logic can be pinned);
`scripted` answers let a test decide what the model says. The real engine path is tested in
test_extract_engine.py with the smoke model.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable

import numpy as np

from emocaustics.models.base import ChatRequest, Completion


def fill(schema: dict[str, Any], seed: str) -> Any:
    """A small valid value for a schema node (first enum value, minItems or one item, short strings)."""
    if "enum" in schema:
        return schema["enum"][0]
    t = schema.get("type")
    if t == "object":
        return {k: fill(v, f"{seed}.{k}") for k, v in schema.get("properties", {}).items()}
    if t == "array":
        n = schema.get("minItems", 1)
        n = min(n, schema.get("maxItems", n))
        return [fill(schema["items"], f"{seed}[{i}]") for i in range(n)]
    if t == "string":
        return ("文" + hashlib.sha1(seed.encode()).hexdigest()[:6])[: schema.get("maxLength", 8)]
    if t == "integer":
        return 0
    raise AssertionError(f"unexpected schema node {schema}")


class SchemaLLM:
    name = "schema-double"

    def __init__(self, answer: Callable[[ChatRequest, int], Any] | None = None):
        self.requests: list[ChatRequest] = []
        self.answer = answer  # (request, call number) -> JSON value, or a str to return verbatim
        self.batches: list[int] = []

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        self.batches.append(len(requests))
        out = []
        for r in requests:
            self.requests.append(r)
            n = len(self.requests) - 1
            value = self.answer(r, n) if self.answer else None
            if value is None:
                value = fill(r.schema or {"type": "string", "maxLength": 4}, r.messages[-1]["content"])
            if isinstance(value, Completion):
                out.append(value)
                continue
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            out.append(Completion(text=text, prompt_tokens=len(r.messages[-1]["content"]), generated_tokens=len(text)))
        return out


def unit_vectors(groups: list[int], dim: int = 8) -> np.ndarray:
    """Embeddings where utterances of the same group are identical and different groups orthogonal."""
    m = np.zeros((len(groups), dim), np.float32)
    for i, g in enumerate(groups):
        m[i, g % dim] = 1.0
    return m
