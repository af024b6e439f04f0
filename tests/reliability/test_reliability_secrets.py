"""Reliability: a job run with an API key in the environment leaves no trace of the key in any log or output file.

`emocaustics run` runs as a child process with its own Ray (dedicated temp dir), against the local fake endpoint,
which refuses any request without that very bearer key (so the key provably travelled to the process that calls the
endpoint). Some requests fail on purpose (500, invalid JSON at random; every request about dialogue 2 answers 500, so that
dialogue ends as a failure row), so the error and warning paths write their logs too.
Then every file under the run dir, the response cache, Ray's session dir and the captured stdout/stderr is scanned.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from fakes.child_run import cleanup, start_cli
from fakes.openai_chat import Faults
from fakes.openai_routed import RoutedFakeServer

pytestmark = pytest.mark.slow

SECRET = "sk-test-SECRET-7f3a9c1e5b2d4086-do-not-log"


def _files(root: Path) -> list[Path]:
    out = []
    for dirpath, _, names in os.walk(root, followlinks=False):
        for name in names:
            p = Path(dirpath) / name
            if p.is_file() and not p.is_symlink():
                out.append(p)
    return out


def _leaks(paths: list[Path]) -> list[str]:
    needles = (SECRET.encode(), SECRET.encode("utf-16-le"), SECRET[8:].encode())  # whole key, UTF-16, its tail
    hits = []
    for p in paths:
        try:
            data = p.read_bytes()
        except OSError:
            continue
        if any(n in data for n in needles):
            hits.append(str(p))
    return hits


def test_api_key_from_the_environment_is_never_written(tmp_path: Path) -> None:
    from emocaustics.tasks.longdialogue.data.load import load_sample

    always_500 = load_sample().dialogues[2].utterances[0].sentence
    faults = Faults(rate_500=0.1, rate_invalid=0.1, retry_after_ms=10, seed=3)
    with RoutedFakeServer(faults, routes={always_500: "500"}, expected_key=SECRET) as server:
        job = {
            "name": "secret-check",
            "dataset": {"subset": "sample", "ids": [1, 2]},
            "models": {"api": {"spec": f"openai:fake-model@{server.base_url}?timeout=2&max_retries=2",
                               "concurrency": 8,
                               # dialogue 2's requests all answer 500 on purpose: a failed sample, not a dead endpoint
                               "max_server_errors": 1000}},
            "runs": [{"task": "sextuple", "method": "direct", "model": "api"},
                     {"task": "emotion", "method": "direct", "model": "api"}],
            "scoring": {"judge": "api"},
            "output": str(tmp_path / "runs"),
            "cache_dir": str(tmp_path / "cache"),
            "ray": {"num_cpus": 2, "object_store_memory": 200_000_000},
        }
        spec = tmp_path / "job.yaml"
        spec.write_text(yaml.safe_dump(job), encoding="utf-8")
        run_dir = tmp_path / "run"
        # --allow-failures: the injected 500s may fail a sample (exit status 3); this test is about the key
        child = start_cli(["run", str(spec), "--out", str(run_dir), "--allow-failures"], logs=tmp_path / "logs",
                          env={"EMOCAUSTICS_API_KEY": SECRET, "OPENAI_API_KEY": ""})
        try:
            rc = child.wait(timeout=300)
            stdout, stderr = child.output()
            assert rc == 0, stderr[-3000:]
            # the run really used the key: every request carried it, and answers came back
            assert server.auth_headers and set(server.auth_headers) == {f"Bearer {SECRET}"}
            assert server.counts["ok"] > 0 and server.counts["500"] + server.counts["invalid"] > 0, server.counts
            assert (run_dir / "summary.md").exists()
            failures = (run_dir / "predictions" / "sextuple_direct_api" / "failures.jsonl").read_text(encoding="utf-8")
            assert '"dialogue": 2' in failures and "HTTP 500" in failures, failures
            scanned = _files(run_dir) + _files(tmp_path / "cache") + _files(child.ray_tmp) + [
                child.stdout_path, child.stderr_path]
            # An endpoint-only job needs no Ray: extraction streams in the driver and the runner connects only for
            # Ray-hosted models (issue 18). Where Ray did run, its session logs are among the files scanned.
            ray_logs = [p for p in scanned if str(child.ray_tmp) in str(p) and "/logs/" in str(p)]
            if ray_logs:
                assert any("worker" in p.name for p in ray_logs)
            leaks = _leaks(scanned)
            assert not leaks, f"the API key appears in: {leaks}"
            print(f"\n[reliability] secrets: scanned {len(scanned)} files ({len(ray_logs)} Ray logs), "
                  f"{len(server.seen)} requests, no trace of the key")
        finally:
            cleanup(child)
