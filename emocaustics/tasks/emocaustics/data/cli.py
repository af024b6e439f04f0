"""`emocaustics data ...`: fetch the published data, and report what a dataset holds."""

from __future__ import annotations

import argparse
import json
import logging
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    data = subparsers.add_parser("data", help="fetch and inspect the EmoCaustics data")
    sub = data.add_subparsers(dest="data_command", required=True)

    f = sub.add_parser("fetch", help="download the published datasets/ folder into the cache")
    f.add_argument("--dest", help="folder to write (default: $EMOCAUSTICS_CACHE/datasets/emocaustics)")
    f.set_defaults(func=_fetch)

    s = sub.add_parser("stats", help="files, dialogues, utterances, labels and defects")
    s.add_argument("--subset", default=None, help="all, paper-100, long-20, sample (default: all of an explicit "
                                                   "--data folder or of --ids, else sample)")
    s.add_argument("--ids", default=None, help="comma-separated dialogue ids, e.g. 1,2,3")
    s.add_argument("--data", default=None, help="dataset folder with chat/ and emo/ (default: $EMOCAUSTICS_DATA)")
    s.add_argument("--pairing", choices=("verified", "published"), default="verified",
                   help="verified: pair from content (default); published: by file number, as the reference code")
    s.add_argument("--repair", action="store_true", help="repair malformed JSON with json-repair (each one reported)")
    s.add_argument("--strict", action="store_true", help="any malformed file is an error")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=_stats)


def _fetch(args: argparse.Namespace) -> int:
    from pathlib import Path

    from emocaustics.tasks.emocaustics.data.fetch import fetch

    dest = fetch(Path(args.dest) if args.dest else None)
    print(f"fetched into {dest}; use it with EMOCAUSTICS_DATA={dest} or --data {dest}")
    return 0


def _stats(args: argparse.Namespace) -> int:
    from emocaustics.tasks.emocaustics.data import stats
    from emocaustics.tasks.emocaustics.data.subsets import default_subset, parse_ids, resolve

    logging.basicConfig(level=logging.WARNING, format="emocaustics: %(levelname)s: %(message)s", stream=sys.stderr)
    ids = parse_ids(args.ids)
    dialogues, corpus = resolve(default_subset(args.subset, ids, args.data), ids, root=args.data, pairing=args.pairing,
                                repair=args.repair, strict=args.strict)
    result = stats.compute(dialogues, corpus)
    print(json.dumps(result, ensure_ascii=False, indent=1) if args.json else stats.render(result))
    return 0
