"""Provenance of a prediction folder: what the predictions were made from, so they are never scored against other data.

`provenance.json` beside the predictions records the task, the dataset options and a content hash of the selected
samples, every sample id with its fingerprint (`Task.fingerprint`: a hash of what the solver saw) and its gold's
(`gold`), the model, the method and options, and the prompt version. `check` compares it with the ground truth a scorer was given and names
the first samples that do not match (another subset, another dataset, a renumbered file).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from emocaustics.core.content import content_hash
from emocaustics.core.errors import ProvenanceMismatch, UsageError
from emocaustics.core.redact import redacted
from emocaustics.core.software import software
from emocaustics.core.writes import atomic_json

FILE = "provenance.json"
VERSION = 1


def record(task: Any, loaded: Any, *, dataset: dict[str, Any], options: Any, model: str | None,
           identity: str | None = None) -> dict[str, Any]:
    fingerprints = {s.id: task.data.fingerprint(s) for s in loaded.samples}
    return {
        "version": VERSION,
        "task": task.name,
        "dataset": dataset,
        "dataset_info": {k: v for k, v in (loaded.info or {}).items() if isinstance(v, (str, int, float, bool))},
        # one hash of the selected samples' ids and contents (order-independent)
        "dataset_hash": content_hash(sorted(fingerprints.items())),
        "samples": fingerprints,
        # each sample's gold apart (`compare` pairs by input and gold: a corrected answer is no model difference)
        "gold": {s.id: content_hash(s.target) for s in loaded.samples},
        # a caller may hand the spec as the user wrote it: a password in its URL or a key in its query must not
        # reach the file
        "model": None if model is None else redacted(model),
        "model_identity": None if identity is None else redacted(identity),  # the cache's: weights by fingerprint
        "method": options.method,
        "options": options.model_dump(mode="json"),
        "prompts_version": task.prompts_version,
        "software": software(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def write(folder: Path, rec: dict[str, Any]) -> None:
    """Write (or refresh) `provenance.json`; atomically, so a killed run never leaves half a record."""
    folder.mkdir(parents=True, exist_ok=True)
    atomic_json(rec, folder / FILE)


def read(folder: str | Path) -> dict[str, Any] | None:
    path = Path(folder) / FILE
    if not path.is_file():
        return None
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc}); pass --ignore-provenance to score without it") from None
    if not isinstance(rec, dict) or not isinstance(rec.get("samples"), dict):
        raise UsageError(f"{path}: no `samples` mapping; pass --ignore-provenance to score without it")
    return rec


def mismatches(rec: dict[str, Any], task: str, truth: dict[str, str]) -> list[str]:
    """What does not match between the predictions' record and the ground truth's sample fingerprints (by id)."""
    problems: list[str] = []
    if rec.get("task") not in (None, task):
        problems.append(f"the predictions are of task {rec['task']!r}, not {task!r}")
    made = {str(k): v for k, v in rec["samples"].items()}
    for sid, fp in truth.items():
        if sid not in made:
            problems.append(f"sample {sid}: the ground truth has it, but the predictions were not made for it")
        elif made[sid] != fp:
            problems.append(f"sample {sid}: the predictions were made on other content (fingerprint {made[sid]}; "
                            f"this ground truth's sample {sid} is {fp})")
    return problems


def check(rec: dict[str, Any], task: str, truth: dict[str, str], where: str) -> None:
    """Raise `ProvenanceMismatch` naming the first mismatched samples and what the predictions were made for."""
    problems = mismatches(rec, task, truth)
    if not problems:
        return
    made_for = ", ".join(f"{k}={v}" for k, v in (rec.get("dataset") or {}).items() if v not in (None, False, []))
    shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
    raise ProvenanceMismatch(f"{where}: predictions do not match the ground truth: {shown}. They were made for "
                             f"{made_for or 'the default dataset'} ({len(rec['samples'])} samples, dataset hash "
                             f"{rec.get('dataset_hash')}); score them with that selection, or pass "
                             "--ignore-provenance to score anyway")
