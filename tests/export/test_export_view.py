"""The inspect export opens in the real `inspect view` (its own server, `inspect view start --log-dir DIR --port P`) in
headless Chromium: the log list shows every config of the run, and the AER log run on the vLLM engine shows its
sample list (ids, scores, tokens). The screenshot is docs/img/export-inspect-view.png (docs/exports.md)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import polars as pl
import pytest

from fakes.browser import REPO, Browser, chromium_or_skip

pytestmark = [pytest.mark.engine, pytest.mark.slow]
SHOT = REPO / "docs" / "img" / "export-inspect-view.png"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(browser: Browser, expression: str, what: str, timeout: float = 60) -> object:
    deadline = time.monotonic() + timeout
    while not (got := browser.eval(expression)):
        assert time.monotonic() < deadline, f"inspect view: {what} not shown within {timeout:.0f} s"
        time.sleep(0.3)
    return got


def test_the_export_opens_in_inspect_view(run_dir: Path, tmp_path: Path) -> None:
    import emocaustics as ec

    logs = tmp_path / "logs"
    ec.export(run_dir, format="inspect", out=logs)
    port = _free_port()
    inspect = Path(sys.executable).with_name("inspect")
    server = subprocess.Popen([str(inspect), "view", "start", "--log-dir", str(logs), "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    browser = None
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode(errors="replace")[-2000:]
                assert time.monotonic() < deadline, "inspect view did not answer within 60 s"
                time.sleep(0.3)
        browser = Browser(chromium_or_skip(), tmp_path / "profile")
        errors = browser.load(f"http://127.0.0.1:{port}/", settle=1)
        # inspect's own page asks for an endpoint its server does not have (/api/flow): its error, not ours
        assert [e for e in errors if "/api/flow" not in e] == []
        # the list fills in as inspect reads each header (the larger logs last): wait for every task, not the first
        tasks = _wait(browser, "(ts => new Set(ts).size >= 6 ? ts : null)(Array.from(document.querySelectorAll("
                               "'a[href*=\"#/tasks/\"]')).map(a => a.innerText.split('\\n')[0])"
                               ".filter(t => t.startsWith('emocaustics/')))", "every config in the log list")
        assert set(tasks) == {"emocaustics/aer", "emocaustics/ecpe", "emocaustics/sextuple", "emocaustics/emotion",
                              "emocaustics/narrative", "emocaustics/human"}
        browser.eval("location.hash = Array.from(document.querySelectorAll('a[href*=\"#/tasks/\"]')).find(a => "
                     "a.innerText.includes('smoke/smoke')).getAttribute('href').split('#')[1]")
        # each sample's row: its id and its tokens (prompt + generated, as the run counted them)
        mine = pl.read_parquet(run_dir / "scores.parquet").filter(pl.col("model") == "smoke")
        rows = {str(s): str(p + g) for s, p, g in mine.select("sample_id", "prompt_tokens", "generated_tokens")
                .iter_rows()}
        assert len(rows) == 2 and all(int(t) > 0 for t in rows.values())
        cells = " && ".join(f"t.includes({sid!r}) && t.includes({tokens!r})" for sid, tokens in rows.items())
        text = _wait(browser, f"(t => {cells} && t)(document.body.innerText)", "the sample list with its tokens")
        assert "smoke/smoke" in text and "2 Samples" in text
        time.sleep(2)  # the list's layout settles before the screenshot
        SHOT.parent.mkdir(parents=True, exist_ok=True)
        browser.screenshot(SHOT)
    finally:
        if browser is not None:
            browser.close()
        server.terminate()
        server.wait(timeout=20)
