"""Serving the viewer on 127.0.0.1 (stdlib `http.server`), and writing it as static files (`--export DIR`).

    /                 static/index.html (the page: plain HTML and JS, no build step)
    /data/<path>.js   a document of `view.data` (index, c/<i>, s/<i>/<j>) or, for several runs, of `report.across`
                      (index, x/<g>, x/<g>/<k>), made when first asked and kept

Only the loopback address is bound: the log holds prompts and answers, which are not for the network.
"""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from emocaustics.view.data import Documents, script

STATIC = Path(__file__).with_name("static")
_PATH = re.compile(r"^/data/([a-z0-9/]+)\.js$")


class Scripts:
    """What the server shows (one run, `view.data.ViewData`, or several side by side, `report.across.Across`): its
    documents as scripts by URL path, made on first request (a big run opens at once; a sample when it is opened)."""

    def __init__(self, view: Documents) -> None:
        self.view = view
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, url_path: str) -> str | None:
        m = _PATH.match(url_path)
        if m is None:
            return None
        path = m.group(1)
        with self._lock:
            if path not in self._cache:
                try:
                    data = self.view.document(path)
                except (IndexError, KeyError):
                    return None
                self._cache[path] = script(path, data)
            return self._cache[path]


class Handler(BaseHTTPRequestHandler):
    """What the viewer's and the workbench's handlers share: quiet, uncached answers, and their page's two files."""

    static = STATIC

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the terminal shows the URL only
        pass

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _refuse(self, code: int, message: str) -> None:
        self._send(code, message.encode("utf-8"), "text/plain; charset=utf-8")

    def parse_request(self) -> bool:
        """Every request, before its method's handler, must name this server (Host: 127.0.0.1 or localhost on its
        port): a page of another site whose name was rebound to 127.0.0.1 (DNS rebinding) reads nothing."""
        if not super().parse_request():
            return False
        port = self.server.server_address[1]
        host = (self.headers.get("Host") or "").lower()
        if host in (f"127.0.0.1:{port}", f"localhost:{port}"):
            return True
        self._refuse(403, f"a request for host {host!r} is refused: open http://127.0.0.1:{port}/")
        return False

    def _page(self, path: str) -> bool:
        """`/`, `/index.html` or `/app.js` from `static`; False for any other path."""
        if path not in ("/", "/index.html", "/app.js"):
            return False
        kind = "text/javascript" if path == "/app.js" else "text/html"
        self._send(200, (self.static / ("app.js" if path == "/app.js" else "index.html")).read_bytes(),
                   f"{kind}; charset=utf-8")
        return True


def make_server(view: Documents, port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1 (`port` 0: a free one); `serve_forever()` runs it."""
    docs = Scripts(view)

    class Viewer(Handler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            path = self.path.split("?", 1)[0]
            if self._page(path):
                pass
            elif (doc := docs.get(path)) is not None:
                self._send(200, doc.encode("utf-8"), "text/javascript; charset=utf-8")
            else:
                self._send(404, b"not found", "text/plain; charset=utf-8")

    return ThreadingHTTPServer(("127.0.0.1", port), Viewer)


def export(view: Documents, out: Path) -> Path:
    """Every document as a file under `out` with the page: open `out/index.html` from disk, or share the folder."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("index.html", "app.js"):
        (out / name).write_bytes((STATIC / name).read_bytes())
    for path in view.paths():  # each document made once, as the server would make it (`script`)
        target = out / "data" / f"{path}.js"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(script(path, view.document(path)), encoding="utf-8")
    return out / "index.html"
