"""Issue 53 findings 8, 16 and 17, the workbench's edges (emocaustics/ui/server.py, paths.py, cli/ui.py), fast: the
server in this process on a free port, raw HTTP where a header must be wrong.
- Host is checked on every request (a DNS-rebinding page sends its own name): only 127.0.0.1 and localhost on the
  server's port are answered;
- Origin is compared exactly (scheme, host and port): same host other port, other scheme, `null` and prefix tricks
  are refused; a page opened as http://localhost:PORT/ works;
- a bad Content-Length and an over-long upload name are a 400 with a line, never a traceback;
- a folder under the root whose links lead out of it is refused (a job would read through them);
- `ui --out` that cannot be made is one line; SIGTERM ends the workbench's running jobs."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from emocaustics.cli import main
from emocaustics.ui.paths import Folders, Refused
from emocaustics.ui.server import Workbench, make_server


@pytest.fixture
def port(tmp_path: Path):
    (tmp_path / "root").mkdir()
    server = make_server(Workbench(tmp_path / "root", tmp_path / "out", lambda argv: 0), 0)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _raw(port: int, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for k, v in headers.items():
        conn.putheader(k, v)
    conn.endheaders(body or None)
    r = conn.getresponse()
    try:
        return r.status, r.read()
    finally:
        conn.close()


@pytest.mark.parametrize("path", ["/api/state", "/", "/app.js", "/out/uploads", "/api/jobs/0001"])
def test_a_request_naming_another_host_is_refused_whatever_it_asks(port: int, path: str) -> None:
    for host in ("evil.example:%d", "evil.example", "127.0.0.1.evil.example:%d", "127.0.0.1:%d0", "localhost:1",
                 "127.0.0.1"):
        code, body = _raw(port, "GET", path, {"Host": host.replace("%d", str(port))})
        assert code == 403 and b"host" in body.lower(), (host, code, body)
    assert _raw(port, "GET", path, {})[0] == 403  # no Host at all


@pytest.mark.parametrize("host", ["127.0.0.1:%d", "localhost:%d", "LOCALHOST:%d"])
def test_the_loopback_names_on_its_port_are_answered(port: int, host: str) -> None:
    code, body = _raw(port, "GET", "/api/state", {"Host": host % port})
    assert code == 200 and "root" in json.loads(body)


@pytest.mark.parametrize("origin", ["http://127.0.0.1:1", "https://127.0.0.1:%d", "null", "http://127.0.0.1:%d.evil.com",
                                    "http://127.0.0.1:%d@evil.com", "http://evil.com/http://127.0.0.1:%d",
                                    "http://localhost:%d0", "http://127.0.0.1", "file://"])
def test_a_post_from_any_other_origin_is_refused(port: int, origin: str, tmp_path: Path) -> None:
    headers = {"Host": f"127.0.0.1:{port}", "Origin": origin.replace("%d", str(port)), "Content-Length": "2"}
    code, body = _raw(port, "POST", "/api/upload?name=a.json", headers, b"{}")
    assert code == 403 and b"refused" in body, (origin, code, body)
    assert not (tmp_path / "out" / "uploads").exists()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_page_opened_as_localhost_or_127_0_0_1_may_act(port: int, host: str, tmp_path: Path) -> None:
    headers = {"Host": f"{host}:{port}", "Origin": f"http://{host}:{port}", "Content-Length": "2"}
    code, body = _raw(port, "POST", "/api/upload?name=a.json", headers, b"{}")
    assert code == 200 and json.loads(body)["ref"].startswith("out:uploads/"), body


@pytest.mark.parametrize("length", ["abc", "-1", "1e3", "0x10"])
def test_a_content_length_that_is_not_a_number_of_bytes_is_a_400(port: int, length: str) -> None:
    code, body = _raw(port, "POST", "/api/upload?name=a.json", {"Host": f"127.0.0.1:{port}", "Content-Length": length})
    assert code == 400 and "Content-Length" in json.loads(body)["error"], body


def test_an_upload_name_too_long_for_the_disk_is_a_400(port: int, tmp_path: Path) -> None:
    name = "a" * 300 + ".jsonl"
    code, body = _raw(port, "POST", f"/api/upload?name={name}", {"Host": f"127.0.0.1:{port}", "Content-Length": "2"},
                      b"{}")
    assert code == 400 and "too long" in json.loads(body)["error"], body


def test_a_folder_whose_links_lead_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "data" / "dev_data").mkdir(parents=True)
    (tmp_path / "gold.jsonl").write_text("{}", encoding="utf-8")
    (root / "data" / "own.jsonl").write_text("{}", encoding="utf-8")
    (root / "data" / "dev_data" / "in").symlink_to(root / "data" / "own.jsonl")  # inside: fine
    folders = Folders(root, tmp_path / "out")
    assert folders.resolve("data") == root / "data"
    (root / "data" / "dev_data" / "gold.jsonl").symlink_to(tmp_path / "gold.jsonl")
    with pytest.raises(Refused, match="dev_data/gold.jsonl.*outside the folder the workbench was started with"):
        folders.resolve("data", "data folder")
    with pytest.raises(Refused, match="dev_data/gold.jsonl"):
        folders.resolve("data/dev_data")


def test_an_out_folder_that_cannot_be_made_is_one_line(tmp_path: Path, capsys) -> None:
    assert main(["ui", "--root", str(tmp_path), "--out", "/proc/x/y"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("emocaustics: error: --out /proc/x/y: cannot be made") and "Traceback" not in err, err


def test_sigterm_ends_the_workbench_and_its_running_jobs(tmp_path: Path) -> None:
    """A job's step is stood in for by a program on PATH that notes its pid and sleeps (the job's worker runs the
    verb through `subprocess.call`): after SIGTERM the workbench exits and the program is gone."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "hits.csv").write_text("x\n", encoding="utf-8")
    human = tmp_path / "bin" / "human"
    human.write_text(f"#!/bin/sh\necho $$ > {tmp_path / 'pid'}\nsleep 30\n", encoding="utf-8")
    human.chmod(0o755)
    snippet = textwrap.dedent("""
        import subprocess, sys
        import emocaustics.cli as cli
        real, cli.main = cli.main, subprocess.call  # each step's verb: a program of that name
        sys.exit(real(["ui", "--root", sys.argv[1]]))
    """)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    bench = subprocess.Popen([sys.executable, "-c", snippet, str(tmp_path / "root")], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        line = bench.stdout.readline()
        port = int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        body = json.dumps({"kind": "human-process", "hits": "hits.csv"}).encode()
        code, _ = _raw(port, "POST", "/api/jobs", {"Host": f"127.0.0.1:{port}", "Content-Length": str(len(body))},
                       body)
        assert code == 200
        deadline = time.monotonic() + 30
        while not (tmp_path / "pid").exists() or not (tmp_path / "pid").read_text().strip():
            assert time.monotonic() < deadline, "the job's step did not start"
            time.sleep(0.05)
        pid = int((tmp_path / "pid").read_text())
        bench.send_signal(signal.SIGTERM)
        bench.wait(timeout=20)
        deadline = time.monotonic() + 10
        while _alive(pid):
            assert time.monotonic() < deadline, "the job's step outlived the workbench"
            time.sleep(0.05)
    finally:
        if bench.poll() is None:
            bench.kill()
        if (tmp_path / "pid").exists() and _alive(pid := int((tmp_path / "pid").read_text() or 0)):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purposes (its parent died: init reaps it)
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_links_inside_the_root_are_followed_to_check_what_they_hold_and_a_loop_ends(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "data").mkdir(parents=True)
    (root / "elsewhere").mkdir()
    (root / "data" / "up").symlink_to(root)  # a loop: walked once
    (root / "data" / "more").symlink_to(root / "elsewhere")  # inside the root, holding a link out
    folders = Folders(root, tmp_path / "out")
    assert folders.resolve("data") == root / "data"
    (root / "elsewhere" / "gold.jsonl").symlink_to(tmp_path)
    with pytest.raises(Refused, match="gold.jsonl is a symbolic link to"):
        folders.resolve("data")
