"""A concurrency limit that serves waiting requests by priority: the rule vLLM's scheduler applies inside an engine
(`scheduling_policy="priority"`: lower first, then first come), applied where the requests to a remote endpoint
queue on our side.

Why: at a full client a call waits for a free slot; first come first served lets the long dependent chains (a long
dialogue's pass-1 windows, which set the run's critical path) queue behind independent calls, and the run ends long
after the busy span could have. `ChatRequest.priority` is minus the calls that wait on this one in sequence, so the
longest remaining chain goes first.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools


class PriorityGate:
    """At most `limit` holders; waiters are let in lowest `priority` first, ties first come first served."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, int(limit))
        self._free = self.limit
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def set_limit(self, limit: int) -> None:
        """A new limit (the adaptive rate limit's: models/ratelimit.py). Lowered, holders beyond it keep their slots
        and the next releases pay the difference back before anyone is let in; raised, waiters are let in at once."""
        limit = max(1, int(limit))
        self._free += limit - self.limit
        self.limit = limit
        while self._free > 0 and self._grant():
            self._free -= 1

    def _grant(self) -> bool:
        while self._waiting:
            _, _, fut = heapq.heappop(self._waiting)
            if not fut.done():  # a cancelled waiter's future is done: skip it
                fut.set_result(None)
                return True
        return False

    @property
    def waiting(self) -> int:
        return sum(1 for _, _, f in self._waiting if not f.done())

    async def acquire(self, priority: int = 0) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (priority, next(self._order), fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted just as we were cancelled: pass the slot on
                self.release()
            raise

    def release(self) -> None:
        if self._free < 0 or not self._grant():  # below a lowered limit: this slot is not handed on
            self._free += 1

    def slot(self, priority: int = 0) -> "_Slot":
        """`async with gate.slot(priority):` holds one slot for the block."""
        return _Slot(self, priority)


class _Slot:
    __slots__ = ("gate", "priority")

    def __init__(self, gate: PriorityGate, priority: int) -> None:
        self.gate, self.priority = gate, priority

    async def __aenter__(self) -> None:
        await self.gate.acquire(self.priority)

    async def __aexit__(self, *exc: object) -> None:
        self.gate.release()
