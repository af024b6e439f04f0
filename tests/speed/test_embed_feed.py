"""Streaming embeddings (issue 18): a dialogue's calls start from its own embeddings, chunk by chunk for `rag`, and a
run through the embedding feed asks the model exactly what a run with the embeddings computed up front asks.
The embedder is the OpenAI-compatible embeddings stand-in (`tests/fakes/openai_embeddings.py`), so no model loads."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from emocaustics.models.embedders import make_embedder
import pytest

from emocaustics.tasks.longdialogue import embedfeed
from emocaustics.tasks.longdialogue.embedfeed import CHUNK, GROUP_TEXTS, EmbedFeed
from benchmarks.refdriver import extract_one
from emocaustics.tasks.longdialogue.extract.dialogue import ExtractConfig, make_item
from extract_doubles import Dialogue, SchemaLLM, solve_dialogues
from fakes.openai_embeddings import FakeEmbeddingsServer


def _dialogues(n: int, dialogues: int = 3) -> list[Dialogue]:
    return [Dialogue(d, [f"对话{d}第{i % 7}句，关于{'钱' if i % 3 else '孩子'}" for i in range(n)],
                     [str(i % 2 + 1) for i in range(n)]) for d in range(1, dialogues + 1)]


def _items(cfg: ExtractConfig, n: int, dialogues: int = 3) -> list[dict]:
    """The feed's entries (`solve.plan` makes one per sample with side texts: its id and texts)."""
    return [{"id": str(d.id), "texts": [u.sentence for u in d.utterances]} for d in _dialogues(n, dialogues)]


def _prompts(llm: SchemaLLM) -> list[str]:
    return sorted(r.messages[-1]["content"] for r in llm.requests)


@pytest.mark.parametrize("group_texts", [GROUP_TEXTS, 1], ids=["grouped", "sample-by-sample"])
def test_rag_through_the_feed_asks_what_precomputed_embeddings_ask(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   group_texts: int) -> None:
    """Grouped (the three dialogues in one encode) or each alone in chunks, the model is asked the same."""
    monkeypatch.setattr(embedfeed, "GROUP_TEXTS", group_texts)
    cfg = ExtractConfig(task="sextuple", method="rag", window=4, step=2, top_k=2, rag_threshold=0.1)
    n = CHUNK * 3 + 5  # chunks of 32, 64, 8: calls of the first go out before the last is embedded
    with FakeEmbeddingsServer() as server:
        spec = f"openai:fake-embed@{server.base_url}"

        def streamed() -> tuple[list[dict], SchemaLLM]:  # the plan's own feed, as a job runs it
            llm = SchemaLLM()
            return solve_dialogues(llm, _dialogues(n), cfg, tmp_path / "feed", embedder_spec=spec), llm

        async def upfront() -> tuple[list[dict], SchemaLLM]:
            from emocaustics.tasks.longdialogue.embeddings import pack

            embedder = make_embedder(spec)
            llm = SchemaLLM()
            rows = []
            for d in _dialogues(n):
                sents = [u.sentence for u in d.utterances]
                item = make_item(d.id, sents, [u.holder for u in d.utterances], cfg)
                item["emb"] = pack(np.asarray(await embedder.embed(sents)))
                rows.append(await extract_one(llm, item))
            return rows, llm

        rows_a, llm_a = streamed()
        feed_inputs = [r["n_inputs"] for r in server.requests]
        rows_b, llm_b = asyncio.run(upfront())
    assert all(r["ok"] for r in rows_a + rows_b), [r.get("reason") for r in rows_a]
    assert len(llm_a.requests) == 3 * n
    assert _prompts(llm_a) == _prompts(llm_b)  # same retrievals, whatever the chunking
    if group_texts == 1:  # chunk by chunk, 32, 64, 8 texts per dialogue
        assert sorted(feed_inputs) == sorted([CHUNK, 2 * CHUNK, 5] * 3)
    else:  # one encode of the 303 texts, which the OpenAI-compatible client sends 64 at a time
        assert sorted(feed_inputs) == sorted([64] * 4 + [303 - 4 * 64])


def test_upto_gives_at_least_the_rows_asked_for_before_the_rest() -> None:
    cfg = ExtractConfig(task="sextuple", method="rag")
    with FakeEmbeddingsServer() as server:
        async def go() -> tuple[int, int]:
            items = _items(cfg, CHUNK * 3, dialogues=1)
            feed = EmbedFeed(f"openai:fake-embed@{server.base_url}", items)
            feed.start()
            try:
                first = await feed.upto(items[0], 1)
                whole = await feed.get(items[0])
            finally:
                await feed.close()
            return len(first), len(whole)

        first, whole = asyncio.run(go())
    assert CHUNK <= first and whole == CHUNK * 3


