"""The viewer (`emocaustics view`, and the workbench's results) answers only requests for its own loopback host:
a page of another site whose name was rebound to 127.0.0.1 (DNS rebinding) reads no run's data (issue 53 finding 8:
the workbench checked it; the viewer it opens did not). Fast: the real server on port 0, no browser."""

from __future__ import annotations

import http.client
import threading

import pytest

from emocaustics.view.server import make_server


class OneDoc:
    def document(self, path: str) -> dict:
        return {"secret": "gold answers"} if path == "index" else None

    def paths(self) -> list[str]:
        return ["index"]


@pytest.fixture()
def server():
    srv = make_server(OneDoc())
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _get(port: int, path: str, host: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", path, headers={"Host": host})
    resp = conn.getresponse()
    return resp.status, resp.read()


@pytest.mark.parametrize("path", ["/", "/app.js", "/data/index.js"])
def test_a_foreign_host_reads_nothing(server, path):
    port = server.server_address[1]
    for host in (f"evil.example:{port}", "127.0.0.1", f"127.0.0.1:{port + 1}", f"localhost.evil:{port}", ""):
        status, body = _get(port, path, host)
        assert status == 403 and b"gold" not in body, host


def test_its_own_host_by_address_or_by_name_reads(server):
    port = server.server_address[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
        status, body = _get(port, "/data/index.js", host)
        assert status == 200 and b"gold answers" in body, host
