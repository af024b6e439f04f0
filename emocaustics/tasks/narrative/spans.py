"""Text spans: sentence splitting, spans mapped to sentence boundaries, boundary similarity B, and span IoU.

Sentences (Chinese and English): a sentence ends after a run of `。！？!?…` (and `.` where it ends an English
sentence: followed by a space or the end, not after a known abbreviation or a single capital initial), together with
the closing quotes or brackets that follow it (`”’"'」』）)】》`) and any trailing whitespace; a line break always ends a
sentence. Sentences tile the text (every character belongs to one), so a character offset maps to one sentence.

Segmentations: each event span covers the sentences from the one holding `start` to the one holding `end - 1`; it
puts a boundary before its first sentence and after its last (none at the text's ends). The GT segmentation takes the
GT events whose span is valid; the predicted one takes the predicted events aligned to those GT events (alignment.py).
So GT events without a valid span are excluded, and the predicted boundaries they would have produced -- like those of
extra events absent from GT -- are not insertions (counted as `excluded_boundaries`).

B is Fournier (2013)'s boundary similarity, computed with the `segeval` package (boundary edit distance: matches,
additions, near-miss transpositions within `n_t` potential boundaries, default 2, weighted by the distance they
span): B = 1 - (|A| + w(T) + w(S)) / (|A| + |T| + |S| + |matches|); 1 when neither side has a boundary. Reported with
exact matches, near misses, insertions (predicted only) and deletions (GT only).

Span IoU: character IoU between predicted and GT spans under the one-to-one pairing with maximum total IoU (Hungarian,
not greedy), averaged over GT spans (an unpaired GT span counts 0; an unpaired predicted span is extra).
Component score = mean of B and mean IoU. No GT event with a valid span -> not scored.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

import numpy as np

from emocaustics.tasks.narrative.alignment import Alignment, event_label, iou
from emocaustics.tasks.narrative.gtmissing import component_result, mean_of, ratio, unscored
from emocaustics.tasks.narrative.schema import Story

TERMINATORS = frozenset("。！？!?…")
CLOSERS = frozenset("”’\"'」』）)】》〕")
ABBREVIATIONS = frozenset({"mr", "mrs", "ms", "dr", "st", "prof", "jr", "sr", "vs", "mt", "no", "etc", "e.g", "i.e"})
METRICS = ("boundary_similarity", "mean_iou")
_WORD_BEFORE = re.compile(r"([A-Za-z.]+)$")
# what a sentence end takes with it (each part optional: these always match): more terminators, closing quotes or
# brackets, whitespace (\s is str.isspace)
_CLOSING = re.compile(f"[{re.escape(''.join(sorted(CLOSERS)))}]*")
_STOP_TAIL = re.compile(f"[{re.escape(''.join(sorted(TERMINATORS | {'.'})))}]*" + _CLOSING.pattern + r"\s*")
_SPACES, _DOTS = re.compile(r"\s*"), re.compile(r"\.*")


def _english_stop(text: str, i: int) -> bool:
    """Whether the `.` run starting at i ends a sentence."""
    j = _DOTS.match(text, i).end()  # type: ignore[union-attr]
    k = _CLOSING.match(text, j).end()  # type: ignore[union-attr]
    if k < len(text) and not text[k].isspace():
        return False
    if j - i > 1:  # an ellipsis "..." followed by a space
        return True
    word = _WORD_BEFORE.search(text[:i])
    w = word.group(1) if word else ""
    if w.lower() in ABBREVIATIONS or (len(w) == 1 and w.isupper()):
        return False
    return bool(w) or (i > 0 and not text[i - 1].isspace())


def split_sentences(text: str) -> list[tuple[int, int]]:
    """[(start, end)) of each sentence; the sentences tile the text (whitespace-only pieces join the one before)."""
    out: list[tuple[int, int]] = []
    start = 0
    n = len(text)

    def cut(end: int) -> None:
        nonlocal start
        if end <= start:
            return
        out.append((start, end))  # never whitespace only but the first: each cut takes the whitespace after it
        start = end

    i = 0
    while i < n:
        ch = text[i]
        if ch == "\n" or ch in TERMINATORS or (ch == "." and _english_stop(text, i)):
            i = (_SPACES if ch == "\n" else _STOP_TAIL).match(text, i + 1).end()  # type: ignore[union-attr]
            cut(i)
        else:
            i += 1
    cut(n)
    if out and not text[out[0][0]:out[0][1]].strip() and len(out) > 1:  # leading whitespace joins the first sentence
        out[1] = (out[0][0], out[1][1])
        out.pop(0)
    return out


def sentence_range(span: tuple[int, int], sentences: list[tuple[int, int]]) -> tuple[int, int]:
    """(first, last) sentence index covered by a character range [start, end)."""
    starts = [s for s, _ in sentences]
    first = bisect.bisect_right(starts, span[0]) - 1
    last = bisect.bisect_right(starts, span[1] - 1) - 1
    return max(first, 0), max(last, 0)


def boundaries(ranges: list[tuple[int, int]], n_sentences: int) -> set[int]:
    """Boundary positions k (between sentence k-1 and k, 1 <= k < n) that the sentence ranges put down."""
    out: set[int] = set()
    for first, last in ranges:
        if first > 0:
            out.add(first)
        if last + 1 < n_sentences:
            out.add(last + 1)
    return out


def masses(bounds: set[int], n_sentences: int) -> tuple[int, ...]:
    """Segment masses (sentences per segment) of a boundary set: segeval's input format."""
    cuts = [0, *sorted(bounds), n_sentences]
    return tuple(b - a for a, b in zip(cuts, cuts[1:]))


