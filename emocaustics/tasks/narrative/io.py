"""Reading and writing JSON v3 files, and pairing a folder of predictions with a folder of ground truth.

Files pair by name: `<story>.json` in the GT folder with `<story>.json` or `<story>_pred.json` in the prediction folder.
Reading never raises past a file: `load_story` returns the Story or the error naming file and JSON path, so a batch
of thousands keeps going and lists what it could not read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emocaustics.core.errors import DataError, UsageError
from emocaustics.core.textfile import read_json
from emocaustics.tasks.narrative.schema import NarrativeFormatError, Story, parse_story

PRED_SUFFIX = "_pred"


def missing_prediction(name: str, pred_dir: Path | str | None) -> str:
    """The reason a ground-truth story without a prediction file fails (the same words in `score` and `run`)."""
    return f"no prediction file {name}{PRED_SUFFIX}.json or {name}.json in {pred_dir}"


def story_name(path: Path) -> str:
    """The pairing key of a file: its stem without a trailing `_pred`."""
    return path.stem.removesuffix(PRED_SUFFIX)


def decode(path: Path) -> Any:
    """The JSON value of a file; NarrativeFormatError (line and column) when it is not JSON."""
    try:  # core/textfile: a BOM and CRLF are fine; non-UTF-8 or not JSON names the line, a folder is refused
        return read_json(path, what="JSON v3 file")
    except DataError as exc:
        raise NarrativeFormatError(exc.detail, file=exc.file, record=exc.record) from None


def read_story(path: str | Path) -> Story:
    """One JSON v3 file -> Story (raises NarrativeFormatError naming the file and the JSON path)."""
    p = Path(path)
    return parse_story(decode(p), str(p), story_name(p))


def load_story(path: str | Path) -> Story | NarrativeFormatError:
    """Like read_story, but the error is returned (batch use)."""
    try:
        return read_story(path)
    except NarrativeFormatError as exc:
        return exc


def write_story(path: Path, obj: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path


@dataclass
class Pairing:
    pairs: list[tuple[str, Path, Path]] = field(default_factory=list)  # (story, pred file, gt file)
    unpaired_pred: list[str] = field(default_factory=list)  # file names (a story name hides a `_pred` suffix)
    unpaired_gt: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)  # a story with both <s>.json and <s>_pred.json predictions


def by_name(folder: Path) -> tuple[dict[str, Path], list[str]]:
    """A folder's .json files by story name (the pairing rule of `score` and `run` alike), and the name clashes."""
    found: dict[str, Path] = {}
    dups: list[str] = []
    for path in sorted(folder.glob("*.json")):
        name = story_name(path)
        if name in found:  # <s>.json and <s>_pred.json both there: the _pred one wins, the clash is reported
            dups.append(f"{name}: {found[name].name} and {path.name}")
            if not path.stem.endswith(PRED_SUFFIX):
                continue
        found[name] = path
    return found, dups


def pair_folders(pred_dir: Path, gt_dir: Path) -> Pairing:
    """Pair the JSON files of two folders by story name; lists what has no partner."""
    for d, what in ((pred_dir, "prediction"), (gt_dir, "ground-truth")):
        if not d.is_dir():
            raise UsageError(f"{what} folder {d} does not exist")
    preds, dup_p = by_name(pred_dir)
    gts, dup_g = by_name(gt_dir)
    if not gts:
        raise UsageError(f"no .json files in the ground-truth folder {gt_dir}")
    out = Pairing(duplicates=dup_p + dup_g)
    for name in sorted(gts):
        if name in preds:
            out.pairs.append((name, preds[name], gts[name]))
        else:
            out.unpaired_gt.append(name)
    out.unpaired_pred = sorted(preds[name].name for name in set(preds) - set(gts))
    return out
