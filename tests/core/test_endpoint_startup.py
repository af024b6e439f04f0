"""An endpoint run's start (issue 55 point 1, startup_bench): `eval TASK --model openai:...@URL --no-score` imports
no model, statistics or Ray library and no second HTTP client (httpx was imported for the pre-flight's one GET only:
the model clients speak aiohttp), and the pre-flight's GET still tells a live endpoint, a refused key, a closed port
and a silent one apart. A fresh interpreter for the imports; local servers on 127.0.0.1 for the rest."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from emocaustics.core.errors import PreflightError
from emocaustics.models.registry import check_endpoint
from emocaustics.models.spec import parse_llm_spec

TESTS = Path(__file__).resolve().parents[1]
NOT_FOR_AN_ENDPOINT = ("httpx", "scipy", "statsmodels", "matplotlib", "ray", "vllm", "transformers",
                       "sentence_transformers", "torch")

CODE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from fakes.openai_chat import FakeOpenAIServer
from emocaustics.cli import main
with FakeOpenAIServer() as server:
    code = main(["eval", "sextuple", "--method", "direct", "--model", "openai:fake@" + server.base_url, "--split",
                 "sample", "--ids", "2", "--no-score", "--allow-failures", "--out", sys.argv[2]])
print(json.dumps([code, sorted({m.split(".")[0] for m in sys.modules})]))
"""


def test_an_endpoint_eval_without_scores_imports_no_library_it_does_not_call(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("EMOCAUSTICS_RESPONSE_CACHE", str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", CODE, str(TESTS), str(tmp_path / "run")], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    code, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert code == 0, done.stderr[-2000:]
    assert (tmp_path / "run" / "predictions").is_dir()
    assert not [m for m in loaded if m in NOT_FOR_AN_ENDPOINT], loaded


class _Answer(BaseHTTPRequestHandler):
    status = 404  # not every server lists its models: any answer but 401/403 is a live endpoint

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(self.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _spec(port: int):
    return parse_llm_spec(f"openai:m@http://127.0.0.1:{port}/v1")


def test_the_preflight_get_tells_live_refused_closed_and_silent_apart(server, monkeypatch) -> None:
    for var in ("OPENAI_API_KEY", "EMOCAUSTICS_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    port = server.server_address[1]
    check_endpoint(_spec(port))  # 404: alive
    monkeypatch.setattr(_Answer, "status", 401)
    with pytest.raises(PreflightError, match=rf"127.0.0.1:{port}/v1: the key was refused \(HTTP 401\); set OPENAI"):
        check_endpoint(_spec(port))
    with socket.socket() as closed:  # bound, never listening: the connection is refused
        closed.bind(("127.0.0.1", 0))
        with pytest.raises(PreflightError, match=r"cannot connect \(ConnectionRefusedError\)$"):
            check_endpoint(_spec(closed.getsockname()[1]))
    with socket.socket() as silent:  # listening, never answering
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        with pytest.raises(PreflightError, match=r"no answer within 0.2 s$"):
            check_endpoint(_spec(silent.getsockname()[1]), timeout=0.2)
