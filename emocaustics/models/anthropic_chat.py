"""`anthropic:MODEL[@BASE_URL]`: Anthropic's Messages API (or a compatible endpoint) as an `LLM`.

- The key comes from `ANTHROPIC_API_KEY` only. It is handed to the client and nowhere else: never stored on this
  object, logged, or put in an error text. Against the real API a missing key is a usage error; against another
  base URL (a local stand-in) a placeholder is sent.
- At most `concurrency` requests are in flight (a semaphore per event loop). The `anthropic` client retries 408, 409,
  429, 5xx -- 529 "overloaded" included --, timeouts and dropped connections with exponential back-off, honouring
  `retry-after` / `retry-after-ms`, `max_retries` times; each try is bounded by `timeout` seconds.
- Messages: system messages become the top-level `system`; consecutive turns of one role are joined (the API wants
  user/assistant alternation). The answer text is the concatenation of the text blocks; usage comes from
  `input_tokens` / `output_tokens` (`cache_read_input_tokens` counted as cached prompt tokens).
- JSON: `output_config.format` json_schema (the schema transformed by the client's `transform_schema` when
  available) when `json_mode` allows; `auto` drops it for good on the first 400 that names it. Sampling: the
  temperature (clamped to the API's [0, 1]; 0 for greedy, the API's default being 1) and top_p < 1 are sent;
  `sampling=auto` leaves them out for good on the first 400 that names them (API versions that take none), `omit`
  never sends them. There is no seed: repeated samples differ only by temperature.
- Every final failure is a Completion with `error` (HTTP status and the API's error type, timeout, connection, invalid
  JSON, answer cut at max_tokens) and its `kind` (a prompt over the context window: `ErrorKind.CONTEXT_LENGTH`);
  `generate` never raises for one request.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Literal

from emocaustics.core.errors import UsageError
from emocaustics.models.base import ChatRequest, Completion, ErrorKind
from emocaustics.models.chatclient import ChatClient
from emocaustics.models.http import error_message
from emocaustics.models.jsonout import parse_answer
from emocaustics.models.registry import provider

log = logging.getLogger(__name__)
KEY_VARIABLE = "ANTHROPIC_API_KEY"  # the registry's `Provider.key_variables` (a test holds it)
DEFAULT_BASE_URL = "https://api.anthropic.com"


def to_messages(messages: tuple[dict[str, str], ...] | list[dict[str, str]]) -> tuple[str | None, list[dict[str, str]]]:
    """(system text or None, alternating user/assistant turns starting with user)."""
    system = [m["content"] for m in messages if m["role"] == "system"]
    turns: list[dict[str, str]] = []
    for m in messages:
        if m["role"] == "system":
            continue
        role = "assistant" if m["role"] == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1] = {"role": role, "content": turns[-1]["content"] + "\n\n" + m["content"]}
        else:
            turns.append({"role": role, "content": m["content"]})
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": "(see the instructions)"})
    return ("\n\n".join(system) if system else None), turns


def _transform(schema: dict[str, Any]) -> dict[str, Any]:
    try:
        from anthropic import transform_schema
    except ImportError:  # older clients: send the schema as it is
        return schema
    return transform_schema(schema)


class AnthropicChatLLM(ChatClient):
    kind = "anthropic"

    def __init__(self, model: str, base_url: str | None = None, *, name: str | None = None, concurrency: int = 8,
                 timeout: float = 120.0, max_retries: int = 4, json_mode: Literal["auto", "schema", "plain"] = "auto",
                 json_retries: int = 1, sampling: Literal["auto", "send", "omit"] = "auto") -> None:
        if sampling not in ("auto", "send", "omit"):
            raise ValueError(f"sampling must be auto, send or omit, not {sampling!r}")
        super().__init__(model, base_url, name=name, concurrency=concurrency, timeout=timeout,
                         max_retries=max_retries, json_mode=json_mode, json_retries=json_retries)
        if base_url is None and not provider(self.kind).key():
            raise UsageError(f"anthropic:{model}: set {KEY_VARIABLE} (the key is read from the environment only)")
        self.sampling = sampling

    def _connect(self) -> tuple[Any, asyncio.Semaphore]:
        from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient

        async def answered(response: Any) -> None:  # the SDK retries inside: each response is seen here
            self._answered(response.status_code, response.headers)

        client = AsyncAnthropic(api_key=self.api_key(), base_url=self.base_url or DEFAULT_BASE_URL,
                                timeout=self.timeout, max_retries=self.max_retries, default_headers=self._auth,
                                http_client=DefaultAsyncHttpxClient(event_hooks={"response": [answered]}))
        return client, asyncio.Semaphore(self.concurrency)

    def _params(self, request: ChatRequest, with_schema: bool) -> dict[str, Any]:
        s = request.sampling
        system, turns = to_messages(request.messages)
        params: dict[str, Any] = {"model": self.model, "max_tokens": s.max_tokens, "messages": turns}
        if system:
            params["system"] = system
        extra: dict[str, Any] = {}
        if self.sampling != "omit":
            extra["temperature"] = min(float(s.temperature), 1.0)  # the API's range is [0, 1]
            if s.top_p < 1.0:
                extra["top_p"] = s.top_p
        if with_schema and request.schema is not None:
            extra["output_config"] = {"format": {"type": "json_schema", "schema": _transform(request.schema)}}
        if extra:
            params["extra_body"] = extra  # raw body keys: independent of the client version's keyword arguments
        return params

    async def _create(self, client: Any, request: ChatRequest) -> Any:
        """One call; on a 400 naming output_config / temperature in `auto` modes, switch that off and call again."""
        import anthropic

        for _ in range(3):
            use_schema = request.schema is not None and self.json_mode != "plain"
            sent_sampling = self.sampling != "omit"
            try:
                return await client.messages.create(**self._params(request, use_schema))
            except anthropic.BadRequestError as exc:
                text = str(exc).lower()
                # Requests in flight together may all meet the 400: the first switches the mode, all retry.
                if self._plain_from_now(text, use_schema, ("output_config", "json_schema")):
                    continue
                if sent_sampling and ("temperature" in text or "top_p" in text) and self.sampling != "send":
                    if self.sampling == "auto":
                        log.info("%s: endpoint rejects temperature/top_p; leaving them out", self.name)
                        self.sampling = "omit"
                else:
                    raise
        raise RuntimeError("unreachable: request still rejected after switching options off")

    async def _once(self, request: ChatRequest) -> Completion:
        import anthropic

        client, sem = self._per_loop.here()
        async with sem:
            try:
                resp = await self._create(client, request)
            except anthropic.AnthropicError as exc:
                return _failure(exc, self.timeout)
        c = completion_from(resp, request)
        if resp.usage and resp.usage.cache_read_input_tokens:
            self.usage.cached_prompt_tokens += int(resp.usage.cache_read_input_tokens)
        return c


def completion_from(resp: Any, request: ChatRequest) -> Completion:
    """The Completion of a Messages API message (a live answer, or a batch result's `result.message`)."""
    text = "".join(getattr(b, "text", "") for b in (resp.content or []) if getattr(b, "type", "") == "text")
    usage = resp.usage
    parsed, repaired, error = parse_answer(text, request.schema)
    over = resp.stop_reason == "model_context_window_exceeded" and bool(error or not text)  # prompt + answer over it
    if resp.stop_reason == "max_tokens" and (error or not text):
        error = f"answer cut at max_tokens={request.sampling.max_tokens}; {error or 'empty answer'}"
    elif over:
        error = f"answer cut at the model's context window; {error or 'empty answer'}"
    elif resp.stop_reason == "refusal" and error:
        error = f"model refused; {error}"
    return Completion(text=text, parsed=parsed, error=error,
                      kind=ErrorKind.CONTEXT_LENGTH if over else ErrorKind.ANSWER if error else None,
                      repaired=repaired,
                      prompt_tokens=(usage.input_tokens + (usage.cache_read_input_tokens or 0)
                                     + (usage.cache_creation_input_tokens or 0)) if usage else 0,
                      generated_tokens=usage.output_tokens if usage else 0)


def _failure(exc: Exception, timeout: float) -> Completion:
    """The failed request's Completion: its kind from the exception's type and status, its error one line (the
    client's messages carry the server's error text, never the request headers; `Completion` scrubs an echoed key)."""
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):
        return Completion("", error=f"timeout: no answer within {timeout:g}s (after retries)", kind=ErrorKind.TIMEOUT)
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__
        return Completion("", error=f"connection error: {type(cause).__name__ if cause else exc} (after retries)",
                          kind=ErrorKind.CONNECTION)
    if isinstance(exc, anthropic.APIStatusError):
        err = exc.body.get("error") if isinstance(exc.body, dict) else None
        named = f" {err['type']}" if isinstance(err, dict) and err.get("type") else ""
        words = error_message(exc.body, str(exc.message))
        # a prompt over the context window: a 400 with no code of its own, told by its documented words (allowed once)
        over = exc.status_code == 400 and words.startswith("prompt is too long")
        return Completion("", error=f"HTTP {exc.status_code}{named}: {words[:200]}",
                          kind=ErrorKind.CONTEXT_LENGTH if over else ErrorKind.of_status(exc.status_code))
    return Completion("", error=f"{type(exc).__name__}: {str(exc)[:200]}")
