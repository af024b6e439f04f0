"""A job as the page shows it, read from its folder: each step's command line, exit status, what it printed (its
`--json` document parsed) and its stderr lines; while it runs, the last lines it wrote; when it is done, the files it
wrote and, for `human`, the tables and summary the report shows."""

from __future__ import annotations

import csv
import json
import shlex
import time
from pathlib import Path
from typing import Any

from emocaustics.ui.jobs import Job, Jobs
from emocaustics.ui.paths import Folders

TAIL = 12
HUMAN_TABLES = {"process": ("system_scores", "system_raw_scores", "passrate", "duration", "sig_test"),
                "replicate": ("corr_zscore_r1r2", "corr_rawscore_r1r2")}
HUMAN_JSON = {"process": "summary.json", "replicate": "replication.json"}


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _parsed(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else None
    except ValueError:
        return None


def _table(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def status(job: Job, folders: Folders) -> dict[str, Any]:
    ran = {s["name"]: s for s in Jobs.step_results(job)}
    steps = []
    for name, argv in job.steps:
        out, err = _text(job.folder / f"{name}.out"), _text(job.folder / f"{name}.err")
        doc = _parsed(out)
        steps.append({"name": name, "command": "emocaustics " + shlex.join(argv),
                      "status": ran.get(name, {}).get("status"), "json": doc,
                      "out": None if doc is not None else out[-20000:],
                      "err": [line for line in err.splitlines() if line.strip()][-200:]})
    live = [s for s in steps if s["status"] is None]
    log = (live[0]["err"] + (live[0]["out"] or "").splitlines())[-TAIL:] if live else []
    doc: dict[str, Any] = {"id": job.id, "kind": job.kind, "title": job.title, "state": job.state, "pid": job.pid,
                           "elapsed": round((job.ended or time.time()) - job.started, 1), "steps": steps, "log": log,
                           "running": live[0]["name"] if live and job.state == "running" else None}
    if job.state != "running":
        doc["files"] = sorted(folders.ref(p) for p in job.folder.rglob("*") if p.is_file())
        doc |= _human(job)
    return doc


def _human(job: Job) -> dict[str, Any]:
    if not job.kind.startswith("human-"):
        return {}
    step = job.kind.removeprefix("human-")
    folder = job.folder / ("run" if step == "process" else "replication")
    found = {stem: _table(folder / f"{stem}.csv") for stem in HUMAN_TABLES[step] if (folder / f"{stem}.csv").is_file()}
    summary = _parsed(_text(folder / HUMAN_JSON[step]))
    return {"tables": found, "summary": summary}
