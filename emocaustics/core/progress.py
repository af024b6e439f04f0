"""Progress: one live line per stage (done/total with the failed among them, rate, ETA) on a terminal; plain log lines
otherwise. A stage has one line: code that runs inside a stage that already reports (a task's solver inside a job)
prints none of its own.

Under `ray job submit` stdout is not a terminal, so the line is printed again every `log_every` seconds (and at the
end) instead of being redrawn in place; `ray job logs` then shows a readable history.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _fmt_seconds(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class Progress:
    def __init__(self, stage: str, total: int, *, stream: TextIO | None = None, log_every: float = 10.0) -> None:
        self.stage, self.total = stage, total
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty()
        self.log_every = log_every
        self.done = self.failed = 0
        self.start = time.monotonic()
        self._last_print: float | None = None  # off a terminal: the first update is logged at once

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else float("nan")
        eta_text = _fmt_seconds(eta) if eta == eta else "--:--"
        failed = f", {self.failed} failed" if self.failed else ""
        return (f"[{self.stage}] {self.done}/{self.total}{failed}  {rate:.2f}/s  "
                f"elapsed {_fmt_seconds(elapsed)}  eta {eta_text}")

    def update(self, n: int = 1, failed: int = 0) -> None:
        self.done += n
        self.failed += failed
        now = time.monotonic()
        if self.live or self._last_print is None or now - self._last_print >= self.log_every or self.done >= self.total:
            self._last_print = now
            self._show("")

    def close(self) -> None:
        if self.live or self.done < self.total or self._last_print is None:
            self._show("\n")

    def _show(self, end: str) -> None:
        """Redrawn in place on a terminal (`end`: a newline once the stage is over), else one line printed."""
        self.stream.write(("\r" + self.line() + "\x1b[K" + end) if self.live else self.line() + "\n")
        self.stream.flush()
