"""The response cache's sqlite file (`models/cachestore.py` reads and writes it): how it is opened, written and checked.

Opening (which may create the file and switch it to WAL) is retried while another process holds it. On a network
filesystem (/proc/mounts says nfs, cifs, ceph, ...) the file uses sqlite's rollback journal instead of WAL: WAL's index
is shared memory, which processes on different machines cannot share, while the rollback journal needs only the
filesystem's locks (`journal_mode`). A file written before the size cap gains each entry's last use and size when
first opened (`_add_lru_columns`). A damaged file is one line naming it (`damaged`), found before any sample runs
(`check_file`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from emocaustics.core.errors import UsageError
from emocaustics.core.writes import failed

SCHEMA = ("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, value TEXT NOT NULL,"
          " created REAL NOT NULL, used REAL NOT NULL DEFAULT 0, size INTEGER NOT NULL DEFAULT 0)")
ROW_OVERHEAD = 64  # bytes an entry takes beyond its key, model and value (sqlite's record and index), for the cap


def connect(target: str, uri: bool) -> sqlite3.Connection:
    return sqlite3.connect(target, timeout=60.0, check_same_thread=False, isolation_level=None, uri=uri)


def open_store(path: Path, schema: str, *first: str) -> sqlite3.Connection:
    """A connection to a store's file of `schema` (the response cache's, the embeddings': models/embedstore.py), made
    when needed: the pragmas `first` (before the table exists), the journal mode, then the table."""
    db = connect(str(path), False)
    for pragma in first:
        db.execute(pragma)
    db.execute(f"PRAGMA journal_mode={journal_mode(path)}")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(schema)
    return db


def open_file(path: Path) -> sqlite3.Connection:
    """A connection to the cache file (`open_store`), made so that evicted pages can be given back, and migrated
    (`_add_lru_columns`) when needed."""
    db = open_store(path, SCHEMA, "PRAGMA auto_vacuum=INCREMENTAL")
    if not {"used", "size"} <= {row[1] for row in db.execute("PRAGMA table_info(responses)")}:
        _add_lru_columns(db, path)
    return db


@contextmanager
def immediate(db: sqlite3.Connection, path: Path) -> Iterator[sqlite3.Connection]:
    """A `BEGIN IMMEDIATE` transaction on `db`, committed, or rolled back on any failure; a failed write (a full disk)
    is `core.writes.WriteFailed` naming `path`."""
    try:
        db.execute("BEGIN IMMEDIATE")
        yield db
        db.execute("COMMIT")
    except BaseException as exc:
        if db.in_transaction:  # sqlite rolls a full disk's transaction back itself
            db.execute("ROLLBACK")
        if isinstance(exc, (OSError, sqlite3.Error)):
            raise failed(path, exc) from None
        raise


def _add_lru_columns(db: sqlite3.Connection, path: Path) -> None:
    """A cache written before the size cap: each entry's last use (its creation) and size, once (in one transaction,
    checked again inside it: another process may have just done it)."""
    with immediate(db, path):
        columns = {row[1] for row in db.execute("PRAGMA table_info(responses)")}
        for column in ("used REAL NOT NULL DEFAULT 0", "size INTEGER NOT NULL DEFAULT 0"):
            if column.split()[0] not in columns:
                db.execute(f"ALTER TABLE responses ADD COLUMN {column}")
        db.execute("UPDATE responses SET used = created, size = length(CAST(key || model || value AS BLOB)) + ? "
                   "WHERE size = 0", (ROW_OVERHEAD,))


NETWORK_FILESYSTEMS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "lustre", "gpfs", "beegfs", "9p",
                       "fuse.sshfs", "fuse.s3fs", "fuse.gcsfuse", "fuse.juicefs", "fuse.glusterfs")


def journal_mode(path: Path, mounts: str | None = None) -> str:
    """WAL on a local filesystem; DELETE (sqlite's rollback journal, which needs only the filesystem's locks) on a
    network one, where WAL's shared-memory index cannot be shared between machines. `mounts`: /proc/mounts' text."""
    if mounts is None:
        try:
            mounts = Path("/proc/mounts").read_text(encoding="utf-8")
        except OSError:  # not Linux: no way to tell, and a local disk is the common case
            return "WAL"
        path = path.resolve()  # the mount a link leads to
    where = str(path)
    best, fstype = "", ""
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) > 2 and (where == parts[1] or where.startswith(parts[1].rstrip("/") + "/")) \
                and len(parts[1]) >= len(best):  # of equals the later: a mount over a mount hides it
            best, fstype = parts[1], parts[2]
    return "DELETE" if fstype in NETWORK_FILESYSTEMS else "WAL"


CHECK_SECONDS = 2.0  # `check_file` reads at most this long: sqlite's quick_check reads about 1 GB a second
CORRUPT = ("SQLITE_CORRUPT", "SQLITE_NOTADB")  # sqlite's codes of a damaged file


def damaged(path: Path, detail: object) -> UsageError:
    """One line naming the damaged cache file and the two ways out."""
    return UsageError(f"response cache {path} is damaged ({detail}): run with --no-cache (cache: off), or move the "
                      "file away (a new one is made)")


def check_file(path: Path) -> None:
    """A damaged cache file as `damaged`'s error, before any sample runs; a file not there yet, or busy, is none.
    sqlite's quick_check reads every page, so a cache bigger than CHECK_SECONDS' reading is checked as far as it
    gets (the rest, as it is used)."""
    if not path.is_file():
        return
    deadline = time.monotonic() + CHECK_SECONDS
    db = connect(f"file:{path}?mode=ro", True)
    db.set_progress_handler(lambda: time.monotonic() > deadline, 100_000)
    try:
        found = db.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.DatabaseError as exc:  # interrupted past the deadline, busy: no damage found
        found = str(exc) if exc.sqlite_errorname in CORRUPT else "ok"
    finally:
        db.close()
    if found != "ok":
        raise damaged(path, found.replace("*** in database main ***\n", "").splitlines()[0])


def retried(open_: Callable[[], sqlite3.Connection], tries: int = 20) -> sqlite3.Connection:
    """`open_()`, again while another process holds the file (creating it, switching it to WAL: "database is
    locked" can come before the busy timeout applies)."""
    for attempt in range(tries):
        try:
            return open_()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == tries - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")
