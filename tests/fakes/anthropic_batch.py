"""A stand-in for Anthropic's Message Batches API, on 127.0.0.1, beside the Messages stand-in's live endpoint.

It stands in for https://api.anthropic.com as a client of message batches meets it (docs.anthropic.com/en/docs/
build-with-claude/batch-processing): it is NOT a model; every request is answered as `FakeAnthropicServer` answers the
same params live (same text, same usage), so a batch run and a live run give the same answers.

- `POST /v1/messages/batches` {requests: [{custom_id, params}]} -> a `message_batch` in `in_progress`. Checked as the
  API checks: custom_ids unique and `^[a-zA-Z0-9_-]{1,64}$`, at most 100,000 requests and 256 MB (else 400).
- `GET /v1/messages/batches/{id}`: `in_progress` for `process_seconds` (request_counts.processing falls, succeeded /
  errored grow), then `ended` with `results_url`; with `expire_after` set only that many requests were processed
  and the rest are `expired`. `POST /v1/messages/batches/{id}/cancel` -> `canceling`, then `ended` with the
  unprocessed requests `canceled`.
- `GET /v1/messages/batches/{id}/results` (the results_url): JSONL, one {custom_id, result} per request, in another
  order than the input; `result.type` is `succeeded` (with the message), `errored` (a request whose messages contain
  one of `fail_markers`: an api_error), `expired` or `canceled`.
- The live `POST /v1/messages` of `FakeAnthropicServer` still answers (failed requests are retried live).

Counts what it saw: `creates`, `retrieves`, `cancels`, `result_reads`, `requests` (every batch request), and the
live calls in `arrivals`. Latency knobs are real seconds: keep them small in tests.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from fakes.anthropic_messages import AnthropicFaults, FakeAnthropicServer, _Handler

MAX_REQUESTS = 100_000
MAX_BYTES = 256 * 1024 * 1024
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


@dataclass
class _Batch:
    id: str
    requests: list[dict[str, Any]]
    created: float  # monotonic
    wall: float  # time.time() at creation
    cancelled_at: float | None = None
    results: list[dict[str, Any]] | None = None  # once ended


class FakeAnthropicBatchServer(FakeAnthropicServer):
    def __init__(self, faults: AnthropicFaults | None = None, *, process_seconds: float = 0.05,
                 expire_after: int | None = None, fail_markers: tuple[str, ...] = (), seed: int = 0,
                 **kw: Any) -> None:
        super().__init__(faults, **kw)
        self.process_seconds = process_seconds
        self.expire_after = expire_after
        self.fail_markers = tuple(fail_markers)
        self.batches: dict[str, _Batch] = {}
        self.creates = self.retrieves = self.cancels = self.result_reads = 0
        self.requests: list[dict[str, Any]] = []
        self._shuffle = random.Random(seed)
        self._block = threading.Lock()

    def start(self) -> "FakeAnthropicBatchServer":
        super().start()
        assert self._httpd is not None
        base, server = self._httpd.RequestHandlerClass, self

        class Batching(base):  # type: ignore[misc, valid-type]
            def _handle(self, raw: bytes) -> None:
                path = self.path.split("?")[0].rstrip("/")
                if path == "/v1/messages/batches":
                    server._create(self, json.loads(raw or b"{}"))
                elif path.startswith("/v1/messages/batches/") and path.endswith("/cancel"):
                    server._cancel(self, path.split("/")[-2])
                else:
                    _Handler._handle(self, raw)

            def do_GET(self) -> None:  # noqa: N802
                server._get(self)

        self._httpd.RequestHandlerClass = Batching
        return self

    @property
    def live_calls(self) -> int:
        with self._lock:
            return len(self.arrivals)

    def message(self, params: dict[str, Any]) -> dict[str, Any]:
        """The message the live endpoint answers to these params (see FakeAnthropicServer._handle)."""
        text = self.answer_text(params)
        prompt_chars = sum(len(json.dumps(m.get("content", ""))) for m in params.get("messages", []))
        return {"id": f"msg_b{uuid.uuid4().hex[:10]}", "type": "message", "role": "assistant",
                "model": params.get("model", "claude-fake"), "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": prompt_chars // 4 + len(str(params.get("system", ""))) // 4,
                          "output_tokens": max(1, len(text) // 4), "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0}}

    # -- routes -------------------------------------------------------------------------------------------------
    def _checked(self, h: _Handler) -> bool:
        if self.expected_key is not None and h.api_key() != self.expected_key:
            h._error(401, "invalid x-api-key")
            return False
        if not h.headers.get("anthropic-version"):
            h._error(400, "anthropic-version header is required")
            return False
        return True

    def _create(self, h: _Handler, body: dict[str, Any]) -> None:
        if not self._checked(h):
            return
        reqs = body.get("requests") or []
        ids = [r.get("custom_id", "") for r in reqs]
        size = len(json.dumps(body).encode())
        problem = ("requests: at least one is required" if not reqs else
                   f"requests: at most {MAX_REQUESTS:,}" if len(reqs) > MAX_REQUESTS else
                   "the batch is larger than 256 MB" if size > MAX_BYTES else
                   "custom_id must match ^[a-zA-Z0-9_-]{1,64}$" if not all(CUSTOM_ID.match(i) for i in ids) else
                   "custom_id must be unique within a batch" if len(set(ids)) != len(ids) else
                   "params.max_tokens and params.messages are required"
                   if not all(isinstance(r.get("params", {}).get("max_tokens"), int)
                              and r.get("params", {}).get("messages") for r in reqs) else None)
        if problem:
            h._error(400, problem)
            return
        batch = _Batch(f"msgbatch_{uuid.uuid4().hex[:16]}", reqs, time.monotonic(), time.time())
        with self._block:
            self.batches[batch.id] = batch
            self.creates += 1
            self.requests.extend(reqs)
            out = self._view(h, batch)
        h._send(200, out)

    def _cancel(self, h: _Handler, bid: str) -> None:
        if not self._checked(h):
            return
        with self._block:
            batch = self.batches.get(bid)
            if batch is None:
                h._error(404, f"no batch {bid}")
                return
            self.cancels += 1
            if batch.results is None and batch.cancelled_at is None:
                batch.cancelled_at = time.monotonic()
            out = self._view(h, batch)
        h._send(200, out)

    def _get(self, h: _Handler) -> None:
        path = h.path.split("?")[0].rstrip("/")
        parts = path.split("/")
        if not path.startswith("/v1/messages/batches/") or not self._checked(h):
            if not path.startswith("/v1/messages/batches/"):
                h._error(404, f"no route GET {h.path}")
            return
        results = path.endswith("/results")
        bid = parts[-2] if results else parts[-1]
        with self._block:
            batch = self.batches.get(bid)
            if batch is None:
                h._error(404, f"no batch {bid}")
                return
            out = self._view(h, batch)
            if results:
                self.result_reads += 1
            else:
                self.retrieves += 1
        if not results:
            h._send(200, out)
            return
        if batch.results is None:
            h._error(400, f"batch {bid} is still {out['processing_status']}: no results yet")
            return
        data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in batch.results).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/binary")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    # -- the batch's state, from the time it has had -----------------------------------------------------------
    def _processed(self, batch: _Batch, now: float) -> int:
        t = (batch.cancelled_at or now) - batch.created
        frac = 1.0 if self.process_seconds <= 0 else max(0.0, min(1.0, t / self.process_seconds))
        n = int(len(batch.requests) * frac)
        return min(n, self.expire_after) if self.expire_after is not None else n

    def _failing(self, params: dict[str, Any]) -> bool:
        text = json.dumps(params.get("messages", []), ensure_ascii=False) + json.dumps(params.get("system", ""))
        return any(m in text for m in self.fail_markers)

    def _finish(self, batch: _Batch, processed: int, rest: str) -> None:
        rows = []
        for i, r in enumerate(batch.requests):
            if i >= processed:
                result: dict[str, Any] = {"type": rest}
            elif self._failing(r["params"]):
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "api_error", "message": "Internal server error"}}}
            else:
                result = {"type": "succeeded", "message": self.message(r["params"])}
            rows.append({"custom_id": r["custom_id"], "result": result})
        order = list(rows)
        self._shuffle.shuffle(order)
        if len(order) > 1 and order == rows:
            order.reverse()  # never in input order
        batch.results = order

    def _view(self, h: _Handler, batch: _Batch) -> dict[str, Any]:
        now, n = time.monotonic(), len(batch.requests)
        processed = self._processed(batch, now)
        if batch.results is None:
            if batch.cancelled_at is not None:
                self._finish(batch, processed, "canceled")
            elif now - batch.created >= self.process_seconds:
                self._finish(batch, processed, "expired")
        if batch.results is not None:
            counts = {k: sum(r["result"]["type"] == k for r in batch.results)
                      for k in ("succeeded", "errored", "canceled", "expired")}
            counts["processing"] = 0
            status = "ended"
        else:
            errored = sum(self._failing(r["params"]) for r in batch.requests[:processed])
            counts = {"processing": n - processed, "succeeded": processed - errored, "errored": errored,
                      "canceled": 0, "expired": 0}
            status = "canceling" if batch.cancelled_at is not None else "in_progress"
        host = h.headers.get("Host") or f"127.0.0.1:{self._httpd.server_address[1]}"  # type: ignore[union-attr]
        return {"id": batch.id, "type": "message_batch", "processing_status": status, "request_counts": counts,
                "created_at": _iso(batch.wall), "expires_at": _iso(batch.wall + 86400), "archived_at": None,
                "ended_at": _iso(time.time()) if status == "ended" else None,
                "cancel_initiated_at": _iso(time.time()) if batch.cancelled_at is not None else None,
                "results_url": f"http://{host}/v1/messages/batches/{batch.id}/results" if status == "ended" else None}
