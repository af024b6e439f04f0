"""Command line of the `ecpe` task.

    emocaustics score ecpe --pred PRED [--data GOLD_DIR] [--json] [--allow-failures]
        PRED is a folder holding Subtask_1_*.json and/or Subtask_2_*.json (official names: Subtask_N_pred.json), the
        submission.zip a run writes (or any zip with those files at its root, as CodaLab reads it), or one
        Subtask_N_*.json file. Gold: Subtask_N_gold.json or the organisers' Subtask_N_test.json in --data (default:
        $EMOCAUSTICS_ECAC_DATA, else the fetch cache). A subtask is scored when its prediction file exists. Prints
        `key:value` lines exactly like the official scores.txt, or with --json the official keys as numbers (nan as
        null) plus `per_emotion`, `problems` and `missing`. Warnings go to stderr. A file that cannot be scored:
        status 2, nothing scored, the error line naming file, conversation and field (pair); several errors are each
        listed on stderr first; so is a file that pairs with no gold conversation. A gold conversation missing from
        the file is a failed sample, as in a job: scored as predicting no pair, listed, exit status 3 unless
        --allow-failures (the official scorer refuses such a file; `ecpe validate` reports it as an error); so is a
        conversation the run that wrote the files failed (no pair in the files, its failure in failures.jsonl beside
        them).
    emocaustics ecpe validate FILE [--subtask N] [--data GOLD_DIR] [--json]
        check a prediction file (Subtask_N_*.json), or each one in the submission.zip a run writes or in a folder
        (found as `score ecpe` finds them; --subtask picks one): every error and warning, against the gold of --data
        (default: $EMOCAUSTICS_ECAC_DATA, else the fetch cache; with neither, the format only, said on stderr); exit
        status 2 when a file has an error.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import math
import re
import sys
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

from emocaustics.core.clihelp import Scored, listed, verb
from emocaustics.core.errors import UsageError


_GOLD = dict(flags=("--data", "--gold"), dest="gold", type=Path, default=None, metavar="GOLD_DIR")


def register_score(score_subparsers: Any) -> None:
    verb(score_subparsers, "ecpe", score_command, help="SemEval-2024 Task 3 submissions: the official metrics",
         description="Score Subtask_1_*.json / Subtask_2_*.json predictions with the official SemEval-2024 Task 3 "
                     "metrics; prints key:value lines like the official scores.txt (or JSON with --json).",
         pred=dict(type=Path, metavar="PRED", help="folder with Subtask_1_*.json and/or Subtask_2_*.json predictions, "
                                                   "the submission.zip a run writes, or one Subtask_N_*.json file"),
         data=_GOLD | dict(help="gold folder (default: $EMOCAUSTICS_ECAC_DATA, else the fetch cache)"),
         json_help="print JSON: official keys, per_emotion tables, problems, missing conversations",
         allow="exit 0 even when gold conversations are missing from the prediction (default: status 3)")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("ecpe", help="SemEval-2024 Task 3 data and submission checks")
    sub = p.add_subparsers(dest="ecpe_command", required=True)
    v = sub.add_parser("validate", help="check a prediction file; exit status 2 when it has an error")
    v.add_argument("file", type=Path, help="a Subtask_N_*.json file, or the submission zip or folder a run writes")
    v.add_argument("--subtask", type=int, choices=(1, 2), default=None,
                   help="default: from the file name (a zip or folder: every subtask in it)")
    gold = {k: v for k, v in _GOLD.items() if k != "flags"}
    v.add_argument(*_GOLD["flags"], **gold, help="gold folder: also check ids, ranges and labels (with none, the "
                                                 "format only) (default: $EMOCAUSTICS_ECAC_DATA, else the fetch cache)")
    v.add_argument("--json", action="store_true", help="print JSON: ok, problems")
    v.set_defaults(func=validate_command)


# -- files ----------------------------------------------------------------------------------------------------------
def choose_name(names: list[str], subtask: int, role: str, where: str) -> str | None:
    """The subtask's prediction (`role="pred"`) or gold (`role="gold"`) file among `names` (a folder's, folders too:
    one named like the file is an error when read, never silently "no file"; or those at a zip's root): the official
    name first (Subtask_N_pred.json; Subtask_N_gold.json, then the organisers' Subtask_N_test.json), else the only
    other Subtask_N_*.json; None when there is none; several candidates are an error."""
    preferred = ("pred",) if role == "pred" else ("gold", "test")
    for name in preferred:
        if f"Subtask_{subtask}_{name}.json" in names:
            return f"Subtask_{subtask}_{name}.json"
    others = {f"Subtask_{subtask}_{o}.json" for o in {"pred": ("gold", "test"), "gold": ("pred",)}[role]}
    found = sorted(n for n in names if fnmatch.fnmatchcase(n, f"Subtask_{subtask}_*.json") and n not in others)
    if len(found) > 1:
        raise UsageError(f"{where}: several subtask-{subtask} {role} files ({', '.join(found)}); "
                         f"name the one to use Subtask_{subtask}_{preferred[0]}.json")
    return found[0] if found else None


def prediction_files(pred: Path, subtask: int | None = None) -> dict[int, tuple[str, Any]]:
    """subtask -> (name, parsed JSON) of the predictions in `pred`, for `score ecpe` and `ecpe validate` alike: a
    folder or a zip (the files at its root, where CodaLab looks; `subtask` picks one), or one Subtask_N_*.json file
    (its subtask: `subtask`, else the name). A file that is not JSON stays a `DataError` in place of its records, so
    that every file's problems are reported together."""
    from emocaustics.core.errors import DataError
    from emocaustics.core.textfile import decode, parse_json, read_json

    def parsed(read: Any) -> Any:
        try:
            return read()
        except DataError as exc:
            return exc

    if pred.suffix == ".json" or (pred.is_file() and not zipfile.is_zipfile(pred)):  # one file, read or not
        m = re.match(r"Subtask_([12])_.*\.json$", pred.name)
        if subtask is None and not m:
            raise UsageError(f"{pred}: cannot tell the subtask from the name: pass a folder of Subtask_N_*.json "
                             "predictions, a submission zip, or one file named Subtask_1_*.json or Subtask_2_*.json "
                             "(`ecpe validate`: or give --subtask)")
        return {subtask or int(m.group(1)): (str(pred), parsed(lambda: read_json(pred)))}  # type: ignore[union-attr]
    if not pred.exists():
        raise UsageError(f"{pred}: no such prediction folder, zip or file")
    zipped, out = pred.is_file(), {}
    # a folder or a zip, whose entries are read while it is open
    with zipfile.ZipFile(pred) if zipped else contextlib.nullcontext() as zf:  # type: ignore[attr-defined]
        names = [n for n in zf.namelist() if "/" not in n] if zipped else [p.name for p in pred.iterdir()]
        for st in (1, 2):
            if (name := choose_name(names, st, "pred", str(pred))) is None:
                continue
            label = f"{pred}:{name}" if zipped else str(pred / name)
            out[st] = (label, parsed(lambda: parse_json(decode(zf.read(name), label), label) if zipped
                                     else read_json(pred / name)))  # noqa: B023 (called at once)
    if not out:
        raise UsageError(f"{pred}: no Subtask_1_*.json or Subtask_2_*.json prediction file"
                         + (" at the root of the zip (where CodaLab reads them)" if zipped else ""))
    if subtask is not None and subtask not in out:
        raise UsageError(f"{pred}: no Subtask_{subtask}_*.json prediction in it (it holds subtask "
                         f"{' and '.join(map(str, out))})")
    return out if subtask is None else {subtask: out[subtask]}


def read_gold_file(gold_dir: Path, subtask: int, pred_name: str) -> Any:
    """The subtask's gold in `gold_dir` (`choose_name`'s choice) for the prediction `pred_name`, read and checked
    (`gold.read_gold`: a `SubmissionError` when it has an error)."""
    from emocaustics.core.textfile import read_json
    from emocaustics.tasks.ecpe.gold import read_gold

    if not gold_dir.is_dir():
        raise UsageError(f"{gold_dir}: not a folder (the gold data)")
    name = choose_name([p.name for p in gold_dir.iterdir()], subtask, "gold", str(gold_dir))
    if name is None:
        raise UsageError(f"{gold_dir}: no Subtask_{subtask}_gold.json or Subtask_{subtask}_test.json for {pred_name}")
    return read_gold(read_json(gold_dir / name), subtask, str(gold_dir / name))


def _kinds(problems: list[Any]) -> str:
    """`u_prefix x2, unknown_emotion x1`: how many problems of each kind, the most frequent first."""
    return ", ".join(f"{k} x{n}" for k, n in Counter(p.kind for p in problems).most_common())


def _report_problems(problems: list[Any], limit: int = 5) -> None:
    warnings = [p for p in problems if p.severity == "warning"]
    if warnings:
        print(f"{len(warnings)} warning(s): {_kinds(warnings)}", file=sys.stderr)
    for p in warnings[:limit]:
        print(f"  {p}", file=sys.stderr)


# -- handlers ----------------------------------------------------------------------------------------------------
def score_command(args: argparse.Namespace) -> Scored:
    from emocaustics.core.errors import DataError, SamplesFailed
    from emocaustics.tasks.ecpe import data
    from emocaustics.tasks.ecpe.official import scores_txt
    from emocaustics.tasks.ecpe.scoring import score_subtask
    from emocaustics.tasks.ecpe.validate import SubmissionError, check_prediction

    preds = prediction_files(args.pred)
    gold_dir = args.gold if args.gold is not None else data.locate(None)
    errors: list[str] = []  # every problem that stops scoring, of every file, each one line
    scored: list[tuple[Any, Any, list[Any]]] = []  # (gold, checked prediction, gold conversations missing from it)
    for st, (pred_name, records) in preds.items():
        try:
            gold = read_gold_file(gold_dir, st, pred_name)
        except SubmissionError as exc:
            errors.extend(str(p.as_error()) for p in exc.errors)
            continue
        if isinstance(records, DataError):
            errors.append(str(records))
            continue
        checked = check_prediction(records, st, pred_name, gold)
        # a missing gold conversation is a failed sample (scored as no pair), as in a job; the other errors stop scoring
        absent = [p.conversation for p in checked.problems if p.kind == "missing_conversation"]
        checked.problems = [p for p in checked.problems if p.kind != "missing_conversation"]
        errors.extend(str(p.as_error()) for p in checked.errors)
        if not checked.errors and not checked.pairs:
            n = len(records) if isinstance(records, list) else 0
            errors.append(str(DataError(f"pairs with no gold conversation of {gold.file} ({n} conversation(s) in the "
                                        "file, none of them in the gold): nothing to score", file=pred_name)))
        if not checked.errors:
            scored.append((gold, checked, absent))
    if len(errors) == 1:  # one problem: the one error line says it all
        raise UsageError(f"{errors[0]}; nothing scored")
    if errors:
        for line in errors:
            print(line, file=sys.stderr)
        raise UsageError(f"{len(errors)} error(s) in {', '.join(name for name, _ in preds.values())}, each listed "
                         "above; nothing scored")
    results, missing = [], {}
    for gold, checked, absent in scored:
        results.append(score_subtask(gold, checked))
        if absent:
            missing[gold.subtask] = absent
            print(f"{checked.file}: {len(absent)} of {len(gold.conversations)} gold conversation(s) missing, each "
                  f"scored as predicting no pair: {listed(absent)}", file=sys.stderr)
    failed_in_run = run_failures(args.pred, [checked for _, checked, _ in scored])
    if failed_in_run:
        print(f"{len(failed_in_run)} conversation(s) failed in the run that wrote these files (failures.jsonl), "
              f"scored as predicting no pair: {listed(failed_in_run)}", file=sys.stderr)
    for r in results:
        _report_problems(r.problems)
    doc: dict[str, Any] = {k: None if math.isnan(v) else v for r in results for k, v in r.scores.items()}
    doc["per_emotion"] = {f"subtask_{r.subtask}": r.table.to_dicts() for r in results}
    doc["problems"] = [p.to_json() for r in results for p in r.problems]
    doc["missing"] = {f"subtask_{st}": ids for st, ids in missing.items()}
    doc["failed_in_run"] = failed_in_run
    failed = {int(cid) for ids in missing.values() for cid in ids} | set(failed_in_run)
    why = (["missing from the files"] if missing else []) + (["failed in their run"] if failed_in_run else [])
    total = {cid for gold, _, _ in scored for cid in gold.conversations}
    return Scored(doc, "".join(scores_txt(r.scores) for r in results), SamplesFailed(
        len(failed), len(total), f"conversation(s) of {args.pred} {' or '.join(why)}") if failed else None)


def run_failures(pred: Path, checked: list[Any]) -> list[int]:
    """Conversations the run that wrote these files failed: a run writes a failed conversation with no pair (the
    official files need every conversation) and its failure in failures.jsonl beside them, so that scoring the files
    counts it failed, as the job did. A conversation with pairs in a file wins (an edited file)."""
    from emocaustics.core.task import Failure
    from emocaustics.tasks.ecpe.task import EcpeTask

    beside = EcpeTask().store.read_predictions(pred if pred.is_dir() else pred.parent)
    ids = {int(cid) for cid, got in beside.items() if isinstance(got, Failure) and cid.lstrip("-").isdigit()}
    return sorted(cid for cid in ids if all(c.pairs.get(cid) == [] for c in checked))


def validate_command(args: argparse.Namespace) -> int:
    from emocaustics.core.errors import DataError
    from emocaustics.tasks.ecpe import data
    from emocaustics.tasks.ecpe.validate import check_prediction, grouped

    targets = prediction_files(args.file, args.subtask)
    # as `score ecpe`; None (no $EMOCAUSTICS_ECAC_DATA, nothing fetched): the format only (a bad variable is an error)
    gold_dir = args.gold if args.gold is not None else data.SOURCE.located()
    if gold_dir is None:
        print(f"no gold data (--data, ${data.ENV} or `emocaustics data fetch ecpe`): the format only is checked, not "
              "conversation ids, ranges or labels", file=sys.stderr)
    checked = []
    for subtask, (name, records) in targets.items():
        if isinstance(records, DataError):  # a file that is not JSON: nothing else to say about it
            raise records
        gold = None if gold_dir is None else read_gold_file(gold_dir, subtask, name)
        checked.append(check_prediction(records, subtask, name, gold))
    problems = [p for c in checked for p in c.problems]
    errors = [p for c in checked for p in c.errors]
    if args.json:
        print(json.dumps({"ok": not errors, "problems": [p.to_json() for p in problems]}, indent=1,
                         ensure_ascii=False))
    else:
        for c in checked:  # problems alike but for the conversation are one line (a partial submission's)
            for line in grouped(c.problems):
                print(line)
            print(f"{c.file}: {len(c.errors)} error(s), {len(c.warnings)} warning(s)")
    if errors:
        first = errors[0].as_error()  # the error line names the first error's file, record and field
        raise DataError(f"not a valid submission: {len(errors)} error(s) ({_kinds(errors)}), listed above; the "
                        f"first: {first.detail}", file=first.file, record=first.record, field=first.field)
    return 0
