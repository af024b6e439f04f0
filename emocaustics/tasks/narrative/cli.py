"""`emocaustics score narrative --pred DIR|FILE --gt DIR|FILE [--weights k=v,...] [--taxonomy DIR] [--n-t N]
[--markdown FILE] [--engine auto|local|ray] [--json]`

Folders pair files by story name (a prediction may carry a `_pred` suffix) and print
`{"overall_score", "component_scores", "files", "skipped", "per_file"}` (plus `overall_micro` and `summary`);
two files print that pair's composite result (`overall_score`, `component_scores`, `detailed_results`, `summary`).
Without --json a short table is printed. A file that cannot be read is listed under skipped.errors, never fatal.
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

from emocaustics.core.errors import UsageError


def register_score(score_subparsers: Any) -> None:
    """Add `narrative` to the `score` command's task sub-parsers."""
    p = score_subparsers.add_parser("narrative", help="score JSON-v3 narrative annotations against ground truth",
                                    description=__doc__.splitlines()[0])
    p.add_argument("--pred", required=True, help="prediction folder or file")
    p.add_argument("--data", "--gt", dest="gt", required=True,
                   help="ground-truth folder or file (--gt is the older name)")
    p.add_argument("--allow-failures", action="store_true",
                   help="exit 0 even when some stories could not be scored (default: exit status 3)")
    p.add_argument("--weights", help="component weights, e.g. characters=2,spans=0.5 (default 1 each)")
    p.add_argument("--taxonomy", help="folder replacing the shipped taxonomies (relationship/sentiment/action/"
                                      "archetype.json)")
    p.add_argument("--n-t", type=int, default=2, help="near-miss tolerance of boundary similarity (default 2)")
    p.add_argument("--markdown", help="also write a Markdown report to this file")
    p.add_argument("--engine", choices=("auto", "local", "ray"), default="auto",
                   help="folders: score in this process, or as a Ray Data stream (RAY_ADDRESS, else a local Ray); "
                        "auto: Ray Data above a few thousand pairs when a Ray cluster is at hand")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _cluster_at_hand() -> bool:
    import os

    import ray

    return bool(os.environ.get("RAY_ADDRESS")) or ray.is_initialized()


def score_paths(pred: Path, gt: Path, weights: str | None = None, taxonomy: str | None = None,
                n_t: int = 2, engine: str = "auto") -> tuple[dict[str, Any], bool]:
    """(result, is_folder) for a file pair or a folder pair (a folder through Ray Data per `engine`)."""
    from emocaustics.tasks.narrative.aggregate import aggregate
    from emocaustics.tasks.narrative.composite import error_result, parse_weights, score_story
    from emocaustics.tasks.narrative.io import load_story, pair_folders
    from emocaustics.tasks.narrative.rayscore import RAY_ABOVE, score_file_pairs
    from emocaustics.tasks.narrative.schema import NarrativeFormatError
    from emocaustics.tasks.narrative.taxonomy import default_taxonomy, load_taxonomy

    w = parse_weights(weights)
    tax = load_taxonomy(taxonomy) if taxonomy else default_taxonomy()

    def one(p: Path, g: Path) -> dict[str, Any]:
        gs = load_story(g)
        if isinstance(gs, NarrativeFormatError):
            return error_result(str(gs), "gt")
        ps = load_story(p)
        if isinstance(ps, NarrativeFormatError):
            return error_result(str(ps), "pred")
        return score_story(ps, gs, w, tax, n_t)

    if pred.is_file() and gt.is_file():
        return one(pred, gt), False
    if pred.is_dir() and gt.is_dir():
        pairing = pair_folders(pred, gt)
        if engine == "ray" or (engine == "auto" and len(pairing.pairs) > RAY_ABOVE and _cluster_at_hand()):
            per_file = score_file_pairs(pairing.pairs, weights=w, taxonomy=taxonomy, n_t=n_t)
        else:
            per_file = {name: one(p, g) for name, p, g in pairing.pairs}
        skipped = {"unpaired_pred": pairing.unpaired_pred, "unpaired_gt": pairing.unpaired_gt,
                   "duplicates": pairing.duplicates}
        return aggregate(per_file, w, skipped), True
    for path, what in ((pred, "--pred"), (gt, "--gt")):
        if not path.exists():
            raise UsageError(f"{what} {path} does not exist")
    raise UsageError("--pred and --gt must both be files or both be folders")


def run(args: argparse.Namespace) -> int:
    from emocaustics.tasks.narrative.aggregate import markdown_aggregate, markdown_story, to_json

    result, folder = score_paths(Path(args.pred), Path(args.gt), args.weights, args.taxonomy, args.n_t, args.engine)
    if args.markdown:
        md = markdown_aggregate(result) if folder else markdown_story(Path(args.gt).stem, result)
        Path(args.markdown).write_text(md, encoding="utf-8")
    if args.json:
        print(to_json(result))
    elif folder:
        print(markdown_aggregate(result), end="")
    else:
        print(markdown_story(Path(args.gt).stem, result), end="")
    if not folder and result.get("error"):
        print(f"emocaustics: error: {result['error']}", file=sys.stderr)
        return 2
    errors = (result.get("skipped") or {}).get("errors") or {}
    if folder and errors and not args.allow_failures:
        from emocaustics.core.errors import SamplesFailed

        # the report above lists every file that could not be scored and why; the exit status says so too
        raise SamplesFailed(len(errors), len(result.get("per_file") or {}), "stories not scored")
    return 0
