"""The viewer's timings of benchmarks/evallog_bench.py, on the log it wrote: server response times of the run index,
the config's sample list and single samples, and in headless Chromium the time from navigation (or the hash change)
to the rendered page."""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SAMPLES_OPENED = 20  # single samples opened after the first (server and browser)


def _get(url: str) -> float:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as resp:
        resp.read()
        assert resp.status == 200, url
    return time.perf_counter() - t0


def _serve(run_dir: Path) -> tuple[Any, str]:
    from emocaustics.evallog.read import RunLog
    from emocaustics.view.data import ViewData
    from emocaustics.view.server import make_server

    httpd = make_server(ViewData(RunLog(run_dir)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


def _picks(n: int, count: int) -> list[int]:
    step = max(1, n // (count + 1))
    return [min(n - 1, step * (k + 1)) for k in range(count)]


def server_timings(run_dir: Path, n: int) -> dict[str, Any]:
    """A fresh viewer process's answers: index, the sample list, the first sample (cold), then others."""
    httpd, base = _serve(run_dir)
    try:
        index = _get(f"{base}/data/index.js")  # builds the config's table too (counts, failures)
        listing = _get(f"{base}/data/c/0.js")
        first = _get(f"{base}/data/s/0/0.js")
        others = [_get(f"{base}/data/s/0/{j}.js") for j in _picks(n, SAMPLES_OPENED)]
    finally:
        httpd.shutdown()
        httpd.server_close()
    return {"index_s": round(index, 3), "sample_list_s": round(listing, 3), "first_sample_s": round(first, 3),
            "sample_median_s": round(statistics.median(others), 3), "sample_max_s": round(max(others), 3),
            "samples_opened": len(others) + 1}


def chromium() -> str | None:
    proc = subprocess.run([str(REPO / "scripts" / "ensure-chromium.sh")], capture_output=True, text=True, timeout=900)
    return proc.stdout.strip().splitlines()[-1] if proc.returncode == 0 and proc.stdout.strip() else None


def browser_timings(run_dir: Path, n: int, binary: str) -> dict[str, Any]:
    """Navigation (or hash change) to the page the viewer marks ready, in headless Chromium against a fresh server."""
    sys.path.insert(0, str(REPO / "tests"))
    from fakes.browser import Browser

    ready = "(document.body || {dataset: {}}).dataset.ready"

    def wait(b: Any, want: str, t0: float) -> float:
        while (got := b.eval(ready)) != want:
            assert got != "error", b.eval("document.getElementById('main').innerText")
            assert time.perf_counter() - t0 < 60, f"never showed {want}"
            time.sleep(0.005)
        return time.perf_counter() - t0

    def goto(b: Any, hash_: str) -> float:
        t0 = time.perf_counter()
        b.eval(f"location.hash = {hash_!r}")
        return wait(b, hash_, t0)

    httpd, base = _serve(run_dir)
    with tempfile.TemporaryDirectory(prefix="evallog-bench-") as tmp:
        b = Browser(binary, Path(tmp) / "profile")
        try:
            for domain in ("Page.enable", "Runtime.enable"):
                b.call(domain)
            t0 = time.perf_counter()
            b.call("Page.navigate", url=f"{base}/")
            index = wait(b, "#/", t0)
            listing = goto(b, "#/c/0")
            rows = b.eval("document.querySelectorAll('#samples tr.sample').length")
            first = goto(b, "#/s/0/0")
            others, calls_shown = [], []
            for j in _picks(n, SAMPLES_OPENED):
                others.append(goto(b, f"#/s/0/{j}"))
                calls_shown.append(b.eval("document.querySelectorAll('section.call').length"))
        finally:
            b.close()
            httpd.shutdown()
            httpd.server_close()
    assert rows == n, f"the sample list shows {rows} rows of {n}"
    return {"index_s": round(index, 3), "sample_list_s": round(listing, 3), "sample_list_rows": rows,
            "first_sample_s": round(first, 3), "sample_median_s": round(statistics.median(others), 3),
            "sample_max_s": round(max(others), 3), "samples_opened": len(others) + 1,
            "per_sample": [{"seconds": round(t, 3), "calls_shown": c} for t, c in zip(others, calls_shown)]}
