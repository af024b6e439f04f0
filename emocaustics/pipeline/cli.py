"""`emocaustics run | report | compare`: jobs, reports and side-by-side comparisons."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from emocaustics.cli import UsageError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("run", help="run a job spec (runs and grids) end to end: extraction, scoring, report")
    p.add_argument("job", help="job spec YAML (see jobs/)")
    p.add_argument("--out", help="run directory (default runs/<job>/<timestamp>)")
    p.add_argument("--resume", action="store_true",
                   help="continue the latest (or --out) run: finished dialogues are not extracted again")
    p.add_argument("--ray-address", help="Ray cluster to join (default: the spec's ray.address, else a local Ray)")
    p.set_defaults(func=_run)

    p = subparsers.add_parser("report", help="rebuild report.html of a run directory")
    p.add_argument("run_dir")
    p.set_defaults(func=_report)

    p = subparsers.add_parser("compare", help="several runs' summaries side by side")
    p.add_argument("run_dirs", nargs="+")
    p.add_argument("--out", help="also write the comparison as CSV here")
    p.set_defaults(func=_compare)


def _run(args: argparse.Namespace) -> int:
    from emocaustics.pipeline.run import run_job
    from emocaustics.pipeline.spec import load_job

    job = load_job(args.job)
    run_job(job, out=args.out, resume=args.resume, ray_address=args.ray_address)
    return 0


def _report(args: argparse.Namespace) -> int:
    from emocaustics.pipeline.run import rebuild_report

    print(rebuild_report(Path(args.run_dir)))
    return 0


def _compare(args: argparse.Namespace) -> int:
    from emocaustics.report.tables import compare, to_markdown

    try:
        table = compare([Path(d) for d in args.run_dirs])
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    if args.out:
        table.write_csv(args.out)
    print(to_markdown(table.select("run_dir", "run", "task", "method", "model", "K", "S", "dialogues", "score",
                                   "micro_score", "failures")))
    return 0
