"""Command line of the `ecpe` task.

    emocaustics score ecpe --pred PRED_DIR [--gold GOLD_DIR] [--json]
        Each folder holds Subtask_1_*.json and/or Subtask_2_*.json (official names: Subtask_N_pred.json,
        Subtask_N_gold.json; the organisers' data folder has Subtask_N_test.json). A subtask is scored when its
        prediction file exists; --gold defaults to the located dataset. Prints `key:value` lines exactly like the
        official scores.txt, or with --json the official keys as numbers (nan as null) plus `per_emotion` and
        `problems`. Warnings go to stderr; a file that cannot be scored is an error naming file, conversation, pair.
    emocaustics ecpe fetch [--dest DIR]          download the organisers' data (GPL-3.0, research only)
    emocaustics ecpe validate FILE [--subtask N] [--gold DIR] [--json]
        check one prediction file: every error and warning, exit status 1 when there is an error.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from emocaustics.core.errors import UsageError


def register_score(score_subparsers: Any) -> None:
    p = score_subparsers.add_parser(
        "ecpe", help="SemEval-2024 Task 3 submissions: the official metrics",
        description="Score Subtask_1_*.json / Subtask_2_*.json predictions with the official SemEval-2024 Task 3 "
                    "metrics; prints key:value lines like the official scores.txt (or JSON with --json).")
    p.add_argument("--pred", required=True, type=Path, metavar="PRED_DIR",
                   help="folder with Subtask_1_*.json and/or Subtask_2_*.json predictions")
    p.add_argument("--data", "--gold", dest="gold", type=Path, default=None, metavar="GOLD_DIR",
                   help="folder with the gold files (default: $EMOCAUSTICS_ECAC_DATA or the fetch cache); "
                        "--gold is the older name")
    p.add_argument("--json", action="store_true", help="print JSON: official keys, per_emotion tables, problems")
    p.set_defaults(func=score_command)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("ecpe", help="SemEval-2024 Task 3 data and submission checks")
    sub = p.add_subparsers(dest="ecpe_command", required=True)
    f = sub.add_parser("fetch", help="download the organisers' test data and sample submission")
    f.add_argument("--dest", type=Path, default=None, help="target folder (default: the fetch cache)")
    f.set_defaults(func=fetch_command)
    v = sub.add_parser("validate", help="check a prediction file; exit 1 when it has an error")
    v.add_argument("file", type=Path)
    v.add_argument("--subtask", type=int, choices=(1, 2), default=None, help="default: from the file name")
    v.add_argument("--gold", type=Path, default=None, help="gold folder: also check ids, ranges and labels")
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=validate_command)


# -- files ----------------------------------------------------------------------------------------------------------
def find_file(folder: Path, subtask: int, role: str) -> Path | None:
    """The subtask's prediction (`role="pred"`) or gold (`role="gold"`) file in `folder`: the official name first
    (Subtask_N_pred.json; Subtask_N_gold.json, then the organisers' Subtask_N_test.json), else the only other
    Subtask_N_*.json; None when there is none; several candidates are an error."""
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder")
    names = ("pred",) if role == "pred" else ("gold", "test")
    for name in names:
        if (folder / f"Subtask_{subtask}_{name}.json").is_file():
            return folder / f"Subtask_{subtask}_{name}.json"
    others = {"pred": ("gold", "test"), "gold": ("pred",)}[role]
    found = sorted(p for p in folder.glob(f"Subtask_{subtask}_*.json")
                   if p.is_file() and not any(p.name == f"Subtask_{subtask}_{o}.json" for o in others))
    if len(found) > 1:
        raise UsageError(f"{folder}: several subtask-{subtask} {role} files ({', '.join(p.name for p in found)}); "
                         f"name the one to use Subtask_{subtask}_{names[0]}.json")
    return found[0] if found else None


def _number(v: float) -> float | None:
    return None if math.isnan(v) else v


def _report_problems(problems: list[Any], limit: int = 5) -> None:
    out = sys.stderr
    warnings = [p for p in problems if p.severity == "warning"]
    if not warnings:
        return
    counts = Counter(p.kind for p in warnings)
    print(f"{len(warnings)} warning(s): " + ", ".join(f"{k} x{n}" for k, n in counts.most_common()), file=out)
    for p in warnings[:limit]:
        print(f"  {p}", file=out)


# -- handlers ----------------------------------------------------------------------------------------------------
def score_command(args: argparse.Namespace) -> int:
    from emocaustics.tasks.ecpe import data
    from emocaustics.tasks.ecpe.official import scores_txt
    from emocaustics.tasks.ecpe.scoring import score_records
    from emocaustics.tasks.ecpe.validate import load_json

    gold_dir = args.gold if args.gold is not None else data.locate(None)
    results = []
    for st in (1, 2):
        pred_file = find_file(args.pred, st, "pred")
        if pred_file is None:
            continue
        gold_file = find_file(gold_dir, st, "gold")
        if gold_file is None:
            raise UsageError(f"{gold_dir}: no Subtask_{st}_gold.json or Subtask_{st}_test.json for {pred_file.name}")
        results.append(score_records(st, load_json(gold_file), load_json(pred_file), gold_file=str(gold_file),
                                     pred_file=str(pred_file)))
    if not results:
        raise UsageError(f"{args.pred}: no Subtask_1_*.json or Subtask_2_*.json prediction file")
    for r in results:
        _report_problems(r.problems)
    if args.json:
        doc: dict[str, Any] = {k: _number(v) for r in results for k, v in r.scores.items()}
        doc["per_emotion"] = {f"subtask_{r.subtask}": r.table.to_dicts() for r in results}
        doc["problems"] = [p.to_json() for r in results for p in r.problems]
        print(json.dumps(doc, indent=1, ensure_ascii=False))
    else:
        sys.stdout.write("".join(scores_txt(r.scores) for r in results))
    return 0


def fetch_command(args: argparse.Namespace) -> int:
    from emocaustics.tasks.ecpe import data

    dest = data.fetch(args.dest)
    print(f"SemEval-2024 Task 3 data in {dest} (GPL-3.0, research use only; see SOURCE.md and LICENSE there)")
    return 0


def validate_command(args: argparse.Namespace) -> int:
    from emocaustics.tasks.ecpe.validate import check_prediction, load_json, read_gold

    subtask = args.subtask
    if subtask is None:
        m = re.match(r"Subtask_([12])_", args.file.name)
        if not m:
            raise UsageError(f"{args.file.name}: cannot tell the subtask from the name; give --subtask 1 or 2")
        subtask = int(m.group(1))
    gold = None
    if args.gold is not None:
        gold_file = find_file(args.gold, subtask, "gold")
        if gold_file is None:
            raise UsageError(f"{args.gold}: no subtask-{subtask} gold file")
        gold = read_gold(load_json(gold_file), subtask, str(gold_file))
    checked = check_prediction(load_json(args.file), subtask, str(args.file), gold)
    if args.json:
        print(json.dumps({"ok": not checked.errors, "problems": [p.to_json() for p in checked.problems]}, indent=1,
                         ensure_ascii=False))
    else:
        for p in checked.problems:
            print(p)
        print(f"{args.file}: {len(checked.errors)} error(s), {len(checked.warnings)} warning(s)")
    return 1 if checked.errors else 0
