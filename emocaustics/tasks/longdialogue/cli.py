"""The EmoCaustics verbs: `score sextuple|emotion` (`score/cli.py`) and `data stats` here (its data is fetched by the
core's `data fetch emocaustics`); its solving is `eval sextuple|emotion` (`--no-score`: the predictions only)."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from emocaustics.tasks.longdialogue.score.cli import register_score  # noqa: F401 (`score sextuple|emotion`)


def register_data(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("stats", help="EmoCaustics: files, dialogues, utterances, labels and defects")
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


def _stats(args: argparse.Namespace) -> int:
    from emocaustics.tasks.longdialogue.data import stats
    from emocaustics.tasks.longdialogue.data.subsets import default_subset, parse_ids, resolve

    logging.basicConfig(level=logging.WARNING, format="emocaustics: %(levelname)s: %(message)s", stream=sys.stderr)
    ids = parse_ids(args.ids)
    dialogues, corpus = resolve(default_subset(args.subset, ids, args.data), ids, root=args.data, pairing=args.pairing,
                                repair=args.repair, strict=args.strict)
    result = stats.compute(dialogues, corpus)
    print(json.dumps(result, ensure_ascii=False, indent=1) if args.json else stats.render(result))
    return 0
