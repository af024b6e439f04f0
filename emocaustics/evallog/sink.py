"""Where finished samples go: the eval log of the config being solved, made current by the job runner.

A plan (the default one in `solve.plan`, or a task's own) asks `current()` in the driver before it starts and, when
there is a log, records each sample's calls (`record.recording`) and hands the result to `emit`. Set through a context
variable, so a plan needs no extra parameter and code run outside a job (a notebook, `eval`) records nothing.
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
        """Stage a finished sample; a future of its line, written by the writer's process or thread (the run does not
        wait for it: a failed line is raised to the next `emit` or the config's finish)."""


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
