"""The ECF 2.0 test data of SemEval-2024 Task 3: where it is (`locate`), how to get it (`fetch`), and reading it into
samples (`load`).

A sample is one conversation: `id = str(conversation_ID)`, `input = {"conversation_ID", "utterances": [{"utterance_ID",
"speaker", "text"}]}` (no emotion labels: those are gold), `target = {"emotions", "subtask1", "subtask2"}` (the
utterance labels and the gold pairs as published; a subtask whose file is not loaded is None). Data defects (the gold
span of conversation 1821 that the official token rule cannot find, ...) are reported, never dropped.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from emocaustics.core.errors import UsageError
from emocaustics.core.task import Defect, Loaded, Sample
from emocaustics.tasks.ecpe.validate import Gold, load_json, read_gold

NAME = "ecac"
ENV = "EMOCAUSTICS_ECAC_DATA"
REPO = "NUSTM/SemEval-2024_ECAC"
COMMIT = "f6054366e358a9803fcd1ab92ae9921132816eb5"
URL = f"https://codeload.github.com/{REPO}/tar.gz/{COMMIT}"
FILES = {1: "Subtask_1_test.json", 2: "Subtask_2_test.json"}
# repository path (below the tarball's top folder) -> path in the dataset folder
KEEP = {
    "data/Subtask_1_test.json": "Subtask_1_test.json",
    "data/Subtask_2_test.json": "Subtask_2_test.json",
    "CodaLab/submission/Subtask_1_pred.json": "sample_submission/Subtask_1_pred.json",
    "CodaLab/submission/Subtask_2_pred.json": "sample_submission/Subtask_2_pred.json",
    "LICENSE": "LICENSE",
}
REQUIRED = ("Subtask_1_test.json", "Subtask_2_test.json")


def cache_dir() -> Path:
    return Path(os.environ.get("EMOCAUSTICS_CACHE") or Path.home() / ".cache" / "emocaustics") / "datasets" / NAME


def _is_dataset(p: Path) -> bool:
    return any((p / f).is_file() for f in FILES.values())


def locate(data: str | Path | None = None) -> Path:
    """The data folder: `data` if given, else $EMOCAUSTICS_ECAC_DATA, else the fetch cache."""
    if data is not None:
        p = Path(data).expanduser()
        if not _is_dataset(p):
            raise UsageError(f"{p}: no {' or '.join(FILES.values())} there (is this the ECAC data folder?)")
        return p
    env = os.environ.get(ENV)
    if env:
        p = Path(env).expanduser()
        if not _is_dataset(p):
            raise UsageError(f"${ENV}={env}: no {' or '.join(FILES.values())} there")
        return p
    if _is_dataset(cache_dir()):
        return cache_dir()
    raise UsageError(f"the SemEval-2024 Task 3 data is not here: run `emocaustics ecpe fetch` to download it into "
                     f"{cache_dir()}, or set ${ENV} to a folder holding Subtask_1_test.json and Subtask_2_test.json")


def located() -> Path | None:
    """`locate(None)` when $EMOCAUSTICS_ECAC_DATA is set or the fetch cache holds the data, else None (for checks
    that can do without the gold; a bad $EMOCAUSTICS_ECAC_DATA is still an error)."""
    if not os.environ.get(ENV) and not _is_dataset(cache_dir()):
        return None
    return locate(None)


def download(url: str = URL, timeout: float = 120.0) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (fixed https URL)
            return resp.read()
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UsageError(f"cannot download {url}: {reason} (no network? set ${ENV} to a local copy of the "
                         "organisers' data folder instead)") from None


def unpack(archive: bytes, dest: Path, *, url: str = URL) -> Path:
    """Extract the test files, the sample submission and the LICENSE from the repository tarball into `dest`
    (replacing it) and write SOURCE.md."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(archive), mode="r:*")
    except tarfile.TarError as exc:
        raise UsageError(f"the archive from {url} is not a tarball: {exc}") from None
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tar, tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        staging = Path(tmp) / NAME
        found: set[str] = set()
        for member in tar.getmembers():
            parts = PurePosixPath(member.name).parts
            rel = "/".join(parts[1:])  # below <repo>-<commit>/
            if rel not in KEEP or not member.isfile():
                continue
            src = tar.extractfile(member)
            assert src is not None
            target = staging / KEEP[rel]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(src.read())
            found.add(KEEP[rel])
        missing = [f for f in REQUIRED if f not in found]
        if missing:
            raise UsageError(f"the archive from {url} has no {', '.join('data/' + m for m in missing)}")
        (staging / "SOURCE.md").write_text(
            "# SemEval-2024 Task 3 (ECF 2.0) evaluation data\n\n"
            f"- Source: {url}\n- Repository: https://github.com/{REPO}, commit {COMMIT}: `data/Subtask_*_test.json`, "
            "`CodaLab/submission/` (as `sample_submission/`), `LICENSE`\n"
            f"- Fetched: {datetime.now(timezone.utc).isoformat(timespec='seconds')}\n"
            "- License: GNU GPL v3 (LICENSE beside this note); the organisers ask for research use only. "
            "Never commit these files to another repository.\n", encoding="utf-8")
        if dest.exists():
            shutil.rmtree(dest)
        shutil.move(str(staging), dest)
    return dest


