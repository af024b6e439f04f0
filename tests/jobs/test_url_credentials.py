"""Issue 41, point 2: secrets in a model spec. `user:password@` in an endpoint's URL is sent as that URL's
Authorization header (HTTP Basic) and appears in no file the run writes and no line it prints; a secret in the spec's
query (`?api_key=`) is refused before anything runs, in one line that does not echo it."""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import pytest

from emocaustics.cli import main
from emocaustics.core.errors import UsageError
from emocaustics.models.spec import expand_shorthand, parse_llm_spec
from fakes.openai_chat import FakeOpenAIServer
from tasks.aer.aer_fixtures import standard_dataset

PASSWORD = "hunter2-Zq9"


def _files_holding(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def test_url_credentials_become_basic_auth_and_are_stored_and_printed_nowhere(tmp_path, monkeypatch, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    for var in ("OPENAI_API_KEY", "EMOCAUSTICS_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("EMOCAUSTICS_RESPONSE_CACHE", str(tmp_path / "cache"))  # scanned below, as the run folder
    data = standard_dataset(tmp_path / "aer")
    # the first request fails for good (no retries), so a failure line naming the endpoint is printed too
    with FakeOpenAIServer(script=["500"]) as server:
        url = server.base_url.replace("http://", f"http://alice:{PASSWORD}@")
        rc = main(["eval", "aer", "--model", f"openai:fake-chat@{url}?max_retries=0", "--limit", "3",
                   "-T", "context=none", "-D", f"data={data}", "--out", str(tmp_path / "run")])
        headers = list(server.auth_headers)
    out, err = capsys.readouterr()
    assert rc in (0, 3), err[-2000:]
    basic = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert headers and set(headers) == {basic}  # every request carried the credentials, as their header
    failures = [line for line in (err + caplog.text).splitlines() if "request failed" in line]
    assert failures and all(server.base_url in line for line in failures)  # the failure line names the endpoint ...
    assert PASSWORD not in out + err + caplog.text  # ... without the password
    assert (tmp_path / "run" / "config.yaml").is_file() and (tmp_path / "run" / "run.json").is_file()
    assert list((tmp_path / "run").rglob("provenance.json"))
    assert _files_holding(tmp_path / "run", PASSWORD) == []  # config.yaml, run.json, provenance, eval log ...
    assert _files_holding(tmp_path / "cache", PASSWORD) == []  # ... and the response cache


@pytest.mark.parametrize("spec", [
    "openai:m@http://127.0.0.1:9/v1?api_key=sk-SECRET-1",
    "openai:m@http://127.0.0.1:9/v1?concurrency=2&token=sk-SECRET-1",
    "anthropic:claude-x@https://proxy.example/v1?key=sk-SECRET-1",
    "vllm:some/model?api_key=sk-SECRET-1",
])
def test_a_secret_in_the_query_is_refused_in_one_line_that_does_not_echo_it(spec, tmp_path, capsys):
    with pytest.raises(UsageError) as exc:
        parse_llm_spec(spec)
    assert "sk-SECRET-1" not in str(exc.value) and "environment" in str(exc.value)
    assert main(["eval", "aer", "--model", spec, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "sk-SECRET-1" not in err, err
    assert not (tmp_path / "run").exists()


def test_every_message_about_a_spec_hides_its_password():
    spec = f"openai:m@http://alice:{PASSWORD}@host/v1?bogus=1"
    with pytest.raises(UsageError) as exc:
        parse_llm_spec(spec)
    assert PASSWORD not in str(exc.value) and "alice:***@host" in str(exc.value)
    from emocaustics.core.redact import redacted

    assert redacted("openai:m@https://u:p@h/v1?key=abc&concurrency=2") == "openai:m@https://u:***@h/v1?key=***&concurrency=2"


def test_the_written_out_spec_has_no_credentials(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", f"https://bob:{PASSWORD}@gateway.example/v1")
    assert expand_shorthand("openai:gpt-4o-mini") == "openai:gpt-4o-mini@https://gateway.example/v1"
    assert expand_shorthand(f"anthropic:c@https://bob:{PASSWORD}@gw.example") == "anthropic:c@https://gw.example"
    parsed = parse_llm_spec(f"openai:m@https://bob:{PASSWORD}@gw.example:8443/v1?concurrency=2")
    assert parsed.base_url == "https://gw.example:8443/v1" and PASSWORD not in parsed.canonical()


def test_no_key_for_a_server_that_wants_one_is_one_line_naming_the_variable(tmp_path, monkeypatch, capsys):
    """Issue 41 (14), as docs/models.md says: another URL is asked without a key when none is set; a server that
    refuses that stops the run before anything runs, naming the variable."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Refuses(BaseHTTPRequestHandler):
        def _refuse(self) -> None:
            body = b'{"error": {"message": "missing api key"}}'
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _refuse

        def log_message(self, *args) -> None:
            pass

    for var in ("OPENAI_API_KEY", "EMOCAUSTICS_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuses)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        rc = main(["eval", "aer", "--model", f"openai:m@{url}", "-D", f"data={standard_dataset(tmp_path / 'aer')}",
                   "--limit", "1", "--out", str(tmp_path / "run")])
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "OPENAI_API_KEY" in err and url in err
    assert not (tmp_path / "run").exists()
