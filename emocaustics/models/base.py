"""The one interface every model offers (`LLM`: a provider's client, the pool of Ray-hosted replicas, and every layer
in front of them), its defaults (`ModelBase`, `Layer`), and the embedders' (`Embedder`).

Solving and scoring code call only the members `LLM` names; the registry picks the provider of a spec
(`models.registry`) and `models.factory.make_llm` composes the layers.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

import numpy as np

from emocaustics.core.redact import scrub


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


class ErrorKind(StrEnum):
    """What kind of failure a Completion is, set by the client that saw it (from the HTTP status, the exception's
    type, the server's error code): the breaker, the rate limit and the solvers decide on this, never on the text."""

    CONNECTION = "connection"  # refused, reset, dropped: nobody answered
    TIMEOUT = "timeout"  # no answer within the client's timeout
    SERVER = "server"  # HTTP 5xx (an overloaded 503/529 included)
    THROTTLED = "throttled"  # HTTP 429
    AUTH = "auth"  # HTTP 401/403: the key (or the URL's credentials) was refused
    BAD_REQUEST = "bad_request"  # any other HTTP 4xx
    CONTEXT_LENGTH = "context_length"  # the prompt does not fit the model's context
    ANSWER = "answer"  # an answer came back that is not the JSON asked for (invalid, cut at max_tokens, refused)
    OTHER = "other"

    @classmethod
    def of_status(cls, status: int | None, error: Any = None) -> ErrorKind:
        """The kind of an HTTP error answer; `error`: the body's `error` object where it has one. A prompt over the
        context is OpenAI's code "context_length_exceeded", or vLLM's 400 naming the parameter `input_tokens` (the
        prompt's tokens) or `input_text` (its characters, checked before tokenizing: vllm/renderers/params.py)."""
        code, param = (error.get("code"), error.get("param")) if isinstance(error, dict) else (None, None)
        if code == "context_length_exceeded" or (status == 400 and param in ("input_tokens", "input_text")):
            return cls.CONTEXT_LENGTH
        if status is None or status < 400:  # a 2xx whose body could not be read
            return cls.OTHER
        named = {401: cls.AUTH, 403: cls.AUTH, 429: cls.THROTTLED}
        return named.get(status) or (cls.SERVER if status >= 500 else cls.BAD_REQUEST)


@dataclass(slots=True)
class Completion:
    text: str
    parsed: Any = None  # the JSON value when a schema was given and the text parsed (possibly after repair)
    # Why this request failed for good (after retries), without any secret the run knows (`core.redact.scrub`, applied
    # here, where every error is made, so an endpoint that echoes a key stores it nowhere); text may then be "".
    error: str | None = None
    prompt_tokens: int = 0
    generated_tokens: int = 0
    cached: bool = False
    repaired: bool = False  # json-repair had to fix the text
    batched: bool = False  # answered through a provider's batch API (billed at the batch price: models/prices.py)
    kind: ErrorKind | None = None  # set with `error` (OTHER when its maker did not say); None when it succeeded

    def __post_init__(self) -> None:
        if self.error is not None:
            self.error, self.kind = scrub(self.error), self.kind or ErrorKind.OTHER

    @property
    def ok(self) -> bool:
        return self.error is None


@runtime_checkable
class LLM(Protocol):
    """Every member the rest of the code may call on a model, and nothing else (no attribute is reached through a
    wrapper): a provider's client, the pool of Ray-hosted replicas, and each layer in front of them (cache, breaker
    and rate limit, budget, batch, eval log, a sample's counter) offer exactly these. `ModelBase` gives the defaults,
    so that a provider writes `name` and `generate` only."""

    name: str  # the spec string, used in reports
    cache_id: str  # the model's identity in response-cache keys (the smoke model's includes its content hash)
    runs_remotely: bool  # True: `run` ships `fn` and the items to the model's actors (they must pickle)

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        """One Completion per request, same order. Never raises for a single bad request: it sets `error`."""
        ...

    async def run(self, fn: Callable[[Any, Any], Awaitable[Any]], items: list[Any],
                  affinity_key: Callable[[Any], str] | None = None, *, weight_key: Callable[[Any], int] | None = None,
                  chain_key: Callable[[Any], int] | None = None, cache_path: Any = None) -> list[Any]:
        """`fn(model, item)` for every item, results in order (a failed item is a `models.local.RunFailure`);
        `cache_path`: the response cache that a model running `fn` next to its replicas answers them through."""
        ...

    async def stats(self) -> dict[str, Any]:
        """Counters of this model and the layers below it (calls, tokens, cache hits, batches ...)."""
        ...

    async def aclose(self) -> None:
        """Close what this event loop holds (an endpoint's HTTP session); the model stays usable from another loop."""
        ...


class ModelBase:
    """The defaults of the `LLM` protocol: a subclass writes `name` and `generate`. `run` calls `fn` here, in this
    process, as many items in flight as `fn` awaits."""

    name: str = ""
    runs_remotely: bool = False

    @property
    def cache_id(self) -> str:
        return self.__dict__.get("_cache_id") or self.name

    @cache_id.setter
    def cache_id(self, value: str) -> None:
        self.__dict__["_cache_id"] = value

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        raise NotImplementedError(f"{type(self).__name__}.generate")

    async def run(self, fn: Callable[[Any, Any], Awaitable[Any]], items: list[Any],
                  affinity_key: Callable[[Any], str] | None = None, **keys: Any) -> list[Any]:
        from emocaustics.models.local import run_local

        return await run_local(self, fn, items)

    async def stats(self) -> dict[str, Any]:
        return {}

    async def aclose(self) -> None:
        return None


class Layer(ModelBase):
    """A model in front of another (`self.llm`): it is the model it wraps (name, cache id) unless it says otherwise,
    and hands `stats` and `aclose` down. `run` stays in this process, through this layer; a layer that can run next to
    remote replicas (the response cache) overrides `runs_remotely` and `run`."""

    def __init__(self, llm: Any) -> None:
        self.llm: LLM = as_model(llm)

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.llm.name

    @property
    def cache_id(self) -> str:
        return self.llm.cache_id

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        return await self.llm.generate(requests)

    async def stats(self) -> dict[str, Any]:
        return await self.llm.stats()

    async def aclose(self) -> None:
        await self.llm.aclose()


class _Adapted(ModelBase):
    """A model written to the protocol's two required members only (a test double, a plug-in that does not use
    `ModelBase`), with the defaults for the rest, or its own where it has them. The one place that asks an object
    which members it has."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.name = getattr(obj, "name", None) or type(obj).__name__  # a test double may have no name
        self.cache_id = getattr(obj, "cache_id", None) or self.name
        self.runs_remotely = bool(getattr(obj, "runs_remotely", False))
        self._stats, self._aclose = getattr(obj, "stats", None), getattr(obj, "aclose", None)
        self._run = getattr(obj, "run", None)

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        return await self.obj.generate(requests)

    async def run(self, fn: Callable[[Any, Any], Awaitable[Any]], items: list[Any],
                  affinity_key: Callable[[Any], str] | None = None, **keys: Any) -> list[Any]:
        if self._run is not None and self.runs_remotely:
            return await self._run(fn, items, affinity_key, **keys)
        return await super().run(fn, items)

    async def stats(self) -> dict[str, Any]:
        return dict(await self._stats()) if self._stats is not None else {}

    async def aclose(self) -> None:
        if self._aclose is not None:
            await self._aclose()


class PerLoop(weakref.WeakKeyDictionary):  # type: ignore[type-arg]
    """One object per event loop, made by `make()` on the loop's first use: HTTP clients, semaphores, queues and
    futures belong to the loop that made them, and tests and CLIs may run several loops in turn."""

    def __init__(self, make: Callable[[], Any]) -> None:
        super().__init__()
        self.make = make

    def here(self) -> Any:
        """The running loop's object (made now if it has none)."""
        loop = asyncio.get_running_loop()
        return self[loop] if loop in self else self.setdefault(loop, self.make())

    def drop(self) -> Any:
        """The running loop's object, forgotten (None if it had none)."""
        return self.pop(asyncio.get_running_loop(), None)


def as_model(obj: Any) -> LLM:
    """`obj` with the whole `LLM` protocol: itself when it derives from `ModelBase`, else adapted (`_Adapted`)."""
    return obj if isinstance(obj, ModelBase) else _Adapted(obj)


@runtime_checkable
class Embedder(Protocol):
    name: str

    async def embed(self, texts: list[str]) -> np.ndarray:
        """An (n, d) float32 array of L2-normalised embeddings, so that cosine is a dot product."""
        ...
