"""A raw MTurk batch-results CSV (TianboJi/Dialogue-Eval, data/raw_mturk_csv/...) as a second ratings input.

Each CSV row is one assignment; it becomes one `data` entry of the normative JSON (data.py), so every number
downstream is computed by the same code: HITId -> hit, AssignmentId -> assignment, WorkerId -> worker,
WorkTimeInSeconds -> duration in seconds, and from the one object of Answer.taskAnswers: feedback -> feedback and, for
each slot i, task<i> (the rated system; the qc-model is the degraded one) with score<i> = "s1#s2#...#" (one rating per
question, in the order of metadata.score) -> result[i]. Within one assignment a repeated system name replaces the
earlier rating (SOURCE.md's reading of round 2). A row whose slots hold no score at all (nothing submitted) is skipped.

`metadata` is not in the CSV: it comes from a JSON file the user names (a hits_data JSON whose `metadata` is reused,
or a bare metadata object); there are no built-in defaults.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from emocaustics.core.errors import UsageError
from emocaustics.core.textfile import read_text, shown
from emocaustics.tasks.human.data import Hits, HitsError, UnknownSystem, parse_hits, parse_metadata, read_hits, \
    read_json

COLUMNS = ("HITId", "AssignmentId", "WorkerId", "WorkTimeInSeconds", "Answer.taskAnswers")
SLOTS = 6  # dialogue0..5 / task0..5 / score0..5 in the published HIT template
ANSWER = "Answer.taskAnswers"


def read_metadata(path: str | Path | None, *, csv_file: str) -> dict[str, Any]:
    """The `metadata` object for a CSV: from `path` (a hits_data JSON or a bare metadata object)."""
    if path is None:
        raise UsageError(f"{csv_file}: a raw MTurk CSV holds no metadata (score types, models, qc-model, ranking) "
                         "and the loader has no built-in defaults: name a metadata JSON with --metadata FILE, e.g. "
                         "the hits_data_FreeTopicRound1.json whose metadata is reused")
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{p}: no such metadata file")
    obj = read_json(p, "metadata file")
    meta = obj.get("metadata", obj) if isinstance(obj, dict) else obj
    parse_metadata(meta, file=str(p))  # validated here so its errors name the metadata file
    return meta


def read_mturk_csv(path: str | Path, metadata: str | Path | None = None) -> Hits:
    """Read a raw MTurk CSV into the same `Hits` the normative JSON gives."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{p}: no such ratings file")
    meta = read_metadata(metadata, csv_file=str(p))
    return parse_hits({"metadata": meta, "data": csv_records(read_text(p, what="ratings file"), meta, str(p))},
                      file=str(p))


def csv_records(text: str, meta: dict[str, Any], file: str) -> list[dict[str, Any]]:
    """The normative `data` entries of a raw MTurk CSV's text (errors name file, CSV line and field)."""
    names = list(meta["score"])
    known = set(meta["model"]) | {meta["qc-model"]}
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        raise HitsError("empty CSV: no header row", file=file)
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise HitsError(f"not a raw MTurk batch-results CSV: no column {missing[0]!r}", file=file, record="line 1",
                        field=missing[0])
    col = {c: header.index(c) for c in COLUMNS}
    out, line = [], reader.line_num + 1
    for row in reader:
        where, line = f"line {line}", reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue
        if len(row) < len(header):
            raise HitsError(f"has {len(row)} cells, the header {len(header)}", file=file, record=where)
        rec = _record(row, col, names, known, file, where)
        if rec is not None:
            out.append(rec)
    return out


def _record(row: list[str], col: dict[str, int], names: list[str], known: set[str], file: str,
            where: str) -> dict[str, Any] | None:
    cell = row[col[ANSWER]]
    try:
        answers = json.loads(cell)
    except json.JSONDecodeError as exc:
        raise HitsError(f"not JSON ({exc.msg}): {shown(cell[:60])}", file=file, record=where, field=ANSWER) from None
    if isinstance(answers, list) and len(answers) == 1:
        answers = answers[0]
    if not isinstance(answers, dict):
        raise HitsError("must be a JSON list holding one object", file=file, record=where, field=ANSWER)
    ratings: dict[str, dict[str, float]] = {}
    for i in range(SLOTS):
        system, scores = str(answers.get(f"task{i}") or "").strip(), str(answers.get(f"score{i}") or "").strip()
        if not system and not scores:
            continue
        field = f"{ANSWER}.score{i}"
        if system not in known:
            raise UnknownSystem(f"system {system!r} is not in metadata.model (nor the qc-model)", file=file,
                                record=where, field=f"{ANSWER}.task{i}")
        parts = scores.split("#")
        if parts and parts[-1] == "":
            parts = parts[:-1]  # the trailing '#'
        if len(parts) != len(names):
            raise HitsError(f"{shown(scores)} holds {len(parts)} ratings, metadata.score has {len(names)} "
                            f"({', '.join(names)})", file=file, record=where, field=field)
        values = {}
        for name, part in zip(names, parts):
            try:
                num = float(part)
            except ValueError:
                raise HitsError(f"rating {name!r} is not a number: {shown(part)}", file=file, record=where,
                                field=field) from None
            values[name] = int(num) if num.is_integer() else num
        ratings.pop(system, None)  # a repeated system replaces the earlier rating
        ratings[system] = values
    if not ratings:
        return None  # nothing submitted
    rec: dict[str, Any] = {
        "result": [{"model": m, "score": s} for m, s in ratings.items()],
        "hit": row[col["HITId"]], "assignment": row[col["AssignmentId"]], "worker": row[col["WorkerId"]],
        "duration in seconds": row[col["WorkTimeInSeconds"]]}
    if answers.get("feedback") is not None:
        rec["feedback"] = answers["feedback"]
    return rec


def read_ratings(path: str | Path, metadata: str | Path | None = None) -> Hits:
    """A ratings file in either form: a raw MTurk CSV (`.csv`, with the metadata JSON `metadata`) or the authors'
    normative JSON (`data.read_hits`)."""
    p = Path(path)
    if p.suffix.lower() == ".csv" and not p.is_dir():
        return read_mturk_csv(p, metadata)
    return read_hits(p)