def test_a_background_feed_embeds_only_the_dialogues_that_ask() -> None:
    """`window` in the driver's process: embeddings are consulted only for unnamed events, so nothing is embedded
    ahead; a dialogue that asks is embedded at once."""
    cfg = ExtractConfig(task="sextuple", method="window")
    with FakeEmbeddingsServer() as server:
        async def go() -> tuple[int, int, int]:
            items = _items(cfg, 10, dialogues=3)
            feed = EmbedFeed(f"openai:fake-embed@{server.base_url}", items, background=True)
            feed.start()
            try:
                await asyncio.sleep(0.3)
                before = len(server.requests)
                rows = await asyncio.wait_for(feed.get(items[1]), 10)
                await asyncio.sleep(0.3)
                return before, len(rows), feed.texts
            finally:
                await feed.close()

        before, rows, texts = asyncio.run(go())
    assert before == 0  # no dialogue asked: nothing embedded
    assert rows == 10 and texts == 10  # the one that asked, and only it


def test_a_background_feed_starts_no_embedder_until_a_dialogue_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    """`window` in the driver's process: a run whose answers always name known events never needs an embedding, so
    the packaged embedder's child (4-5 s of imports on a core the driver and its endpoint share) starts only when a
    dialogue first asks."""
    started: list[str] = []

    async def load(self) -> None:  # stands in for the child's start: records it, loads nothing
        started.append(self.spec)

    monkeypatch.setattr(EmbedFeed, "_load", load)
    cfg = ExtractConfig(task="sextuple", method="window")

    async def go() -> list[str]:
        feed = EmbedFeed("minilm", _items(cfg, 10, dialogues=3), background=True)
        feed.start()
        try:
            await asyncio.sleep(0.3)
            return list(started)
        finally:
            await feed.close()

    assert asyncio.run(go()) == []  # nobody asked: no child started
    ahead = EmbedFeed("minilm", _items(cfg, 10, dialogues=3))

    async def working_ahead() -> None:
        ahead.start()
        await asyncio.sleep(0.3)
        await ahead.close()

    asyncio.run(working_ahead())
    assert started == ["minilm"]  # working ahead (rag) it loads at once


def _sized_items(cfg: ExtractConfig, sizes: list[int]) -> list[dict]:
    return [{"id": str(d), "texts": [f"对话{d}第{i}句" for i in range(n)]} for d, n in enumerate(sizes, start=1)]


def test_the_feed_embeds_the_longest_dialogue_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """The longest dialogue's chain of calls sets the run's length: its rows come first, not in dialogue order."""
    monkeypatch.setattr(embedfeed, "GROUP_TEXTS", 1)  # each dialogue in its own encode
    cfg = ExtractConfig(task="sextuple", method="rag")
    with FakeEmbeddingsServer() as server:
        async def go() -> None:
            items = _sized_items(cfg, [3, 10, 6])
            feed = EmbedFeed(f"openai:fake-embed@{server.base_url}", items)
            feed.start()
            try:
                await asyncio.wait_for(asyncio.gather(*(feed.get(it) for it in items)), 10)
            finally:
                await feed.close()

        asyncio.run(go())
    assert [r["n_inputs"] for r in server.requests] == [10, 6, 3]


