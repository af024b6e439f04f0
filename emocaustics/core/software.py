"""The software a run was made with: emocaustics's version and, when it runs from a git checkout, the commit (with
whether the tree had changes and where it came from). Recorded in every config's `provenance.json`, and carried by the
exports (an inspect log's `revision` and `packages`, an Every Eval Ever record's `eval_library`)."""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def version() -> str:
    """The installed emocaustics's version, else "unknown" (also `emocaustics --version`)."""
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        return installed("emocaustics")
    except PackageNotFoundError:
        return "unknown"


@functools.cache
def software() -> dict[str, Any]:
    """`{"emocaustics": VERSION, "git": {"commit", "dirty", "origin"} or None}`, asked once per process."""
    return {"emocaustics": version(), "git": _git(PACKAGE_DIR.parent)}


def _git(root: Path) -> dict[str, Any] | None:
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):  # no git here, or it hung: the record says so by its absence
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    if not (root / ".git").exists():
        return None
    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None
    status = git("status", "--porcelain", "--untracked-files=no", "--", "emocaustics")
    origin = re.sub(r"://[^/@]*@", "://", git("remote", "get-url", "origin") or "")  # no user or token of a URL
    return {"commit": commit, "dirty": bool(status) if status is not None else None, "origin": origin}
