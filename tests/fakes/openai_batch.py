"""A stand-in for OpenAI's Batch API (files + batches), on 127.0.0.1, beside the chat stand-in's live endpoint.

It stands in for https://api.openai.com/v1 as a client of the batch endpoint meets it (platform.openai.com/docs/guides/
batch): it is NOT a model; every line is answered as `FakeOpenAIServer` answers the same body live (same text, same
usage), so a batch run and a live run give the same answers.

- `POST /v1/files` (multipart: `purpose=batch`, `file` = JSONL of {custom_id, method: POST, url:
  /v1/chat/completions, body}) -> a file object. Lines are checked as the API checks them: unique custom_ids, the one
  url, at most 50,000 lines and 200 MB (else 400).
- `POST /v1/batches` {input_file_id, endpoint, completion_window: 24h} -> a batch in `validating`;
  `GET /v1/batches/{id}` moves it on with time: `validating` for `validate_seconds`, then `in_progress` for
  `process_seconds` (request_counts.completed grows), then `completed`, or `expired` when `expire_after` is set (only
  that many lines were processed; the rest go to the error file with code `batch_expired`).
  `POST /v1/batches/{id}/cancel` -> `cancelling`, then `cancelled` with the lines processed so far.
- `GET /v1/files/{id}/content`: the output file (lines in another order than the input: shuffled) and the error
  file: a line whose messages contain one of `fail_markers` fails with a 500 `server_error` response.
- The live `POST /v1/chat/completions` of `FakeOpenAIServer` still answers (failed lines are retried live).

Counts what it saw: `uploads`, `creates`, `retrieves`, `cancels`, `lines` (every batch line), `chat_calls` (live).
Latency knobs are real seconds: keep them small in tests.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from fakes.openai_chat import FakeOpenAIServer, Faults, _Handler

MAX_LINES = 50_000
MAX_BYTES = 200 * 1024 * 1024


@dataclass
class _Batch:
    id: str
    input_file_id: str
    lines: list[dict[str, Any]]
    created: float
    cancelled_at: float | None = None
    final: dict[str, Any] | None = None  # status, output/error file ids, counts once ended
    extra: dict[str, Any] = field(default_factory=dict)


class FakeOpenAIBatchServer(FakeOpenAIServer):
    def __init__(self, faults: Faults | None = None, *, validate_seconds: float = 0.02,
                 process_seconds: float = 0.05, expire_after: int | None = None,
                 fail_markers: tuple[str, ...] = (), seed: int = 0, **kw: Any) -> None:
        super().__init__(faults, **kw)
        self.validate_seconds, self.process_seconds = validate_seconds, process_seconds
        self.expire_after = expire_after
        self.fail_markers = tuple(fail_markers)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, _Batch] = {}
        self.uploads = self.creates = self.retrieves = self.cancels = 0
        self.lines: list[dict[str, Any]] = []
        self._shuffle = random.Random(seed)
        self._block = threading.Lock()

    def start(self) -> "FakeOpenAIBatchServer":
        super().start()
        assert self._httpd is not None
        base, server = self._httpd.RequestHandlerClass, self

        class Batching(base):  # type: ignore[misc, valid-type]
            def _handle(self, raw: bytes) -> None:
                if not server._route_post(self, raw):
                    _Handler._handle(self, raw)

            def do_GET(self) -> None:  # noqa: N802
                server._route_get(self)

        self._httpd.RequestHandlerClass = Batching
        return self

    @property
    def chat_calls(self) -> int:
        """Live chat completions answered (the batch lines are not counted here)."""
        with self._lock:
            return len(self.seen)

    # -- one line, answered as the live endpoint answers it ------------------------------------------------------
    def completion_body(self, body: dict[str, Any]) -> dict[str, Any]:
        text = self.answer_text(body)
        return {"id": f"chatcmpl-b{uuid.uuid4().hex[:8]}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": sum(len(m.get("content", "")) for m in body.get("messages", [])),
                          "completion_tokens": len(text), "total_tokens": 0}}

    # -- routes -------------------------------------------------------------------------------------------------
    def _route_post(self, h: _Handler, raw: bytes) -> bool:
        path = h.path.split("?")[0].rstrip("/")
        if path.endswith("/v1/files"):
            self._upload(h, raw)
        elif path.endswith("/v1/batches"):
            self._create(h, json.loads(raw or b"{}"))
        elif path.endswith("/cancel") and "/v1/batches/" in path:
            self._cancel(h, path.split("/")[-2])
        else:
            return False
        return True

    def _route_get(self, h: _Handler) -> None:
        path = h.path.split("?")[0].rstrip("/")
        parts = path.split("/")
        if "/v1/batches/" in path:
            with self._block:
                self.retrieves += 1
                batch = self.batches.get(parts[-1])
                out = self._view(batch) if batch else None
            h._send(200, out) if out else h._send(404, {"error": {"message": f"no batch {parts[-1]}"}})
        elif path.endswith("/content") and "/v1/files/" in path:
            data = self.files.get(parts[-2])
            if data is None:
                h._send(404, {"error": {"message": f"no file {parts[-2]}"}})
                return
            h.send_response(200)
            h.send_header("Content-Type", "application/octet-stream")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        else:
            h._send(404, {"error": {"message": f"no route GET {h.path}"}})

    def _upload(self, h: _Handler, raw: bytes) -> None:
        head = f"Content-Type: {h.headers.get('Content-Type', '')}\r\n\r\n".encode()
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
        fields = {p.get_param("name", header="content-disposition"): p for p in msg.iter_parts()}
        if "file" not in fields or fields.get("purpose") is None:
            h._send(400, {"error": {"message": "file and purpose are required"}})
            return
        purpose = fields["purpose"].get_payload(decode=True).decode()
        data = fields["file"].get_payload(decode=True)
        if purpose != "batch":
            h._send(400, {"error": {"message": f"purpose {purpose!r}: this stand-in only takes 'batch'"}})
            return
        lines = [json.loads(x) for x in data.splitlines() if x.strip()]
        ids = [x.get("custom_id") for x in lines]
        problem = ("more than 50,000 requests" if len(lines) > MAX_LINES else "file larger than 200 MB"
                   if len(data) > MAX_BYTES else "duplicate custom_id" if len(set(ids)) != len(ids)
                   else "url must be /v1/chat/completions" if any(x.get("url") != "/v1/chat/completions"
                                                                  for x in lines) else None)
        if problem:
            h._send(400, {"error": {"message": f"invalid batch file: {problem}"}})
            return
        fid = f"file-{uuid.uuid4().hex[:12]}"
        with self._block:
            self.files[fid] = data
            self.uploads += 1
        h._send(200, {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                      "filename": fields["file"].get_filename() or "batch.jsonl", "purpose": "batch",
                      "status": "processed"})

    def _create(self, h: _Handler, body: dict[str, Any]) -> None:
        fid = body.get("input_file_id", "")
        if fid not in self.files or body.get("endpoint") != "/v1/chat/completions" \
                or body.get("completion_window") != "24h":
            h._send(400, {"error": {"message": "input_file_id, endpoint /v1/chat/completions and completion_window "
                                               "24h are required"}})
            return
        lines = [json.loads(x) for x in self.files[fid].splitlines() if x.strip()]
        batch = _Batch(f"batch_{uuid.uuid4().hex[:12]}", fid, lines, time.monotonic(),
                       extra={"metadata": body.get("metadata")})
        with self._block:
            self.batches[batch.id] = batch
            self.creates += 1
            self.lines.extend(lines)
            out = self._view(batch)
        h._send(200, out)

    def _cancel(self, h: _Handler, bid: str) -> None:
        with self._block:
            batch = self.batches.get(bid)
            if batch is None:
                h._send(404, {"error": {"message": f"no batch {bid}"}})
                return
            self.cancels += 1
            if batch.final is None and batch.cancelled_at is None:
                batch.cancelled_at = time.monotonic()
            out = self._view(batch)
        h._send(200, out)

    # -- the batch's state, from the time it has had -----------------------------------------------------------
    def _processed(self, batch: _Batch, now: float) -> int:
        t = (batch.cancelled_at or now) - batch.created - self.validate_seconds
        frac = 1.0 if self.process_seconds <= 0 else max(0.0, min(1.0, t / self.process_seconds))
        n = int(len(batch.lines) * frac) if t >= 0 else 0
        return min(n, self.expire_after) if self.expire_after is not None else n

    def _finish(self, batch: _Batch, status: str, processed: int) -> None:
        done, rest = batch.lines[:processed], batch.lines[processed:]
        ok, bad = [], []
        for line in done:
            text = json.dumps(line["body"].get("messages", []), ensure_ascii=False)
            rid = f"batch_req_{uuid.uuid4().hex[:10]}"
            if any(m in text for m in self.fail_markers):
                bad.append({"id": rid, "custom_id": line["custom_id"], "error": None, "response": {
                    "status_code": 500, "request_id": rid,
                    "body": {"error": {"message": "internal server error", "type": "server_error"}}}})
            else:
                ok.append({"id": rid, "custom_id": line["custom_id"], "error": None, "response": {
                    "status_code": 200, "request_id": rid, "body": self.completion_body(line["body"])}})
        code = "batch_expired" if status == "expired" else "batch_cancelled"
        for line in rest:
            bad.append({"id": f"batch_req_{uuid.uuid4().hex[:10]}", "custom_id": line["custom_id"], "response": None,
                        "error": {"code": code, "message": "This request could not be executed before the "
                                                          "completion window expired." if status == "expired"
                                  else "The batch was cancelled."}})
        order = list(ok)
        self._shuffle.shuffle(order)
        if len(order) > 1 and order == ok:
            order.reverse()  # never in input order
        files = {}
        for name, rows in (("output_file_id", order), ("error_file_id", bad)):
            if rows:
                fid = f"file-{uuid.uuid4().hex[:12]}"
                self.files[fid] = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
                files[name] = fid
        batch.final = {"status": status, **files, "completed": len(ok), "failed": len(bad)}

    def _view(self, batch: _Batch) -> dict[str, Any]:
        now = time.monotonic()
        n = len(batch.lines)
        processed = self._processed(batch, now)
        if batch.final is None:
            ended = now - batch.created >= self.validate_seconds + self.process_seconds
            if batch.cancelled_at is not None and now - batch.cancelled_at >= self.validate_seconds:
                self._finish(batch, "cancelled", processed)
            elif ended:
                self._finish(batch, "expired" if self.expire_after is not None and self.expire_after < n
                             else "completed", processed)
        if batch.final is not None:
            status, completed, failed = batch.final["status"], batch.final["completed"], batch.final["failed"]
        else:
            status = ("cancelling" if batch.cancelled_at is not None else
                      "validating" if now - batch.created < self.validate_seconds else "in_progress")
            failed = sum(any(m in json.dumps(x["body"].get("messages", []), ensure_ascii=False)
                             for m in self.fail_markers) for x in batch.lines[:processed])
            completed = processed - failed
        final = batch.final or {}
        return {"id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
                "input_file_id": batch.input_file_id, "completion_window": "24h", "status": status,
                "output_file_id": final.get("output_file_id"), "error_file_id": final.get("error_file_id"),
                "created_at": int(time.time()), "in_progress_at": None, "expires_at": int(time.time()) + 86400,
                "completed_at": None, "failed_at": None, "expired_at": None, "cancelled_at": None,
                "request_counts": {"total": n, "completed": completed, "failed": failed},
                "metadata": batch.extra.get("metadata")}
