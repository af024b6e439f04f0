"""Where a task's published data comes from and how it reaches this machine: declared once per source by the task,
located, fetched, verified and unpacked here.

A task lists its sources in `Task.data_sources`; `emocaustics data fetch TASK` fetches them and the task's loader
calls `source.locate(dataset.data)`. `locate` takes the first of: an explicit path (`--data`, a job's `dataset.data`),
the source's environment variable, the fetch cache `$EMOCAUSTICS_CACHE/datasets/<name>` (default
`~/.cache/emocaustics`). `fetch` streams the first URL that answers (https, or file:// for mirrors and tests) into a
temporary file, checks its sha256 when one is declared, unpacks the files the source keeps into a staging folder,
checks that what must be there is, writes SOURCE.md and only then replaces the destination: a failed fetch leaves
nothing behind. Every error is one line naming the source, the URL or file and, for a checksum, both hashes.
"""

from __future__ import annotations

import fnmatch
import io
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import IO, Literal, cast

from emocaustics.core.errors import UsageError


class DataSourceError(UsageError):
    """The data is not where it was looked for, or a fetch failed (exit status 2, nothing written)."""


class DataNotFound(DataSourceError):
    """No copy of the data: the explicit path, the environment variable and the cache named in the message."""


class DownloadFailed(DataSourceError):
    """A URL did not answer (offline, refused, 404): the URL and the reason."""


class ChecksumMismatch(DataSourceError):
    """The bytes downloaded are not the ones declared: the URL, the expected and the actual sha256."""

    def __init__(self, url: str, expected: str, actual: str) -> None:
        self.url, self.expected, self.actual = url, expected, actual
        super().__init__(f"{url}: sha256 mismatch: expected {expected}, got {actual} (a changed or damaged "
                         "download; nothing was unpacked)")


class BadArchive(DataSourceError):
    """The download is not an archive of the declared format, or lacks a file the data needs."""


def cache_root() -> Path:
    """`$EMOCAUSTICS_CACHE`, else `~/.cache/emocaustics`: response caches, models and fetched data live under it."""
    return Path(os.environ.get("EMOCAUSTICS_CACHE") or Path.home() / ".cache" / "emocaustics")


