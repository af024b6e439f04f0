"""The workbench's HTTP server on 127.0.0.1 (stdlib `http.server`, as the viewer's): the page, and a small JSON API.

    GET  /                      static/index.html (plain HTML and JS, no build step), /app.js
    GET  /api/state             the root and output folders, the run folders under the root, the form choices
    POST /api/upload?name=N[&folder=out:uploads/0001]   the body as file N in a new (or that) upload folder
    POST /api/jobs              {"kind": ..., fields}: a job (`forms.plan`), started; GET /api/jobs/<id> its state
    POST /api/jobs/<id>/cancel  stop it
    POST /api/view              {"run": path}: a viewer (`view.server`) for that run folder on a port of its own
    GET  /out/<path>            a file the workbench wrote (under the output folder only)

Only the loopback address is bound, every request must name it (Host: 127.0.0.1 or localhost on this port: a page of
another site whose name was pointed at 127.0.0.1, DNS rebinding, names its own), and a POST from a page of another
origin is refused (Origin compared whole): the files it reads are the user's. Every path is checked by
`paths.Folders` (refused outside the root or the output folder).
"""

from __future__ import annotations

import json
import mimetypes
import os
import threading
import urllib.parse
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from emocaustics.core.errors import UsageError
from emocaustics.ui import forms
from emocaustics.ui.jobs import Jobs
from emocaustics.ui.paths import Folders, Refused
from emocaustics.ui.results import status
from emocaustics.view.server import Handler

STATIC = Path(__file__).with_name("static")
MAX_UPLOAD = 512 * 1024 * 1024
RUN_DEPTH = 4


def run_folders(root: Path) -> list[str]:
    """Run folders under `root` (a folder holding evallog/), relative to it, up to RUN_DEPTH levels down."""
    found: list[str] = []
    for folder, subs, _ in os.walk(root):  # top down, each level sorted; links not followed, unreadable ones skipped
        rel = Path(folder).relative_to(root)
        subs[:] = sorted(s for s in subs if not os.path.islink(os.path.join(folder, s)))
        if "evallog" in subs:
            found.append(rel.as_posix())
            subs.clear()
        elif len(rel.parts) >= RUN_DEPTH:
            subs.clear()
        else:
            subs[:] = [s for s in subs if not s.startswith(".")]
    return found


class Workbench:
    def __init__(self, root: Path, out: Path, run_verb: Callable[[list[str]], int]) -> None:
        self.folders = Folders(root, out)
        self.jobs = Jobs(run_verb)
        self.viewers: dict[Path, Any] = {}
        self._lock = threading.Lock()

    def state(self) -> dict[str, Any]:
        from emocaustics.tasks.dialoguejudge.data import ROUNDS

        return {"root": str(self.folders.root), "out": str(self.folders.out), "runs": run_folders(self.folders.root),
                "tasks": forms.SUBMISSION_TASKS, "splits": forms.AER_SPLITS, "subsets": forms.SUBSETS,
                "predictors": forms.PREDICTORS, "rounds": ROUNDS}

    def upload(self, query: dict[str, str], body: bytes) -> dict[str, Any]:
        folder = (self.folders.resolve(query["folder"], "upload folder") if query.get("folder")
                  else self.folders.next_folder("uploads"))
        if self.folders.out / "uploads" not in folder.parents:
            raise Refused(f"upload folder {query['folder']!r}: not one of the workbench's uploads")
        path = self.folders.save_upload(folder, query.get("name", ""), body)
        return {"ref": self.folders.ref(path), "folder": self.folders.ref(folder)}

    def start(self, form: dict[str, Any]) -> dict[str, Any]:
        kind = str(form.get("kind") or "")
        folder = self.folders.next_folder("jobs")
        try:
            title, steps = forms.plan(kind, form, self.folders, folder)
        except BaseException:
            folder.rmdir()
            raise
        return status(self.jobs.start(kind, title, folder, steps), self.folders)

    def view(self, typed: str) -> dict[str, Any]:
        from emocaustics.evallog.read import RunLog
        from emocaustics.view.data import ViewData
        from emocaustics.view.server import make_server

        run = self.folders.resolve(typed, "run folder")
        with self._lock:
            if run not in self.viewers:
                if not (run / "evallog").is_dir():
                    raise UsageError(f"run folder {typed!r}: no evallog/ in it (not a run folder of `emocaustics run`)")
                server = make_server(ViewData(RunLog(run)), 0)
                threading.Thread(target=server.serve_forever, daemon=True).start()
                self.viewers[run] = server
            return {"url": f"http://127.0.0.1:{self.viewers[run].server_address[1]}/"}

    def close(self) -> None:
        self.jobs.stop_all()
        for server in self.viewers.values():
            server.shutdown()
            server.server_close()


