"""A stand-in for Azure OpenAI's chat completions API on 127.0.0.1 (what `litellm:azure/DEPLOYMENT` talks to).

It is NOT a model. It checks what Azure checks before it answers, the way Azure does:
- the route `/openai/deployments/{deployment}/chat/completions` -> else 404 DeploymentNotFound;
- the query `api-version=V` -> missing or unknown: 404 "Resource not found" (Azure's answer to a bad version);
- the key in the `api-key` header (Azure's own header, not `Authorization: Bearer`) -> else 401 with Azure's
  "Access denied due to invalid subscription key" message.
Then it answers as the OpenAI stand-in does (same faults, latency, recorded bodies: tests/fakes/openai_chat.py), and it
records the api-key headers and versions it saw.

    with FakeAzureOpenAIServer("exam-deploy", "2024-10-21", key="k") as server:
        spec = f"litellm:azure/exam-deploy@{server.base_url}?api_version=2024-10-21"
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from fakes.openai_chat import FakeOpenAIServer, _Handler


class FakeAzureOpenAIServer(FakeOpenAIServer):
    def __init__(self, deployment: str, api_version: str, *, key: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.deployment, self.api_version, self.key = deployment, api_version, key
        self.api_keys: list[str] = []  # the api-key header of every request
        self.versions: list[str] = []  # the api-version of every request

    @property
    def base_url(self) -> str:  # an Azure resource's endpoint: no /v1
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"


class _AzureHandler(_Handler):
    fake: FakeAzureOpenAIServer

    def _handle(self, raw: bytes) -> None:
        fake = self.fake
        url = urlsplit(self.path)
        version = (parse_qs(url.query).get("api-version") or [""])[0]
        key = self.headers.get("api-key", "")
        with fake._lock:
            fake.api_keys.append(key)
            fake.versions.append(version)
        if url.path.rstrip("/") != f"/openai/deployments/{fake.deployment}/chat/completions":
            self._send(404, {"error": {"code": "DeploymentNotFound",
                                       "message": f"The API deployment for this resource does not exist ({url.path})"}})
            return
        if version != fake.api_version:
            self._send(404, {"error": {"code": "404", "message": "Resource not found"}})
            return
        if key != fake.key:
            self._send(401, {"error": {"code": "401", "message": "Access denied due to invalid subscription key or "
                                       "wrong API endpoint."}})
            return
        self.path = "/v1/chat/completions"  # the rest is the OpenAI stand-in's answer
        super()._handle(raw)


FakeAzureOpenAIServer.handler = _AzureHandler
