"""`openai:MODEL@BASE_URL`: any OpenAI-compatible chat endpoint (DeepSeek, GLM, a `vllm serve`) as an `LLM`.

- The key comes from `OPENAI_API_KEY` or `EMOCAUSTICS_API_KEY` (else a placeholder, for local servers that want
  none). It is handed to the client only: never stored elsewhere, logged, or put in an error text. Credentials
  written in the spec's URL (`https://user:password@host/v1`) are sent as HTTP Basic instead (`models/http.py`).
- At most `concurrency` requests are in flight (a semaphore). The transport (`models/http.py`, aiohttp) retries
  408/409/429/5xx, timeouts and dropped connections as the official SDK does (exponential backoff with jitter,
  honouring `Retry-After`), `max_retries` times, each try bounded by `timeout` seconds.
- JSON: `response_format` json_schema when the endpoint takes it (`json_mode=auto` finds out on the first 400 that
  names it and then stays plain), else a plain request whose text goes through json-repair. An answer that does not
  parse, or that was cut at max_tokens (`finish_reason: "length"`; never json-repaired), is asked again up to
  `json_retries` times, then reported as a failure.
- Every final failure is a Completion with its `kind` (models/base.py: from the HTTP status and the server's error
  code or parameter: a prompt over the context is `CONTEXT_LENGTH`) and `error` naming the reason (HTTP status,
  timeout, connection, invalid JSON); `generate` never raises for one request.
"""

from __future__ import annotations

from typing import Any

from emocaustics.models.base import ChatRequest, Completion
from emocaustics.models.chatclient import ChatClient
from emocaustics.models.gate import PriorityGate
from emocaustics.models.jsonout import read_answer


class OpenAIChatLLM(ChatClient):
    kind = "openai"

    def _connect(self) -> tuple[Any, PriorityGate]:
        from emocaustics.models.http import JSONPoster

        auth = self._auth or {"Authorization": f"Bearer {self.api_key()}"}
        poster = JSONPoster(self.base_url, auth, timeout=self.timeout, max_retries=self.max_retries,
                            connections=self.concurrency, on_response=self._answered,
                            retry_throttled=self.retry_throttled)
        return poster, PriorityGate(self.concurrency)

    def _body(self, request: ChatRequest, with_schema: bool) -> dict[str, Any]:
        s = request.sampling
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
            "max_tokens": s.max_tokens,
            "temperature": s.temperature,
            "top_p": s.top_p,
        }
        if s.seed is not None:
            body["seed"] = s.seed
        if with_schema and request.schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": request.schema, "strict": True},
            }
        return body

    async def _once(self, request: ChatRequest) -> Completion:
        from emocaustics.models.http import HTTPFailure

        poster, gate = self._per_loop.here()
        async with gate.slot(request.priority):  # the longest dependent chain first (models/gate.py)
            # Decided under the semaphore: an earlier request may just have found out that the endpoint is plain.
            use_schema = request.schema is not None and self.json_mode != "plain"
            while True:
                try:
                    data = await poster.post("chat/completions", self._body(request, use_schema))
                    break
                except HTTPFailure as exc:
                    if exc.status != 400 or not self._plain_from_now(exc.reason, use_schema,
                                                                     ("response_format", "json_schema")):
                        return Completion(text="", error=exc.reason, kind=exc.kind)
                    use_schema = False
        return completion_from(data, request)


def completion_from(data: Any, request: ChatRequest) -> Completion:
    """The Completion of a chat.completion body (a live answer, or a batch output line's `response.body`)."""
    try:
        choices = data.get("choices") or []
        choice = choices[0] if choices else None
        text = ((choice.get("message") or {}).get("content") or "") if choice is not None else ""
        finish = choice.get("finish_reason") if choice is not None else None
        usage = data.get("usage") or {}
    except (ValueError, AttributeError, TypeError) as exc:
        return Completion(text="", error=f"invalid response body: {type(exc).__name__}: {str(exc)[:200]}")
    return read_answer(text, request, finish == "length", request.sampling.max_tokens,
                       prompt_tokens=int(usage.get("prompt_tokens") or 0),
                       generated_tokens=int(usage.get("completion_tokens") or 0))