@dataclass(frozen=True)
class DataSource:
    name: str  # the cache folder `$EMOCAUSTICS_CACHE/datasets/<name>`, and a name `data fetch` accepts
    title: str  # what it is, for SOURCE.md and messages
    env_var: str  # a local copy the user points at
    urls: tuple[str, ...]  # tried in order: the publisher's, then mirrors
    # of the downloaded bytes; None where the publisher's archive is not byte-stable (GitHub's generated tarballs,
    # identified by the pinned commit in the URL instead)
    sha256: str | None = None
    format: Literal["tar", "zip", "file"] = "tar"  # tar: any compression tarfile reads; file: saved as `filename`
    filename: str | None = None  # format "file": the name the download is saved under
    strip_top: bool = True  # the archive holds one top folder (GitHub's `<repo>-<commit>/`): paths start below it
    # archive path -> dataset path; a key ending in "/" keeps every file below that folder under the value ("" = the
    # root); None keeps every file
    keep: Mapping[str, str] | None = None
    required: tuple[str, ...] = ()  # archive paths (fnmatch patterns), each must be among the files kept
    marks: tuple[str, ...] = ()  # globs a folder must hold to be this data (`locate`); () = any existing path
    marks_any: bool = False  # one of the marks is enough (e.g. one subtask's file)
    what: str = "data folder"  # the folder in words: "AER data folder"
    needs: str = ""  # the marks in words: "<split>_data/questions.jsonl"
    notes: tuple[str, ...] = field(default=())  # SOURCE.md lines: licence, what the archive lacks
    fetch_as: str = ""  # the name messages give `data fetch` (the task's, as the docs do); default `name`

    # -- where it is --------------------------------------------------------------------------------------------
    def cache_dir(self) -> Path:
        return cache_root() / "datasets" / self.name

    def hint(self) -> str:
        return (f"fetch it with `emocaustics data fetch {self.fetch_as or self.name}`, or set {self.env_var} to a "
                "local copy")

    def holds(self, path: Path) -> bool:
        """Is `path` a copy of this data (it exists and holds the marks)?"""
        if not path.exists():
            return False
        if not self.marks:
            return True
        found = [path.is_dir() and any(path.glob(m)) for m in self.marks]
        return any(found) if self.marks_any else all(found)

    def _checked(self, path: Path, origin: str) -> Path:
        if not path.exists():
            raise DataNotFound(f"{origin}: no such {self.what}; {self.hint()}")
        if not self.holds(path):
            raise DataNotFound(f"{origin}: not the {self.what}: no {self.needs or ' or '.join(self.marks)} in it; "
                               f"{self.hint()}")
        return path

    def locate(self, data: str | Path | None = None) -> Path:
        """The data: `data` when given, else `$<env_var>`, else the fetch cache; `DataNotFound` naming where it
        looked and how to get the data."""
        if data is not None and str(data) != "":
            return self._checked(Path(data).expanduser(), str(data))
        env = os.environ.get(self.env_var, "").strip()
        if env:
            return self._checked(Path(env).expanduser(), f"{self.env_var}={env}")
        if self.holds(self.cache_dir()):
            return self.cache_dir()
        # the path is given as `--data` (score verbs), `-D data=PATH` (eval) or `dataset.data` (a job): name all three
        raise DataNotFound(f"no {self.what} found: give its path (--data, -D data=PATH under eval, or dataset.data in "
                           f"a job), set {self.env_var}, or fetch it with `emocaustics data fetch "
                           f"{self.fetch_as or self.name}` (looked in {self.cache_dir()})")

    def located(self) -> Path | None:
        """`locate(None)`, or None when neither the environment variable nor the cache names a copy (for checks
        that can do without the data; a bad environment variable is still an error)."""
        if not os.environ.get(self.env_var, "").strip() and not self.holds(self.cache_dir()):
            return None
        return self.locate(None)

    # -- getting it ---------------------------------------------------------------------------------------------
    def fetch(self, dest: str | Path | None = None, *, urls: tuple[str, ...] | None = None,
              timeout: float = 120.0) -> Path:
        """Download (the first of `urls` that answers, default the declared ones), verify and unpack into `dest`
        (default: the cache), replacing what was there. Returns the folder."""
        dest = Path(dest) if dest is not None else self.cache_dir()
        dest.parent.mkdir(parents=True, exist_ok=True)
        errors: list[DataSourceError] = []
        with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{self.name}-fetch-") as tmp:
            for url in urls or self.urls:
                try:
                    archive = self.download(url, Path(tmp) / "download", timeout=timeout)
                except (DownloadFailed, ChecksumMismatch) as exc:
                    errors.append(exc)
                    continue
                return self.unpack(archive, dest, url=url)
        if len(errors) == 1:
            raise errors[0]
        raise DownloadFailed(f"no URL of {self.title} gave the data: " + "; ".join(map(str, errors)))

    def download(self, url: str, to: Path, *, timeout: float = 120.0) -> Path:
        """Stream `url` into the file `to`, hashing as it goes; `ChecksumMismatch` when a sha256 is declared and
        differs."""
        import hashlib
        import urllib.error
        import urllib.request  # here, not at the top: every task module imports this one, few commands fetch

        digest = hashlib.sha256()
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp, to.open("wb") as out:  # noqa: S310
                while chunk := resp.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
        except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise DownloadFailed(f"cannot download {url}: {reason} (offline? set {self.env_var} to a local copy "
                                 "instead)") from None
        if self.sha256 is not None and digest.hexdigest() != self.sha256.lower():
            raise ChecksumMismatch(url, self.sha256.lower(), digest.hexdigest())
        return to

    def unpack(self, archive: Path | bytes, dest: str | Path, *, url: str | None = None) -> Path:
        """The kept files of `archive` (a file, or its bytes) into `dest`, replacing it, with SOURCE.md. Only
        regular files below the archive's root are taken: no links, no absolute paths, no `..`."""
        import tarfile
        import zipfile
        import zlib

        url = url or self.urls[0]
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{self.name}-unpack-") as tmp:
            staging = Path(tmp) / self.name
            staging.mkdir()
            kept: list[str] = []
            try:
                for rel, read in self._members(archive, url):
                    target = self._target(rel)
                    if target is None:
                        continue
                    path = staging.joinpath(*PurePosixPath(target).parts)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    with read() as src, path.open("wb") as out:
                        shutil.copyfileobj(src, out)
                    kept.append(rel)
            except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error) as exc:  # truncated or damaged
                raise BadArchive(f"the archive from {url} is damaged: {exc}; nothing was written") from None
            missing = [p for p in self.required if not any(fnmatch.fnmatchcase(k, p) for k in kept)]
            if missing:
                raise BadArchive(f"the archive from {url} has no {', '.join(missing)} (the {self.what} needs it); "
                                 "nothing was written")
            (staging / "SOURCE.md").write_text(self._note(url, staging), encoding="utf-8")
            if dest.exists():
                shutil.rmtree(dest) if dest.is_dir() else dest.unlink()
            shutil.move(str(staging), dest)
        return dest

    def _target(self, rel: str) -> str | None:
        """Where an archive path goes in the dataset folder, or None when it is not kept."""
        if self.keep is None:
            return rel
        for key, value in self.keep.items():
            if key.endswith("/") and rel.startswith(key) and len(rel) > len(key):
                return value + rel[len(key):]
            if rel == key:
                return value
        return None

    def _members(self, archive: Path | bytes, url: str) -> Iterator[tuple[str, Callable[[], IO[bytes]]]]:
        """(path below the root, opener) of each regular file of the archive, safe paths only."""
        import tarfile
        import zipfile

        if self.format == "file":
            name = self.filename or PurePosixPath(url.split("?")[0]).name
            yield name, (lambda: io.BytesIO(archive)) if isinstance(archive, bytes) else (lambda: archive.open("rb"))
            return
        source = io.BytesIO(archive) if isinstance(archive, bytes) else archive
        if self.format == "zip":
            try:
                zf = zipfile.ZipFile(source)
            except (zipfile.BadZipFile, OSError) as exc:
                raise BadArchive(f"the archive from {url} is not a zip file: {exc}") from None
            with zf:
                for info in zf.infolist():
                    if not info.is_dir() and (rel := self._safe(info.filename)) is not None:
                        yield rel, (lambda info=info: zf.open(info))
            return
        try:
            tar = tarfile.open(fileobj=source, mode="r:*") if isinstance(source, io.BytesIO) else \
                tarfile.open(source, mode="r:*")
        except (tarfile.TarError, OSError) as exc:
            raise BadArchive(f"the archive from {url} is not a tarball: {exc}") from None
        with tar:
            for member in tar:
                if member.isfile() and (rel := self._safe(member.name)) is not None:
                    # tarfile gives a reader for every regular file (None only for other members)
                    yield rel, (lambda member=member: cast(IO[bytes], tar.extractfile(member)))

    def _safe(self, name: str) -> str | None:
        path = PurePosixPath(name)
        parts = path.parts[1:] if self.strip_top else path.parts
        if path.is_absolute() or ".." in path.parts or not parts:
            return None
        return "/".join(parts)

    def _note(self, url: str, staging: Path) -> str:
        holds = ", ".join(sorted(p.name + ("/" if p.is_dir() else "") for p in staging.iterdir()))
        lines = [f"# {self.title}", "", f"- Source: {url}",
                 f"- Fetched: {datetime.now(timezone.utc).isoformat(timespec='seconds')}"]
        if self.sha256:
            lines.append(f"- sha256 of the download: {self.sha256}")
        lines += [f"- Holds: {holds}", *(f"- {n}" for n in self.notes)]
        return "\n".join(lines) + "\n"
