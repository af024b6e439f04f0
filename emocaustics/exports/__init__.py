"""A finished run in the formats other tools read (`emocaustics export RUN_DIR --format inspect|eee`, `ec.export`).

- `source`       the run folder read through the run's own readers, one record per config (nothing parsed twice)
- `names`        what both formats name alike: the model (from its spec), structured values as text
- `inspect_log`  each config as an inspect_ai eval log (JSON log format, version 2)
- `eee`          each config as Every Eval Ever records: an aggregate record and its instance-level records

What a format has no place for is listed in docs/exports.md.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from emocaustics.core.errors import UsageError

FORMATS = ("inspect", "eee")


def export_run(run_dir: str | Path, format: str, out: str | Path | None = None) -> list[Path]:  # noqa: A002
    """Write every config of the run folder `run_dir` in `format` under `out` (default `RUN_DIR/export/FORMAT`);
    returns the files written (inspect: one log per config; eee: per config its aggregate record, then its
    instance-level records)."""
    from emocaustics.core.writes import writing
    from emocaustics.exports.source import read_run

    if format not in FORMATS:
        raise UsageError(f"--format {format}: one of {', '.join(FORMATS)}")
    run = read_run(run_dir)
    folder = Path(out) if out is not None else run.dir / "export" / format
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--out {folder}: a file, not a folder")
    written: list[Path] = []

    def write(path: Path, data: str) -> None:
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(data, encoding="utf-8")
        written.append(path)

    for cfg in run.configs:
        if format == "inspect":
            from emocaustics.exports.inspect_log import file_name, inspect_log

            log = inspect_log(run, cfg)
            write(folder / file_name(cfg, log), json.dumps(log, ensure_ascii=False, allow_nan=False))
            continue
        from emocaustics.exports.eee import records

        name, aggregate, instances = records(run, cfg)
        lines = "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in instances)
        aggregate["detailed_evaluation_results"]["checksum"] = hashlib.sha256(lines.encode("utf-8")).hexdigest()
        write(folder / name, json.dumps(aggregate, ensure_ascii=False, indent=1, allow_nan=False))
        write(folder / aggregate["detailed_evaluation_results"]["file_path"], lines)
    return written
