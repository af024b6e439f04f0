"""The shared response cache where a local engine's samples are solved inside its Ray actor (the cache is opened
there, from the path the driver hands it): a second `eval` asks the engine nothing, a `read-only` one asks what is
missing and adds nothing, `cache="off"` asks again. The session's smoke engine (real vLLM CPU) on AER."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from pathlib import Path

import pytest

import emocaustics as ec
from tasks.aer.aer_fixtures import standard_dataset

pytestmark = [pytest.mark.engine, pytest.mark.slow]


def _calls(pool) -> int:
    return int(asyncio.run(pool.stats())["calls"])


def _entries() -> int:
    with sqlite3.connect(Path(os.environ["EMOCAUSTICS_RESPONSE_CACHE"]) / "responses.sqlite") as db:
        return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


def test_the_engine_answers_a_repeated_eval_from_the_shared_cache(smoke_pool, tmp_path: Path) -> None:
    data = standard_dataset(tmp_path / "aer")

    def run(name: str, limit: int, cache: str = "on") -> tuple[int, ec.Run]:
        before = _calls(smoke_pool)
        result = ec.eval("aer", model="smoke", limit=limit, options={"context": "none"}, dataset={"data": str(data)},
                         out=tmp_path / name, cache=cache)
        return _calls(smoke_pool) - before, result

    asked, first = run("first", 3)
    assert asked > 0 and first.scores["llm_calls"].sum() == asked
    entries = _entries()
    assert entries == asked
    again, second = run("second", 3)
    assert again == 0  # every answer from the cache, opened inside the engine's actor
    assert second.scores["llm_calls"].sum() == 0 and second.scores["cache_hits"].sum() == asked
    assert second.scores["cost_usd"].sum() == 0.0
    more, read_only = run("read-only", 5, "read-only")  # two questions more: asked, and not added
    assert 0 < more < asked and read_only.scores["cache_hits"].sum() == asked
    assert _entries() == entries
    fresh, off = run("off", 3, "off")
    assert fresh == asked and off.scores["cache_hits"].sum() == 0
