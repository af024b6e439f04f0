"""Where a run's response cache lives, and how it is used: the job's `cache:` choice (`on`, `off`, `read-only` or a
folder; `--no-cache` is `off`), the shared folder, and the size cap.

The shared folder is `$EMOCAUSTICS_RESPONSE_CACHE`, else `$EMOCAUSTICS_CACHE/responses`, else
`~/.cache/emocaustics/responses`: every run, `eval` and job of this user answers repeated requests from it. It holds
`responses.sqlite` (models/cachestore.py) and a `batch: true` model's `batches.jsonl` (models/batchstore.py). Model
actors open the same path, so on a cluster of several machines it must be on a filesystem every node mounts at that
path (docs/exports.md, "The shared cache")."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from emocaustics.core.errors import UsageError

if TYPE_CHECKING:
    from emocaustics.models.cachestore import ResponseCache
    from emocaustics.models.embedstore import EmbeddingStore

MODES = ("on", "off", "read-only")
CAP_VARIABLE = "EMOCAUSTICS_CACHE_MAX_GB"


def shared_folder() -> Path:
    """The shared response cache's folder (see the module docstring); created on first use."""
    own = os.environ.get("EMOCAUSTICS_RESPONSE_CACHE", "").strip()
    if own:
        return Path(own).expanduser()
    root = os.environ.get("EMOCAUSTICS_CACHE", "").strip()
    return (Path(root).expanduser() if root else Path.home() / ".cache" / "emocaustics") / "responses"


def max_bytes() -> int | None:
    """`$EMOCAUSTICS_CACHE_MAX_GB` in bytes (None: no cap); a value that is not a positive number is a usage error."""
    raw = os.environ.get(CAP_VARIABLE, "").strip()
    if not raw:
        return None
    try:
        gb = float(raw)
    except ValueError:
        gb = -1.0
    if not gb > 0:
        raise UsageError(f"{CAP_VARIABLE}={raw!r}: give the cache's size cap in GB, a positive number (e.g. 20)")
    return max(1, int(gb * 1e9))


@dataclass(frozen=True)
class CacheChoice:
    """A run's response cache: its folder, and whether the run may add to it."""

    folder: Path
    read_only: bool = False

    @property
    def path(self) -> Path:
        return self.folder / "responses.sqlite"

    def describe(self) -> str:
        """For the run's log line, its dry run and its provenance: the path (never what it holds)."""
        return f"{self.path}" + (" (read-only)" if self.read_only else "")

    def record(self) -> dict[str, object]:
        return {"path": str(self.path), "mode": "read-only" if self.read_only else "on", "max_bytes": max_bytes()}

    def open(self) -> ResponseCache:
        from emocaustics.models.cachestore import ResponseCache

        return ResponseCache(self.path, read_only=self.read_only, max_bytes=max_bytes())

    def embeddings(self) -> EmbeddingStore:
        """The embeddings kept beside this cache (models/embedstore.py), used as the run uses the cache."""
        from emocaustics.models.embedstore import EmbeddingStore

        return EmbeddingStore(self.folder, read_only=self.read_only)


class CacheValueError(UsageError, ValueError):
    """A `cache:` value that is no mode and no path: a usage error (exit 2), and a ValueError in a job's validation."""


def cache_value(value: str) -> str:
    """A `cache:` value, checked: a mode (`MODES`) or a folder written as a path (with a `/`, or starting with `.` or
    `~`: `./mine`, `~/cache`, `/data/cache`), so that a mistyped mode (`readonly`) is not taken for a new folder in the
    current directory."""
    value = value.strip()
    if value in MODES or "/" in value or value.startswith((".", "~")):
        return value
    close = difflib.get_close_matches(value.lower(), MODES, n=1, cutoff=0.6)
    raise CacheValueError(f"{value!r} is not a cache mode ({', '.join(MODES)}" + (f"; did you mean {close[0]!r}?)" if
                          close else ")") + f" nor a folder: write a folder as a path (./{value}, ~/{value}, /PATH)")


def choose(value: str | None) -> CacheChoice | None:
    """A job's `cache:` value as the run's cache (None: `off`, no cache); a damaged file is a `UsageError` here,
    before any sample runs (`cachefile.check_file`)."""
    from emocaustics.models.cachefile import check_file

    value = cache_value(value or "on")
    if value == "off":
        return None
    max_bytes()  # a bad cap is a usage error before anything runs
    choice = CacheChoice(shared_folder(), read_only=value == "read-only") if value in MODES else \
        CacheChoice(Path(value).expanduser())
    check_file(choice.path)
    return choice


def as_choice(cache: CacheChoice | Path | str | None) -> CacheChoice | None:
    """What `make_llm(cache_dir=...)` takes: a choice, or a folder (the cache is used and added to)."""
    if cache is None or isinstance(cache, CacheChoice):
        return cache
    return CacheChoice(Path(cache))
