"""A YAML task's rows: a local JSONL / CSV / Parquet file, or a Hugging Face dataset's locally saved copy (what
`datasets`' `save_to_disk` writes: Arrow stream files, read here with pyarrow, so running a YAML task needs no
`datasets` and no hub). Each row becomes a `Sample` by the task file's field mapping; a row without a mapped field is
an error naming the file, the record and the field. The content hash of what was read (`sha256` of a local file, of
the Arrow files of a saved copy) is in the loaded info, with the revision, and so in the run's provenance.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from emocaustics.core.datasource import DataSource, cache_root
from emocaustics.core.errors import UsageError
from emocaustics.core.task import Sample
from emocaustics.core.textfile import json_lines


def sha256_of(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for p in paths:
        with p.open("rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def read_local(path: Path, fmt: str | None) -> list[dict[str, Any]]:
    """The rows of a local file, each with where it is (`__where`: its line or row) for messages."""
    kind = fmt or {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet"}.get(path.suffix)
    if kind is None:
        raise UsageError(f"{path}: cannot tell the format from the suffix {path.suffix!r}: give dataset.format "
                         "(jsonl, csv or parquet)")
    if kind == "jsonl":
        rows = []
        for n, row, problem in json_lines(path.read_text(encoding="utf-8")):
            if problem or not isinstance(row, dict):  # as AER's readers: the reader's problem, else the shape's
                shape = f"a record is a JSON object, not {type(row).__name__}"
                raise UsageError(f"{path}: line {n}: {problem or shape}")
            rows.append({"__where": f"line {n}", **row})
        return rows
    import polars as pl

    try:
        frame = pl.read_csv(path) if kind == "csv" else pl.read_parquet(path)
    except Exception as exc:  # polars' own words: a malformed CSV, a file that is not Parquet
        raise UsageError(f"{path}: cannot read it as {kind}: {exc}") from None
    return [{"__where": f"row {i + 1}", **r} for i, r in enumerate(frame.to_dicts())]


def read_saved(folder: Path, split: str | None) -> tuple[list[dict[str, Any]], list[Path]]:
    """The rows of a saved Hugging Face dataset (a `Dataset` folder, or a `DatasetDict` folder and its `split`)."""
    import pyarrow as pa

    if (folder / "dataset_dict.json").is_file():
        splits = json.loads((folder / "dataset_dict.json").read_text(encoding="utf-8")).get("splits", [])
        if split is None or split not in splits:
            raise UsageError(f"{folder}: a saved dataset with the splits {', '.join(splits)}: "
                             f"{'give dataset.split' if split is None else f'no split {split!r}'}")
        folder = folder / split
    state = folder / "state.json"
    if not state.is_file():
        raise UsageError(f"{folder}: not a saved Hugging Face dataset (no state.json or dataset_dict.json; save it "
                         "with datasets' save_to_disk)")
    files = [folder / f["filename"] for f in json.loads(state.read_text(encoding="utf-8")).get("_data_files", [])]
    rows: list[dict[str, Any]] = []
    for f in files:
        with pa.memory_map(str(f)) as source:
            table = pa.ipc.open_stream(source).read_all()
        rows.extend(table.to_pylist())
    return [{"__where": f"row {i + 1}", **r} for i, r in enumerate(rows)], files


def to_samples(rows: list[dict[str, Any]], where: str, target: str, id_col: str | None,
               inputs: list[str], shown: list[str]) -> list[Sample]:
    """The rows as samples; a mapped field missing, or null where the prompt shows it (`shown`) or as the id, is an
    error naming the file, the record and the field (a null was printed as "None" into the prompt)."""
    samples, seen = [], {}
    for i, row in enumerate(rows):
        at = row.pop("__where")
        for col in [target, *inputs, *([id_col] if id_col else [])]:
            if col not in row:
                raise UsageError(f"{where}: {at}: no field {col!r} (its fields: {', '.join(sorted(row))})")
            if row[col] is None and (col in shown or col == id_col):
                raise UsageError(f"{where}: {at}: field {col!r} is null (the {'id' if col == id_col else 'prompt'} "
                                 "needs a value: give it one, or leave the record out)")
        sid = str(row[id_col]) if id_col else str(i)
        if sid in seen:
            raise UsageError(f"{where}: {at}: id {sid!r} again (first at {seen[sid]}): ids must be unique")
        seen[sid] = at
        samples.append(Sample(sid, {c: row[c] for c in inputs}, row[target]))
    return samples


class LocalData(DataSource):
    """A YAML task's dataset as a data source: `data fetch TASK.yaml` reads and checks it (every record through the
    field mapping), copies a local file into the fetch cache and writes SOURCE.md with its sha256 (a saved Hugging
    Face copy stays where it is; SOURCE.md names it, its revision and the hash of its Arrow files)."""

    def __init__(self, name: str, check: Any, origin: Path, revision: str | None) -> None:
        super().__init__(name=f"yaml-{name}", title=f"dataset of task {name}", env_var="EMOCAUSTICS_YAML_DATA",
                         urls=(origin.resolve().as_uri(),), format="file", filename=origin.name)
        object.__setattr__(self, "check", check)
        object.__setattr__(self, "origin", origin)
        object.__setattr__(self, "revision", revision)

    def fetch(self, dest: str | Path | None = None, *, urls: tuple[str, ...] | None = None,
              timeout: float = 120.0) -> Path:
        import shutil

        info = self.check()  # type: ignore[attr-defined]  # the task's load: a bad record is named here
        dest = Path(dest) if dest is not None else self.cache_dir()
        dest.mkdir(parents=True, exist_ok=True)
        origin: Path = self.origin  # type: ignore[attr-defined]
        if origin.is_file():
            shutil.copyfile(origin, dest / origin.name)
        lines = [f"# {self.title}", "", f"- Source: {origin}", f"- sha256: {info['sha256']}",
                 f"- Samples: {info['samples']}"] + ([f"- Revision: {info['revision']}"] if info.get("revision")
                                                     else [])
        (dest / "SOURCE.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{origin}: {info['samples']} samples checked, sha256 {info['sha256']} (pin it as dataset.sha256)")
        return dest


def saved_default(hf: str, revision: str) -> Path:
    """Where a saved copy of a Hugging Face dataset is looked for when the task file names none."""
    return cache_root() / "datasets" / "hf" / f"{hf.replace('/', '__')}@{revision}"
