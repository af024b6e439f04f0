"""What the clients of a chat endpoint share (`openai_chat`, `anthropic_chat`): their options, one HTTP client and
concurrency limit per event loop, asking again for an answer that is not the JSON asked for, and their counters.

A subclass makes its HTTP client (`_connect`) and asks once (`_once`); `generate` never raises for one request: every
final failure is a Completion with `error` naming the reason.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Literal

from emocaustics.models.base import ChatRequest, Completion, ErrorKind, ModelBase, PerLoop
from emocaustics.models.usage import Usage

log = logging.getLogger(__name__)
JSON_MODES = ("auto", "schema", "plain")
NO_KEY = "EMPTY"  # what local servers (vllm serve) accept when they were started without a key


class ChatClient(ModelBase):
    kind = ""  # the provider's name, in the default name and the cache id: `KIND:MODEL[@BASE_URL]`

    def __init__(self, model: str, base_url: str | None = None, *, name: str | None = None, concurrency: int = 16,
                 timeout: float = 60.0, max_retries: int = 4, json_mode: Literal["auto", "schema", "plain"] = "auto",
                 json_retries: int = 1) -> None:
        if json_mode not in JSON_MODES:
            raise ValueError(f"json_mode must be auto, schema or plain, not {json_mode!r}")
        from emocaustics.models.http import url_auth

        self.model, self.base_url = model, base_url
        self.cache_id = f"{self.kind}:{model}" + (f"@{base_url}" if base_url else "")
        self.name = name or self.cache_id
        self.concurrency, self.timeout, self.max_retries = int(concurrency), float(timeout), int(max_retries)
        self.json_mode, self.json_retries = json_mode, int(json_retries)
        # Credentials the spec gave in its URL (`models/http.py`): sent instead of a bearer key; read here, so that
        # the object carries them wherever it is used.
        self._auth = url_auth(base_url)
        self.usage = Usage()
        self.repaired = 0
        # Told of every HTTP response, retried ones included (set by the dead-endpoint breaker: models/breaker.py).
        self.on_response: Callable[..., None] | None = None  # (status, headers)
        self.retry_throttled = True  # False behind an adaptive rate limit, which requeues a 429 (models/breaker.py)
        # (HTTP client, concurrency limit) of each event loop (`_connect`): they belong to the loop that made them.
        self._per_loop = PerLoop(self._connect)

    def api_key(self) -> str:
        """The provider's key from the environment (`Provider.key`: models/registry.py), else `NO_KEY`."""
        from emocaustics.models.registry import provider

        return provider(self.kind).key() or NO_KEY

    def _connect(self) -> tuple[Any, Any]:
        raise NotImplementedError

    def _answered(self, status: int, headers: Any = None) -> None:
        if self.on_response is not None:
            self.on_response(status, headers)

    async def _once(self, request: ChatRequest) -> Completion:
        raise NotImplementedError

    def _plain_from_now(self, refused: str, sent: bool, words: tuple[str, ...]) -> bool:
        """Whether a 400 whose text (`refused`) names structured output (`words`), which this request sent (`sent`),
        is to be asked again plainly: unless `json_mode=schema`; in `auto`, every request is plain from then on
        (requests in flight together may all meet the 400: the first switches the mode, all ask again)."""
        if not (sent and self.json_mode != "schema" and any(w in refused.lower() for w in words)):
            return False
        if self.json_mode == "auto":
            log.info("%s: endpoint rejects %s; using plain requests", self.name, " ".join(words))
            self.json_mode = "plain"
        return True

    async def _one(self, request: ChatRequest) -> Completion:
        try:
            for attempt in range(self.json_retries + 1):
                c = await self._once(request)
                if c.kind is not ErrorKind.ANSWER:  # an answer not the JSON asked for is asked again; a transport
                    break  # failure was already retried by the client
                if attempt < self.json_retries:
                    log.info("%s: unparseable answer, asking again (%d/%d)", self.name, attempt + 1, self.json_retries)
        except Exception as exc:  # anything unexpected still fails only this request
            c = Completion(text="", error=f"client error: {type(exc).__name__}: {exc}")
        if c.kind is ErrorKind.ANSWER:
            # An answer came back that is not the JSON asked for: the caller may still read it (AER's text fallback)
            # or ask again, and reports the sample if it cannot; only failures to get an answer are warned of here.
            log.debug("%s: answer is not the JSON asked for: %s", self.name, c.error)
        elif c.error and not (c.kind is ErrorKind.THROTTLED and not self.retry_throttled):  # requeued, not failed
            log.warning("%s: request failed: %s", self.name, c.error)
        self.repaired += c.repaired
        return c

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        answers = list(await asyncio.gather(*(self._one(r) for r in requests)))
        self.usage.count(answers)
        return answers

    async def aclose(self) -> None:
        """Close this event loop's HTTP client (call before the loop ends to release its connections cleanly)."""
        entry = self._per_loop.drop()
        if entry is not None and entry[0] is not None:
            await entry[0].close()

    async def stats(self) -> dict[str, Any]:
        return {**self.usage.as_dict(), "repaired": self.repaired, "engine_starts": 0, "prefix_cache_hit_rate": None}
