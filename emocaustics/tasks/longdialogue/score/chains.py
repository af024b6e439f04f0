"""Pure emotion-chain scoring for one dialogue, over injected similarities and judge verdicts.

Rules, `compat="spec"` (the EmoCaustics README, the default):
- per ground-truth holder, each GT event weighs 1/n_events; in GT order it takes the most similar *unused*
  predicted event of the same holder, and is matched when cosine >= 0.7 AND the judge says "same event"
  (no judge -> embedding only; identical texts are the same event without asking);
- inside a matched event each GT emotion weighs an equal share; its counterpart is the predicted emotion whose
  reason is most similar, when cosine >= 0.8; then state equal (trimmed, lower-cased) = 1 point and source_id equal
  = 1 point (the GT may list several ids: the predicted ids must be among them); 2 points per GT emotion;
- an event without GT emotions scores its full share when matched;
- a holder whose GT has no events scores 1 only if the prediction has no event for that holder;
- dialogue score = mean over GT holders.

`--compat reference` (the published code's own rules, metrics and failures) is another module: `refchains`.

Judge verdicts arrive as a mapping (gt_text, pred_text) -> True / False / None (None = the judge failed even after
its retry). A needed verdict that is absent is reported in `ChainOutcome.missing`, so the caller can ask the judge
for all dialogues in one batch and call again (see `emocaustics.tasks.longdialogue.score.engine`).
"""

from __future__ import annotations

import math

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from emocaustics.tasks.longdialogue.data.schema import Chains, Emotion, Event, normalise_label
from emocaustics.tasks.longdialogue.score.sextuple import SimFn, first_greatest, text_sim

Verdicts = Mapping[tuple[str, str], bool | None]


@dataclass(frozen=True, slots=True)
class ChainRules:
    judge: bool = False  # whether a judge takes part (False = `--judge none`)
    on_judge_error: str = "zero"  # zero | unscored
    event_threshold: float = 0.7
    reason_threshold: float = 0.8

    def __post_init__(self) -> None:
        if self.on_judge_error not in ("zero", "unscored"):
            raise ValueError(f"on_judge_error must be 'zero' or 'unscored', not {self.on_judge_error!r}")


@dataclass(frozen=True, slots=True)
class ChainItem:
    """One explainable row: a GT emotion (kind=emotion), a GT event without emotions (kind=event), or a holder
    whose GT has no events (kind=holder). `contribution` summed over a holder's rows is the holder's score."""

    holder: str
    kind: str
    event_index: int | None = None
    gt_event: str | None = None
    pred_event_index: int | None = None
    pred_event: str | None = None
    event_sim: float | None = None
    judge: str | None = None  # yes | no | failed | identical | not_asked (embedding already decided / no judge)
    event_matched: bool = False
    unscored: bool = False  # the judge failed and --on-judge-error unscored took the event out of the denominator
    emotion_index: int | None = None
    gt_state: str | None = None
    gt_reason: str | None = None
    gt_source: str | None = None
    pred_emotion_index: int | None = None
    pred_state: str | None = None
    pred_reason: str | None = None
    pred_source: str | None = None
    reason_sim: float | None = None
    reason_ok: bool = False
    state_ok: bool = False
    source_ok: bool = False
    points: float = 0.0
    max_points: float = 0.0
    weight: float = 0.0
    contribution: float = 0.0


@dataclass(slots=True)
class ChainOutcome:
    items: list[ChainItem] = field(default_factory=list)
    holder_scores: dict[str, float | None] = field(default_factory=dict)  # None: every event of the holder unscored
    missing: set[tuple[str, str]] = field(default_factory=set)  # verdicts still needed; items are incomplete then
    judge_failures: int = 0

    @property
    def score(self) -> float | None:
        scored = [s for s in self.holder_scores.values() if s is not None]
        return sum(scored) / len(scored) if scored else None


@dataclass(frozen=True, slots=True)
class _EventMatch:
    pred_index: int | None
    sim: float | None
    judge: str | None
    matched: bool
    unscored: bool


