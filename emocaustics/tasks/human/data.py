"""Crowd ratings in the human-assessment tool's normative JSON: reading, validating, and where the data is published.

Format (one file per experiment run): `{"metadata": {"score": {name: {"positive", "qc", "max"}}, "model": [...],
"qc-model": "qc", "ranking": null | [...], "sorted_scores": null | [...]}, "data": [{"result": [{"model", "score":
{name: value}}, ...], "hit", "assignment", "worker", "duration in seconds", "feedback"?}]}` -- one `data` entry per
assignment (a worker's HIT). Every problem is a named error (file, record, field); an assignment without a quality-
control rating is not an error but a reported `Defect`: its worker may be untestable (QC p = NaN, fails).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emocaustics.core.datasource import DataSource
from emocaustics.core.errors import DataError, UsageError
from emocaustics.core.task import Defect
from emocaustics.core.textfile import read_text, shown

NAME = "humaneval"
ENV_VAR = "EMOCAUSTICS_HUMANEVAL_DATA"
REPO = "TianboJi/Dialogue-Eval"
COMMIT = "33af02448092ad180c1c4c68e454324e170f56a6"
URL = f"https://codeload.github.com/{REPO}/tar.gz/{COMMIT}"
DEFAULT_FILE = "hits_data_FreeTopicRound1.json"
REQUIRED_METADATA = ("score", "model", "qc-model")  # ranking and sorted_scores may be absent (= null)
REQUIRED_RECORD = ("result", "hit", "assignment", "worker", "duration in seconds")
# names the output tables use for their own columns; a score type may not take them
RESERVED = frozenset({"model", "N", "z", "raw", "hitID", "workerID", "assignID", "std", "mean", ""})
NO_QC = "no_qc_rating"


class HitsError(DataError):
    """The ratings file is not in the normative format (wrong type, missing record key, bad value)."""


class MissingMetadataKey(HitsError):
    """`metadata`, or one of its required keys (score, model, qc-model), is missing."""


class ScoreOutOfRange(HitsError):
    """A rating outside [0, max] of its score type."""


class UnknownSystem(HitsError):
    """A rated system that is neither in `metadata.model` nor the qc-model (or an unknown name in `ranking`)."""


class DuplicateAssignment(HitsError):
    """Two records share one assignment id."""


@dataclass(frozen=True)
class ScoreSpec:
    name: str
    positive: bool  # False: reversed before use (value <- max - value)
    qc: bool  # used by the quality-control test
    max: float


@dataclass(frozen=True)
class Metadata:
    scores: tuple[ScoreSpec, ...]  # in the file's order: the order ratings are flattened in
    models: tuple[str, ...]  # competing systems (without the qc model)
    qc_model: str
    ranking: tuple[str, ...] | None
    sorted_scores: tuple[str, ...]  # column order of the system tables (the file's order when null)

    @property
    def score_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.scores)

    @property
    def qc_scores(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.scores if s.qc)

    def to_json(self) -> dict[str, Any]:
        return {"score": {s.name: {"positive": s.positive, "qc": s.qc, "max": s.max} for s in self.scores},
                "model": list(self.models), "qc-model": self.qc_model,
                "ranking": None if self.ranking is None else list(self.ranking),
                "sorted_scores": list(self.sorted_scores)}


@dataclass(frozen=True)
class Rating:
    model: str
    scores: dict[str, float]  # as published (not reversed)


@dataclass(frozen=True)
class Assignment:
    record: int  # index in `data`
    hit: str
    assignment: str
    worker: str
    duration_s: float
    result: tuple[Rating, ...]
    feedback: str | None = None


@dataclass
class Hits:
    file: str
    metadata: Metadata
    assignments: list[Assignment]
    defects: list[Defect] = field(default_factory=list)


# -- reading --------------------------------------------------------------------------------------------------------
def read_hits(path: str | Path) -> Hits:
    """Read and validate a normative JSON file (a raw MTurk CSV: `mturk.read_ratings`)."""
    p = Path(path)
    if p.is_dir():  # never guessed: an output folder of `human process` holds JSON files too
        found = sorted(f.name for f in p.glob("*.json"))
        hint = f"name one of its files: {', '.join(found)}" if found else "it holds no .json file"
        raise UsageError(f"{p}: is a folder, not a ratings file; {hint}")
    return parse_hits(read_json(p, "ratings file"), file=str(p))


def read_json(p: Path, what: str) -> Any:
    """A JSON file's object; core/textfile: a BOM and CRLF are fine, non-UTF-8 bytes name their line."""
    try:
        return json.loads(read_text(p, what=what))
    except json.JSONDecodeError as exc:
        raise HitsError(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})", file=str(p)) from None


