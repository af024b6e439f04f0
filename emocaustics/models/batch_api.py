"""The providers' batch APIs behind one small interface, through their own SDKs (`openai`, `anthropic`).

    OpenAIBatches     POST /files (JSONL, purpose=batch) -> POST /batches -> GET /batches/{id} until it ends ->
                      GET /files/{output_file_id}/content
    AnthropicBatches  POST /v1/messages/batches -> GET /v1/messages/batches/{id} until `ended` -> its results_url
                      (JSONL)

Each line's body is the one the live client would send (`OpenAIChatLLM._body`, `AnthropicChatLLM._params`, in the
client's current JSON and sampling modes), and each answer is read by the live client's own reader (`completion_from`),
so a batched answer is the answer the same call gets live. A request without an answer (a failed, expired or
cancelled line) is left out of the results: models/batch.py asks it again live. Limits per batch (the providers' documented ones): OpenAI
50,000 requests and 200 MB of input file, Anthropic 100,000 requests and 256 MB. The keys come from the environment
as the live clients read them and reach no log or file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from emocaustics.models import anthropic_chat, openai_chat
from emocaustics.models.base import ChatRequest, PerLoop

CHAT_URL = "/v1/chat/completions"


@dataclass(frozen=True)
class BatchState:
    status: str  # the provider's word: validating, in_progress, finalizing, completed, expired, ended, ...
    total: int
    done: int  # answered (succeeded)
    failed: int  # errored, expired, cancelled
    ended: bool  # no further change: read the results


def _jsonl(row: dict[str, Any]) -> bytes:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class _Batches:
    """A live client's batch API, with an SDK client per event loop (their HTTP pools belong to one loop), closed
    with `aclose`."""

    sdk = ""  # the SDK's client class, in the SDK's module: "openai:AsyncOpenAI"
    home = ""  # the base URL when the live client has none

    def __init__(self, llm: Any) -> None:
        self.llm = llm  # the live client: its body builder, modes, base URL and timeouts
        self._clients = PerLoop(self._connect)
        self.client = self._clients.here  # the running event loop's SDK client

    def _connect(self) -> Any:
        import importlib

        module, _, cls = self.sdk.partition(":")
        return getattr(importlib.import_module(module), cls)(
            api_key=self.llm.api_key(), base_url=self.llm.base_url or self.home,
            timeout=max(60.0, self.llm.timeout), max_retries=self.llm.max_retries,
            default_headers=self.llm._auth)  # credentials of the spec's URL (models/http.py)

    async def aclose(self) -> None:
        client = self._clients.drop()
        if client is not None:
            await client.close()


class OpenAIBatches(_Batches):
    sdk = "openai:AsyncOpenAI"
    completion = staticmethod(openai_chat.completion_from)  # the live client's reader: (answer, request) -> Completion
    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024

    def line(self, custom_id: str, request: ChatRequest) -> bytes:
        use_schema = request.schema is not None and self.llm.json_mode != "plain"
        return _jsonl({"custom_id": custom_id, "method": "POST", "url": CHAT_URL,
                       "body": self.llm._body(request, use_schema)})

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

    async def results(self, batch_id: str) -> dict[str, Any]:
        """custom_id -> the answer's body, for the lines answered (the output file; failed lines are in the error
        file, which is not read)."""
        client = self.client()
        b = await client.batches.retrieve(batch_id)
        out: dict[str, Any] = {}
        if b.output_file_id:
            for raw in (await client.files.content(b.output_file_id)).text.splitlines():
                row = json.loads(raw) if raw.strip() else {}
                response = row.get("response") or {}
                if not row.get("error") and int(response.get("status_code") or 0) == 200:
                    out[str(row.get("custom_id"))] = response.get("body")
        return out


class AnthropicBatches(_Batches):
    sdk = "anthropic:AsyncAnthropic"
    completion = staticmethod(anthropic_chat.completion_from)
    home = anthropic_chat.DEFAULT_BASE_URL
    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def line(self, custom_id: str, request: ChatRequest) -> bytes:
        use_schema = request.schema is not None and self.llm.json_mode != "plain"
        params = self.llm._params(request, use_schema)
        params.update(params.pop("extra_body", {}))  # raw body keys: a batch request's params are the body
        return _jsonl({"custom_id": custom_id, "params": params})

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

    async def results(self, batch_id: str) -> dict[str, Any]:
        """custom_id -> the message, for the requests that succeeded."""
        return {entry.custom_id: entry.result.message
                async for entry in await self.client().messages.batches.results(batch_id)
                if entry.result.type == "succeeded"}


def batch_api_for(llm: Any) -> OpenAIBatches | AnthropicBatches:
    """The batch API of a live client (`OpenAIChatLLM` or `AnthropicChatLLM`)."""
    return AnthropicBatches(llm) if isinstance(llm, anthropic_chat.AnthropicChatLLM) else OpenAIBatches(llm)
