"""`emocaustics score narrative --pred DIR|FILE --gt DIR|FILE [--weights k=v,...] [--taxonomy DIR] [--n-t N]
[--markdown FILE] [--engine auto|local|ray] [--json]`

Folders pair files by story name (a prediction may carry a `_pred` suffix) and are scored over the ground truth, as
`run` scores them: a GT story without a paired (or with an unreadable) prediction is failed, counted 0 and listed
under `failed` with the reason; a GT file that cannot be read is listed under skipped.errors; both give exit status 3
(unless --allow-failures). Prediction files that pair with no GT story are named first (and on stderr); when none
pairs at all it is a usage error (status 2, nothing written). Folders print `{"overall_score", "overall_micro",
"component_scores" (macro, micro, precision, recall, f1), "stories", "files", "failed", "skipped", "per_file",
"summary"}`; two files print that pair's composite result (`overall_score`, `component_scores`, `detailed_results`,
`summary`). Without --json the same as Markdown tables.
With a Ray cluster at hand (RAY_ADDRESS set, or this process already connected), a folder of more than
`rayscore.RAY_ABOVE` pairs is scored through Ray Data; on one machine the local loop is as fast (measured:
benchmarks/narrative_bench.py). `--engine ray` forces Ray Data (a local Ray when there is no cluster), `local` forbids
it; both paths give the same figures.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from emocaustics.core.clihelp import Scored, verb
from emocaustics.core.errors import UsageError


def register_score(score_subparsers: Any) -> None:
    """Add `narrative` to the `score` command's task sub-parsers."""
    verb(score_subparsers, "narrative", run, help="score JSON-v3 narrative annotations against ground truth",
         description=__doc__.splitlines()[0], pred=dict(help="prediction folder or file"),
         data=dict(flags=("--data", "--gt"), dest="gt", required=True,
                   help="ground-truth folder or file (--gt is the older name)"),
         options=_options, json_help="print the result as JSON",
         allow="exit 0 even when some stories could not be scored (default: exit status 3)")


def _options(p: Any) -> None:
    p.add_argument("--weights", help="component weights, e.g. characters=2,spans=0.5 (default 1 each)")
    p.add_argument("--taxonomy", help="folder replacing the shipped taxonomies (relationship/sentiment/action/"
                                      "archetype.json)")
    p.add_argument("--n-t", type=int, default=2, help="near-miss tolerance of boundary similarity (default 2)")
    p.add_argument("--markdown", help="also write a Markdown report to this file")
    p.add_argument("--engine", choices=("auto", "local", "ray"), default="auto",
                   help="folders: score in this process, or as a Ray Data stream (RAY_ADDRESS, else a local Ray); "
                        "auto: Ray Data above a few thousand pairs when a Ray cluster is at hand")


def _cluster_at_hand() -> bool:
    import os

    import ray

    return bool(os.environ.get("RAY_ADDRESS")) or ray.is_initialized()