def make_server(bench: Workbench, port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1 (`port` 0: a free one) for `bench`; `serve_forever()` runs it."""

    class Bench(Handler):
        static = STATIC

        def _json(self, code: int, doc: Any) -> None:
            self._send(code, json.dumps(doc, ensure_ascii=False, default=str).encode("utf-8"),
                       "application/json; charset=utf-8")

        def _answer(self, work: Callable[[], Any]) -> None:
            try:
                self._json(200, work())
            except (UsageError, KeyError, ValueError) as exc:  # a refused path, a bad field: the page shows it
                said = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)  # KeyError's str quotes it
                self._json(400 if not isinstance(exc, KeyError) else 404, {"error": str(said)})

        def _refuse(self, code: int, message: str) -> None:
            self._json(code, {"error": message})

        def parse_request(self) -> bool:  # every request, before its method's handler: the host (view/server.py)
            if not super().parse_request():
                return False
            origin = self.headers.get("Origin")
            if self.command != "GET" and origin not in (None, f"http://{self.headers['Host'].lower()}"):
                self._refuse(403, f"a request from {origin} is refused")  # the page's own origin only
            elif not (self.headers.get("Content-Length") or "0").isdecimal():
                self._refuse(400, f"Content-Length {self.headers['Content-Length']!r}: not a number of bytes")
            else:
                return True
            return False

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            url = urllib.parse.urlsplit(self.path)
            path = urllib.parse.unquote(url.path)
            if self._page(path):
                pass
            elif path == "/api/state":
                self._answer(bench.state)
            elif path.startswith("/api/jobs/"):
                self._answer(lambda: status(bench.jobs.jobs[path.rsplit("/", 1)[1]], bench.folders))
            elif path.startswith("/out/"):
                try:
                    file = bench.folders.resolve("out:" + path[len("/out/"):], "file")
                except UsageError as exc:
                    return self._send(404, str(exc).encode("utf-8"), "text/plain; charset=utf-8")
                if not file.is_file():
                    return self._send(404, b"not a file", "text/plain; charset=utf-8")
                kind = mimetypes.guess_type(file.name)[0] or "text/plain"
                self._send(200, file.read_bytes(), kind + ("; charset=utf-8" if kind.startswith("text") else ""))
            else:
                self._send(404, b"not found", "text/plain; charset=utf-8")

        def do_POST(self) -> None:  # noqa: N802
            url = urllib.parse.urlsplit(self.path)
            size = int(self.headers.get("Content-Length") or 0)
            if size > MAX_UPLOAD:
                return self._json(413, {"error": f"over {MAX_UPLOAD >> 20} MiB: give a path under the root instead"})
            body = self.rfile.read(size)
            query = dict(urllib.parse.parse_qsl(url.query))
            if url.path == "/api/upload":
                self._answer(lambda: bench.upload(query, body))
            elif url.path == "/api/jobs":
                self._answer(lambda: bench.start(json.loads(body or b"{}")))
            elif url.path.startswith("/api/jobs/") and url.path.endswith("/cancel"):
                def cancel() -> Any:
                    job = bench.jobs.jobs[url.path.split("/")[3]]
                    bench.jobs.cancel(job)
                    return status(job, bench.folders)
                self._answer(cancel)
            elif url.path == "/api/view":
                self._answer(lambda: bench.view(str(json.loads(body or b"{}").get("run") or "")))
            else:
                self._json(404, {"error": "not found"})

    return ThreadingHTTPServer(("127.0.0.1", port), Bench)
