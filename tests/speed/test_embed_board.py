"""Embeddings for dialogues inside replica actors (issue 18): every dialogue is shipped at once and awaits its own rows
on the run's board only when a step needs them. The board's rules are tested as a plain class; the hand-over from the
driver's feed to a Ray task is tested on the local Ray cluster, with the OpenAI-compatible embeddings stand-in
(`tests/fakes/openai_embeddings.py`) as the embedder."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from emocaustics.tasks.longdialogue.embedboard import EmbeddingBoard, board_embeddings, start_board
from emocaustics.tasks.longdialogue.embedfeed import CHUNK, EmbedFeed
from emocaustics.tasks.longdialogue.embeddings import EmbeddingFailed
from fakes.openai_embeddings import FakeEmbeddingsServer


def test_board_waits_for_rows_records_asks_and_fails_by_ticket() -> None:
    async def go() -> None:
        board = EmbeddingBoard()
        waiting = asyncio.ensure_future(board.upto(7, 3))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        assert await board.asked() == [7]  # the feed serves asked tickets first
        assert await board.asked() == []
        await board.post(7, 0, np.ones((2, 4)))
        await asyncio.sleep(0.01)
        assert not waiting.done()  # 2 rows of the 3 asked for
        await board.post(7, 2, np.full((2, 4), 2.0))
        first = await asyncio.wait_for(waiting, 1)
        assert first.shape == (4, 4) and first[3, 0] == 2.0  # everything posted so far, in order
        whole = asyncio.ensure_future(board.upto(7, None))
        await asyncio.sleep(0.01)
        assert not whole.done()  # the whole dialogue waits for the end mark
        await board.post(7, 4, np.full((1, 4), 3.0))
        await board.end(7, 5)
        assert (await asyncio.wait_for(whole, 1)).shape == (5, 4)
        assert (await board.upto(7, 2)).shape == (5, 4)  # once done: all rows, at once
        late = asyncio.ensure_future(board.upto(8, None))
        await asyncio.sleep(0.01)
        await board.fail(8, "embedding failed: ConnectionError: refused")
        with pytest.raises(RuntimeError, match="refused"):
            await asyncio.wait_for(late, 1)

    asyncio.run(go())


def test_board_rebuilds_order_when_calls_overtake_each_other() -> None:
    """An async actor may start a caller's later call first (an earlier one still waits for its array): the end mark
    and a later chunk arriving before an earlier chunk must not hand out a dialogue with rows missing."""
    async def go() -> None:
        board = EmbeddingBoard()
        whole = asyncio.ensure_future(board.upto(3, None))
        partial = asyncio.ensure_future(board.upto(3, 2))
        await board.end(3, 6)
        await board.post(3, 2, np.full((4, 2), 2.0))
        await asyncio.sleep(0.01)
        assert not whole.done() and not partial.done()  # rows 0-1 are still on their way
        await board.post(3, 0, np.full((2, 2), 1.0))
        rows = await asyncio.wait_for(whole, 1)
        assert rows.shape == (6, 2) and rows[:2, 0].tolist() == [1.0, 1.0] and rows[2:, 0].tolist() == [2.0] * 4
        assert (await asyncio.wait_for(partial, 1)).shape == (6, 2)
        assert (await board.upto(3, None)) is (await board.upto(3, None))  # kept as one array

    asyncio.run(go())


def test_feed_posts_to_a_board_that_a_ray_task_reads(ray_local) -> None:
    """The driver's feed embeds; a Ray task (as a replica's state machine would) reads rows of its own dialogue through
    the `Embeddings` the feed gave it to travel with the sample, and a dialogue whose embedding fails gets the reason,
    not a hang."""
    ray = ray_local

    @ray.remote(num_cpus=0)
    def replica_side(emb: Any) -> tuple[int, int]:
        async def read() -> tuple[int, int]:
            first = await emb.upto(1)
            return len(first), len(await emb.get())

        return asyncio.run(read())

    @ray.remote(num_cpus=0)
    def replica_side_error(emb: Any) -> str:
        try:
            asyncio.run(emb.get())
        except EmbeddingFailed as exc:
            return str(exc)
        return "no error"

    n = CHUNK * 2 + 3
    items = [{"id": str(d), "texts": [f"对话{d}第{i}句" for i in range(n)]} for d in (1, 2)]  # the plan's feed entries

    with FakeEmbeddingsServer() as server:
        async def go() -> tuple[list[tuple[int, int]], str]:
            feed = EmbedFeed(f"openai:fake-embed@{server.base_url}", items)
            feed.start()
            board = start_board()
            feed.attach_board(board)
            try:
                refs = [replica_side.remote(feed.embeddings(it["id"])) for it in items]
                sizes = [await r for r in refs]
                await board.fail.remote(424242, "embedding failed: RuntimeError: the embedder process ended")
                reason = await replica_side_error.remote(board_embeddings(board, 424242))
            finally:
                await feed.close()  # kills its board too
            return sizes, reason

        sizes, reason = asyncio.run(go())
    assert all(first >= 1 and whole == n for first, whole in sizes), sizes
    assert "embedder process ended" in reason