def source_ok(gt: Emotion, pred: Emotion) -> bool:
    """The predicted ids (usually one) must be non-empty and all among the GT's ids; when either side has no
    parseable id (free text such as "牛牛"), the trimmed texts must be equal."""
    gt_ids = {s.strip() for s in gt.source_ids if s.strip()}
    pred_ids = {s.strip() for s in pred.source_ids if s.strip()}
    if gt_ids and pred_ids:
        return pred_ids <= gt_ids
    return bool(gt.source_raw.strip()) and gt.source_raw.strip() == pred.source_raw.strip()


def _emotion_points(gt: Emotion, pred: Emotion) -> float:
    return float(normalise_label(pred.state) == normalise_label(gt.state)) + float(source_ok(gt, pred))


def _best(text: str, options: Sequence[tuple[int, str]], sim: SimFn,
          bonus: Callable[[int], float] | None = None) -> tuple[int, float] | None:
    """The most similar option. Ties (common: a weak embedder maps many Chinese texts to nearly the same vector)
    go to an identical text, then to the option with the larger `bonus` (the points it would earn), then the
    earliest."""
    found = first_greatest(options, lambda o: (text_sim(sim, text, o[1]), text.strip() == o[1].strip(),
                                               bonus(o[0]) if bonus else 0.0, -o[0]))
    return None if found is None else (found[0][0], found[1][0])


def _verdict(gt: str, pred: str, verdicts: Verdicts, missing: set[tuple[str, str]]) -> tuple[str, bool | None]:
    """('identical'|'yes'|'no'|'failed'|'pending', value)."""
    if gt.strip() == pred.strip():
        return "identical", True
    key = (gt, pred)
    if key not in verdicts:
        missing.add(key)
        return "pending", None
    v = verdicts[key]
    return ("failed", None) if v is None else ("yes" if v else "no", v)


def _match_events(gt_events: Sequence[Event], pred_events: Sequence[Event], sim: SimFn, verdicts: Verdicts,
                  rules: ChainRules, missing: set[tuple[str, str]]) -> list[_EventMatch] | None:
    """One decision per GT event, or None when a verdict is still missing (greedy order depends on it)."""
    used: set[int] = set()
    out: list[_EventMatch] = []
    for gt_ev in gt_events:
        options = [(j, e.event) for j, e in enumerate(pred_events) if j not in used]
        best = _best(gt_ev.event, options, sim)
        if best is None:
            out.append(_EventMatch(None, None, None, False, False))
            continue
        j, s = best
        emb_ok = s >= rules.event_threshold
        pred_text = pred_events[j].event
        if not rules.judge or not emb_ok:  # the judge cannot change the decision: a match needs both
            out.append(_EventMatch(j, s, "not_asked", emb_ok, False))
        else:
            tag, v = _verdict(gt_ev.event, pred_text, verdicts, missing)
            if tag == "pending":
                return None
            unscored = tag == "failed" and rules.on_judge_error == "unscored"
            out.append(_EventMatch(j, s, tag, bool(v) and not unscored, unscored))
        if out[-1].matched:
            used.add(j)
    return out


def _emotion_items(base: ChainItem, gt_ev: Event, pred_ev: Event | None, share: float, sim: SimFn,
                   rules: ChainRules) -> list[ChainItem]:
    n = len(gt_ev.emotions)
    if n == 0:
        pts = 1.0 if base.event_matched else 0.0
        return [replace(base, kind="event", points=pts, max_points=1.0, weight=share, contribution=share * pts)]
    rows = []
    preds = list(enumerate(pred_ev.emotions)) if pred_ev is not None and base.event_matched else []
    for k, gt_em in enumerate(gt_ev.emotions):
        row = replace(base, kind="emotion", emotion_index=k, gt_state=gt_em.state, gt_reason=gt_em.reason,
                      gt_source=gt_em.source_raw or ",".join(gt_em.source_ids), max_points=2.0, weight=share / n)
        best = _best(gt_em.reason, [(j, e.reason) for j, e in preds], sim,
                     lambda j: _emotion_points(gt_em, pred_ev.emotions[j]))  # type: ignore[union-attr]
        if best is not None:
            j, s = best
            p = pred_ev.emotions[j]  # type: ignore[union-attr]
            reason_ok = s >= rules.reason_threshold
            st = reason_ok and normalise_label(p.state) == normalise_label(gt_em.state)
            so = reason_ok and source_ok(gt_em, p)
            pts = float(st) + float(so)
            row = replace(row, pred_emotion_index=j, pred_state=p.state, pred_reason=p.reason,
                          pred_source=p.source_raw or ",".join(p.source_ids), reason_sim=s, reason_ok=reason_ok,
                          state_ok=st, source_ok=so, points=pts, contribution=row.weight * pts / 2.0)
        rows.append(row)
    return rows


