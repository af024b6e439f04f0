"""Embeddings kept across runs: each (embedder identity, text) pair's L2-normalised float32 vector, so that a second
run embeds none of the texts a first one did (AER `context: retrieve` embeds every topic's documents: minutes on a
loaded CPU machine, then nothing the next time).

The key is a hash of the embedder's `identity` (a local model's name and its weights' fingerprint, an endpoint's model
and URL: models/embedders.py) and the text, so other weights or another text are embedded afresh. The store is
`embeddings.sqlite` beside the run's response cache and used as the run uses that (`CacheChoice.embeddings()`: the
shared folder or the job's own; read-only keeps nothing new; `--no-cache` has no store at all), opened the way the
response cache's file is (`models/cachefile.open_store`: WAL, or the rollback journal on a network filesystem, a busy
timeout), so that two runs at once read and write it: each write is one `BEGIN IMMEDIATE` transaction, and the first
vector stored for a key stays. A damaged file is one line naming it (`UsageError`), never read past.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from emocaustics.core.errors import UsageError
from emocaustics.core.progress import Progress
from emocaustics.core.writes import failed
from emocaustics.models.cachefile import CORRUPT, connect, open_store, retried
from emocaustics.models.embedders import normalise_rows

SCHEMA = "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)"
FILE_NAME = "embeddings.sqlite"
EMBED_BATCH = 256  # texts per embedder call (`embed_kept`): the progress line moves between calls


def identity_of(embedder: Any) -> str:
    """What an embedder's vectors are kept under: its `identity`, else its `name`, else its class."""
    return str(getattr(embedder, "identity", None) or getattr(embedder, "name", None) or type(embedder).__name__)


def _key(identity: str, text: str) -> str:
    return hashlib.sha256(f"{identity}\0{text}".encode()).hexdigest()


class EmbeddingStore:
    """The shared cache folder's store file; `get_many` and `put_many` by identity and text."""

    def __init__(self, folder: Path, read_only: bool = False) -> None:
        self.path = path = folder / FILE_NAME
        self.read_only = read_only
        try:
            if read_only:  # reads what is there (nothing when there is no file yet), creates and writes nothing
                self._db = connect(f"file:{path}?mode=ro", True) if path.is_file() else connect(":memory:", False)
                self._db.execute(SCHEMA)
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = retried(lambda: open_store(path, SCHEMA))
        except (OSError, sqlite3.Error) as exc:
            raise self._error(exc) from None

    def _error(self, exc: BaseException) -> Exception:
        if getattr(exc, "sqlite_errorname", "") in CORRUPT or isinstance(exc, ValueError):
            return UsageError(f"embedding cache {self.path} is damaged ({exc}): move the file away (a new one is made)")
        return failed(self.path, exc)

    def get_many(self, identity: str, texts: list[str]) -> dict[int, np.ndarray]:
        """Index in `texts` -> the vector kept for it (texts never embedded under `identity` are absent)."""
        keys = [_key(identity, t) for t in texts]
        found: dict[str, np.ndarray] = {}
        try:
            for at in range(0, len(keys), 500):  # sqlite's bound-parameter limit
                chunk = keys[at:at + 500]
                rows = self._db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(chunk))})",
                                        chunk).fetchall()
                for key, blob in rows:
                    if len(blob) % 4 or not blob:
                        raise ValueError(f"entry {key} holds {len(blob)} bytes, not float32 values")
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        except (sqlite3.Error, ValueError) as exc:
            raise self._error(exc) from None
        return {i: found[k] for i, k in enumerate(keys) if k in found}

    def put_many(self, identity: str, texts: list[str], vectors: np.ndarray) -> None:
        if self.read_only:
            return
        rows = [(_key(identity, t), np.ascontiguousarray(v, dtype=np.float32).tobytes()) for t, v in zip(texts, vectors)]
        try:
            self._db.execute("BEGIN IMMEDIATE")  # one transaction: another run's waits (the busy timeout)
            self._db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)", rows)
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:  # a full disk names the file; a damaged one is said so
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise self._error(exc) from None

    def close(self) -> None:
        self._db.close()


async def embed_kept(embedder: Any, store: EmbeddingStore | None, texts: list[str], stage: str | None = None
                     ) -> np.ndarray:
    """The vectors of `texts`: those the store holds for this embedder, the rest embedded EMBED_BATCH at a time (with
    a progress line named `stage`, when given: minutes on a loaded machine, before any question is asked) and kept."""
    identity = identity_of(embedder)
    kept = store.get_many(identity, texts) if store is not None else {}
    todo = [i for i in range(len(texts)) if i not in kept]
    progress = Progress(stage, len(todo)) if stage and todo else None
    if progress is not None:  # said at once: the embedder's load and first batch took 96 s on a loaded machine
        progress.update(0)
    for at in range(0, len(todo), EMBED_BATCH):
        batch = [texts[i] for i in todo[at:at + EMBED_BATCH]]
        vecs = normalise_rows(np.asarray(await embedder.embed(batch), dtype=np.float32))
        if vecs.shape[0] != len(batch):
            raise RuntimeError(f"embedder returned {vecs.shape[0]} vectors for {len(batch)} texts")
        if store is not None:
            store.put_many(identity, batch, vecs)
        kept.update(zip(todo[at:at + EMBED_BATCH], vecs))
        if progress is not None:
            progress.update(len(batch))
    if progress is not None:  # on a terminal: the live line's newline
        progress.close()
    return np.stack([kept[i] for i in range(len(texts))]) if texts else np.zeros((0, 1), np.float32)
