"""Score EmoCaustics predictions (a folder, or a built-in predictor) against the ground truth.

`emocaustics score sextuple|emotion --pred DIR|oracle|baseline [--data DIR] [--subset NAME] [--ids 1,2]
[--embedder SPEC] [--judge SPEC] [--compat spec|reference] [--out DIR] [--json]`

Which ground truth: a prediction folder written by `emocaustics run` records what it was made from
(`provenance.json`: dataset, subset, ids and a fingerprint of every dialogue); that is the default selection, and a
selection that does not match it is refused, naming the dialogue (`--ignore-provenance` scores anyway). Without a
record the default is every dialogue of an explicit `--data` folder, else `sample`. `--out` writes items.parquet,
dialogues.parquet, summary.csv and summary.json; `--json` prints the summary. The score is over the chosen
dialogues, as `run` scores them: one without a prediction file is failed and counts 0 (exit status 3 when any
dialogue failed, unless `--allow-failures`); prediction files of no chosen dialogue are named on stderr before the
score (`unpaired_files` in the summary); a folder of which no file pairs with any chosen dialogue is a usage error
(status 2, nothing written).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from emocaustics.core.clihelp import Scored, listed, verb
from emocaustics.core.clihelp import DefaultsFormatter
from emocaustics.core.errors import SamplesFailed, UsageError
from emocaustics.scoring.fanout import wants_ray
from emocaustics.tasks.longdialogue.score.predictors import PREDICTORS
from emocaustics.tasks.longdialogue.task import RAY_ABOVE


def register_score(score_subparsers: Any) -> None:
    """`emocaustics score sextuple|emotion ...` (the same options for both)."""
    for task, what in (("sextuple", "sextuples per utterance"), ("emotion", "emotion event chains per speaker")):
        verb(score_subparsers, task, run, help=f"EmoCaustics {what}", description=__doc__.split("\n\n")[0],
             formatter_class=DefaultsFormatter, options=_options,
             pred=dict(help="prediction folder, or a built-in predictor: oracle | baseline"),
             data=dict(default=None, help="dataset folder with chat/ and emo/ (default: the predictions' record, else "
                                          "$EMOCAUSTICS_DATA or the fetch cache)"),
             allow="exit 0 even when some dialogues failed (default: exit status 3)").set_defaults(task=task)


def _options(p: Any) -> None:
    p.add_argument("--gt", dest="data", help=argparse.SUPPRESS)  # the old name of --data, still accepted
    p.add_argument("--subset", default=None, help="all | paper-100 | long-20 | sample (default: the predictions' "
                                                  "record, else all of an explicit --data folder, else sample)")
    p.add_argument("--ids", default=None, help="dialogue ids, e.g. 1,2,3 (within the subset)")
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
    p.add_argument("--out", default=None, help="write items.parquet, dialogues.parquet, summary.csv, summary.json here")
    p.add_argument("--ignore-provenance", action="store_true",
                   help="score even when the predictions were made from other data than this ground truth")


def _load_predictions(task: str, pred: str, dialogues: list, compat: str = "spec"
                      ) -> tuple[dict[int, Any], dict[int, list[str]], list[str], list[str]]:
    """(predictions by dialogue id, notes per dialogue (non-fatal defects), files matching no name pattern,
    prediction files of no chosen dialogue). Scoring is over the chosen dialogues: one without a prediction is failed
    (`engine.triage`); a folder of which no file pairs with any of them is a usage error."""
    from emocaustics.tasks.longdialogue.score.predictors import predict

    if pred in PREDICTORS:
        return predict(pred, task, dialogues), {}, [], []
    from emocaustics.tasks.longdialogue.score.predictions import read_prediction_files

    ps = read_prediction_files(pred, task, raw=compat == "reference")  # the reference reads the files its own way
    wanted = {d.id for d in dialogues}
    if not wanted & set(ps.predictions):
        raise UsageError(f"no prediction file in {pred} matches the chosen dialogues "
                         f"(expected names like {'output_chat_N.json' if task == 'sextuple' else 'output_emotions_N.json'})")
    unpaired = [ps.files.get(n, str(n)) for n in sorted(set(ps.predictions) - wanted)]
    return ps.predictions, ps.notes, ps.ignored, unpaired


def _say_prediction_defects(chosen: list, notes: dict[int, list[str]]) -> None:
    """Defects of the chosen dialogues' prediction files that do not stop scoring (a holder's events not a list,
    odd source ids) are scored as the prediction says; each is named on stderr (file, record, field), so that a
    score lowered by a damaged file never goes unexplained."""
    lines = [note for d in chosen for note in notes.get(d.id, [])]
    for line in lines[:20]:
        print(f"prediction defect: {line}", file=sys.stderr)
    if len(lines) > 20:
        print(f"prediction defects: {len(lines)} in all", file=sys.stderr)


def run(args: argparse.Namespace) -> Scored:
    from emocaustics.core.provenance import check, read
    from emocaustics.core.task import content_hash
    from emocaustics.models.embedders import parse_embedder_spec
    from emocaustics.tasks.longdialogue.data.subsets import default_subset, parse_ids, resolve

    parse_embedder_spec(args.embedder)  # a bad spec fails before any data is loaded
    # the prediction folder's record (provenance.json), unless predictions are built in or it is ignored; None
    # without one: said once the predictions are read (a usage error stays the one line)
    record = None if args.pred in PREDICTORS or args.ignore_provenance else read(args.pred)
    made_for = (record or {}).get("dataset") or {}
    # One rule for the selection: what the predictions record; else every dialogue of an explicit --data folder;
    # else our sample dialogues (as `extract` does).
    ids = parse_ids(args.ids) if args.ids else (made_for.get("ids") if record and not args.subset else None)
    root = args.data or (made_for.get("data") if record else None)
    subset = args.subset or (made_for.get("subset") if record else None) or default_subset(None, ids, root)
    pairing = args.pairing if args.pairing != "verified" or not record else made_for.get("pairing", "verified")
    dialogues, corpus = resolve(subset, ids, root=root, pairing=pairing)
    if record is not None:
        check(record, args.task, {str(d.id): content_hash(d) for d in dialogues}, f"--pred {args.pred}")
    # Defects of the ground truth are part of the result: all in summary.json, the unusual ones on stderr too
    # (the published data's 400 duplicate copies and 399 renumbered files would drown the rest there).
    defects = [str(d) for d in corpus.defects]
    unusual = [str(d) for d in corpus.defects if d.kind not in ("duplicate", "mispaired", "source_self")]
    for line in unusual[:20]:
        print(f"data defect: {line}", file=sys.stderr)
    if len(defects) > 20:
        print(f"data defects: {len(defects)} in all (see summary.json / --json)", file=sys.stderr)
    predictions, notes, ignored, unpaired = _load_predictions(args.task, args.pred, dialogues, args.compat)
    _say_prediction_defects(dialogues, notes)
    note_counts = {k: len(v) for k, v in notes.items()}  # the scorer counts them per dialogue
    if record is None and not args.ignore_provenance and args.pred not in PREDICTORS:
        print(f"note: {args.pred} has no provenance.json: which data these predictions were made from cannot be "
              "checked", file=sys.stderr)
    if unpaired:  # named before the score: predictions of dialogues outside the selection are not in it
        print(f"warning: {len(unpaired)} prediction file(s) in {args.pred} pair with no chosen dialogue and were not "
              f"scored: {listed(unpaired, 20)}", file=sys.stderr)
    from emocaustics.models.spec import parse_llm_spec

    judge = None if args.judge.strip().lower() == "none" else parse_llm_spec(args.judge)  # an edge: parsed here
    from emocaustics.tasks.longdialogue.score.plan import score_with_ray

    result = score_with_ray(args.task, dialogues, predictions, embedder=args.embedder, judge=judge,
                            compat=args.compat, on_judge_error=args.on_judge_error, notes=note_counts,
                            ray=wants_ray(args.engine, len(dialogues), RAY_ABOVE))
    result.summary["pred"] = args.pred
    result.summary["data_defects"] = defects
    result.summary["ignored_files"] = ignored
    result.summary["unpaired_files"] = unpaired
    if args.out:
        result.write(args.out)
    s = result.summary
    fmt = lambda v: "n/a" if v is None else f"{v:.4f}"  # noqa: E731
    text = [f"{s['task']}: {s['dialogues']} dialogues, score {fmt(s['score'])} (micro {fmt(s['micro_score'])}), "
            f"{len(s['failures'])} failures, {s['judge_failures']} judge failures, {s['seconds']} s ({s['path']})",
            "  " + ", ".join(f"{k} {fmt(v)}" for k, v in s["components"].items())]
    text += [f"  dialogue {f['dialogue']}: {f['reason']}" for f in s["failures"][:10]]
    if len(s["failures"]) > 10:
        text.append(f"  ... and {len(s['failures']) - 10} more (see --out or --json)")
    return Scored(s, "\n".join(text) + "\n",
                  SamplesFailed(len(s["failures"]), s["dialogues"], "dialogues") if s["failures"] else None)