def parse_hits(obj: Any, *, file: str = "<memory>") -> Hits:
    """Validate a parsed normative JSON object (see the module docstring for every check)."""
    if not isinstance(obj, dict):
        raise HitsError("top level must be an object with 'metadata' and 'data'", file=file)
    if "metadata" not in obj:
        raise MissingMetadataKey("no 'metadata' object", file=file, field="metadata")
    meta = parse_metadata(obj["metadata"], file=file)
    data = obj.get("data")
    if not isinstance(data, list):
        raise HitsError("'data' must be a list of assignments", file=file, field="data")
    assignments: list[Assignment] = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(data):
        a = _parse_record(rec, i, meta, file)
        if a.assignment in seen:
            raise DuplicateAssignment(f"assignment id {a.assignment!r} already used by data[{seen[a.assignment]}]",
                                      file=file, record=f"data[{i}]", field="assignment")
        seen[a.assignment] = i
        assignments.append(a)
    return Hits(file, meta, assignments, _qc_defects(assignments, meta, file))


def parse_metadata(meta: Any, *, file: str = "<memory>") -> Metadata:
    if not isinstance(meta, dict):
        raise HitsError("'metadata' must be an object", file=file, field="metadata")
    for key in REQUIRED_METADATA:
        if key not in meta:
            raise MissingMetadataKey(f"metadata has no {key!r} key", file=file, field=f"metadata.{key}")
    raw_scores = meta["score"]
    if not isinstance(raw_scores, dict) or not raw_scores:
        raise HitsError("must be a non-empty object of score types", file=file, field="metadata.score")
    scores = []
    for name, attrs in raw_scores.items():
        where = f"metadata.score.{name}"
        if name in RESERVED:
            raise HitsError(f"score type name {name!r} is reserved for a table column", file=file, field=where)
        if not isinstance(attrs, dict):
            raise HitsError("must be an object with positive, qc, max", file=file, field=where)
        for key in ("positive", "qc", "max"):
            if key not in attrs:
                raise MissingMetadataKey(f"score type {name!r} has no {key!r}", file=file, field=f"{where}.{key}")
        if not isinstance(attrs["positive"], bool) or not isinstance(attrs["qc"], bool):
            raise HitsError("'positive' and 'qc' must be true or false", file=file, field=where)
        top = _number(attrs["max"])
        if top is None or top <= 0:
            raise HitsError(f"'max' must be a positive number, got {shown(attrs['max'])}", file=file,
                            field=f"{where}.max")
        scores.append(ScoreSpec(str(name), attrs["positive"], attrs["qc"], top))
    names = [s.name for s in scores]
    clash = [n for n in names if f"raw_{n}" in names]
    if clash:
        raise HitsError(f"score types {clash} collide with raw_<name> columns", file=file, field="metadata.score")
    if not any(s.qc for s in scores):
        raise HitsError("no score type has qc=true: quality control has nothing to test", file=file,
                        field="metadata.score")
    models = _names(meta["model"], file, "metadata.model")
    if not models:
        raise HitsError("must list at least one system", file=file, field="metadata.model")
    qc = meta["qc-model"]
    if not isinstance(qc, str) or not qc:
        raise HitsError("must be the quality-control system's name", file=file, field="metadata.qc-model")
    if qc in models:
        raise HitsError(f"qc-model {qc!r} is also listed as a competing system", file=file, field="metadata.qc-model")
    ranking = None
    if meta.get("ranking") is not None:
        ranking = _names(meta["ranking"], file, "metadata.ranking")
        unknown = [m for m in ranking if m not in models]
        if unknown:
            raise UnknownSystem(f"ranking names systems not in metadata.model: {unknown}", file=file,
                                field="metadata.ranking")
        absent = [m for m in models if m not in ranking]
        if absent:
            raise HitsError(f"ranking must list every system once; missing {absent}", file=file,
                            field="metadata.ranking")
    sorted_scores = tuple(names)
    if meta.get("sorted_scores") is not None:
        sorted_scores = _names(meta["sorted_scores"], file, "metadata.sorted_scores")
        unknown = [s for s in sorted_scores if s not in names]
        if unknown or not sorted_scores:
            raise HitsError(f"sorted_scores names unknown score types {unknown}" if unknown else "is empty",
                            file=file, field="metadata.sorted_scores")
    return Metadata(tuple(scores), models, qc, ranking, sorted_scores)


