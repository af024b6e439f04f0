"""Writes of a run that fail as one line (`errors.WriteFailed`, exit status 7) naming the path and the cause.

A full disk shows up as an OSError without a file name (the write, not the open, fails), as sqlite's "database or
disk is full", or as polars' "underlying IO error ... (os error 28)": `failed(path, exc)` turns each into one error
naming the path. `append_line` keeps an appended file whole: a line cut by a full disk is cut back off, so the lines
written before stay readable and a `--resume` reads the file as it was; `atomic_json` and `atomic_parquet` replace a
file whole or not at all (`_replacing`).
"""

from __future__ import annotations

import errno
import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from emocaustics.core.errors import WriteFailed

ZSTD_LEVEL = 3  # zstd's default: level 9 made a 30,000-call log 9 % smaller and took 4 times as long (1.5 s, not 0.4)
_OS_ERROR = re.compile(r"os error (\d+)")
NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # a write that may succeed once room is made


def _cause(exc: BaseException) -> tuple[str, int | None]:
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc.strerror or str(exc), exc.errno
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_FULL:  # sqlite's full disk carries no errno
        return "No space left on device", errno.ENOSPC
    if (m := _OS_ERROR.search(text)) is not None:  # polars / Rust I/O errors
        code = int(m.group(1))
        return os.strerror(code), code
    return text, None


def failed(path: str | Path, exc: BaseException) -> WriteFailed:
    """The one-line error of a write to `path` that raised `exc`."""
    if isinstance(exc, WriteFailed):
        return exc
    cause, code = _cause(exc)
    name = f" ({errno.errorcode[code]})" if code in errno.errorcode else ""
    return WriteFailed(f"cannot write {path}: {cause}{name}",
                       "once there is room" if code in NO_ROOM else "once the path can be written")


def unnamed(exc: BaseException) -> WriteFailed | None:
    """A full disk (or a read-only one) met by a write no writer named, as the one line it deserves; else None."""
    if _cause(exc)[1] not in (*NO_ROOM, errno.EROFS):
        return None
    return failed(getattr(exc, "filename", None) or "an output file", exc)


@contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """A write error inside (an OSError; sqlite's or polars' words for one) becomes `WriteFailed` naming the file it
    names, else `path`; any other error is left as it is."""
    try:
        yield
    except Exception as exc:
        if not _a_write_error(exc):
            raise
        raise failed(getattr(exc, "filename", None) or path, exc) from None


def _a_write_error(exc: BaseException) -> bool:
    """An OSError, or sqlite's or polars' words for one, not named yet."""
    return not isinstance(exc, WriteFailed) and (isinstance(exc, OSError) or _cause(exc)[1] is not None)


def append_line(path: Path, line: str) -> None:
    """Append one line (a newline is added) to `path`, whole or not at all."""
    data = (line + "\n").encode("utf-8")
    with writing(path):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            end = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:  # a short write (a nearly full disk) is continued; a failed one is cut back
                    view = view[os.write(fd, view):]
            except OSError:
                os.ftruncate(fd, end)  # freeing the cut line's blocks needs no room
                raise
        finally:
            os.close(fd)


@contextmanager
def _replacing(path: Path) -> Iterator[Path]:
    """A temporary file beside `path` to write its new content to, put in its place when the block ends: a write
    that fails (a full disk) leaves `path` as it was and raises `WriteFailed` naming it. The name is this thread's
    own: writers side by side (each running config's clock thread saves run.json) never share one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except Exception as exc:
        if not _a_write_error(exc):
            raise
        raise failed(path, exc) from None  # `path`, not the temporary file's name
    finally:
        tmp.unlink(missing_ok=True)  # gone once replaced; the file as it was stays


def atomic_json(obj: Any, path: Path) -> None:
    """`obj` as indented JSON in `path` (run.json, provenance.json), replacing it whole or not at all."""
    with _replacing(path) as tmp:
        tmp.write_text(json.dumps(obj, ensure_ascii=False, indent=1), encoding="utf-8")


def atomic_parquet(frame: Any, path: Path, merge_on: list[str] | None = None) -> None:
    """`frame` (a polars DataFrame) as `path`, zstd-compressed, replacing it whole or not at all. `merge_on`: the rows
    are unique by these columns, the rows already in `path` first (a table compacted again: the eval log's)."""
    if merge_on is not None:
        import polars as pl

        frame = pl.concat([pl.read_parquet(path), frame] if path.exists() else [frame], how="vertical_relaxed")
        frame = frame.unique(subset=merge_on, keep="first", maintain_order=True)
    with _replacing(path) as tmp:  # polars reports a full disk as a ComputeError: `_cause` reads its os error
        frame.write_parquet(tmp, compression="zstd", compression_level=ZSTD_LEVEL)
