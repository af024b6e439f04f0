"""`--compat reference` for sextuples: the rules of the published `get_quadruples_score.py`, over the JSON it reads.

No models here: `sim(a, b)` is the cosine of two embedded texts and `answers` holds the judge's raw answers, so every
rule can be tested by hand. What the reference does, per file (one dialogue):
- only the first min(len(prediction), len(ground truth)) lines are scored (a length difference is only a warning);
- a line's candidates: `final_model_response` as a list, or one object, anything else (or nothing) one empty candidate;
  fields are read from these keys only: target|Target, aspect|Aspect, opinion|opinions, sentiment|Sentiment,
  rationale|Rationale (the first present wins, a key holding null gives null); the ground truth from
  Target, Aspect, Opinion, Sentiment, Rationale;
- an empty (falsy) field is embedded as " " on both sides, so two empty fields have cosine 1;
- each candidate gets the cosine of target, aspect, opinion and rationale with the ground truth, and sentiment
  correct when the two values are exactly equal (no trimming, no case folding);
- the chosen candidate is the greatest by (target, aspect, sentiment correct, opinion, rationale), the first of equals;
- "scheme1" is the chosen candidate's four cosines and its sentiment; "scheme2" asks the judge the same four fields
  (1/0; a failed or non-integer answer counts 0) with the same sentiment;
- per file: the mean of each over the lines (0.0 for a file with no line); over files: the mean of the file means.
Shapes the reference cannot read (a line that is not an object, a candidate that is not an object, a field the
embeddings API would refuse) raise `ReferenceCrash`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from emocaustics.tasks.longdialogue.data.schema import Utterance
from emocaustics.tasks.longdialogue.score.judge import (
    Answer,
    Question,
    ReferenceCrash,
    answer_value_or_zero,
    as_question_text,
)

SimFn = Callable[[str, str], float]
FIELDS = ("target", "aspect", "opinion", "sentiment", "rationale")
EMBEDDED = ("target", "aspect", "opinion", "rationale")
PRED_KEYS = {"target": ("target", "Target"), "aspect": ("aspect", "Aspect"), "opinion": ("opinion", "opinions"),
             "sentiment": ("sentiment", "Sentiment"), "rationale": ("rationale", "Rationale")}
GT_KEYS = {"target": "Target", "aspect": "Aspect", "opinion": "Opinion", "sentiment": "Sentiment",
           "rationale": "Rationale"}
METRICS = ("avg_target_similarity", "avg_aspect_similarity", "avg_opinion_similarity", "avg_rationale_similarity",
           "avg_sentiment_correct")
COLUMNS = tuple(f"{scheme}_{m}" for scheme in ("scheme1", "scheme2") for m in METRICS)


@dataclass(frozen=True, slots=True)
class RefLine:
    index: int
    n_candidates: int
    chosen: int
    gt: dict[str, Any]
    pred: dict[str, Any]
    sims: dict[str, float]  # target/aspect/opinion/rationale cosine of the chosen candidate
    sentiment_correct: int
    judged: dict[str, int] | None  # the four judge values, None without a judge


def embed_text(value: Any, where: str) -> str:
    """What the reference sends to the embeddings API for a field: the value, or " " when it is falsy."""
    if not value:
        return " "
    if not isinstance(value, str):
        raise ReferenceCrash(f"{where}: {type(value).__name__} {value!r} is not text; the embeddings API refuses it")
    return value


def gt_records(utterances: Sequence[Utterance]) -> list[dict[str, str]]:
    """The ground truth as the chat file's records (the published files hold strings in every field)."""
    return [{GT_KEYS[f]: getattr(u.gt, f) if u.gt is not None else "" for f in FIELDS} for u in utterances]


def _read(obj: dict[str, Any], keys: tuple[str, str]) -> Any:
    for k in keys:
        if k in obj:
            return obj[k]
    return ""


