"""`emocaustics data fetch`: download the published `datasets/` folder of EmoCaustics into the cache."""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from emocaustics.core.errors import UsageError

REPO = "zRzRzRzRzRzRzR/EmoCaustics"
COMMIT = "0f9ba5e6f1c2b87be216d9098cc9aa2c8b09694d"
URL = f"https://codeload.github.com/{REPO}/tar.gz/{COMMIT}"
KEEP = ("chat", "emo")  # what a dataset folder needs; LICENSE travels with it


def download(url: str = URL, timeout: float = 60.0) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (fixed https URL)
            return resp.read()
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UsageError(f"cannot download {url}: {reason} (no network? set EMOCAUSTICS_DATA to a local copy "
                         "with chat/ and emo/ instead)") from None


def unpack(archive: bytes, dest: Path, *, url: str = URL) -> Path:
    """Extract `<top>/datasets/{chat,emo}` and the repo LICENSE from a GitHub tarball into `dest`; write SOURCE.md."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(archive), mode="r:*")
    except tarfile.TarError as exc:
        raise UsageError(f"downloaded archive from {url} is not a tarball: {exc}") from None
    with tar, tempfile.TemporaryDirectory(dir=dest.parent if dest.parent.exists() else None) as tmp:
        staging = Path(tmp) / "datasets"
        found: set[str] = set()
        for member in tar.getmembers():
            parts = PurePosixPath(member.name).parts
            # <repo>-<commit>/datasets/<chat|emo>/<file>, or the top-level LICENSE
            if len(parts) == 2 and parts[1] == "LICENSE" and member.isfile():
                rel = PurePosixPath("LICENSE")
            elif len(parts) == 4 and parts[1] == "datasets" and parts[2] in KEEP and member.isfile():
                rel = PurePosixPath(*parts[2:])
                found.add(parts[2])
            else:
                continue
            if ".." in rel.parts:
                continue
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(member)
            assert src is not None
            target.write_bytes(src.read())
        missing = [k for k in KEEP if k not in found]
        if missing:
            raise UsageError(f"archive from {url} has no datasets/{'/, datasets/'.join(missing)}/ folder")
        (staging / "SOURCE.md").write_text(
            f"# EmoCaustics dataset\n\n- Source: {url}\n- Repository: https://github.com/{REPO}, folder `datasets/`, "
            f"commit {COMMIT}\n- Fetched: {datetime.now(timezone.utc).isoformat(timespec='seconds')}\n"
            "- License: Apache-2.0 (LICENSE beside this note); keep both with the data.\n", encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), dest)
    return dest


def fetch(dest: Path | None = None, *, url: str = URL) -> Path:
    from emocaustics.tasks.emocaustics.data.load import default_fetch_dir

    dest = Path(dest) if dest is not None else default_fetch_dir()
    return unpack(download(url), dest, url=url)
