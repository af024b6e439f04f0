"""`emocaustics view RUN --port N` on a port already in use (issue 41 point 8): one line naming the port, exit status 2,
not an OSError's traceback. Kept beside the corpus (tests/badinput/<task>/<case>/) because the case needs a port that
something holds while the command runs, which a case file cannot hold."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

from emocaustics.cli import main

BASE = Path(__file__).resolve().parent / "aer" / "_base"
JOB = """name: busy-port
dataset:
  aer: {{split: sample, data: "{data}"}}
runs:
  - {{task: aer, options: {{method: oracle}}}}
scoring: {{judge: none}}
"""


def test_view_on_a_port_in_use_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    shutil.copytree(BASE / "data", tmp_path / "data")
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(data=tmp_path / "data"), encoding="utf-8")
    assert main(["run", str(job), "--out", str(tmp_path / "run")]) == 0
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        capsys.readouterr()
        assert main(["view", str(tmp_path / "run"), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"emocaustics: error: --port {port}: cannot listen on 127.0.0.1:{port}"), lines[0]
    assert "--port 0" in lines[0]
