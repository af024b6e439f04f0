"""Pure sextuple scoring, both modes: one utterance's ground truth against its predicted candidates.

No models here: similarities come from an injected function `sim(a, b) -> float` (cosine of the two texts'
embeddings), so every rule can be tested with hand-made numbers. Both modes choose a line's candidate with one walk
(`choose_candidate`); how each reads and embeds a field, compares sentiment and orders the candidates are its rules,
given to that walk. The rules (EmoCaustics spec):

- sentiment equal after trimming and lower-casing -> 1 point; no other label mapping;
- aspect, opinion, rationale: 1 point each when cosine(pred, gt) >= the threshold (0.8);
- several candidates for one utterance: the best one counts (most points, ties by summed similarity,
  then the earliest);
- a ground truth without a sextuple (target/aspect/opinion/rationale all empty) scores 4 when the prediction has no
  non-empty candidate, else 0;
- target similarity is reported but never scored.

`--compat reference`: the rules of the published `get_quadruples_score.py`, over the JSON it reads (`answers` holds
the judge's raw answers). What the reference does, per file (one dialogue):
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

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np

from emocaustics.tasks.longdialogue.data.schema import Sextuple, Utterance, normalise_label
from emocaustics.tasks.longdialogue.score.judge import (
    Answer,
    Question,
    ReferenceCrash,
    answer_value_or_none,
    as_question_text,
)

SimFn = Callable[[str, str], float]
T = TypeVar("T")

FIELD_THRESHOLD = 0.8
SCORED_TEXT_FIELDS: tuple[str, ...] = ("aspect", "opinion", "rationale")
POINTS_PER_UTTERANCE = 4
FIELDS = ("target", "aspect", "opinion", "sentiment", "rationale")
EMBEDDED = ("target", "aspect", "opinion", "rationale")
PRED_KEYS = {"target": ("target", "Target"), "aspect": ("aspect", "Aspect"), "opinion": ("opinion", "opinions"),
             "sentiment": ("sentiment", "Sentiment"), "rationale": ("rationale", "Rationale")}
GT_KEYS = {"target": "Target", "aspect": "Aspect", "opinion": "Opinion", "sentiment": "Sentiment",
           "rationale": "Rationale"}
METRICS = ("avg_target_similarity", "avg_aspect_similarity", "avg_opinion_similarity", "avg_rationale_similarity",
           "avg_sentiment_correct")
COLUMNS = tuple(f"{scheme}_{m}" for scheme in ("scheme1", "scheme2") for m in METRICS)


def text_sim(sim: SimFn, a: str, b: str) -> float:
    """Similarity with the empty-text convention: two empty texts are identical (1.0); empty vs text is 0.0.

    Embedding an empty string gives an arbitrary vector, so empty texts never reach the embedder.
    """
    a, b = a.strip(), b.strip()
    if not a or not b:
        return 1.0 if a == b else 0.0
    if a == b:
        return 1.0  # identical texts have cosine 1; avoids float32 round-off just below 1
    return float(sim(a, b))


def first_greatest(items: Iterable[T], key: Callable[[T], Any]) -> tuple[T, Any] | None:
    """(item, key) of the greatest key, the first of equals (a later item must be strictly greater); None when
    there is none. The one choice of both modes: a line's candidate (both), a chain's event and emotion (the spec).
    `max` keeps the first of equals (it replaces its pick only on a strictly greater key), each key computed once."""
    return max(((it, key(it)) for it in items), key=lambda pair: pair[1], default=None)


def choose_candidate(cands: Sequence[Any], score: Callable[[int, Any], tuple[dict[str, float], Any]],
                     key: Callable[[dict[str, float], Any, int], tuple[Any, ...]]
                     ) -> tuple[int, dict[str, float], Any] | None:
    """(index, cosines, sentiment correct) of a line's chosen candidate: `score(k, cand)` gives its cosines and its
    sentiment, `key` orders them (the mode's rule); None when the line has no candidate."""
    scored = [score(k, c) for k, c in enumerate(cands)]
    found = first_greatest(range(len(scored)), lambda k: key(*scored[k], k))
    return None if found is None else (found[0], *scored[found[0]])


# ------------------------------------------------------------------------------------------------------- the spec


@dataclass(frozen=True, slots=True)
class UtteranceScore:
    """One scored utterance: the texts, the similarities and the decision, so the points can be re-checked by hand."""

    index: int
    holder: str
    sentence: str
    gt: Sextuple
    gt_empty: bool
    n_candidates: int
    chosen: int | None  # index of the candidate that counted; None when none did
    pred: Sextuple  # the chosen candidate (empty when none)
    rule: str  # best_candidate | no_candidate | empty_gt_empty_pred | empty_gt_nonempty_pred
    sentiment_ok: bool
    aspect_ok: bool
    opinion_ok: bool
    rationale_ok: bool
    target_sim: float | None
    aspect_sim: float | None
    opinion_sim: float | None
    rationale_sim: float | None
    points: int


def score_utterance(
    utt: Utterance, candidates: Sequence[Sextuple], sim: SimFn, threshold: float = FIELD_THRESHOLD
) -> UtteranceScore:
    gt = utt.gt or Sextuple()
    gt_empty = gt.is_empty()
    non_empty = [(i, c) for i, c in enumerate(candidates) if not c.is_empty()]
    base = dict(index=utt.index, holder=utt.holder, sentence=utt.sentence, gt=gt, gt_empty=gt_empty,
                n_candidates=len(candidates))
    if gt_empty:
        full = not non_empty
        # the first non-empty candidate is shown so the reader sees what was wrongly predicted
        shown = non_empty[0] if non_empty else (None, Sextuple())
        return UtteranceScore(
            **base, chosen=shown[0], pred=shown[1],
            rule="empty_gt_empty_pred" if full else "empty_gt_nonempty_pred",
            sentiment_ok=full, aspect_ok=full, opinion_ok=full, rationale_ok=full,
            target_sim=None, aspect_sim=None, opinion_sim=None, rationale_sim=None,
            points=POINTS_PER_UTTERANCE if full else 0,
        )
    best = choose_candidate(
        candidates,
        lambda k, c: ({f: text_sim(sim, getattr(c, f), getattr(gt, f)) for f in EMBEDDED},
                      normalise_label(c.sentiment) == normalise_label(gt.sentiment)),
        # most points, then highest summed similarity of the scored fields, then the earliest candidate
        lambda s, ok, k: (int(ok) + sum(s[f] >= threshold for f in SCORED_TEXT_FIELDS),
                          s["aspect"] + s["opinion"] + s["rationale"], -k))
    if best is None:
        return UtteranceScore(
            **base, chosen=None, pred=Sextuple(), rule="no_candidate",
            sentiment_ok=False, aspect_ok=False, opinion_ok=False, rationale_ok=False,
            target_sim=0.0, aspect_sim=0.0, opinion_sim=0.0, rationale_sim=0.0, points=0,
        )
    k, sims, correct = best
    ok = {f: sims[f] >= threshold for f in SCORED_TEXT_FIELDS}
    return UtteranceScore(
        **base, chosen=k, pred=candidates[k], rule="best_candidate",
        sentiment_ok=correct, aspect_ok=ok["aspect"], opinion_ok=ok["opinion"], rationale_ok=ok["rationale"],
        target_sim=sims["target"], aspect_sim=sims["aspect"], opinion_sim=sims["opinion"],
        rationale_sim=sims["rationale"], points=int(correct) + sum(ok.values()),
    )


def score_dialogue_sextuples(
    utterances: Sequence[Utterance],
    prediction: Sequence[Sequence[Sextuple]],
    sim: SimFn,
    threshold: float = FIELD_THRESHOLD,
) -> list[UtteranceScore]:
    """Score a dialogue whose prediction has one candidate list per utterance, matched by position.

    Raises `LengthMismatch` when the counts differ: the caller turns that into a failed dialogue scoring 0.
    """
    if len(prediction) != len(utterances):
        raise LengthMismatch(len(utterances), len(prediction))
    return [score_utterance(u, cands, sim, threshold) for u, cands in zip(utterances, prediction, strict=True)]


def dialogue_points(rows: Sequence[UtteranceScore]) -> float:
    """points / utterances / 4 (0.0 for a dialogue without utterances)."""
    return sum(r.points for r in rows) / (len(rows) * POINTS_PER_UTTERANCE) if rows else 0.0


def pairs_needed(utterances: Sequence[Utterance], prediction: Sequence[Sequence[Sextuple]]) -> set[tuple[str, str]]:
    """Every (pred text, gt text) pair the scorer will ask `sim` about: lets the machinery embed exactly these."""
    out: set[tuple[str, str]] = set()
    for u, cands in zip(utterances, prediction):
        gt = u.gt or Sextuple()
        if gt.is_empty():
            continue
        for c in cands:
            for f in ("target", *SCORED_TEXT_FIELDS):
                a, b = getattr(c, f).strip(), getattr(gt, f).strip()
                if a and b and a != b:
                    out.add((a, b))
    return out


class LengthMismatch(ValueError):
    def __init__(self, gt_len: int, pred_len: int) -> None:
        super().__init__(f"prediction has {pred_len} utterances, ground truth has {gt_len}")
        self.gt_len = gt_len
        self.pred_len = pred_len


# ------------------------------------------------------------------------------------------ --compat reference


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


def gt_records(utterances: Sequence[Utterance]) -> list[dict[str, str]]:
    """The ground truth as the chat file's records (the published files hold strings in every field)."""
    return [{GT_KEYS[f]: getattr(u.gt, f) if u.gt is not None else "" for f in FIELDS} for u in utterances]


def _read(obj: dict[str, Any], keys: tuple[str, str]) -> Any:
    return next((obj[k] for k in keys if k in obj), "")  # the first key present wins, even holding null


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


def embed_text(value: Any, where: str) -> str:
    """What the reference sends to the embeddings API for a field: the value, or " " when it is falsy."""
    if not value:
        return " "
    if not isinstance(value, str):
        raise ReferenceCrash(f"{where}: {type(value).__name__} {value!r} is not text; the embeddings API refuses it")
    return value


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
    def score(k: int, c: dict[str, Any]) -> tuple[dict[str, float], int]:
        pairs = _embedded(gt, c, f"{file}, record {index}, candidate {k}")
        sims = {f: float(sim(a, b)) for f, (a, b) in zip(EMBEDDED, pairs)}
        return sims, int(gt[GT_KEYS["sentiment"]] == c["sentiment"])

    best = choose_candidate(cands, score, lambda s, ok, k: (s["target"], s["aspect"], ok, s["opinion"], s["rationale"]))
    assert best is not None  # a line always has at least one candidate
    k, sims, correct = best
    return RefLine(index, len(cands), k, gt, cands[k], sims, correct, None)


def score_file(gt: Sequence[dict[str, Any]], pred: Any, sim: SimFn, answers: Mapping[Question, Answer] | None,
               file: str = "prediction") -> list[RefLine]:
    """The scored lines of one dialogue; with `answers` (a judge took part) each line carries its judge values."""
    lines = prediction_lines(pred, file)
    out = [choose(g, cands, sim, i, file) for i, (g, cands) in enumerate(zip(gt, lines))]
    if answers is None:
        return out
    return [replace(ln, judged={f: answer_value_or_none(answers[q]) or 0 for f, q in zip(EMBEDDED, judge_questions([ln]))})
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
