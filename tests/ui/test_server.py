"""The workbench's HTTP edges (emocaustics/ui/server.py), without a browser or a job: a file outside the output folder
is never served, an upload lands under the output folder only, a POST from a page of another origin is refused, and
the run folders under the root are listed."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from emocaustics.ui.server import Workbench, make_server


@pytest.fixture
def url(tmp_path: Path):
    root = tmp_path / "root"
    (root / "runs" / "a" / "evallog").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("no", encoding="utf-8")
    bench = Workbench(root, tmp_path / "out", lambda argv: 0)
    server = make_server(bench, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _call(url: str, data: bytes | None = None, headers: dict | None = None) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers or {})) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_files_outside_the_output_folder_are_not_served(url: str) -> None:
    for path in ("/out/../secret.txt", "/out/%2e%2e/secret.txt", "/out/%2e%2e/%2e%2e/etc/passwd"):
        code, body = _call(url + path)
        assert code == 404 and b"secret" not in body.replace(b"secret.txt", b""), (path, body)


def test_an_upload_lands_under_the_output_folder(url: str, tmp_path: Path) -> None:
    code, body = _call(url + "/api/upload?name=sub.jsonl", b'{"id": "q-1"}\n')
    ref = json.loads(body)["ref"]
    assert code == 200 and ref.startswith("out:uploads/")
    assert (tmp_path / "out" / ref[len("out:"):]).read_bytes() == b'{"id": "q-1"}\n'
    assert _call(url + "/" + ref.replace(":", "/", 1))[1] == b'{"id": "q-1"}\n'
    code, body = _call(url + "/api/upload?name=..%2Fx.jsonl", b"x")
    assert code == 400 and "not a plain file name" in json.loads(body)["error"]
    code, body = _call(url + "/api/upload?name=x&folder=out:..", b"x")
    assert code == 400 and "refused outside it" in json.loads(body)["error"]
    assert not (tmp_path / "x").exists() and not (tmp_path / "x.jsonl").exists()


def test_a_post_from_another_origin_is_refused(url: str, tmp_path: Path) -> None:
    code, body = _call(url + "/api/upload?name=a.json", b"{}", {"Origin": "http://example.com"})
    assert code == 403 and not (tmp_path / "out" / "uploads").exists()


def test_the_run_folders_under_the_root_are_listed(url: str) -> None:
    assert json.loads(_call(url + "/api/state")[1])["runs"] == ["runs/a"]


@pytest.mark.parametrize("path, name, kind", [("/", "index.html", "text/html"), ("/index.html", "index.html", "text/html"),
                                              ("/app.js", "app.js", "text/javascript")])
def test_the_page_and_its_script_are_served_by_the_workbench_and_the_viewer(url, path, name, kind):
    """Both servers answer their page's two files (`view.server.Handler._page`, shared); anything else is theirs."""
    from emocaustics.ui.server import STATIC as BENCH
    from emocaustics.view.server import STATIC as VIEWER
    from emocaustics.view.server import make_server as viewer

    class Empty:
        def document(self, path: str):
            raise KeyError(path)

        def paths(self) -> list[str]:
            return []

    server = viewer(Empty(), 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for base, folder in ((url, BENCH), (f"http://127.0.0.1:{server.server_address[1]}", VIEWER)):
            with urllib.request.urlopen(base + path) as r:
                assert r.status == 200 and r.headers["Content-Type"].startswith(kind)
                assert r.read() == (folder / name).read_bytes()
            assert _call(base + "/data/c/0.js")[0] == 404
    finally:
        server.shutdown()
        server.server_close()
