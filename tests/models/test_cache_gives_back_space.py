"""The size cap gives the evicted entries' space back to the filesystem (`PRAGMA auto_vacuum=INCREMENTAL`): the
file shrinks after an eviction, rather than keeping its largest size with the freed pages on sqlite's free list.
(Python's sqlite3 steps a statement once, and `PRAGMA incremental_vacuum` frees one page per step.)"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from emocaustics.models.base import Completion
from emocaustics.models.cachestore import ResponseCache


def test_an_eviction_gives_the_freed_pages_back(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    cache.put_many("m", [(f"k{i}", Completion(text="x" * 2000)) for i in range(200)])
    cache.close()
    full = path.stat().st_size
    capped = ResponseCache(path, max_bytes=20_000)  # opening evicts down to the cap: about ten entries stay
    kept = capped.get_many([f"k{i}" for i in range(200)])
    capped.close()
    with sqlite3.connect(path) as db:
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
    assert 0 < len(kept) <= 10
    assert free == 0 and path.stat().st_size < full / 5
