"""`litellm:PROVIDER/MODEL[@BASE_URL][?api_version=...]`: the long tail of hosted models through LiteLLM.

Gemini, Bedrock, Azure OpenAI, Mistral, Together and the hundred other backends LiteLLM speaks are one provider here,
behind the same layers as our native clients (response cache, breaker and rate limit, budget, eval log:
`models/factory.py` composes them). Our native `openai:` and `anthropic:` clients stay where they are: they are
measured (docs/performance.md) and have the batch APIs.

- Keys are LiteLLM's own environment variables (`AZURE_API_KEY`, `MISTRAL_API_KEY`, `TOGETHERAI_API_KEY`,
  `GEMINI_API_KEY`, the AWS variables for Bedrock...): read by LiteLLM, never by us, so no key passes through a spec,
  a record or a message. Azure OpenAI's `api-version` is the spec option `api_version` (or `AZURE_API_VERSION`).
- LiteLLM is imported on the first call (about 3 s), with its model-price map read from the package (no network) and
  its telemetry and debug hints off.
- Retries of 408/429/5xx are LiteLLM's (`max_retries`, exponential backoff); a final failure is a Completion whose
  kind (models/base.py: from the exception's type and HTTP status) the breaker counts (models/breaker.py), and whose
  error `Completion` scrubs of every secret the run knows, as any client's (core/redact.py).
- JSON: `response_format` json_schema; a backend that refuses it (a 400 naming response_format) is asked plainly from
  then on (`json_mode=auto`), and the text goes through json-repair (models/jsonout.py).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from emocaustics.models.base import ChatRequest, Completion, ErrorKind
from emocaustics.models.chatclient import ChatClient
from emocaustics.models.jsonout import read_answer


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # the bundled price map: no fetch at import
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


class LiteLLMChat(ChatClient):
    kind = "litellm"

    def __init__(self, model: str, base_url: str | None, *, name: str, api_version: str | None = None,
                 **options: Any) -> None:
        super().__init__(model, base_url, name=name, **options)
        self.cache_id = name  # the whole spec, options included, as it always was
        self.api_version = api_version

    def _connect(self) -> tuple[Any, asyncio.Semaphore]:
        return None, asyncio.Semaphore(self.concurrency)  # LiteLLM holds its HTTP clients itself

    async def _once(self, request: ChatRequest) -> Completion:
        litellm = _litellm()
        s = request.sampling
        kwargs: dict[str, Any] = dict(model=self.model, messages=[dict(m) for m in request.messages],
                                      max_tokens=s.max_tokens, temperature=s.temperature, top_p=s.top_p,
                                      timeout=self.timeout, num_retries=self.max_retries)
        if s.seed is not None:
            kwargs["seed"] = s.seed
        if self.base_url:
            kwargs["api_base"] = self.base_url
        if self.api_version:
            kwargs["api_version"] = self.api_version
        if request.schema is not None and self.json_mode != "plain":
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "answer", "schema": request.schema}}
        async with self._per_loop.here()[1]:
            try:
                response = await litellm.acompletion(**kwargs)
            except litellm.BadRequestError as exc:
                if self._plain_from_now(str(exc), "response_format" in kwargs, ("response_format",)):
                    return await self._once(request)  # this backend has no structured output
                return self._failure(litellm, exc)
            except Exception as exc:  # noqa: BLE001 -- one request's failure is its Completion, never a raise
                return self._failure(litellm, exc)
        choice = response.choices[0]
        text = choice.message.content or ""
        usage = getattr(response, "usage", None)
        prompt, generated = (int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)) if usage else (0, 0)
        return read_answer(text, request, choice.finish_reason == "length", s.max_tokens, prompt_tokens=prompt,
                           generated_tokens=generated)

    def _failure(self, litellm: Any, exc: Exception) -> Completion:
        status, text = getattr(exc, "status_code", None), str(exc)[:300]
        if isinstance(exc, litellm.ContextWindowExceededError):
            return Completion("", error=f"HTTP {status} {type(exc).__name__}: {text}", kind=ErrorKind.CONTEXT_LENGTH)
        if isinstance(exc, litellm.Timeout):
            return Completion("", error=f"timeout after {self.timeout:g} s: {text}", kind=ErrorKind.TIMEOUT)
        if isinstance(status, int) and status >= 400 and not isinstance(exc, litellm.APIConnectionError):
            return Completion("", error=f"HTTP {status} {type(exc).__name__}: {text}", kind=ErrorKind.of_status(status))
        return Completion("", error=f"connection error: {type(exc).__name__}: {text}", kind=ErrorKind.CONNECTION)
