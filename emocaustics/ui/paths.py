"""The two folders of a workbench: `root`, the only one it reads from (paths typed on the page are relative to it), and
`out`, the only one it writes to (uploads, job folders). A path that leaves `root` (`..`, an absolute path, a symlink
to somewhere else, or a folder holding one: a job reads through it) is refused with a message that says which and why;
so is an upload name that is not a plain name, or one too long for the disk."""

from __future__ import annotations

import itertools
import os
import re
import threading
from pathlib import Path, PurePosixPath

from emocaustics.core.errors import UsageError

OUT = "out:"  # how the page names a path under the output folder: out:uploads/0001/submission.jsonl


class Refused(UsageError):
    """A path the workbench will not read or write; the page shows the message as it is."""


class Folders:
    def __init__(self, root: Path, out: Path) -> None:
        self.root = root.resolve()
        out.mkdir(parents=True, exist_ok=True)
        self.out = out.resolve()
        self._n = itertools.count(1)
        self._lock = threading.Lock()

    def next_folder(self, kind: str) -> Path:
        """A new numbered folder under `out/<kind>/` (uploads, jobs)."""
        with self._lock:
            while True:
                folder = self.out / kind / f"{next(self._n):04d}"
                if not folder.exists():
                    folder.mkdir(parents=True)
                    return folder

    def resolve(self, typed: str, what: str = "path") -> Path:
        """The existing file or folder that `typed` names: relative to root, or `out:...` relative to the output
        folder (an upload, a job's output); Refused when it leaves that folder."""
        if typed.startswith(OUT):
            return _inside(self.out, typed[len(OUT):], what, f"the output folder ({self.out})")
        return _inside(self.root, typed, what, f"the folder the workbench was started with ({self.root})")

    def ref(self, path: Path) -> str:
        """How the page names a path under the output folder."""
        return OUT + path.relative_to(self.out).as_posix()

    def save_upload(self, folder: Path, name: str, body: bytes) -> Path:
        if not re.fullmatch(r"[^/\\\x00]+", name or "") or name in (".", ".."):
            raise Refused(f"upload name {name!r}: not a plain file name")
        if len(name.encode("utf-8")) > 255:  # the longest name a file system takes
            raise Refused(f"upload name {name[:40]!r}...: too long ({len(name)} characters); rename the file")
        target = folder / name
        target.write_bytes(body)
        return target


def _inside(base: Path, typed: str, what: str, where: str) -> Path:
    text = (typed or "").strip()
    if not text:
        raise Refused(f"{what}: empty; give a path relative to {where}")
    pure = PurePosixPath(text.replace("\\", "/"))
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", text):
        raise Refused(f"{what} {text!r}: an absolute path; paths are refused outside it: give one relative to "
                      f"{where}")
    if ".." in pure.parts:
        raise Refused(f"{what} {text!r}: '..' leaves {where}; paths are refused outside it")
    path = base.joinpath(*pure.parts)
    resolved = path.resolve()
    if not resolved.is_relative_to(base):
        raise Refused(f"{what} {text!r}: a symbolic link to {resolved}, outside {where}; paths are refused outside it")
    if not resolved.exists():
        raise Refused(f"{what} {text!r}: no such file or folder in {where}")
    seen: set[str] = set()  # folders walked (a link back up would loop)
    for folder, subs, files in os.walk(resolved, followlinks=True):  # what a job reads: its links stay inside too
        if os.path.realpath(folder) in seen:
            subs.clear()
            continue
        seen.add(os.path.realpath(folder))
        for name in subs + files:
            inner = Path(folder, name)
            if inner.is_symlink() and not inner.resolve().is_relative_to(base):
                raise Refused(f"{what} {text!r}: {inner.relative_to(base)} is a symbolic link to "
                              f"{inner.resolve()}, outside {where}; paths are refused outside it")
    return resolved
