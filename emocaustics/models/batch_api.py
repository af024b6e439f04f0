"""The providers' batch APIs behind one small interface, through their own SDKs (`openai`, `anthropic`).

    OpenAIBatches     POST /files (JSONL, purpose=batch) -> POST /batches -> GET /batches/{id} until it ends ->
                      GET /files/{output_file_id}/content and /files/{error_file_id}/content; POST /batches/{id}/cancel
    AnthropicBatches  POST /v1/messages/batches -> GET /v1/messages/batches/{id} until `ended` -> its results_url
                      (JSONL); POST /v1/messages/batches/{id}/cancel

Each line's body is the one the live client would send (`OpenAIChatLLM._body`, `AnthropicChatLLM._params`, in the
client's current JSON and sampling modes), and each answer is read by the live client's own reader (`completion_from`),
so a batched answer is the answer the same call gets live. Limits per batch (the providers' documented ones): OpenAI
50,000 requests and 200 MB of input file, Anthropic 100,000 requests and 256 MB. The keys come from the environment
as the live clients read them and reach no log or file.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from dataclasses import dataclass
from typing import Any

from emocaustics.models.base import ChatRequest, Completion

CHAT_URL = "/v1/chat/completions"


@dataclass(frozen=True)
class BatchState:
    status: str  # the provider's word: validating, in_progress, finalizing, completed, expired, ended, ...
    total: int
    done: int  # answered (succeeded)
    failed: int  # errored, expired, cancelled
    ended: bool  # no further change: read the results


@dataclass(frozen=True)
class LineResult:
    """One request's outcome in a finished batch: the provider's answer (to read with `BatchAPI.completion`) or why
    it has none."""

    answer: Any = None
    error: str | None = None


class _PerLoop:
    """An SDK client per event loop (their HTTP pools belong to one loop), closed with `aclose`."""

    def __init__(self) -> None:
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    def client(self) -> Any:
        loop = asyncio.get_running_loop()
        if loop not in self._clients:
            self._clients[loop] = self.make()
        return self._clients[loop]

    def make(self) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()


class OpenAIBatches(_PerLoop):
    provider = "openai"
    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024

    def __init__(self, llm: Any) -> None:
        super().__init__()
        self.llm = llm  # the live OpenAIChatLLM: its body builder, modes, base URL and timeouts

    def make(self) -> Any:
        from openai import AsyncOpenAI

        from emocaustics.models.openai_chat import NO_KEY, api_key_from_env

        return AsyncOpenAI(api_key=api_key_from_env() or NO_KEY, base_url=self.llm.base_url,
                           timeout=max(60.0, self.llm.timeout), max_retries=self.llm.max_retries,
                           default_headers=self.llm._auth)  # credentials of the spec's URL (models/http.py)

    def line(self, custom_id: str, request: ChatRequest) -> bytes:
        use_schema = request.schema is not None and self.llm.json_mode != "plain"
        body = {"custom_id": custom_id, "method": "POST", "url": CHAT_URL, "body": self.llm._body(request, use_schema)}
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"

    async def submit(self, lines: list[bytes], note: str) -> str:
        client = self.client()
        upload = await client.files.create(file=("batch.jsonl", b"".join(lines)), purpose="batch")
        batch = await client.batches.create(input_file_id=upload.id, endpoint=CHAT_URL, completion_window="24h",
                                            metadata={"emocaustics": note[:500]})
        return str(batch.id)

    async def state(self, batch_id: str) -> BatchState:
        b = await self.client().batches.retrieve(batch_id)
        counts = b.request_counts
        total, done, failed = (counts.total, counts.completed, counts.failed) if counts else (0, 0, 0)
        return BatchState(b.status, total, done, failed, b.status in ("completed", "expired", "cancelled", "failed"))

    async def results(self, batch_id: str) -> dict[str, LineResult]:
        client = self.client()
        b = await client.batches.retrieve(batch_id)
        out: dict[str, LineResult] = {}
        for file_id in (b.error_file_id, b.output_file_id):  # an answer read later wins over an error
            if not file_id:
                continue
            content = await client.files.content(file_id)
            for raw in content.text.splitlines():
                if raw.strip():
                    row = json.loads(raw)
                    out[str(row.get("custom_id"))] = _openai_line(row)
        return out

    def completion(self, result: LineResult, request: ChatRequest) -> Completion:
        from emocaustics.models.openai_chat import completion_from

        return completion_from(result.answer, request)

    async def cancel(self, batch_id: str) -> None:
        await self.client().batches.cancel(batch_id)


def _openai_line(row: dict[str, Any]) -> LineResult:
    response, error = row.get("response") or {}, row.get("error")
    if error:
        return LineResult(error=f"batch line {error.get('code', 'error')}: {str(error.get('message', ''))[:200]}")
    status = int(response.get("status_code") or 0)
    body = response.get("body")
    if status != 200:
        from emocaustics.models.http import error_message

        return LineResult(error=f"HTTP {status}: {error_message(body, json.dumps(body))[:200]} (batch line)")
    return LineResult(answer=body)


class AnthropicBatches(_PerLoop):
    provider = "anthropic"
    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def __init__(self, llm: Any) -> None:
        super().__init__()
        self.llm = llm  # the live AnthropicChatLLM

    def make(self) -> Any:
        from anthropic import AsyncAnthropic

        from emocaustics.models.anthropic_chat import DEFAULT_BASE_URL, NO_KEY, api_key_from_env

        return AsyncAnthropic(api_key=api_key_from_env() or NO_KEY, base_url=self.llm.base_url or DEFAULT_BASE_URL,
                              timeout=max(60.0, self.llm.timeout), max_retries=self.llm.max_retries,
                              default_headers=self.llm._auth)  # credentials of the spec's URL (models/http.py)

    def line(self, custom_id: str, request: ChatRequest) -> bytes:
        use_schema = request.schema is not None and self.llm.json_mode != "plain"
        params = self.llm._params(request, use_schema)
        params.update(params.pop("extra_body", {}))  # raw body keys: a batch request's params are the body
        return json.dumps({"custom_id": custom_id, "params": params}, ensure_ascii=False,
                          separators=(",", ":")).encode("utf-8") + b"\n"

    async def submit(self, lines: list[bytes], note: str) -> str:
        requests = [json.loads(x) for x in lines]
        batch = await self.client().messages.batches.create(requests=requests)
        return str(batch.id)

    async def state(self, batch_id: str) -> BatchState:
        b = await self.client().messages.batches.retrieve(batch_id)
        c = b.request_counts
        total = c.processing + c.succeeded + c.errored + c.canceled + c.expired
        return BatchState(b.processing_status, total, c.succeeded, c.errored + c.canceled + c.expired,
                          b.processing_status == "ended")

    async def results(self, batch_id: str) -> dict[str, LineResult]:
        out: dict[str, LineResult] = {}
        async for entry in await self.client().messages.batches.results(batch_id):
            r = entry.result
            if r.type == "succeeded":
                out[entry.custom_id] = LineResult(answer=r.message)
            elif r.type == "errored":
                err = getattr(r.error, "error", None)
                out[entry.custom_id] = LineResult(error=f"batch result errored: {getattr(err, 'type', 'error')}: "
                                                        f"{str(getattr(err, 'message', ''))[:200]}")
            else:
                out[entry.custom_id] = LineResult(error=f"batch result {r.type}")
        return out

    def completion(self, result: LineResult, request: ChatRequest) -> Completion:
        from emocaustics.models.anthropic_chat import completion_from

        return completion_from(result.answer, request)

    async def cancel(self, batch_id: str) -> None:
        await self.client().messages.batches.cancel(batch_id)


def batch_api_for(llm: Any) -> OpenAIBatches | AnthropicBatches:
    """The batch API of a live client (`OpenAIChatLLM` or `AnthropicChatLLM`)."""
    from emocaustics.models.anthropic_chat import AnthropicChatLLM

    return AnthropicBatches(llm) if isinstance(llm, AnthropicChatLLM) else OpenAIBatches(llm)
