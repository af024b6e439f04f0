"""The organisers' scoring rule, its breakdowns, and the competition's files (submission.jsonl, its zip, results JSON).

Rule (the task README): with gold set G and predicted set P, a question scores 1.0 when P == G, 0.5 when P is a
non-empty proper subset of G, and 0 otherwise (a wrong option anywhere, an empty P, a superset of G). The score is
the mean over the split's questions; a question with no prediction (absent from a submission, or a solver failure)
scores 0 and is listed.
"""

from __future__ import annotations

import json
import zipfile
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emocaustics.core.errors import DataError
from emocaustics.core.task import Sample
from emocaustics.core.textfile import decode, json_lines, read_text, shown
from emocaustics.tasks.aer.data import MAX_LISTED, parse_gold

OUTCOMES = ("exact", "partial", "wrong")
COUNT_KEYS = ("exact_match", "partial_match", "wrong")  # each outcome's count in a summary


def question_score(predicted: Iterable[str] | None, gold: Iterable[str]) -> float:
    p, g = set(predicted or ()), set(gold)
    if p and p == g:
        return 1.0
    if p and p < g:
        return 0.5
    return 0.0


def outcome(predicted: Iterable[str] | None, gold: Iterable[str]) -> str:
    return {1.0: "exact", 0.5: "partial", 0.0: "wrong"}[question_score(predicted, gold)]


@dataclass(frozen=True)
class Item:
    """One question to score: its gold, what was predicted (None: nothing), and why nothing (failure reason)."""

    id: str
    topic_id: int
    gold: tuple[str, ...]
    predicted: tuple[str, ...] | None
    reason: str | None = None  # set when predicted is None: "missing from the submission", the solver's failure ...

    @property
    def score(self) -> float:
        return question_score(self.predicted, self.gold)

    @property
    def outcome(self) -> str:
        return outcome(self.predicted, self.gold)


def _counts(items: list[Item]) -> dict[str, Any]:
    """score, the three outcomes' rates, total, the three outcomes' counts (the published results' keys, in order)."""
    n = len(items)
    k = {key: sum(1 for it in items if it.outcome == o) for o, key in zip(OUTCOMES, COUNT_KEYS)}
    return {"score": sum(it.score for it in items) / n if n else 0.0,
            **{f"{key}_rate": c / n if n else 0.0 for key, c in k.items()}, "total": n, **k}


def summarize(items: list[Item], *, split: str | None = None, missing: list[str] | None = None) -> dict[str, Any]:
    """The --json summary: score first, rates, counts, failures, missing ids, breakdowns by gold size and topic."""
    by_size: dict[int, list[Item]] = defaultdict(list)
    by_topic: dict[int, list[Item]] = defaultdict(list)
    for it in items:
        by_size[len(it.gold)].append(it)
        by_topic[it.topic_id].append(it)
    unanswered = [it for it in items if it.predicted is None]
    missing = list(missing) if missing is not None else [it.id for it in unanswered]
    return {
        "task": "aer",
        "split": split,
        **_counts(items),
        "unanswered": len(unanswered),
        "missing": missing,
        "by_gold_size": {str(s): _counts(by_size[s]) for s in sorted(by_size)},
        "by_topic": {str(t): _counts(by_topic[t]) for t in sorted(by_topic)},
    }


# -- submission files ------------------------------------------------------------------------------------------------
@dataclass
class Submission:
    predictions: dict[str, tuple[str, ...]]  # id -> letters (may be empty: an empty answer scores 0)
    missing: list[str] = field(default_factory=list)  # gold ids absent from the file (each scores 0)
    source: Path | None = None  # the file read (a zip's path for a zip): a run's per-sample files sit beside it


def parse_letters(raw: Any) -> tuple[str, ...] | None:
    """"A,C" -> ("A", "C"); "" -> (); None when malformed or a letter is not one of A-D (the gold's rule)."""
    if not isinstance(raw, str):
        return None
    return parse_gold(raw)[0] if raw.strip() else ()


SUBMISSION = "submission.jsonl"


def submission_text(path: Path | str) -> tuple[str, str, Path]:
    """(name, text, file) of the submission a user points at: the file itself, the zip Codabench takes (`submission.jsonl`
    inside), or a folder holding one `submission.jsonl` (a config's predictions folder; a run folder with a single
    AER config). Anything else is a usage error that says what to pass."""
    path = Path(path)
    if path.is_dir():
        found = [path / SUBMISSION] if (path / SUBMISSION).is_file() else sorted(path.rglob(SUBMISSION))
        if not found:
            raise DataError(f"no {SUBMISSION} in this folder (nor below it): pass --pred the submission file, its "
                            f"zip, or the predictions folder of a finished AER config", file=str(path))
        if len(found) > 1:
            shown = ", ".join(str(f.parent.relative_to(path)) for f in found[:MAX_LISTED])
            raise DataError(f"{len(found)} {SUBMISSION} files below this folder ({shown}"
                            f"{' ...' if len(found) > MAX_LISTED else ''}): pass --pred one of them", file=str(path))
        path = found[0]
    if not path.is_file():
        raise DataError("no such submission file or folder", file=str(path))
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            names = [n for n in zf.namelist() if n.endswith(".jsonl") and not n.endswith("/")]
            if len(names) != 1:
                raise DataError(f"a submission zip holds one .jsonl file ({SUBMISSION} at its root); this one holds "
                                f"{len(names)}", file=str(path))
            return f"{path}:{names[0]}", decode(zf.read(names[0]), f"{path}:{names[0]}"), path
    return str(path), read_text(path, what="submission file (JSON lines)"), path


