"""Running `async fn(llm, item)` over items, turning each item's crash into a `RunFailure` instead of an exception.

Used inside a model actor (next to the engine) and in the driver for backends without an actor (OpenAI endpoints).
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from emocaustics.core.errors import Stop


@dataclass(frozen=True, slots=True)
class RunFailure:
    """Stands in the results of `run()` for an item whose function raised (or whose replica died for good)."""

    reason: str  # one line: exception type and message
    detail: str = ""  # the traceback, for logs and failure files

    def __bool__(self) -> bool:  # lets callers write `if not result:` for failures
        return False


async def run_item(llm: Any, fn: Callable[[Any, Any], Awaitable[Any]], item: Any) -> Any:
    try:
        return await fn(llm, item)
    except (asyncio.CancelledError, Stop):  # a typed stop (dead endpoint, budget) ends the run, not just this item
        raise
    except Exception as exc:  # one item's bug or bad data must not take the other items down
        return RunFailure(f"{type(exc).__name__}: {exc}", traceback.format_exc(limit=20))


async def run_local(llm: Any, fn: Callable[[Any, Any], Awaitable[Any]], items: list[Any]) -> list[Any]:
    return list(await asyncio.gather(*(run_item(llm, fn, item) for item in items)))
