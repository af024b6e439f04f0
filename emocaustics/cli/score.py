"""`emocaustics score TASK`: the generic verb over `Task.score` for every task that registers no `score` verb of its
own (plug-in tasks; the in-tree tasks keep their official formats), on the one skeleton of every task's score verb
(`core/clihelp.py` `verb`: --pred, --data, the task's own options, --json, --allow-failures; the printing and the exit
status).

The generic verb: the samples come from `Task.load` (dataset options: the ones the predictions were made for, read
from the folder's provenance.json, then `--data` and `-D key=value`), the predictions from `store.read_predictions`
(predictions.jsonl and failures.jsonl), paired by the job's rule (`core.predictions`): a sample with no prediction is
a failure, counted 0 and listed; predictions of no sample are named on stderr, and a folder of which none pairs is a
usage error (exit 2, nothing scored). Failures exit 3 unless `--allow-failures`. Prints the primary metric and the
summary (or JSON).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from emocaustics.core.clihelp import DefaultsFormatter, Scored, verb
from emocaustics.core.errors import SamplesFailed, UsageError


def register_generic(score_subparsers: Any, names: list[str]) -> None:
    """`score TASK` for each task in `names` that has no score verb yet."""
    for name in names:
        if name in score_subparsers.choices:
            continue
        p = verb(score_subparsers, name, score_command, help=f"score predictions of the {name!r} task (its Task.score)",
                 description="`emocaustics score TASK --pred DIR`: score a folder of predictions with the task's own "
                             "scorer (`Task.score`)", formatter_class=DefaultsFormatter,
                 epilog="exit status: 0 scored; 2 usage error (bad options, no data, predictions that pair with no "
                        "sample or were made for other data); 3 scored, but some samples failed (--allow-failures: 0)",
                 pred=dict(metavar="PATH", help="folder holding predictions.jsonl (and failures.jsonl): a config's "
                                                "predictions folder"),
                 data=dict(metavar="PATH", help="local copy of the data (default: the dataset the predictions were "
                                                "made for, else the task's env var or fetch cache)"),
                 options=_options, allow="exit 0 even when some samples failed")
        p.set_defaults(score_task=name)


def _options(p: Any) -> None:
    p.add_argument("-D", dest="dataset", action="append", default=[], metavar="KEY=VALUE",
                   help="a dataset option (YAML value), e.g. -D n=8; repeatable")
    p.add_argument("-T", dest="options", action="append", default=[], metavar="KEY=VALUE",
                   help="a task option (YAML value), e.g. -T method=oracle; repeatable")
    p.add_argument("--ignore-provenance", action="store_true",
                   help="score even when provenance.json says the predictions were made for other data")


def _pred_dir(path: str) -> Path:
    p = Path(path)
    if p.is_file() and p.name == "predictions.jsonl":
        p = p.parent
    if not p.is_dir():
        raise UsageError(f"--pred {path}: {'not a folder' if p.exists() else 'no such folder'} (give the folder "
                         "holding predictions.jsonl)")
    if not (p / "predictions.jsonl").is_file() and not (p / "failures.jsonl").is_file():
        raise UsageError(f"--pred {path}: no predictions.jsonl (or failures.jsonl) in it{_calibration(p)}")
    return p


def _calibration(folder: Path) -> str:
    """Why a config's folder holds no predictions when it is a calibration config's (its provenance.json says)."""
    try:
        record = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
        from emocaustics.core.task import get_task

        method, task = record.get("method"), get_task(record["task"])
    except (OSError, ValueError, KeyError, TypeError, UsageError):
        return ""
    if method not in task.methods.calibration:
        return ""
    return (f": a config of calibration method {method!r}, whose predictor runs when the config is scored and writes "
            f"no prediction file; its scores are in {folder.parent.parent / 'scores.parquet'} (or run it again: "
            f"emocaustics eval {task.name} --method {method})")


def score_command(args: argparse.Namespace) -> Scored:
    from emocaustics.jobs.oneline import parse_assignments
    from emocaustics.scoring.generic import score_predictions

    dataset = parse_assignments(args.dataset, "-D")
    if args.data is not None:
        dataset["data"] = args.data
    result = score_predictions(args.score_task, _pred_dir(args.pred), dataset=dataset,
                               options=parse_assignments(args.options, "-T"), ignore_provenance=args.ignore_provenance,
                               where=f"--pred {args.pred}", warn=lambda line: print(line, file=sys.stderr))
    failures = result.failures.rename({"sample_id": "id"}).to_dicts()
    value = "n/a" if result.value is None else f"{float(result.value):.4f}"
    others = {k: v for k, v in result.summary.items() if k != result.primary_metric}
    text = [f"{result.task}: {result.primary_metric} {value} over {result.samples} samples, {result.failed} failed "
            f"({args.pred})"] + (["  " + ", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}"
                                                 for k, v in others.items())] if others else [])
    text += [f"  sample {f['id']}: {f['reason']}" for f in failures[:10]]
    return Scored({"task": result.task, "pred": str(args.pred), "samples": result.samples, "primary_metric":
                   result.primary_metric, "value": result.value, "summary": result.summary, "failed": result.failed,
                   "failures": failures, "unpaired": result.unpaired}, "\n".join(text) + "\n",
                  SamplesFailed(result.failed, result.samples, f"--pred {args.pred}") if result.failed else None)