def _holder_score(rows: Sequence[ChainItem], n_scored: int) -> float | None:
    """mean over scored events of (points / max points); computed from integers per event so that a perfect
    prediction gives exactly 1.0 (summing the float contributions would not)."""
    if not n_scored:
        return None
    per_event: dict[int | None, list[float]] = {}
    for r in rows:
        if not r.unscored:
            acc = per_event.setdefault(r.event_index, [0.0, 0.0])
            acc[0] += r.points
            acc[1] += r.max_points
    return math.fsum(p / m for p, m in per_event.values()) / n_scored


def score_dialogue_chains(gt: Chains, pred: Chains, sim: SimFn, verdicts: Verdicts | None = None,
                          rules: ChainRules = ChainRules()) -> ChainOutcome:
    verdicts = verdicts or {}
    out = ChainOutcome()
    for holder, gt_events in gt.items():
        pred_events = tuple(pred.get(holder, ()))
        if not gt_events:
            full = not pred_events
            out.items.append(ChainItem(holder=holder, kind="holder", points=float(full), max_points=1.0,
                                       weight=1.0, contribution=float(full)))
            out.holder_scores[holder] = float(full)
            continue
        matches = _match_events(gt_events, pred_events, sim, verdicts, rules, out.missing)
        if matches is None:
            continue
        out.judge_failures += sum(m.judge == "failed" for m in matches)
        n_scored = sum(not m.unscored for m in matches)
        holder_rows: list[ChainItem] = []
        for i, (gt_ev, m) in enumerate(zip(gt_events, matches)):
            share = 0.0 if m.unscored else 1.0 / n_scored
            pred_ev = pred_events[m.pred_index] if m.pred_index is not None else None
            base = ChainItem(holder=holder, kind="emotion", event_index=i, gt_event=gt_ev.event,
                             pred_event_index=m.pred_index, pred_event=pred_ev.event if pred_ev else None,
                             event_sim=m.sim, judge=m.judge, event_matched=m.matched, unscored=m.unscored)
            holder_rows.extend(_emotion_items(base, gt_ev, pred_ev, share, sim, rules))
        out.items.extend(holder_rows)
        out.holder_scores[holder] = _holder_score(holder_rows, n_scored)
    return out


def judge_prefetch(gt: Chains, pred: Chains, sim: SimFn, rules: ChainRules) -> set[tuple[str, str]]:
    """The judge questions worth asking in one batch before scoring, so that one round usually suffices.

    Every same-holder pair at or above the event threshold (a superset of the greedy matcher's questions);
    identical texts are never asked.
    """
    if not rules.judge:
        return set()
    out: set[tuple[str, str]] = set()
    for h, evs in gt.items():
        preds = [(j, p.event) for j, p in enumerate(pred.get(h, ()))]
        for g in evs:
            out.update((g.event, t) for _, t in preds
                       if g.event.strip() != t.strip() and text_sim(sim, g.event, t) >= rules.event_threshold)
    return out


def event_pairs(gt: Chains, pred: Chains) -> set[tuple[str, str]]:
    """Every (gt event, pred event) text pair of the same holder: what the event matcher may compare."""
    return {(g.event, p.event) for h, evs in gt.items() for g in evs for p in pred.get(h, ())}


def reason_pairs(gt: Chains, pred: Chains) -> set[tuple[str, str]]:
    """Every (gt reason, pred reason) pair of the same holder (a superset of what matched events compare)."""
    out: set[tuple[str, str]] = set()
    for h, evs in gt.items():
        p_reasons = {e.reason for p in pred.get(h, ()) for e in p.emotions}
        out.update((g.reason, r) for ev in evs for g in ev.emotions for r in p_reasons)
    return out
