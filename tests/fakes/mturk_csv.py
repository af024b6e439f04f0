"""A raw MTurk batch-results CSV written from a normative ratings JSON: the inverse of
`emocaustics.tasks.human.mturk.read_mturk_csv`, for tests that need a CSV of known content."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from emocaustics.tasks.human.mturk import ANSWER, SLOTS


def write_mturk_csv(hits_json: dict[str, Any], path: str | Path) -> Path:
    """One raw-MTurk-shaped row per normative `data` entry."""
    names = list(hits_json["metadata"]["score"])
    header = ["HITId", "HITTypeId", "Title", "Description", "Keywords", "Reward", "AssignmentId", "WorkerId",
              "AssignmentStatus", "RequesterFeedback", "WorkTimeInSeconds"] + [f"Input.u{i}" for i in range(SLOTS)] \
        + [ANSWER, "Approve", "Reject"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for rec in hits_json["data"]:
            ans: dict[str, Any] = {"feedback": rec.get("feedback") or ""}
            shown_systems = []
            for i, r in enumerate(rec["result"]):
                ans[f"dialogue{i}"] = f"dialogue {i}"
                ans[f"seed{i}"] = str(i)
                ans[f"task{i}"] = r["model"]
                ans[f"score{i}"] = "".join(f"{_num(r['score'][n])}#" for n in names)
                shown_systems.append(r["model"])
            shown_systems += [""] * (SLOTS - len(shown_systems))
            w.writerow([rec["hit"], "TYPE", "Chat and rate", "", "", "$3.00", rec["assignment"], rec["worker"],
                        "Approved", "", rec["duration in seconds"], *shown_systems, json.dumps([ans]), "", ""])
    return Path(path)


def _num(v: Any) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))