def fetch(dest: Path | None = None, *, url: str = URL) -> Path:
    dest = Path(dest) if dest is not None else cache_dir()
    return unpack(download(url), dest, url=url)


# -- samples ------------------------------------------------------------------------------------------------------
def read_subtask(root: Path, subtask: int) -> tuple[Any, Gold]:
    path = root / FILES[subtask]
    records = load_json(path)
    return records, read_gold(records, subtask, str(path))


def load(root: Path, subtasks: tuple[int, ...] = (1, 2), ids: list[int] | None = None,
         max_samples: int | None = None) -> Loaded:
    """Conversations as samples, in file order; `ids` picks conversations (unknown ids are an error)."""
    golds: dict[int, Gold] = {}
    digest = hashlib.sha256()
    for st in subtasks:
        path = root / FILES[st]
        if not path.is_file():
            raise UsageError(f"{root}: no {FILES[st]} (needed for subtask {st})")
        digest.update(path.read_bytes())
        golds[st] = read_subtask(root, st)[1]
    first = golds[subtasks[0]]
    defects = [Defect(p.kind, _where(p), p.message) for g in golds.values() for p in g.problems]
    for st, g in golds.items():
        if g is first:
            continue
        if list(g.conversations) != list(first.conversations):
            defects.append(Defect("subtask_mismatch", g.file, f"conversation ids differ from {first.file}"))
        for cid, conv in g.conversations.items():
            other = first.conversations.get(cid)
            if other is not None and (other.texts != conv.texts or other.emotions != conv.emotions):
                defects.append(Defect("subtask_mismatch", f"{g.file}: conversation {cid}",
                                      f"utterance texts or labels differ from {first.file}"))
    order = list(first.conversations)
    if ids is not None:
        unknown = [i for i in ids if i not in first.conversations]
        if unknown:
            raise UsageError(f"conversation id(s) not in the test set: {', '.join(map(str, unknown))}")
        wanted = set(ids)
        order = [c for c in order if c in wanted]
    if max_samples is not None:
        order = order[:max_samples]
    samples = [_sample(cid, golds) for cid in order]
    future = sum(1 for g in golds.values() if g.subtask == 1 for c in g.conversations.values() for p in c.pairs
                 if p[1] > p[0])
    info = {"dataset": NAME, "split": "test", "root": str(root), "sha256": digest.hexdigest()[:16],
            "subtasks": list(subtasks), "conversations": len(first.conversations),
            "future_cause_pairs_subtask1": future}
    return Loaded(samples, defects, info)


def _where(p: Any) -> str:
    where = f"{p.file}: conversation {p.conversation}"
    return where + (f", pair {p.pair}" if p.pair is not None else "")


def _sample(cid: int, golds: dict[int, Gold]) -> Sample:
    conv = next(iter(golds.values())).conversations[cid]
    utterances = [{"utterance_ID": i, "speaker": s, "text": t}
                  for i, (s, t) in enumerate(zip(conv.speakers, conv.texts), 1)]
    target = {"emotions": list(conv.emotions),
              "subtask1": golds[1].conversations[cid].raw_pairs if 1 in golds else None,
              "subtask2": golds[2].conversations[cid].raw_pairs if 2 in golds else None}
    return Sample(str(cid), {"conversation_ID": cid, "utterances": utterances}, target,
                  {"n_utterances": len(conv.texts)})
