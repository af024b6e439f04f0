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


# -- dialogues through the shared plan (solve/plan.py), as a job or `extract` runs them ------------------------------
class Utterance:
    def __init__(self, sentence: str, holder: str) -> None:
        self.sentence, self.holder = sentence, holder


class Dialogue:
    """The two fields of a published dialogue that extraction reads (`EmoCausticsTask.solver_view`)."""

    def __init__(self, id: int, sentences: list[str], holders: list[str]) -> None:
        self.id = id
        self.utterances = [Utterance(s, h) for s, h in zip(sentences, holders)]


class IndexEmbedder:
    """Stands in for the job's embedder: utterance `…第i句` gets unit vector i (`unit_vectors`), others vector 0."""

    name = "index-double"

    async def embed(self, texts: list[str]) -> np.ndarray:
        import re

        return unit_vectors([int(m.group(1)) if (m := re.search(r"第(\d+)句", t)) else 0 for t in texts])


def solve_dialogues(llm: Any, dialogues: list[Dialogue], cfg: Any, out: Any, *, concurrency: int = 256,
                    prior: Any = None, on_row: Callable[[dict[str, Any]], None] | None = None,
                    monkeypatch: Any = None, embedder_spec: str = "index-double") -> list[dict[str, Any]]:
    """`dialogues` through `solve.plan.asolve_samples` with the EmoCaustics task of `cfg` (an `ExtractConfig`); with
    `monkeypatch`, the feed embeds on `IndexEmbedder` instead of loading a model (else on `embedder_spec`). Rows in the
    dialogues' order."""
    from emocaustics.core import aio
    from emocaustics.core.task import Sample, get_task
    from emocaustics.solve.plan import asolve_samples
    from emocaustics.tasks.longdialogue.task import EmoOptions

    if monkeypatch is not None:
        import emocaustics.models.embedders as embedders

        monkeypatch.setattr(embedders, "make_embedder", lambda spec, **kw: IndexEmbedder())
    samples = [Sample(str(d.id), d) for d in dialogues]
    options = EmoOptions(**cfg.model_dump(exclude={"task"}))
    out.mkdir(parents=True, exist_ok=True)
    return aio.run(asolve_samples(get_task(cfg.task), samples, options, llm, out, concurrency=concurrency,
                                  prior=prior, embedder_spec=embedder_spec, on_row=on_row))