def test_working_ahead_the_feed_encodes_dialogues_together_longest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ahead of the calls (`rag`), dialogues go to the encoder together until a group holds GROUP_TEXTS texts, longest
    first: sorted by length across dialogues, a CPU encoder does a third less work than dialogue by dialogue."""
    monkeypatch.setattr(embedfeed, "GROUP_TEXTS", 12)
    cfg = ExtractConfig(task="sextuple", method="rag")
    with FakeEmbeddingsServer() as server:
        async def go() -> list[int]:
            items = _sized_items(cfg, [3, 10, 6, 5])
            feed = EmbedFeed(f"openai:fake-embed@{server.base_url}", items)
            feed.start()
            try:
                rows = await asyncio.wait_for(asyncio.gather(*(feed.get(it) for it in items)), 10)
            finally:
                await feed.close()
            return [len(r) for r in rows]

        rows = asyncio.run(go())
    assert rows == [3, 10, 6, 5]  # each dialogue its own rows
    assert [r["n_inputs"] for r in server.requests] == [10 + 6, 5 + 3]


def test_a_dialogue_that_asks_leads_the_next_group(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedfeed, "GROUP_TEXTS", 10)
    cfg = ExtractConfig(task="sextuple", method="rag")
    with FakeEmbeddingsServer() as server:
        async def go() -> None:
            items = _sized_items(cfg, [5, 9, 7, 2, 8])
            feed = EmbedFeed(f"openai:fake-embed@{server.base_url}", items)
            feed.start()
            try:  # while the first group (9, 8) is encoded, the 2-utterance one asks: it leads the second group
                await asyncio.wait_for(feed.get(items[3]), 10)
                await asyncio.wait_for(asyncio.gather(*(feed.get(it) for it in items)), 10)
            finally:
                await feed.close()

        asyncio.run(go())
    assert [r["n_inputs"] for r in server.requests] == [9 + 8, 2 + 7 + 5]  # not asked: 7 + 5, then 2


def test_of_the_dialogues_that_ask_the_longest_is_embedded_first() -> None:
    cfg = ExtractConfig(task="sextuple", method="window")
    with FakeEmbeddingsServer() as server:
        async def go() -> None:
            items = _sized_items(cfg, [4, 9, 7, 12])
            feed = EmbedFeed(f"openai:fake-embed@{server.base_url}", items, background=True)
            feed.start()
            try:  # three ask at once (the 12-utterance one never asks): the 9, then the 7, then the 4
                await asyncio.wait_for(asyncio.gather(*(feed.get(items[i]) for i in (0, 2, 1))), 10)
            finally:
                await feed.close()

        asyncio.run(go())
    assert [r["n_inputs"] for r in server.requests] == [9, 7, 4]


def test_a_copy_of_an_item_gets_the_original_items_embeddings() -> None:
    """The runner ships copies (`{**item, "emb_source": ...}`, a log flag set on one of them): the feed knows an item
    by the key it set on it, which a copy keeps. Keyed by `id(item)`, `get` on a copy raised KeyError (and through the
    board a copy's dialogue waited forever: a job with the eval log on once hung so)."""
    cfg = ExtractConfig(task="sextuple", method="rag")
    with FakeEmbeddingsServer() as server:
        async def go() -> tuple[list[int], int]:
            items = _items(cfg, 5, dialogues=2)
            feed = EmbedFeed(f"openai:fake-embed@{server.base_url}", items)
            feed.start()
            try:
                copy = {**items[1], "log_prompts": True}
                got = await feed.get(copy)
                mine = await feed.get(items[1])
            finally:
                await feed.close()
            return [feed.ticket(it) for it in items], int(np.array_equal(got, mine)) * len(got)

        tickets, rows = asyncio.run(go())
    assert sorted(tickets) == [0, 1] and rows == 5


def test_the_configs_of_a_job_share_one_embedder_process() -> None:
    """Each feed of a job (one per config that embeds) used to start and load its own embedder child; now the second
    finds the first's, loaded and alive after the first feed closed (issue 31: 5-10 s of CPU per config)."""
    from benchmarks.engine_bench import embedder_pids
    from emocaustics.tasks.longdialogue.embedprocess import EmbedderProcess

    async def feed_rows(texts: list[str]) -> tuple[EmbedderProcess, np.ndarray]:
        feed = EmbedFeed("minilm", [{"id": "1", "texts": texts}], threads=1)
        feed.start()
        try:
            rows = await asyncio.wait_for(feed.get(feed.entry("1")), 120)
        finally:
            await feed.close()
        assert feed._process is not None
        return feed._process, rows

    first, rows_a = asyncio.run(feed_rows(["今天很开心", "明天下雨"]))
    second, rows_b = asyncio.run(feed_rows(["今天很开心"]))
    assert second is first and first._proc.is_alive()
    assert first._proc.pid in embedder_pids()  # engine_bench charges its CPU to the embedder
    assert rows_a.shape == (2, 384) and np.allclose(rows_b[0], rows_a[0], atol=1e-6)


def test_the_shared_embedder_process_ends_cleanly_with_its_parent() -> None:
    """Kept for the next config, the child is stopped at exit by closing its pipe: killed by multiprocessing's own
    exit handler instead, it leaked a semaphore and every run ended on a resource_tracker warning."""
    import subprocess
    import sys

    code = ("import asyncio\nfrom emocaustics.tasks.longdialogue.embedfeed import EmbedFeed\n"
            "async def go():\n    f = EmbedFeed('minilm', [{'id': '1', 'texts': ['a', 'b']}], threads=1)\n"
            "    f.start()\n    rows = await f.get(f.entry('1'))\n    await f.close()\n    return rows.shape\n"
            "print(asyncio.run(go()))\n")
    out = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "(2, 384)", out.stderr[-2000:]
    assert "leaked semaphore" not in out.stderr, out.stderr[-2000:]
