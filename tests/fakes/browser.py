"""A headless Chromium driven through the DevTools protocol, for the tests of pages we write (the run report, the
eval-log viewer). Chromium comes from `scripts/ensure-chromium.sh` (apt-get when missing); `chromium_or_skip()` skips
only when that script says apt is impossible here (exit 3), and fails on any other install error."""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def chromium_or_skip() -> str:
    import pytest

    proc = subprocess.run([str(REPO / "scripts" / "ensure-chromium.sh")], capture_output=True, text=True, timeout=900)
    if proc.returncode == 3:  # the script's "apt is impossible here" (no apt-get, or not root and no sudo)
        pytest.skip(f"chromium not available and cannot be installed: {proc.stderr.strip()}")
    assert proc.returncode == 0, f"scripts/ensure-chromium.sh failed: {proc.stderr.strip()}"
    return proc.stdout.strip().splitlines()[-1]


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
         "--window-size=1280,900"]


class Browser:
    """One headless chromium with a fresh profile; `load(url)` returns console errors and lets us evaluate JS."""

    def __init__(self, binary: str, profile: Path) -> None:
        profile.mkdir(parents=True)
        self.proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode(errors="replace")[-2000:] if self.proc.poll() is not None else ""
                self.close()
                raise RuntimeError(f"chromium did not open its DevTools port: {err}")
            time.sleep(0.1)
        self.port = int(port_file.read_text().split()[0])
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=10).read())
        page = next(t for t in targets if t["type"] == "page")
        from websockets.sync.client import connect

        self._stack = contextlib.ExitStack()
        self.ws = self._stack.enter_context(connect(page["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024,
                                                    open_timeout=20))
        self._id = 0
        self.events: list[dict] = []

    def call(self, method: str, timeout: float = 30, **params) -> dict:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.01)))
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]
            self.events.append(msg)

    def load(self, url: str, settle: float = 1.0) -> list[str]:
        """Navigate, wait for the load event (and `settle` seconds more); the page's errors, one line each."""
        self.events.clear()
        for domain in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
            self.call(domain)
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + 60
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            assert time.monotonic() < deadline, f"{url}: no load event within 60 s"
            self.events.append(json.loads(self.ws.recv(timeout=60)))
        end = time.monotonic() + settle
        while time.monotonic() < end:  # late console messages and failed subresources
            try:
                self.events.append(json.loads(self.ws.recv(timeout=max(end - time.monotonic(), 0.01))))
            except TimeoutError:
                break
        return errors_of(self.events)

    def eval(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def screenshot(self, path: Path) -> None:
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True, timeout=60)
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        if getattr(self, "_stack", None) is not None:
            self._stack.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def errors_of(events: list[dict]) -> list[str]:
    """Console errors/warnings, uncaught exceptions, browser log errors and failed loads, as readable lines."""
    out = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            out.append(f"console.{p['type']}: " + " ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
        elif m == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            out.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")
        elif m == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
            out.append(f"log {p['entry']['level']}: {p['entry']['text']} {p['entry'].get('url', '')}")
        elif m == "Network.loadingFailed":
            out.append(f"load failed: {p.get('errorText')}")
    return out
