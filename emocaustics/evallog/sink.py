"""Where finished samples go: the eval log of the config being solved, made current by the job runner.

A plan (the default one in `solve.plan`, or a task's own) asks `current()` in the driver before it starts and, when
there is a log, records each sample's calls (`record.recording`) and hands the result to `emit`. Set through a context
variable, so a plan needs no extra parameter and code run outside a job (a notebook, `eval`) records nothing.
Where the log cannot be reached (a Ray actor scoring a batch), `Kept` holds the lines as data for the driver to emit.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol


class Sink(Protocol):
    prompts: bool  # False: keep counts and timings, no prompt or answer text

    def emit(self, sample_id: str, result: dict[str, Any]) -> "Future[None] | None":
        """Stage a finished sample; a future of its line, written by the writer's process (the run does not
        wait for it: a failed line is raised to the next `emit` or the config's finish)."""


class Kept:
    """A sink that keeps each sample's line as plain JSON (a `Recorder.to_json()`): it travels back with a Ray stage's
    rows and the driver hands it to its own log's `emit` (`tasks/longdialogue/score/plan.py`)."""

    def __init__(self, prompts: bool) -> None:
        self.prompts = prompts
        self.lines: dict[str, dict[str, Any]] = {}  # sample -> its line, until the stage hands it back

    def emit(self, sample_id: str, result: dict[str, Any]) -> None:
        log = result.get("log")
        self.lines[str(sample_id)] = {**result, "log": log.to_json() if hasattr(log, "to_json") else log}


_SINK: ContextVar[Sink | None] = ContextVar("emocaustics_evallog_sink", default=None)


def current() -> Sink | None:
    return _SINK.get()


@contextmanager
def active(sink: Sink | None) -> Iterator[None]:
    token = _SINK.set(sink)
    try:
        yield
    except BaseException as exc:  # the run stops here: a sink that holds a process ends it (`writer.ConfigLog.abort`)
        abort = getattr(sink, "abort", None)
        if abort is not None and not isinstance(exc, GeneratorExit):
            abort()
        raise
    finally:
        _SINK.reset(token)
