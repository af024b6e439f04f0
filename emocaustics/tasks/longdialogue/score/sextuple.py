"""Pure sextuple scoring: one utterance's ground truth against its predicted candidates.

No models here: similarities come from an injected function `sim(a, b) -> float` (cosine of the two texts'
embeddings), so every rule can be tested with hand-made numbers. The rules (EmoCaustics spec):

- sentiment equal after trimming and lower-casing -> 1 point; no other label mapping;
- aspect, opinion, rationale: 1 point each when cosine(pred, gt) >= the threshold (0.8);
- several candidates for one utterance: the best one counts (most points, ties by summed similarity,
  then the earliest);
- a ground truth without a sextuple (target/aspect/opinion/rationale all empty) scores 4 when the prediction has no
  non-empty candidate, else 0;
- target similarity is reported but never scored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from emocaustics.tasks.longdialogue.data.schema import Sextuple, Utterance, normalise_label

SimFn = Callable[[str, str], float]

FIELD_THRESHOLD = 0.8
SCORED_TEXT_FIELDS: tuple[str, ...] = ("aspect", "opinion", "rationale")
POINTS_PER_UTTERANCE = 4


@dataclass(frozen=True, slots=True)
class CandidateScore:
    index: int
    sentiment_ok: bool
    target_sim: float
    aspect_sim: float
    opinion_sim: float
    rationale_sim: float
    aspect_ok: bool
    opinion_ok: bool
    rationale_ok: bool

    @property
    def points(self) -> int:
        return int(self.sentiment_ok) + int(self.aspect_ok) + int(self.opinion_ok) + int(self.rationale_ok)

    @property
    def sim_sum(self) -> float:
        return self.aspect_sim + self.opinion_sim + self.rationale_sim


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


def score_candidate(gt: Sextuple, cand: Sextuple, index: int, sim: SimFn, threshold: float = FIELD_THRESHOLD) -> CandidateScore:
    sims = {f: text_sim(sim, getattr(cand, f), getattr(gt, f)) for f in ("target", *SCORED_TEXT_FIELDS)}
    return CandidateScore(
        index=index,
        sentiment_ok=normalise_label(cand.sentiment) == normalise_label(gt.sentiment),
        target_sim=sims["target"],
        aspect_sim=sims["aspect"],
        opinion_sim=sims["opinion"],
        rationale_sim=sims["rationale"],
        aspect_ok=sims["aspect"] >= threshold,
        opinion_ok=sims["opinion"] >= threshold,
        rationale_ok=sims["rationale"] >= threshold,
    )


def best_candidate(scores: Sequence[CandidateScore]) -> CandidateScore | None:
    """Most points, then highest summed similarity of the scored fields, then the earliest candidate."""
    if not scores:
        return None
    return max(scores, key=lambda s: (s.points, s.sim_sum, -s.index))


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
    scored = [score_candidate(gt, c, i, sim, threshold) for i, c in enumerate(candidates)]
    best = best_candidate(scored)
    if best is None:
        return UtteranceScore(
            **base, chosen=None, pred=Sextuple(), rule="no_candidate",
            sentiment_ok=False, aspect_ok=False, opinion_ok=False, rationale_ok=False,
            target_sim=0.0, aspect_sim=0.0, opinion_sim=0.0, rationale_sim=0.0, points=0,
        )
    return UtteranceScore(
        **base, chosen=best.index, pred=candidates[best.index], rule="best_candidate",
        sentiment_ok=best.sentiment_ok, aspect_ok=best.aspect_ok, opinion_ok=best.opinion_ok,
        rationale_ok=best.rationale_ok, target_sim=best.target_sim, aspect_sim=best.aspect_sim,
        opinion_sim=best.opinion_sim, rationale_sim=best.rationale_sim, points=best.points,
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
