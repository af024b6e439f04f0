"""Running a coroutine to completion on the fastest event loop available.

uvloop (libuv) runs the same asyncio code with less of the loop's own CPU per callback and per socket event, which
counts at hundreds of LLM calls per second in one driver process. Where uvloop is not installed (it does not build
on Windows) the stock loop runs the same code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Any:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coro)`, on uvloop when it is installed."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(coro)
