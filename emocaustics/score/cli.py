"""`emocaustics score TASK --pred DIR`: score a folder of predictions with the task's own scorer (`Task.score`), for
every task that registers no `score` verb of its own (plug-in tasks; the in-tree tasks keep their richer verbs).

The samples come from `Task.load` (dataset options: the ones the predictions were made for, read from the folder's
provenance.json, then `--data` and `-D key=value`), the predictions from `Task.read_predictions` (predictions.jsonl
and failures.jsonl), paired by the job's rule (`core.predictions`): a sample with no prediction is a failure, counted
0 and listed; predictions of no sample are named on stderr, and a folder of which none pairs is a usage error (exit
2, nothing scored). Failures exit 3 unless `--allow-failures`. Prints the primary metric and the summary (or JSON).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from emocaustics.core.clihelp import DefaultsFormatter
from emocaustics.core.errors import SamplesFailed, UsageError


def register_generic(score_subparsers: Any, names: list[str]) -> None:
    """`score TASK` for each task in `names` that has no score verb yet."""
    for name in names:
        if name in score_subparsers.choices:
            continue
        p = score_subparsers.add_parser(
            name, help=f"score predictions of the {name!r} task (its Task.score)",
            description=__doc__.splitlines()[0], formatter_class=DefaultsFormatter,
            epilog="exit status: 0 scored; 2 usage error (bad options, no data, predictions that pair with no "
                   "sample or were made for other data); 3 scored, but some samples failed (--allow-failures: 0)")
        p.add_argument("--pred", required=True, metavar="PATH",
                       help="folder holding predictions.jsonl (and failures.jsonl): a config's predictions folder")
        p.add_argument("--data", metavar="PATH", help="local copy of the data (default: the dataset the predictions "
                                                      "were made for, else the task's env var or fetch cache)")
        p.add_argument("-D", dest="dataset", action="append", default=[], metavar="KEY=VALUE",
                       help="a dataset option (YAML value), e.g. -D n=8; repeatable")
        p.add_argument("-T", dest="options", action="append", default=[], metavar="KEY=VALUE",
                       help="a task option (YAML value), e.g. -T method=oracle; repeatable")
        p.add_argument("--json", action="store_true", help="print the summary as JSON")
        p.add_argument("--allow-failures", action="store_true", help="exit 0 even when some samples failed")
        p.add_argument("--ignore-provenance", action="store_true",
                       help="score even when provenance.json says the predictions were made for other data")
        p.set_defaults(func=score_command, score_task=name)


def _pairs(items: list[str], flag: str) -> dict[str, Any]:
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} {item!r}: expected KEY=VALUE")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise UsageError(f"{flag} {key.strip()}: not a YAML value: {exc}") from None
    return out


def _validated(what: str, flag: str, build: Any, raw: dict[str, Any]) -> Any:
    from pydantic import ValidationError

    try:
        return build(raw)
    except ValidationError as exc:
        errors = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(options)'}: {e['msg']}" for e in exc.errors())
        raise UsageError(f"{what} ({flag}): {errors}") from None
    except ValueError as exc:
        raise UsageError(f"{what} ({flag}): {exc}") from None


def _pred_dir(path: str) -> Path:
    p = Path(path)
    if p.is_file() and p.name == "predictions.jsonl":
        p = p.parent
    if not p.is_dir():
        raise UsageError(f"--pred {path}: {'not a folder' if p.exists() else 'no such folder'} (give the folder "
                         "holding predictions.jsonl)")
    if not (p / "predictions.jsonl").is_file() and not (p / "failures.jsonl").is_file():
        raise UsageError(f"--pred {path}: no predictions.jsonl (or failures.jsonl) in it")
    return p


def score_command(args: argparse.Namespace) -> int:
    from emocaustics.core import provenance
    from emocaustics.core.predictions import pair
    from emocaustics.core.task import ScoreContext, get_task

    task = get_task(args.score_task)
    folder = _pred_dir(args.pred)
    record = None if args.ignore_provenance else provenance.read(folder)
    raw_dataset = dict((record or {}).get("dataset") or {}) | _pairs(args.dataset, "-D")
    if args.data is not None:
        raw_dataset["data"] = args.data
    dataset = _validated(f"dataset options of task {task.name!r}", "--data/-D", task.Dataset.model_validate,
                         raw_dataset)
    methods = task.solver_methods + task.calibration_methods
    raw_options = dict((record or {}).get("options") or ({"method": methods[0]} if methods else {}))
    options = _validated(f"options of task {task.name!r}", "-T", task.parse_options,
                         raw_options | _pairs(args.options, "-T"))
    loaded = task.load(dataset, options)
    samples = loaded.samples
    if record is not None:  # the samples the predictions were made for (the run's selection), checked by content
        made = {str(k) for k in record["samples"]}
        chosen = [s for s in samples if s.id in made]
        if chosen and len(chosen) < len(samples):
            print(f"scoring the {len(chosen)} of {len(samples)} samples the predictions were made for "
                  f"({folder / provenance.FILE})", file=sys.stderr)
            samples = chosen
        provenance.check(record, task.name, {s.id: task.fingerprint(s) for s in samples}, f"--pred {args.pred}")
    paired = pair(samples, task.read_predictions(folder))
    if len(samples) == len(paired.missing):
        shown = ", ".join(paired.unpaired[:5]) + (" ..." if len(paired.unpaired) > 5 else "")
        raise UsageError(f"--pred {args.pred}: no prediction pairs with any of the {len(samples)} samples "
                         f"(ids found: {shown or 'none'}); is this the right task and data?")
    if paired.unpaired:
        print(f"warning: {len(paired.unpaired)} prediction(s) in {args.pred} pair with no sample and were not "
              f"scored: {', '.join(paired.unpaired[:20])}{' ...' if len(paired.unpaired) > 20 else ''}",
              file=sys.stderr)
    scored = task.score(samples, {k: v for k, v in paired.predictions.items() if k not in paired.unpaired},
                        options, ScoreContext())
    reasons = {sid: str(paired.predictions[sid]) for sid in paired.failed}
    for row in scored.rows.filter(scored.rows["status"] == "failed").iter_rows(named=True):
        reasons.setdefault(row["sample_id"], row["reason"] or "scored as failed")
    failed = sorted(reasons)
    value = scored.summary.get(task.primary_metric)
    if value is None and scored.rows.height:
        value = scored.rows.filter(scored.rows["metric"] == task.primary_metric)["value"].mean()
    summary = {"task": task.name, "pred": str(args.pred), "samples": len(samples), "primary_metric":
               task.primary_metric, "value": value, "summary": scored.summary, "failed": len(failed),
               "failures": [{"id": sid, "reason": reasons[sid]} for sid in failed], "unpaired": paired.unpaired}
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=1, default=str))
    else:
        shown_value = "n/a" if value is None else f"{float(value):.4f}"
        print(f"{task.name}: {task.primary_metric} {shown_value} over {len(samples)} samples, {len(failed)} "
              f"failed ({args.pred})")
        others = {k: v for k, v in scored.summary.items() if k != task.primary_metric}
        if others:
            print("  " + ", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in others.items()))
        for f in summary["failures"][:10]:
            print(f"  sample {f['id']}: {f['reason']}")
    if failed and not args.allow_failures:
        raise SamplesFailed(len(failed), len(samples), f"--pred {args.pred}")
    return 0
