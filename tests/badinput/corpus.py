"""The bad-input corpus: cases kept as files under tests/badinput/<task>/<case>/, each a damaged copy of a small,
good input of our own (tests/badinput/<task>/_base/) driven through the command line as a user would.

A case folder holds `case.yaml` and the files that differ from the base:

    why: a submission line cut in the middle          # what a user did wrong
    argv: [score, aer, --pred, "{work}/submission.jsonl", --split, sample, --data, "{work}/data"]
    expect: {status: 2, names: ["submission.jsonl", "line 3", "'answer'"]}
    # or, for input that must be read as the base is (a BOM, CRLF line endings):
    expect: {status: 0, same_as_base: true}
    remove: [data/sample_data/docs.json]              # files of the base the case deletes
    generate:                                         # files too large to keep: prefix + unit * times + suffix
      - {path: submission.jsonl, prefix: '{"id": "q-1", "answer": "', unit: "A,", times: 3000000, suffix: ""}
    files_as_dirs: [submission.jsonl]                 # paths made folders (git keeps no empty folder)
    symlinks: {loop.yaml: loop.yaml}                  # path -> where it points (a link to itself: a loop)

`{work}` is a fresh temporary copy of the base with the case laid over it, `{out}` a folder inside it that must not
be created (in job files, `{work}` is replaced too). Files named `*.crlf` / `*.bom` get their base file's bytes with CRLF line endings / a UTF-8 BOM (the
suffix dropped), so the base stays the only copy of the content.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent


@dataclass
class Case:
    task: str
    name: str
    folder: Path
    why: str
    argv: list[str]
    expect: dict[str, Any]
    remove: list[str] = field(default_factory=list)
    generate: list[dict[str, Any]] = field(default_factory=list)
    files_as_dirs: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    symlinks: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.task}/{self.name}"


def cases(task: str | None = None) -> list[Case]:
    out = []
    for spec in sorted(ROOT.glob("*/*/case.yaml")):
        folder = spec.parent
        if task and folder.parent.name != task:
            continue
        raw = yaml.safe_load(spec.read_text(encoding="utf-8"))
        out.append(Case(folder.parent.name, folder.name, folder, raw["why"], [str(a) for a in raw["argv"]],
                        raw["expect"], raw.get("remove", []), raw.get("generate", []), raw.get("files_as_dirs", []),
                        {k: str(v) for k, v in (raw.get("env") or {}).items()},
                        {str(k): str(v) for k, v in (raw.get("symlinks") or {}).items()}))
    return out


def _with_line_endings(data: bytes, *, crlf: bool, bom: bool) -> bytes:
    if crlf:
        data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if bom and not data.startswith(b"\xef\xbb\xbf"):
        data = b"\xef\xbb\xbf" + data
    return data


def lay_out(case: Case | None, task: str, work: Path) -> Path:
    """Copy the task's base into `work`, then the case's files over it. Returns `work`."""
    shutil.copytree(ROOT / task / "_base", work, dirs_exist_ok=True)
    if case is None:
        return work
    for src in sorted(case.folder.rglob("*")):
        rel = src.relative_to(case.folder)
        if src.is_dir() or rel.as_posix() == "case.yaml":
            continue
        suffix = src.suffix
        if suffix in (".crlf", ".bom"):
            target = work / rel.with_suffix("")
            target.write_bytes(_with_line_endings(target.read_bytes(), crlf=suffix == ".crlf", bom=suffix == ".bom"))
            continue
        target = work / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    for rel in case.remove:
        target = work / rel
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    for rel in case.files_as_dirs:
        target = work / rel
        if target.exists():
            target.unlink()
        target.mkdir(parents=True)
        (target / "notes.txt").write_text("a folder where a file is expected\n", encoding="utf-8")
    for gen in case.generate:
        target = work / gen["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        text = gen.get("prefix", "") + gen["unit"] * int(gen["times"]) + gen.get("suffix", "")
        target.write_bytes(text.encode("utf-8"))
    for job in work.rglob("*.yaml"):  # job files name the copy they run on
        job.write_text(job.read_text(encoding="utf-8").replace("{work}", str(work)), encoding="utf-8")
    for rel, target in case.symlinks.items():  # last: the job files above are read and rewritten
        (work / rel).symlink_to(target)
    return work


def fill(argv: list[str], work: Path) -> list[str]:
    return [a.replace("{work}", str(work)).replace("{out}", str(work / "out")) for a in argv]


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime_ns) of everything under a folder: 'wrote nothing' is an equal snapshot."""
    return {str(p.relative_to(folder)): (p.lstat().st_size if p.is_file() else -1, p.lstat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}  # lstat: a link (a loop too) is itself