def prediction_lines(pred: Any, file: str) -> list[list[dict[str, Any]]]:
    """Each line's candidates as {field: raw value}, in the reference's reading; raises where it raises."""
    if not isinstance(pred, list):
        if isinstance(pred, (dict, str)) and not pred:
            return []  # len() is 0: no line is read
        raise ReferenceCrash(f"{file}: top level is {type(pred).__name__}; the reference indexes it as a list")
    out: list[list[dict[str, Any]]] = []
    for i, rec in enumerate(pred):
        if not isinstance(rec, dict):
            raise ReferenceCrash(f"{file}, record {i}: {type(rec).__name__}, the reference calls .get on it")
        resp = rec.get("final_model_response", {})
        cands = [resp] if isinstance(resp, dict) else resp if isinstance(resp, list) else []
        if not cands:
            cands = [{}]
        line = []
        for k, c in enumerate(cands):
            if not isinstance(c, dict):
                raise ReferenceCrash(f"{file}, record {i}, candidate {k}: {type(c).__name__}, not an object")
            line.append({f: _read(c, PRED_KEYS[f]) for f in FIELDS})
        out.append(line)
    return out


def _embedded(gt: dict[str, Any], cand: dict[str, Any], where: str) -> list[tuple[str, str]]:
    return [(embed_text(gt[GT_KEYS[f]], f"{where}, ground truth {GT_KEYS[f]}"),
             embed_text(cand[f], f"{where}, field {f}")) for f in EMBEDDED]


def needed_pairs(gt: Sequence[dict[str, Any]], lines: Sequence[Sequence[dict[str, Any]]], file: str
                 ) -> list[tuple[str, str]]:
    """Every (gt, pred) text pair whose cosine the reference computes, empty fields already as " "."""
    return [p for i, (g, cands) in enumerate(zip(gt, lines)) for k, c in enumerate(cands)
            for p in _embedded(g, c, f"{file}, record {i}, candidate {k}")]


def judge_questions(chosen: Sequence[RefLine]) -> list[Question]:
    return [(as_question_text(ln.gt[GT_KEYS[f]]), as_question_text(ln.pred[f])) for ln in chosen for f in EMBEDDED]


def choose(gt: dict[str, Any], cands: Sequence[dict[str, Any]], sim: SimFn, index: int, file: str) -> RefLine:
    best: RefLine | None = None
    best_key: tuple[float, ...] | None = None
    for k, c in enumerate(cands):
        pairs = _embedded(gt, c, f"{file}, record {index}, candidate {k}")
        sims = {f: float(sim(a, b)) for f, (a, b) in zip(EMBEDDED, pairs)}
        correct = int(gt[GT_KEYS["sentiment"]] == c["sentiment"])
        key = (sims["target"], sims["aspect"], correct, sims["opinion"], sims["rationale"])
        if best_key is None or key > best_key:  # strictly greater: the first of equal candidates stays
            best, best_key = RefLine(index, len(cands), k, gt, c, sims, correct, None), key
    assert best is not None  # a line always has at least one candidate
    return best


def score_file(gt: Sequence[dict[str, Any]], pred: Any, sim: SimFn, answers: Mapping[Question, Answer] | None,
               file: str = "prediction") -> list[RefLine]:
    """The scored lines of one dialogue; with `answers` (a judge took part) each line carries its judge values."""
    lines = prediction_lines(pred, file)
    out = [choose(g, cands, sim, i, file) for i, (g, cands) in enumerate(zip(gt, lines))]
    if answers is None:
        return out
    return [replace(ln, judged={f: answer_value_or_zero(answers[q]) for f, q in zip(EMBEDDED, judge_questions([ln]))})
            for ln in out]


def file_means(lines: Sequence[RefLine], judged: bool) -> dict[str, float | None]:
    """The reference's per-file averages (numpy's mean, as it computes them); scheme2 is None without a judge."""
    def mean(values: list[float]) -> float:
        return float(np.mean(values)) if values else 0.0

    out: dict[str, float | None] = {}
    for f in EMBEDDED:
        out[f"scheme1_avg_{f}_similarity"] = mean([ln.sims[f] for ln in lines])
    out["scheme1_avg_sentiment_correct"] = mean([ln.sentiment_correct for ln in lines])
    for f in EMBEDDED:
        out[f"scheme2_avg_{f}_similarity"] = mean([ln.judged[f] for ln in lines]) if judged else None  # type: ignore[index]
    out["scheme2_avg_sentiment_correct"] = out["scheme1_avg_sentiment_correct"] if judged else None
    return out
