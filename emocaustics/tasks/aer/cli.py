"""`emocaustics score aer --pred SUBMISSION --split sample|dev|test [--data DIR] [--json] [--allow-failures]`:
score a Codabench submission against a split by the organisers' rule (a gold id absent from the file scores 0 and is
listed). SUBMISSION is the `submission.jsonl`, its zip, or a folder holding one `submission.jsonl` (a config's
predictions folder, or a run folder with one AER config). The scores are printed overall, by gold size and by topic;
a submission that lacks questions exits with status 3, as `run` does when samples fail, unless `--allow-failures`, and
so does one whose run failed questions (the run writes them with an empty answer and lists them in failures.jsonl
beside the submission: they count as failed, as in the job); an empty submission, or one whose ids are not the
split's, is refused (status 2).

`emocaustics aer validate SUBMISSION --split S [--data DIR] [--json]` lists every problem of the file (line and
field), not the first ones, and the split's questions it lacks; exit status 2 when it has a problem."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from emocaustics.core.clihelp import Scored, listed, verb

if TYPE_CHECKING:
    from emocaustics.tasks.aer.scoring import Submission


def register_score(score_subparsers: argparse._SubParsersAction) -> None:
    verb(score_subparsers, "aer", score_command, help="score a SemEval-2026 Task 12 submission (submission.jsonl) "
                                                      "against a split", description=__doc__.splitlines()[0],
         pred=dict(help="submission file (one {\"id\": \"q-N\", \"answer\": \"A,C\"} per line), its zip, or a "
                        "folder holding one submission.jsonl (a run's or a config's predictions folder)"),
         data=dict(help="local copy of the data (default: $EMOCAUSTICS_AER_DATA, else the fetch cache)"),
         options=lambda p: p.add_argument("--split", required=True, choices=("sample", "dev", "test", "train")),
         allow="exit 0 even when questions are missing from the submission (default: exit status 3)")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("aer", help="SemEval-2026 Task 12 submission checks")
    sub = p.add_subparsers(dest="aer_command", required=True)
    v = sub.add_parser("validate", help="list every problem of a submission against a split (each line and field); "
                                        "exit status 2 when it has one")
    v.add_argument("file", help="submission.jsonl, its zip, or a folder holding one submission.jsonl")
    v.add_argument("--split", required=True, choices=("sample", "dev", "test", "train"))
    v.add_argument("--data", help="local copy of the data (default: $EMOCAUSTICS_AER_DATA, else the fetch cache)")
    v.add_argument("--json", action="store_true", help="print {ok, problems, missing} as JSON")
    v.set_defaults(func=validate_command)


def validate_command(args: argparse.Namespace) -> int:
    from emocaustics.core.errors import DataError
    from emocaustics.tasks.aer.data import load_split
    from emocaustics.tasks.aer.scoring import check_lines, submission_text

    known = [q.id for q in load_split(args.data, args.split).questions]
    name, text, _ = submission_text(args.file)
    errors, preds = check_lines(text, set(known))
    missing = [qid for qid in known if qid not in preds]
    if args.json:
        print(json.dumps({"ok": not errors, "problems": [{"file": name, "problem": e} for e in errors],
                          "missing": missing}, ensure_ascii=False))
    else:
        for e in errors:
            print(f"{name}: {e}")
        print(f"{name}: {len(errors)} error(s); {len(missing)} question(s) of split {args.split} missing (each "
              "scores 0)")
    if errors:
        raise DataError(f"not a valid submission: {len(errors)} error(s), each listed above; the first: {errors[0]}",
                        file=name)
    return 0


def score_command(args: argparse.Namespace) -> Scored:
    from emocaustics.core.errors import SamplesFailed, UsageError
    from emocaustics.tasks.aer.data import load_split, to_sample
    from emocaustics.tasks.aer.scoring import Item, read_submission, summarize

    data = load_split(args.data, args.split)
    data.check(require_documents=False)
    samples = [to_sample(q, data) for q in data.questions]
    lacking = [s.id for s in samples if s.target is None]
    if lacking:
        raise UsageError(f"split {args.split} has no gold answers for {len(lacking)} question(s) (for test: put "
                         f"reference.jsonl in {data.root})")
    sub = read_submission(args.pred, samples)
    failed = run_failures(sub)
    items = [Item(s.id, s.input["topic_id"], tuple(s.target), None if s.id in failed else sub.predictions.get(s.id),
                  failed.get(s.id) or (None if s.id in sub.predictions else "missing from the submission"))
             for s in samples]
    summary = summarize(items, split=args.split, missing=sub.missing)
    summary["failed_in_run"] = [s.id for s in samples if s.id in failed]
    why = [f"{len(summary['missing'])} missing from the submission"] if summary["missing"] else []
    why += [f"{len(summary['failed_in_run'])} failed in its run"] if summary["failed_in_run"] else []
    return Scored(json.dumps(summary, ensure_ascii=False), _summary(args.split, summary), SamplesFailed(
        len(summary["missing"]) + len(summary["failed_in_run"]), summary["total"],
        f"questions of {args.pred}: {', '.join(why)}") if why else None)


def run_failures(sub: "Submission") -> dict[str, str]:
    """Questions the run that wrote this submission failed, by id with the reason: a run writes a failed question
    with an empty answer (Codabench needs every id) and its failure in failures.jsonl beside the submission, so that
    scoring the submission counts it failed, as the job did. An answer that is not empty wins (an edited file)."""
    from emocaustics.core.task import Failure
    from emocaustics.tasks.aer.task import AerTask

    if sub.source is None:
        return {}
    beside = AerTask().store.read_predictions(sub.source.parent)
    return {qid: f"failed in the run: {got}" for qid, got in beside.items()
            if isinstance(got, Failure) and sub.predictions.get(qid) == ()}


def _summary(split: str, summary: dict) -> str:
    lines = [f"aer {split}: score {summary['score']:.4f} over {summary['total']} questions (exact "
             f"{summary['exact_match']}, partial {summary['partial_match']}, wrong {summary['wrong']}; missing "
             f"{len(summary['missing'])}{', failed ' + str(len(summary['failed_in_run'])) if summary['failed_in_run'] else ''})"]
    lines += [f"  {what} {value}: score {block['score']:.4f} over {block['total']} (exact {block['exact_match']}, "
              f"partial {block['partial_match']}, wrong {block['wrong']})"
              for what, key in (("gold size", "by_gold_size"), ("topic", "by_topic"))
              for value, block in summary[key].items()]
    lines += [f"  {what.replace('_', ' ')} ids: {listed(summary[what])}" for what in ("missing", "failed_in_run")
              if summary[what]]
    return "\n".join(lines) + "\n"