def boundary_similarity(pred: set[int], gt: set[int], n_sentences: int, n_t: int = 2) -> dict[str, Any]:
    """B with its parts: numerator, denominator, exact matches, near misses, insertions, deletions."""
    if not pred and not gt:  # segeval cannot type an empty comparison: nothing to disagree on
        return {"b": 1.0, "numerator": 0.0, "denominator": 0, "exact": 0, "near_misses": 0, "insertions": 0,
                "deletions": 0}
    import segeval  # maintained implementation of Fournier (2013); imported here so the module loads without it

    num, den, additions, substitutions, transpositions = segeval.boundary_similarity(
        masses(pred, n_sentences), masses(gt, n_sentences), n_t=n_t, return_parts=True)
    return {"b": float(num / den) if den else 1.0, "numerator": float(num), "denominator": int(den),
            "exact": len(pred & gt), "near_misses": len(transpositions),
            "insertions": sum(1 for a in additions if a.side == "a"),
            "deletions": sum(1 for a in additions if a.side == "b"), "substitutions": len(substitutions)}


def optimal_iou_pairs(pred: list[tuple[int, int]], gt: list[tuple[int, int]]) -> list[tuple[int, int, float]]:
    """One-to-one (pred index, gt index, IoU) with maximum total IoU; pairs with IoU 0 dropped."""
    if not pred or not gt:
        return []
    w = np.array([[iou(p, g) for g in gt] for p in pred])
    # imported here: scipy.optimize takes 0.3 s, and every command imports this module (task discovery)
    from scipy.optimize import linear_sum_assignment
    rows, cols = linear_sum_assignment(w, maximize=True)
    return [(int(i), int(j), float(w[i, j])) for i, j in zip(rows, cols) if w[i, j] > 0]


def score_from_counts(c: dict[str, float]) -> float | None:
    b = c["b_numerator"] / c["b_denominator"] if c.get("b_denominator") else (1.0 if c.get("b_files") else None)
    return mean_of([b, ratio(c.get("iou_sum", 0.0), c.get("gt_spans", 0))])


def evaluate_spans(pred: Story, gt: Story, alignment: Alignment, text: str | None, n_t: int = 2) -> dict[str, Any]:
    if text is None:
        return unscored("spans", "no text_content to place spans in", len(gt.events), metrics=METRICS)
    length = len(text)
    gt_ranges = {j: ev.span.range_in(length) for j, ev in enumerate(gt.events) if ev.span is not None}
    gt_valid = {j: r for j, r in gt_ranges.items() if r is not None}
    skipped = len(gt.events) - len(gt_valid)
    if not gt_valid:
        return unscored("spans", "no ground-truth event has a valid text span", skipped, metrics=METRICS)
    sentences = split_sentences(text)
    n = len(sentences)
    g2p = alignment.gt_to_pred()
    pred_valid = {i: r for i, ev in enumerate(pred.events)
                  if ev.span is not None and (r := ev.span.range_in(length)) is not None}
    included = {g2p[j] for j in gt_valid if g2p.get(j) in pred_valid}
    gt_sent = {j: sentence_range(r, sentences) for j, r in gt_valid.items()}
    pred_sent = {i: sentence_range(r, sentences) for i, r in pred_valid.items()}
    gt_b = boundaries(list(gt_sent.values()), n)
    pred_b = boundaries([pred_sent[i] for i in included], n)
    excluded = boundaries([r for i, r in pred_sent.items() if i not in included], n) - pred_b
    bs = boundary_similarity(pred_b, gt_b, n, n_t)
    # IoU: every valid predicted span except those aligned to GT events without a valid span
    p2g = alignment.pred_to_gt()
    iou_pred = [i for i in pred_valid if p2g.get(i) is None or p2g[i] in gt_valid]
    gt_order = sorted(gt_valid)
    pairs = optimal_iou_pairs([pred_valid[i] for i in iou_pred], [gt_valid[j] for j in gt_order])
    iou_sum = sum(v for _, _, v in pairs)
    ok = {j: g2p.get(j) in pred_sent and pred_sent[g2p[j]] == gt_sent[j] for j in gt_valid}
    details = [{"gt": event_label(gt.events[j]), "gt_sentences": list(gt_sent[j]),
                "pred": event_label(pred.events[g2p[j]]) if j in g2p else None,
                "pred_sentences": list(pred_sent[g2p[j]]) if g2p.get(j) in pred_sent else None,
                "sentence_exact": ok[j]} for j in gt_order]
    counts = {"b_numerator": bs["numerator"], "b_denominator": bs["denominator"], "b_files": 1,
              "iou_sum": iou_sum, "gt_spans": len(gt_valid)}
    metrics = {"boundary_similarity": bs["b"], "mean_iou": iou_sum / len(gt_valid), "exact": bs["exact"],
               "near_misses": bs["near_misses"], "insertions": bs["insertions"], "deletions": bs["deletions"],
               "excluded_boundaries": len(excluded), "sentences": n, "gt_boundaries": len(gt_b),
               "pred_boundaries": len(pred_b)}
    iou_pairs = [[event_label(pred.events[iou_pred[a]]), event_label(gt.events[gt_order[b]]), round(v, 4)]
                 for a, b, v in pairs]
    return component_result(
        "spans", score=score_from_counts(counts), metrics=metrics, counts=counts,
        gt_incomplete=skipped > 0, skipped_events=skipped,
        reason=f"{skipped} GT event(s) without a valid span excluded" if skipped else None,
        extra=[event_label(pred.events[i]) for i in pred_valid if i not in included],
        missing=[event_label(gt.events[j]) for j in gt_order if g2p.get(j) not in pred_valid],
        details={"events": details, "iou_pairs": iou_pairs}, event_ok=ok)