def _parse_record(rec: Any, i: int, meta: Metadata, file: str) -> Assignment:
    where = f"data[{i}]"
    if not isinstance(rec, dict):
        raise HitsError("must be an object", file=file, record=where)
    for key in REQUIRED_RECORD:
        if key not in rec:
            raise HitsError(f"has no {key!r}", file=file, record=where, field=key)
    ids = {}
    for key in ("hit", "assignment", "worker"):
        value = rec[key]
        if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
            raise HitsError(f"must be a non-empty id, got {shown(value)}", file=file, record=where, field=key)
        ids[key] = str(value)
    where = f"data[{i}] (assignment {ids['assignment'][:40]})"
    duration = _number(rec["duration in seconds"])
    if duration is None or duration < 0:
        raise HitsError(f"must be a non-negative number, got {shown(rec['duration in seconds'])}", file=file,
                        record=where, field="duration in seconds")
    result = rec["result"]
    if not isinstance(result, list) or not result:
        raise HitsError("must be a non-empty list of rated conversations", file=file, record=where, field="result")
    known = set(meta.models) | {meta.qc_model}
    ratings = []
    for j, conv in enumerate(result):
        at = f"result[{j}]"
        if not isinstance(conv, dict) or "model" not in conv or "score" not in conv:
            raise HitsError("must be an object with 'model' and 'score'", file=file, record=where, field=at)
        model = conv["model"]
        if model not in known:
            raise UnknownSystem(f"system {model!r} is not in metadata.model (nor the qc-model {meta.qc_model!r})",
                                file=file, record=where, field=f"{at}.model")
        score = conv["score"]
        if not isinstance(score, dict):
            raise HitsError("must be an object of score values", file=file, record=where, field=f"{at}.score")
        missing = [s for s in meta.score_names if s not in score]
        extra = [s for s in score if s not in meta.score_names]
        if missing or extra:
            raise HitsError(f"score types differ from metadata.score: missing {missing}, unknown {extra}",
                            file=file, record=where, field=f"{at}.score")
        values = {}
        for spec in meta.scores:
            value = score[spec.name]
            num = None if isinstance(value, (bool, str)) else _number(value)
            if num is None:
                raise HitsError(f"must be a number, got {shown(value)}", file=file, record=where,
                                field=f"{at}.score.{spec.name}")
            if not 0 <= num <= spec.max:
                raise ScoreOutOfRange(f"{num:g} is outside [0, {spec.max:g}]", file=file, record=where,
                                      field=f"{at}.score.{spec.name}")
            values[spec.name] = num
        ratings.append(Rating(str(model), values))
    feedback = rec.get("feedback")
    return Assignment(i, ids["hit"], ids["assignment"], ids["worker"], duration, tuple(ratings),
                      None if feedback is None else str(feedback))


def _qc_defects(assignments: list[Assignment], meta: Metadata, file: str) -> list[Defect]:
    """One `no_qc_rating` defect per assignment without a qc conversation, saying whether its worker can still be
    tested (through another assignment) or not."""
    has_qc = {a.worker for a in assignments if any(r.model == meta.qc_model for r in a.result)}
    out = []
    for a in assignments:
        if any(r.model == meta.qc_model for r in a.result):
            continue
        fate = ("the worker is tested on their other assignments" if a.worker in has_qc else
                "the worker has no qc rating at all and cannot be tested (QC p = NaN: fails)")
        out.append(Defect(NO_QC, f"{file}: data[{a.record}] (assignment {a.assignment})",
                          f"no rating of the qc system {meta.qc_model!r} (worker {a.worker}); {fate}"))
    return out


def _names(value: Any, file: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise HitsError("must be a list of names", file=file, field=where)
    if len(set(value)) != len(value):
        dup = sorted({v for v in value if value.count(v) > 1})
        raise HitsError(f"lists {dup} more than once", file=file, field=where)
    return tuple(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        num = float(value)
    except (TypeError, ValueError):
        return None
    return num if math.isfinite(num) else None


# -- where the data is -------------------------------------------------------------------------------------------------
SOURCE = DataSource(
    name=NAME, fetch_as="human", title="Human assessment of open-domain dialogue systems (ACL 2022)", env_var=ENV_VAR,
    urls=(URL,),
    keep={"data/": "", "LICENSE": "LICENSE"}, required=("data/*",), what="ratings file or folder",
    notes=(f"Repository: https://github.com/{REPO}, folder `data/`, commit {COMMIT}",
           "License: MIT (LICENSE beside this note)"))


def hits_path(data: str | None = None, file: str | None = None) -> Path:
    """The ratings file: the ratings folder or file (`SOURCE.locate`: `data` if given, else
    $EMOCAUSTICS_HUMANEVAL_DATA, else the fetch cache, the team's copy: ../shared/datasets/humaneval) when it is a
    file, else `file` (default the free-topic round 1) inside it."""
    root = SOURCE.locate(data)
    if root.is_file():
        return root
    target = root / (file or DEFAULT_FILE)
    if target.is_file():
        return target
    found = sorted(p.name for p in root.glob("*.json"))
    hint = (f"it holds {', '.join(found)}" if found else "it holds no normative JSON (the upstream repository "
            "publishes raw MTurk CSV under data/raw_mturk_csv/: name one such .csv file with a metadata JSON)")
    raise UsageError(f"{target}: no such ratings file; {hint}")

