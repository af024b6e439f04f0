"""Where a run's files go and what they hold, and the task's prediction store (`core.contract.PredictionStore`).

`OUT/output_chat_N.json` holds dialogue N's sextuple prediction and `OUT/output_emotions_N.json` its emotion chains,
in the reference formats and names, written by the scorer's own writers (`score/predictions.py`; the scorer pairs
files by the N in their names); `OUT/failures.jsonl` one line per failed dialogue with its
reason. Each file is written to a temporary name and renamed, so a killed run never leaves half a prediction behind.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from emocaustics.core.task import Failure


def write_prediction(out: Path, task: str, dialogue: int, prediction: Any) -> Path:
    """One dialogue's prediction in the reference format, through the scorer's writer (so names and shapes agree)."""
    from emocaustics.tasks.longdialogue.score.predictions import write_chain_predictions, write_sextuple_predictions

    if task == "sextuple":
        return write_sextuple_predictions(out, dialogue, prediction)
    return write_chain_predictions(out, dialogue, prediction)


def append_failure(out: Path, row: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "failures.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, ensure_ascii=False) + "\n")


_PRED_RE = re.compile(r"^(?:output_)?chat_(\d+)\.json$")


def read_prior(src: Path, dialogues: list[int]) -> dict[str, Any]:
    """Each dialogue's sextuple prediction in a previous run's folder, for the chain `window` method to build on: the
    records as written, or a `Failure` (step `input`) naming the missing or unreadable file."""
    if not src.is_dir():
        raise FileNotFoundError(f"{src} is not a directory")
    # `output_chat_N.json` as we write them, or `chat_N.json`
    files = {int(m.group(1)): p for p in src.iterdir() if (m := _PRED_RE.match(p.name))}
    return {str(d): _prior(files.get(d), d, src) for d in dialogues}


def _prior(path: Path | None, d: int, src: Path) -> Any:
    if path is None:
        return Failure("input", f"no sextuple prediction (output_)chat_{d}.json in {src}")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return Failure("input", f"{path}: unreadable sextuple prediction: {exc}")
    if not isinstance(obj, list) or not all(isinstance(r, dict) for r in obj):
        return Failure("input", f"{path}: a sextuple prediction must be a list of records")
    return obj


class DialogueStore:
    """The reference formats, one file per dialogue, and `failures.jsonl` keyed by dialogue."""

    def __init__(self, task_name: str) -> None:
        self.task_name = task_name

    def write_prediction(self, out: Path, sample_id: str, prediction: Any) -> None:
        if isinstance(prediction, Failure):
            append_failure(out, {"dialogue": int(sample_id), "step": prediction.step, "reason": prediction.reason})
        else:
            write_prediction(out, self.task_name, int(sample_id), prediction)

    def read_back(self, sample_id: str, value: Any) -> Any:
        """A prediction (or Failure) just written, as `read_predictions` gives it back (a job scores it from memory):
        its file's JSON, parsed."""
        from emocaustics.tasks.longdialogue.score import predictions as p

        if isinstance(value, Failure):
            return Failure(f"extraction {value.step}", str(value.reason))
        if self.task_name == "sextuple":
            return p._parse_sextuple_file(json.loads(json.dumps(list(value))), f"output_chat_{int(sample_id)}.json")[0]
        obj = value if p._is_json_shape(value) else p.chains_to_json(value)
        return p._parse_chain_file(json.loads(json.dumps(obj)), f"output_emotions_{int(sample_id)}.json")[0]

    def read_predictions(self, out: Path) -> dict[str, Any]:
        from emocaustics.tasks.longdialogue.score.predictions import read_prediction_files

        found: dict[str, Any] = {}
        path = out / "failures.jsonl"
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                found[str(row["dialogue"])] = Failure(f"extraction {row.get('step')}", str(row.get("reason")))
        found.update({str(k): v for k, v in read_prediction_files(out, self.task_name).predictions.items()})
        return found