def score_paths(pred: Path, gt: Path, weights: str | None = None, taxonomy: str | None = None,
                n_t: int = 2, engine: str = "auto") -> tuple[dict[str, Any], bool]:
    """(result, is_folder) for a file pair or a folder pair (a folder through Ray Data per `engine`).

    A folder pair is scored over the ground truth, as `run` scores it: every GT story is a sample, one without a
    paired prediction file is failed (0, with the reason), and a prediction folder of which no file pairs with any
    GT story is a usage error."""
    from emocaustics.scoring.fanout import wants_ray
    from emocaustics.tasks.narrative.aggregate import aggregate
    from emocaustics.tasks.narrative.composite import error_result, parse_weights
    from emocaustics.tasks.narrative.io import missing_prediction, pair_folders
    from emocaustics.tasks.narrative.rayscore import RAY_ABOVE, score_file_pairs
    from emocaustics.tasks.narrative.scoring import score_files, taxonomy_for

    w = parse_weights(weights)
    tax = taxonomy_for(taxonomy)

    if pred.is_file() and gt.is_file():  # one pair: an unreadable prediction is an error (status 2), not a failed 0
        result = score_files(pred, gt, missing="", weights=w, taxonomy=tax, n_t=n_t)
        return (error_result(result["failed"], "pred") if "failed" in result else result), False
    if pred.is_dir() and gt.is_dir():
        pairing = pair_folders(pred, gt)
        if not pairing.pairs:
            shown = ", ".join(pairing.unpaired_pred[:5]) + (" ..." if len(pairing.unpaired_pred) > 5 else "")
            raise UsageError(f"no prediction file in {pred} pairs with any of the {len(pairing.unpaired_gt)} "
                             f"ground-truth stories in {gt} (a prediction for GT <story>.json is named <story>.json "
                             f"or <story>_pred.json; found: {shown or 'no .json file'})")
        # every GT story, with its prediction file or None (failed: no prediction)
        stories = sorted(pairing.pairs + [(n, None, gt / f"{n}.json") for n in pairing.unpaired_gt],
                         key=lambda t: t[0])
        missing = {n: missing_prediction(n, pred) for n in pairing.unpaired_gt}
        if wants_ray(engine, len(stories), RAY_ABOVE, allowed=_cluster_at_hand()):
            per_file = score_file_pairs(stories, weights=w, taxonomy=taxonomy, n_t=n_t, missing=missing)
        else:
            per_file = {n: score_files(p, g, missing=missing.get(n, ""), weights=w, taxonomy=tax, n_t=n_t)
                        for n, p, g in stories}
        skipped = {"unpaired_pred": pairing.unpaired_pred, "unpaired_gt": pairing.unpaired_gt,
                   "duplicates": pairing.duplicates}
        return aggregate(per_file, w, skipped), True
    for path, what in ((pred, "--pred"), (gt, "--gt")):
        if not path.exists():
            raise UsageError(f"{what} {path} does not exist")
    kind = {True: "a folder", False: "a file"}
    raise UsageError(f"--pred {pred} is {kind[pred.is_dir()]} and --data {gt} is {kind[gt.is_dir()]}: give two files "
                     "or two folders")


def run(args: argparse.Namespace) -> Scored:
    from emocaustics.core.errors import SamplesFailed
    from emocaustics.tasks.narrative.aggregate import markdown_aggregate, markdown_story, to_json

    result, folder = score_paths(Path(args.pred), Path(args.gt), args.weights, args.taxonomy, args.n_t, args.engine)
    skipped = result.get("skipped") or {}
    unpaired = skipped.get("unpaired_pred") or []
    if unpaired:  # on stderr as well, before the score: --json readers see it too
        print(f"emocaustics: warning: {len(unpaired)} prediction file(s) in {args.pred} pair with no ground-truth "
              f"story and were not scored: {', '.join(unpaired)}", file=sys.stderr)
    duplicates = skipped.get("duplicates") or []
    if duplicates:  # two files for one story: which one was scored is said, never left to a guess
        print(f"emocaustics: warning: {len(duplicates)} story(ies) with two files, the *_pred.json one scored (the "
              f"other ignored): {'; '.join(duplicates)}", file=sys.stderr)
    md = markdown_aggregate(result) if folder else markdown_story(Path(args.gt).stem, result)
    if args.markdown:
        Path(args.markdown).write_text(md, encoding="utf-8")
    # a file pair that could not be scored is an error (status 2); a folder's report lists every story that failed or
    # could not be read and why, and the exit status says so too
    not_scored = len(result.get("failed") or {}) + len(skipped.get("errors") or {})
    failure = (UsageError(result["error"]) if not folder and result.get("error") else SamplesFailed(
        not_scored, result["stories"] + len(skipped["errors"]), "ground-truth stories failed or unreadable")
               if folder and not_scored else None)
    return Scored(to_json(result), md, failure)
