"""`emocaustics export RUN_DIR --format inspect|eee [--out PATH]`: a finished run in the formats other tools read
(`ec.export` in Python; `emocaustics.exports` does the work)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from emocaustics.core.clihelp import ExamplesFormatter

EXAMPLES = """examples:
  emocaustics export runs/quickstart/20260101-120000 --format inspect --out logs
  inspect view start --log-dir logs
  emocaustics export runs/quickstart/20260101-120000 --format eee --out eee

inspect: one inspect_ai eval log (JSON) per config; eee: per config an Every Eval Ever aggregate record and its
instance-level records (data/<task>/<developer>/<model>/). What each format cannot hold: docs/exports.md.
"""


def register(sub: Any) -> None:
    p = sub.add_parser("export", help="write a finished run as inspect_ai eval logs or Every Eval Ever records",
                       description="Convert every config of a run folder: samples with input, gold, every model "
                                   "call, answer, scores, token usage and timing; the run's task, model, options "
                                   "and provenance in each header.", formatter_class=ExamplesFormatter, epilog=EXAMPLES)
    p.add_argument("run_dir", metavar="RUN_DIR", help="a finished run folder of `emocaustics run` or `eval`")
    p.add_argument("--format", required=True, choices=("inspect", "eee"), help="the format to write")
    p.add_argument("--out", metavar="PATH", default=None, help="the folder to write into (default RUN_DIR/export/"
                                                                "FORMAT)")
    p.set_defaults(func=_cmd_export)


def _cmd_export(args: argparse.Namespace) -> int:
    from emocaustics.api import export

    written = export(args.run_dir, format=args.format, out=args.out)
    where = Path(args.out) if args.out else Path(args.run_dir) / "export" / args.format
    print(f"{args.format}: {len(written)} files written under {where}", flush=True)
    return 0
