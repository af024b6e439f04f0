"""Where the SemEval-2026 Task 12 data lives: `locate` (explicit path, env var, fetch cache) and `fetch` (the
organisers' repository tarball at a pinned commit, unpacked into the cache).

The repository holds `sample_data/`, `dev_data/`, `test_data/` (and `train_data/` in some revisions), each with
`questions.jsonl` and usually `docs.json`. The released test gold `reference.jsonl` is NOT in the repository: put it at
`<root>/reference.jsonl` (or `<root>/test_data/reference.jsonl`) by hand. No licence is stated by the publishers, so
the data is fetched for local evaluation and never committed or redistributed.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from emocaustics.core.errors import UsageError

NAME = "aer"
ENV_VAR = "EMOCAUSTICS_AER_DATA"
REPO = "sooo66/semeval2026-task12-dataset"
COMMIT = "43ee9e52ecd900f80cdbc8ed360151e069e65964"
URL = f"https://codeload.github.com/{REPO}/tar.gz/{COMMIT}"
SPLIT_DIRS = {"sample": "sample_data", "dev": "dev_data", "test": "test_data", "train": "train_data"}
FETCH_HINT = (f"fetch it with `python -m emocaustics.tasks.aer.fetch` (downloads {REPO} at {COMMIT[:12]}) or set "
              f"{ENV_VAR} to a local copy holding sample_data/, dev_data/, test_data/")


def cache_dir() -> Path:
    """The fetch cache of this dataset: `$EMOCAUSTICS_CACHE/datasets/aer` (default `~/.cache/emocaustics/...`)."""
    base = os.environ.get("EMOCAUSTICS_CACHE") or Path.home() / ".cache" / "emocaustics"
    return Path(base) / "datasets" / NAME


def is_dataset(path: Path) -> bool:
    return path.is_dir() and any((path / d / "questions.jsonl").is_file() for d in SPLIT_DIRS.values())


def locate(data: str | Path | None = None) -> Path:
    """The data root: `data` when given (it must hold at least one split), else `$EMOCAUSTICS_AER_DATA`, else the
    fetch cache; a UsageError saying how to get the data when none holds it."""
    if data is not None:
        path = Path(data).expanduser()
        if not is_dataset(path):
            raise UsageError(f"{path}: not an AER data folder (no <split>_data/questions.jsonl inside); {FETCH_HINT}")
        return path.resolve()
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        path = Path(env).expanduser()
        if not is_dataset(path):
            raise UsageError(f"{ENV_VAR}={env}: not an AER data folder (no <split>_data/questions.jsonl inside)")
        return path.resolve()
    if is_dataset(cache_dir()):
        return cache_dir().resolve()
    raise UsageError(f"no AER data found (no --data, {ENV_VAR} unset, nothing in {cache_dir()}); {FETCH_HINT}")


def download(url: str = URL, timeout: float = 120.0) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (a fixed URL or a test's file://)
            return resp.read()
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UsageError(f"cannot download {url}: {reason} (offline? set {ENV_VAR} to a local copy instead)") from None


def unpack(archive: bytes, dest: Path, *, url: str = URL) -> Path:
    """Extract the split folders (and README.md) of a GitHub tarball `<repo>-<commit>/...` into `dest`, replacing
    what was there; writes SOURCE.md. Only regular files under a known split folder are taken (no links, no paths
    outside)."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(archive), mode="r:*")
    except tarfile.TarError as exc:
        raise UsageError(f"archive from {url} is not a tarball: {exc}") from None
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tar, tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        staging = Path(tmp) / NAME
        staging.mkdir()
        splits: set[str] = set()
        for member in tar.getmembers():
            parts = PurePosixPath(member.name).parts
            if not member.isfile() or len(parts) < 2 or ".." in parts or PurePosixPath(member.name).is_absolute():
                continue
            rel = parts[1:]  # drop the `<repo>-<commit>/` folder
            if rel == ("README.md",) or (len(rel) == 2 and rel[0] in SPLIT_DIRS.values()):
                target = staging.joinpath(*rel)
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tar.extractfile(member)
                assert src is not None
                target.write_bytes(src.read())
                if len(rel) == 2:
                    splits.add(rel[0])
        if not any((staging / d / "questions.jsonl").is_file() for d in SPLIT_DIRS.values()):
            raise UsageError(f"archive from {url} has no <split>_data/questions.jsonl")
        (staging / "SOURCE.md").write_text(
            f"# SemEval-2026 Task 12 (AER) data\n\n- Source: {url}\n- Repository: https://github.com/{REPO}, commit "
            f"{COMMIT}\n- Fetched: {datetime.now(timezone.utc).isoformat(timespec='seconds')}\n- Splits: "
            f"{', '.join(sorted(splits))}\n- Licence: none stated by the publishers; local evaluation only, do not "
            "redistribute.\n- Test gold: reference.jsonl is not in the repository; put it beside this file.\n",
            encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest)
        shutil.move(str(staging), dest)
    return dest


def fetch(dest: Path | str | None = None, *, url: str = URL) -> Path:
    """Download the organisers' repository at the pinned commit and unpack it into `dest` (default: the cache)."""
    return unpack(download(url), Path(dest) if dest is not None else cache_dir(), url=url)


if __name__ == "__main__":  # python -m emocaustics.tasks.aer.fetch [DEST]
    try:
        print(fetch(sys.argv[1] if len(sys.argv) > 1 else None))
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
