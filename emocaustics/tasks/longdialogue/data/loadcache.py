"""The loader's index on disk: which files make each dialogue, and every defect, so that a few dialogues load alone.

Why: `load.load_corpus` pairs annotations with dialogues from their content (`pairing.py`), so every load read,
hashed, parsed and validated all ~800 files of the published data: about 0.5-1 s before a 3-dialogue run's first
call, the largest fixed cost of a small run (issue 31). Besides the dialogues themselves, that work yields little:
for each dialogue id its chat and emo file names, and the folder's defect list. This module keeps those, keyed by
every entry of `chat/` and `emo/` (name, type, size, mtime_ns, ctime_ns, inode), the loader options and the source of
the loader's modules. On a hit the corpus's dialogues are read and validated on first access (`LazyDialogues`), each
from the first of its files (duplicates are byte-identical); any change to the folder misses, and the full load runs
and rewrites the entry.

Exactly as a full load: the same Dialogue objects, and the defects of the whole folder, files outside the selection
included -- a run has always reported the data's defects, and they do not depend on which dialogues were asked for.
A folder with a file modified less than `RACY_NS` ago is not cached: a same-size change inside the file system's
timestamp granularity would not show in the key (git's "racy" problem). A cache that cannot be read or written costs
only the time (logged at debug, never an error).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from emocaustics.core.datasource import cache_root
from emocaustics.tasks.longdialogue.data.schema import Corpus, Defect, Dialogue

log = logging.getLogger(__name__)

LOADER_VERSION = 1  # bump when what a full load yields changes in a way the modules' source below does not show
RACY_NS = 2_000_000_000  # files younger than this are not cached (see the module docstring)
MAX_AGE_S = 30 * 86400  # entries unused this long are removed when another is written
_SOURCES = ("load.py", "io.py", "schema.py", "pairing.py", "loadcache.py")
_HERE = Path(__file__).resolve().parent


@dataclass(frozen=True, slots=True)
class Probe:
    """Where the entry of one (folder, options) lives and the key it must carry to be valid now."""

    path: Path
    key: str
    newest_ns: int  # the newest mtime in the folder


@dataclass(frozen=True, slots=True)
class Hit:
    defects: list[Defect]
    n_read: int  # how many of `defects` the reading phase found (what --strict looks at)
    files: dict[int, tuple[tuple[str, ...], tuple[str, ...]]]  # id -> (chat files, emo files), ids in order


def _listing(root: Path) -> tuple[list[list], int]:
    rows: list[list] = []
    newest = 0
    for sub in ("chat", "emo"):
        with os.scandir(root / sub) as entries:
            for e in entries:
                try:
                    st = e.stat()  # follows links, as reading does
                except OSError:
                    rows.append([sub, e.name, "unstatable"])
                    continue
                rows.append([sub, e.name, stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                             st.st_ino])
                newest = max(newest, st.st_mtime_ns)
    rows.sort(key=lambda r: (r[0], r[1]))
    return rows, newest


def probe(root: Path, *, pairing: str, repair: bool, source: str) -> Probe | None:
    """The entry's path and current key; None when the folder cannot be listed (the full load then says why)."""
    try:
        rows, newest = _listing(root)
        h = hashlib.sha256()
        for name in _SOURCES:
            h.update((_HERE / name).read_bytes())
    except OSError as exc:
        log.debug("load cache: no key for %s: %s", root, exc)
        return None
    options = [str(root), pairing, repair, source]
    if repair:  # a repaired reading is json-repair's: another version may read a broken file otherwise
        from importlib.metadata import PackageNotFoundError, version

        try:
            options.append(version("json_repair"))
        except PackageNotFoundError:
            options.append(None)
    h.update(json.dumps([LOADER_VERSION, options, rows]).encode("utf-8"))
    name = hashlib.sha256(json.dumps(options).encode("utf-8")).hexdigest()[:32]
    return Probe(cache_root() / "dataset-index" / f"{name}.json", h.hexdigest(), newest)


def lookup(p: Probe | None) -> Hit | None:
    """The entry when it exists and its key is `p.key`; None for a miss, an unreadable or a corrupt entry."""
    if p is None:
        return None
    try:
        record = json.loads(p.path.read_bytes())
        if record["key"] != p.key:
            return None
        defects = [Defect(*row) for row in record["defects"]]
        files = {int(i): (tuple(c), tuple(e)) for i, c, e in record["dialogues"]}
        if any(not c for c, _ in files.values()):
            raise ValueError("a dialogue without chat file")
        return Hit(defects, int(record["n_read"]), files)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError) as exc:
        log.debug("load cache: ignoring %s: %s", p.path, exc)
        return None


def store(p: Probe | None, corpus: Corpus, n_read: int) -> None:
    """Write the entry of a full load (atomically); never raises."""
    if p is None:
        return
    if p.newest_ns > time.time_ns() - RACY_NS:
        log.debug("load cache: %s changed in the last %d s; not cached", corpus.root, RACY_NS // 10**9)
        return
    record = {"key": p.key, "root": corpus.root, "n_read": n_read,
              "defects": [[d.kind, d.file, d.message, d.record, d.field, d.line, d.column] for d in corpus.defects],
              "dialogues": [[i, list(d.chat_files), list(d.emo_files)] for i, d in corpus.dialogues.items()]}
    try:
        p.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, p.path)
        _prune(p.path.parent, keep=p.path)
    except OSError as exc:  # a read-only or full cache only costs the time
        log.debug("load cache: cannot write %s: %s", p.path, exc)


def _prune(folder: Path, keep: Path) -> None:
    """Entries of folders that are gone (test copies, old checkouts) are never read again: drop the old ones."""
    cutoff = time.time() - MAX_AGE_S
    for e in os.scandir(folder):
        try:
            if e.path != str(keep) and e.stat().st_mtime < cutoff:
                os.unlink(e.path)
        except OSError:
            pass


class LazyDialogues(Mapping[int, Dialogue]):
    """The dialogues of a cache hit: every id known, each dialogue read and validated on first access, then kept.

    A read-only mapping like the dict a full load gives (same ids, order and values); `in`, `len` and iteration read
    no file. Pickled, it becomes that dict, so that a copy never depends on the folder."""

    def __init__(self, ids: list[int], make: Callable[[int], Dialogue]) -> None:
        self._ids = {i: None for i in ids}
        self._make = make
        self._made: dict[int, Dialogue] = {}

    def __getitem__(self, did: int) -> Dialogue:
        d = self._made.get(did)
        if d is None:
            if did not in self._ids:
                raise KeyError(did)
            d = self._made[did] = self._make(did)
        return d

    def __contains__(self, did: object) -> bool:
        return did in self._ids

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __reduce__(self) -> tuple:
        return dict, (list(self.items()),)

    def __repr__(self) -> str:
        return f"LazyDialogues({len(self._ids)} ids, {len(self._made)} read)"
