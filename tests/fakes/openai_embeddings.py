"""A small local HTTP server speaking the OpenAI `POST /v1/embeddings` protocol.

It STANDS IN FOR A REMOTE EMBEDDINGS API (OpenAI, Zhipu, a hosted bge...), which cannot be reached from this
machine. It is not a mock of our code: our `OpenAIEmbedder` talks to it through the real `openai` client over real
HTTP. Embeddings are real and deterministic: hashed character 1- and 2-grams into `dim` buckets, L2-normalised,
so identical texts have cosine 1 and texts sharing characters are similar. It answers `encoding_format` "float"
and "base64" (the openai client asks for base64 by default), checks the bearer key when given one, and can inject
failures: `fail_next=[429, 500]` answers the next requests with those statuses before serving normally.

Run alone: `python tests/fakes/openai_embeddings.py [PORT]`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def hashed_ngram_embedding(text: str, dim: int = 256) -> np.ndarray:
    vec = np.zeros(dim, dtype=np.float32)
    grams = list(text) + [text[i:i + 2] for i in range(len(text) - 1)]
    for g in grams:
        h = int.from_bytes(hashlib.blake2b(g.encode("utf-8"), digest_size=8).digest(), "little")
        vec[h % dim] += 1.0 if (h >> 63) == 0 else -1.0
    n = float(np.linalg.norm(vec))
    return vec / n if n else vec


class FakeEmbeddingsServer:
    def __init__(self, dim: int = 256, api_key: str | None = None, port: int = 0) -> None:
        self.dim = dim
        self.api_key = api_key
        self.fail_next: list[int] = []
        self.requests: list[dict] = []  # {"status", "n_inputs", "model"}; never the key
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def start(self) -> FakeEmbeddingsServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> FakeEmbeddingsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", "0"))
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    return self._send(400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}})
                if self.path.rstrip("/") != "/v1/embeddings":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                inputs = body.get("input")
                inputs = [inputs] if isinstance(inputs, str) else inputs
                with server._lock:
                    fail = server.fail_next.pop(0) if server.fail_next else None
                    record = {"status": 200, "n_inputs": len(inputs or []), "model": body.get("model")}
                    server.requests.append(record)
                if server.api_key and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    record["status"] = 401
                    return self._send(401, {"error": {"message": "invalid api key", "type": "auth_error"}})
                if fail:
                    record["status"] = fail
                    return self._send(fail, {"error": {"message": f"injected {fail}", "type": "server_error"}},
                                      {"Retry-After": "0"} if fail == 429 else None)
                if not isinstance(inputs, list) or not all(isinstance(t, str) and t for t in inputs):
                    record["status"] = 400
                    return self._send(400, {"error": {"message": "input must be non-empty strings"}})
                fmt = body.get("encoding_format", "float")
                data = []
                for i, t in enumerate(inputs):
                    v = hashed_ngram_embedding(t, server.dim)
                    emb = base64.b64encode(v.astype("<f4").tobytes()).decode() if fmt == "base64" else v.tolist()
                    data.append({"object": "embedding", "index": i, "embedding": emb})
                tokens = sum(len(t) for t in inputs)
                self._send(200, {"object": "list", "data": data, "model": body.get("model"),
                                 "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

        return Handler


if __name__ == "__main__":
    srv = FakeEmbeddingsServer(port=int(sys.argv[1]) if len(sys.argv) > 1 else 8099)
    print(f"fake OpenAI embeddings endpoint (stands in for a remote API) at {srv.base_url}", flush=True)
    srv.httpd.serve_forever()
