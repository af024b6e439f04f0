"""Side-text embeddings (utterances, for EmoCaustics) for samples that run inside replica actors, handed over as they become ready.

A sample hosted in a replica used to wait in the driver until its whole sample was embedded, and only then was it
shipped: on the CPU engine the first 20 s of a 50-sample window run had 14-36 requests in the engine while
samples queued for the embedder (`engine_bench`, `in_flight_by_tenth`). Now every sample is shipped at once with
a ticket to this board; the driver's `EmbedFeed` posts each sample's rows here chunk by chunk, and the sample's
state machine awaits them only when a step needs them (`window`: an event the bucket does not know; `rag`: utterance i
once rows 0..i exist). A sample that asks moves to the front of the feed's queue, as in the driver.

The board is one async Ray actor without a CPU reservation (it only stores arrays and wakes waiters); it lives for one
extraction run and is killed with it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np


class EmbeddingBoard:
    """Per-ticket rows, the row count of a finished sample or a failure reason, and the tickets asked for but not
    done. Each chunk carries the row it starts at and the end mark the sample's row count: an async actor may run
    calls from one caller out of order (a call whose array is still in transfer starts after a later one), so order
    is rebuilt here instead of assumed (a sample once read zero rows when its end mark overtook its chunks)."""

    def __init__(self) -> None:
        self._parts: dict[int, dict[int, np.ndarray]] = {}  # ticket -> first row -> rows
        self._rows: dict[int, int] = {}  # ticket -> rows present from row 0 without a gap
        self._total: dict[int, int] = {}  # ticket -> the sample's row count, once all are embedded
        self._failed: dict[int, str] = {}
        self._asked: list[int] = []
        # bound to the actor's own loop at first use (asyncio's primitives take no loop when made, since 3.10)
        self._changed = asyncio.Condition()

    async def post(self, ticket: int, start: int, rows: np.ndarray) -> None:
        """Rows `start`.. of the ticket's sample."""
        if len(rows):
            parts = self._parts.setdefault(ticket, {})
            parts[start] = np.asarray(rows, dtype=np.float32)
            have = self._rows.get(ticket, 0)
            while have in parts:  # rows from 0 up to the first gap
                have += len(parts[have])
            self._rows[ticket] = have
        async with self._changed:
            self._changed.notify_all()

    async def end(self, ticket: int, total: int) -> None:
        """Every row of the ticket's sample is embedded: `total` of them (some may still be on their way)."""
        self._total[ticket] = total
        async with self._changed:
            self._changed.notify_all()

    async def fail(self, ticket: int, reason: str) -> None:
        self._failed[ticket] = reason
        async with self._changed:
            self._changed.notify_all()

    def _done(self, ticket: int) -> bool:
        return ticket in self._total and self._rows.get(ticket, 0) >= self._total[ticket]

    async def upto(self, ticket: int, n: int | None) -> np.ndarray:
        """At least the first n rows (all of them when n is None), once posted; raises the ticket's failure."""
        def ready() -> bool:
            return ticket in self._failed or self._done(ticket) or (n is not None and self._rows.get(ticket, 0) >= n)

        if not ready():
            self._asked.append(ticket)
            async with self._changed:
                await self._changed.wait_for(ready)
        if ticket in self._failed:
            raise RuntimeError(self._failed[ticket])
        have = self._rows.get(ticket, 0)
        parts = self._parts.get(ticket, {})
        shown = [parts[k] for k in sorted(parts) if k < have]
        if not shown:
            return np.zeros((0, 0), dtype=np.float32)
        rows = np.concatenate(shown) if len(shown) > 1 else shown[0]
        if len(shown) > 1:  # keep one array for the rows so far: later calls for the same ticket reuse it
            rest = {k: v for k, v in parts.items() if k >= have}
            self._parts[ticket] = {0: rows, **rest}
        return rows

    async def asked(self) -> list[int]:
        """Tickets asked for since the last call (the feed serves them first)."""
        out, self._asked = self._asked, []
        return out


def start_board() -> Any:
    """A new board actor in the connected Ray cluster (no CPU reserved: it must not take an engine's slot)."""
    import ray

    return ray.remote(num_cpus=0)(EmbeddingBoard).options(max_concurrency=100_000).remote()


def board_embeddings(board: Any, ticket: int) -> Any:
    """The `Embeddings` of a sample whose rows come from `board`, for its state machine inside a replica."""
    from emocaustics.tasks.longdialogue.embeddings import EmbeddingFailed, Embeddings

    async def upto(n: int | None) -> np.ndarray:
        try:
            return await board.upto.remote(ticket, n)
        except Exception as exc:  # the feed's failure (RayTaskError wraps it) or the board gone: the sample fails
            cause = getattr(exc, "cause", None) or exc
            raise EmbeddingFailed(str(cause).strip().splitlines()[-1] if str(cause).strip() else
                                  type(cause).__name__) from None

    return Embeddings(lambda: upto(None), upto)