def read_submission(path: Path | str, split_samples: list[Sample]) -> Submission:
    """Read `{"id": "q-2420", "answer": "A,C"}` lines against a split (`path`: see `submission_text`). A gold id
    absent from the file is listed in `missing` (it scores 0); an id not in the split, a duplicate id, a malformed
    line or an unknown letter is an error naming the line (all such lines are collected, the first ones listed); a
    file without a single answer is an error too (it pairs with no question: nothing to score)."""
    name, text, source = submission_text(path)
    errors, preds = check_lines(text, {s.id for s in split_samples})
    if errors:
        more = f" (and {len(errors) - MAX_LISTED} more)" if len(errors) > MAX_LISTED else ""
        raise DataError("; ".join(errors[:MAX_LISTED]) + more, file=name)
    return Submission(preds, [s.id for s in split_samples if s.id not in preds], source)


def check_lines(text: str, known: set[str]) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    """(every problem, each naming its line and field, or that it has no answer at all; the answers by id) of a
    submission's text against the ids of a split: what `read_submission` refuses a file for (it lists the first ones)
    and `aer validate` lists in full."""
    errors: list[str] = []
    seen: dict[str, int] = {}
    preds: dict[str, tuple[str, ...]] = {}
    for n, obj, problem in json_lines(text):
        if problem:
            errors.append(f"line {n}: {problem}")
            continue
        if not isinstance(obj, dict):
            errors.append(f'line {n}: expected an object {{"id": "q-N", "answer": "A,C"}}, got {shown(obj)}')
            continue
        missing = [key for key in ("id", "answer") if key not in obj]
        if missing or not isinstance(obj["id"], str):
            key = missing[0] if missing else "id"
            errors.append(f"line {n}, field {key!r}: " + ("missing" if missing else f"not a string: {shown(obj['id'])}")
                          + ' (expected {"id": "q-N", "answer": "A,C"})')
            continue
        qid = obj["id"]
        letters = parse_letters(obj["answer"])
        if letters is None:
            errors.append(f"line {n} ({qid[:40]}), field 'answer': {shown(obj['answer'])} is not "
                          "comma-separated letters A-D")
        elif qid not in known:
            errors.append(f"line {n}, field 'id': {shown(qid)} is not a question of this split")
        elif qid in seen:
            errors.append(f"line {n}, field 'id': {shown(qid)} again (first on line {seen[qid]})")
        else:
            seen[qid] = n
            preds[qid] = letters
    if not errors and not preds:  # it pairs with no question: nothing to score
        errors.append("the submission has no answer (an empty file): nothing to score")
    return errors, preds


def _id_key(qid: str) -> tuple[int, str]:
    tail = qid.rsplit("-", 1)[-1]
    return (int(tail), qid) if tail.isdigit() else (1 << 62, qid)


def write_submission(path: Path | str, predictions: dict[str, list[str] | tuple[str, ...] | None]) -> tuple[Path, Path]:
    """Write `submission.jsonl` (one line per id, ids in numeric order; None -> an empty answer, which scores 0) and
    the zip Codabench takes (`submission.jsonl` at its root, next to it with the .zip suffix)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": qid, "answer": ",".join(sorted(predictions[qid] or ()))})
             for qid in sorted(predictions, key=_id_key)]
    path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    zpath = path.with_suffix(".zip")
    with zipfile.ZipFile(zpath, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.write(path, arcname="submission.jsonl")
    return path, zpath


def results_document(config: dict[str, Any], summary: dict[str, Any], items: list[Item],
                     raw_outputs: dict[str, str]) -> dict[str, Any]:
    """The published baseline's results shape: `config`, `results`, `predictions` (id, golden, prediction,
    raw_output; letters comma-joined as in the data), plus each question's score."""
    return {
        "config": config,
        "results": summary,
        "predictions": [
            {"id": it.id, "golden": ",".join(it.gold), "prediction": ",".join(it.predicted or ()),
             "raw_output": raw_outputs.get(it.id, it.reason or ""), "score": it.score}
            for it in sorted(items, key=lambda it: _id_key(it.id))
        ],
    }
