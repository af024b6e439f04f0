"""`emocaustics score sextuple|emotion --pred DIR|oracle|baseline [--gt DIR] [--subset NAME] [--ids 1,2]
[--embedder SPEC] [--judge SPEC] [--compat spec|reference] [--out DIR] [--json]`

Ground truth comes through the data layer (`--gt` defaults to the configured dataset; `--pairing published`
reproduces the reference's file-number pairing). `--out` writes items.parquet, dialogues.parquet, summary.csv and
summary.json; `--json` prints the summary. `--engine auto` uses the Ray Data plan for more than 50 dialogues.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from emocaustics.core.errors import UsageError

RAY_ABOVE = 50  # dialogues; below this Ray's start-up costs more than it saves


def register_score(score_subparsers: Any) -> None:
    """`emocaustics score sextuple|emotion ...` (the same options for both)."""
    for task, what in (("sextuple", "sextuples per utterance"), ("emotion", "emotion event chains per speaker")):
        p = score_subparsers.add_parser(task, help=f"EmoCaustics {what}", description=__doc__.splitlines()[0])
        p.set_defaults(task=task)
        _add_arguments(p)


def _add_arguments(p: Any) -> None:
    p.add_argument("--pred", required=True, help="prediction folder, or a built-in predictor: oracle | baseline")
    p.add_argument("--gt", help="dataset folder with chat/ and emo/ (default: $EMOCAUSTICS_DATA or the fetch cache)")
    p.add_argument("--subset", default=None, help="all (default) | paper-100 | long-20 | sample")
    p.add_argument("--ids", help="dialogue ids, e.g. 1,2,3 (within the subset)")
    p.add_argument("--pairing", choices=["verified", "published"], default="verified",
                   help="chat/emo pairing: verified by content (default) or by file number as the reference does")
    p.add_argument("--embedder", default="minilm", help="minilm (default) | PATH to a sentence-transformers model | "
                                                        "openai:MODEL@BASE_URL (key from OPENAI_API_KEY/EMOCAUSTICS_API_KEY)")
    p.add_argument("--judge", default="none", help="none (default, embedding only) | openai:MODEL@URL | vllm:... | smoke")
    p.add_argument("--compat", choices=["spec", "reference"], default="spec",
                   help="spec (default): the published README's rules; reference: the published code's behaviour")
    p.add_argument("--on-judge-error", choices=["zero", "unscored"], default="zero",
                   help="a judge answer not 0/1 after one retry counts 0 (default) or leaves the denominator")
    p.add_argument("--engine", choices=["auto", "local", "ray"], default="auto",
                   help=f"in-process or Ray Data plan (auto: Ray above {RAY_ABOVE} dialogues)")
    p.add_argument("--out", help="write items.parquet, dialogues.parquet, summary.csv, summary.json here")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def _load_predictions(task: str, pred: str, dialogues: list) -> tuple[dict[int, Any], dict[int, int], list[str]]:
    from emocaustics.tasks.emocaustics.score.predictors import PREDICTORS, predict

    if pred in PREDICTORS:
        return predict(pred, task, dialogues), {}, []
    from emocaustics.tasks.emocaustics.score.predictions import read_chain_predictions, read_sextuple_predictions

    ps = read_sextuple_predictions(pred) if task == "sextuple" else read_chain_predictions(pred)
    wanted = {d.id for d in dialogues}
    if not wanted & set(ps.predictions):
        raise UsageError(f"no prediction file in {pred} matches the chosen dialogues "
                         f"(expected names like {'output_chat_N.json' if task == 'sextuple' else 'output_emotions_N.json'})")
    return ps.predictions, {k: len(v) for k, v in ps.notes.items()}, ps.ignored


def run(args: argparse.Namespace) -> int:
    from emocaustics.tasks.emocaustics.data.subsets import parse_ids, resolve
    from emocaustics.models.embedders import parse_embedder_spec

    parse_embedder_spec(args.embedder)  # a bad spec fails before any data is loaded
    dialogues, corpus = resolve(args.subset, parse_ids(args.ids), root=args.gt, pairing=args.pairing)
    # Defects of the ground truth are part of the result: all in summary.json, the unusual ones on stderr too
    # (the published data's 400 duplicate copies and 399 renumbered files would drown the rest there).
    defects = [str(d) for d in corpus.defects]
    unusual = [str(d) for d in corpus.defects if d.kind not in ("duplicate", "mispaired", "source_self")]
    for line in unusual[:20]:
        print(f"data defect: {line}", file=sys.stderr)
    if len(defects) > 20:
        print(f"data defects: {len(defects)} in all (see summary.json / --json)", file=sys.stderr)
    predictions, notes, ignored = _load_predictions(args.task, args.pred, dialogues)
    judge = None if args.judge.strip().lower() == "none" else args.judge
    use_ray = args.engine == "ray" or (args.engine == "auto" and len(dialogues) > RAY_ABOVE)
    if use_ray:
        from emocaustics.tasks.emocaustics.score.plan import score_with_ray

        result = score_with_ray(args.task, dialogues, predictions, embedder=args.embedder, judge=judge,
                                compat=args.compat, on_judge_error=args.on_judge_error, notes=notes)
    else:
        import asyncio

        from emocaustics.tasks.emocaustics.score.engine import ascore

        result = asyncio.run(ascore(args.task, dialogues, predictions, embedder=args.embedder, judge=judge,
                                    compat=args.compat, on_judge_error=args.on_judge_error, notes=notes))
    result.summary["pred"] = args.pred
    result.summary["data_defects"] = defects
    result.summary["ignored_files"] = ignored
    if args.out:
        result.write(args.out)
    s = result.summary
    if args.json:
        json.dump(s, sys.stdout, ensure_ascii=False, indent=1)
        print()
    else:
        fmt = lambda v: "n/a" if v is None else f"{v:.4f}"  # noqa: E731
        print(f"{s['task']}: {s['dialogues']} dialogues, score {fmt(s['score'])} (micro {fmt(s['micro_score'])}), "
              f"{len(s['failures'])} failures, {s['judge_failures']} judge failures, {s['seconds']} s ({s['path']})")
        print("  " + ", ".join(f"{k} {fmt(v)}" for k, v in s["components"].items()))
        for f in s["failures"][:10]:
            print(f"  dialogue {f['dialogue']}: {f['reason']}")
        if len(s["failures"]) > 10:
            print(f"  ... and {len(s['failures']) - 10} more (see --out or --json)")
    return 0
