"""Samples started in a given order with a bounded amount of work in flight: the solving plans' one scheduler.

`run_in_flight(items, fn, limit=..., weight=..., budget=...)` starts `fn(item, slot)` for each item in turn, waiting
before each start until fewer than `limit` items hold a slot and, with a `budget`, until the item's weight fits beside
the weights in flight (an item heavier than the whole budget still runs, alone). `fn` releases its slot when the part
that needs bounding is done (`await slot.release()`; writing its files may go on after); a slot not released is
released when `fn` returns.

Why not one task per item behind a semaphore (the plans before): every task was made up front, so the driver held a
task per sample for the whole run; and a count alone does not bound memory when the longest samples go first. A
dialogue's state machine holds its answers until the dialogue ends, so the in-flight set of a longest-first run of
ten times the data (the ten longest dialogues' copies first) held 2.3 times the utterances of the 1x run's. Items
start strictly in the given order: the head waits until it fits, nothing overtakes it (longest first stays longest
first).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Admission:
    """At most `limit` holders and, with `budget`, at most that much weight held (one holder may exceed it alone)."""

    def __init__(self, limit: int, budget: float | None = None) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self.limit, self.budget = limit, budget
        self.held, self.weight = 0, 0.0
        self.peak_held, self.peak_weight = 0, 0.0  # for benchmarks and tests: what the bound let through
        self._changed = asyncio.Condition()

    def _fits(self, weight: float) -> bool:
        if self.held == 0:
            return True
        return self.held < self.limit and (self.budget is None or self.weight + weight <= self.budget)

    async def acquire(self, weight: float) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self._fits(weight))
            self.held += 1
            self.weight += weight
            self.peak_held = max(self.peak_held, self.held)
            self.peak_weight = max(self.peak_weight, self.weight)

    async def release(self, weight: float) -> None:
        async with self._changed:
            self.held -= 1
            self.weight -= weight
            self._changed.notify_all()


class Slot:
    """One item's hold on an `Admission`; releasing twice is a no-op."""

    def __init__(self, admission: Admission, weight: float) -> None:
        self._admission, self._weight, self._held = admission, weight, True

    async def release(self) -> None:
        if self._held:
            self._held = False
            await self._admission.release(self._weight)


async def run_in_flight(items: Iterable[T], fn: Callable[[T, Slot], Awaitable[R]], *, limit: int,
                        weight: Callable[[T], float] = lambda _: 1.0, budget: float | None = None,
                        admission: Admission | None = None) -> list[R]:
    """`fn(item, slot)` for every item, started in order under the bound; results in the items' order. The first
    exception stops the starts, cancels what runs, and is raised."""
    admission = admission if admission is not None else Admission(limit, budget)
    tasks: list[asyncio.Task[R]] = []
    failed: list[BaseException] = []

    async def one(item: T, slot: Slot) -> R:
        try:
            return await fn(item, slot)
        finally:
            await slot.release()

    def note(task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            failed.append(task.exception())  # type: ignore[arg-type]

    try:
        for item in items:
            if failed:
                break
            w = weight(item)
            await admission.acquire(w)
            task = asyncio.ensure_future(one(item, Slot(admission, w)))
            task.add_done_callback(note)
            tasks.append(task)
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:  # after an exception or a cancellation: nothing keeps running unawaited
            if not task.done():
                task.cancel()
