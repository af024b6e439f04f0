"""Prediction files in the reference implementation's formats: reading (with failures as data) and writing.

File names (one file per dialogue; pairing is by the dialogue number N in the name, the canonical dialogue id):
- sextuples: written as `output_chat_N.json` (the reference's name); read: `output_chat_N.json`, `chat_N.json`,
  `sextuple_N.json`, `sextuples_N.json`. Content: one record per utterance, in order,
  `{"input_sentence", "holder", "event"?, "final_model_response": [{"target","aspect","opinion","sentiment",
  "rationale"}, ...]}`; `final_model_response` may be one object or a list (several candidates); `[]` = no sextuple.
- chains: written as `output_emotions_N.json`; read: that, `output_emotions_N_events.json`, `emo_N.json`,
  `chains_N.json`. Content: the ground truth's own shape `{holder: {"events": [...]}}`, validated by the data
  layer's `parse_chains`.

Readers never raise on content: a file that cannot be used becomes a failure reason (a string) for its dialogue,
naming the file, the record and the field. Files that match no pattern are listed in `PredictionSet.ignored`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emocaustics.tasks.longdialogue.data.schema import Chains, Sextuple, chains_to_json

SextuplePrediction = list[list[Sextuple]]  # candidates per utterance
SEXTUPLE_NAME = re.compile(r"^(?:output_chat|chat|sextuples?)_(\d+)\.json$")
CHAIN_NAME = re.compile(r"^(?:output_emotions|emo|chains)_(\d+)(?:_events)?\.json$")
# a prediction file's defects of these kinds make the file unusable; others (label noise, odd source ids) are the
# prediction's own errors and are scored as they are
FATAL_KINDS = frozenset({"malformed", "encoding", "unreadable"})
_ALIASES = {"target": "target", "aspect": "aspect", "opinion": "opinion", "opinions": "opinion",
            "sentiment": "sentiment", "rationale": "rationale"}


@dataclass(slots=True)
class PredictionSet:
    """dialogue id -> parsed prediction, or a failure reason (str)."""

    predictions: dict[int, Any] = field(default_factory=dict)
    files: dict[int, str] = field(default_factory=dict)
    notes: dict[int, list[str]] = field(default_factory=dict)  # non-fatal defects, per dialogue
    ignored: list[str] = field(default_factory=list)  # files in the directory that match no pattern


class PredictionError(ValueError):
    pass


def _candidate(obj: Any, where: str) -> Sextuple:
    if not isinstance(obj, dict):
        raise PredictionError(f"{where}: candidate is {type(obj).__name__}, expected an object")
    vals: dict[str, str] = {}
    for key, value in obj.items():
        attr = _ALIASES.get(str(key).strip().lower())
        if attr is None:
            continue  # extra keys (e.g. "holder") are allowed: the reference format carries some
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise PredictionError(f"{where}, field {key!r}: {type(value).__name__} where a string is expected")
        vals[attr] = value
    return Sextuple(**vals)


def parse_sextuple_prediction(obj: Any, file: str) -> SextuplePrediction:
    """Raises PredictionError naming the file, record and field."""
    if not isinstance(obj, list):
        raise PredictionError(f"{file}: top level is {type(obj).__name__}, expected a list of utterance records")
    out: SextuplePrediction = []
    for i, rec in enumerate(obj):
        where = f"{file}, record {i}"
        if not isinstance(rec, dict):
            raise PredictionError(f"{where}: {type(rec).__name__}, expected an object")
        if "final_model_response" not in rec:
            raise PredictionError(f"{where}: field 'final_model_response' is missing")
        resp = rec["final_model_response"]
        if resp is None or resp == {}:
            resp = []
        if isinstance(resp, dict):
            resp = [resp]
        if not isinstance(resp, list):
            raise PredictionError(f"{where}, field 'final_model_response': {type(resp).__name__}, "
                                  "expected a list of sextuple objects")
        out.append([_candidate(c, f"{where} candidate {k}") for k, c in enumerate(resp)])
    return out


def _scan(directory: Path, pattern: re.Pattern[str], out: PredictionSet) -> dict[int, Path]:
    if not directory.is_dir():
        from emocaustics.core.errors import UsageError

        raise UsageError(f"prediction directory {directory} does not exist or is not a directory")
    found: dict[int, Path] = {}
    for path in sorted(directory.iterdir()):
        m = pattern.match(path.name)
        if not m or not path.is_file():
            out.ignored.append(path.name)
            continue
        n = int(m.group(1))
        if n in found:
            out.predictions[n] = f"two prediction files for dialogue {n}: {found[n].name} and {path.name}"
            continue
        found[n] = path
    return found


def _read(path: Path) -> tuple[Any, str | None]:
    from emocaustics.tasks.longdialogue.data.io import read_json

    obj, defect = read_json(path)
    if defect is not None and (obj is None or defect.kind in FATAL_KINDS):
        return None, f"unreadable prediction file: {defect}"
    return obj, None


def _read_predictions(directory: str | Path, pattern: re.Pattern[str],
                      parse: Callable[[Any, str], tuple[Any, list[str]]]) -> PredictionSet:
    """Every prediction file of one task: parsed, or a failure reason; `parse` returns (prediction, notes)."""
    out = PredictionSet()
    for n, path in _scan(Path(directory), pattern, out).items():
        if n in out.predictions:  # duplicate files: already a failure
            continue
        out.files[n] = path.name
        obj, err = _read(path)
        if err:
            out.predictions[n] = err
            continue
        out.predictions[n], notes = parse(obj, path.name)
        if notes:
            out.notes[n] = notes
    return out


def _parse_sextuple_file(obj: Any, name: str) -> tuple[Any, list[str]]:
    try:
        return parse_sextuple_prediction(obj, name), []
    except PredictionError as exc:
        return f"malformed prediction: {exc}", []


def _parse_chain_file(obj: Any, name: str) -> tuple[Any, list[str]]:
    from emocaustics.tasks.longdialogue.data.io import parse_chains

    chains, defects = parse_chains(obj, name)
    if not isinstance(obj, dict):
        return f"malformed prediction: {'; '.join(str(d) for d in defects[:3])}", []
    return chains, [str(d) for d in defects]


def read_prediction_files(directory: str | Path, task: str, *, raw: bool = False) -> PredictionSet:
    """Every prediction file of `task` (sextuple | emotion), parsed; with `raw` (`--compat reference`) each file's JSON
    as it is (`reference.RawPrediction`), for the reference's own reading: only a file that is not JSON at all is a
    failure then."""
    parse = _parse_sextuple_file if task == "sextuple" else _parse_chain_file
    if raw:
        from emocaustics.tasks.longdialogue.score.reference import RawPrediction

        parse = lambda obj, name: (RawPrediction(obj, name), [])  # noqa: E731
    return _read_predictions(directory, SEXTUPLE_NAME if task == "sextuple" else CHAIN_NAME, parse)


def write_sextuple_predictions(directory: str | Path, dialogue_id: int, records: Sequence[dict[str, Any]]) -> Path:
    """Write one dialogue's prediction, its records in the reference shape, as `output_chat_N.json`."""
    return write_json(Path(directory) / f"output_chat_{dialogue_id}.json", list(records))


def write_chain_predictions(directory: str | Path, dialogue_id: int, chains: Chains | dict) -> Path:
    """Write one dialogue's chains as `output_emotions_N.json` (accepts `Chains` or the JSON shape)."""
    obj = chains if _is_json_shape(chains) else chains_to_json(chains)  # type: ignore[arg-type]
    return write_json(Path(directory) / f"output_emotions_{dialogue_id}.json", obj)


def _is_json_shape(chains: Any) -> bool:
    return all(isinstance(v, dict) for v in chains.values())


def write_json(path: Path, obj: Any, indent: int = 1) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, ensure_ascii=False, indent=indent), encoding="utf-8")
    os.replace(tmp, path)  # atomic: a killed job never leaves half a file
    return path
