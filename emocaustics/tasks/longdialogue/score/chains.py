"""Pure emotion-chain scoring for one dialogue, both modes: one walk over injected similarities and judge answers,
each mode's rules as data (`ChainRules`; the two modes' instances are `policy.SPEC_CHAINS` and `REFERENCE_CHAINS`).

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

`--compat reference`: the rules of the published `get_emo_score.py`, over the JSON it reads (`refjson`). Per dialogue:
- per ground-truth holder with n > 0 events (a holder without events adds nothing, not even to the denominator), each
  event is worth 1/n. The predicted events are the prediction's `events` of the same holder key.
- event: the predicted event of greatest cosine, strictly above 0 (the first of equals; one at cosine <= 0 is never
  taken; events may be taken again by later ground-truth events). The judge is asked about it whenever there is one.
  It matches unless both its cosine and the judge's value are below 0.3 (the script's default `--event_threshold`).
- each emotion of a matched event is worth 1/(n * its event's emotion count): its counterpart is the predicted
  emotion of that event with the greatest reason cosine, strictly above 0 (first of equals). The judge is asked about
  the two reasons; state scores 1 when exactly equal (no trimming, no case folding); source_id scores 1 when the
  predicted value is `in` the set of the ground truth's ids read with int() (so 2 and 2.0 match "2", the string "2"
  never does); reason-judge scores the judge's 1 and reason-embed the cosine, both only when the judge said 1.
- an event without emotions adds nothing but its 1/n to the denominator.
- per file: each total over the holders' summed worth, as a percentage rounded to 2 places (0.0 when no holder has
  events); over files: the mean of the file percentages, rounded to 2 places.
Where the reference raises (a ground-truth source_id that int() cannot read, such as "self"; a judge answer that is
not an integer; a predicted emotion without "state"; shapes it indexes wrongly) `ReferenceCrash` names the place.

Judge answers arrive as a mapping (the spec's: (gt_text, pred_text) -> True / False / None, None = the judge failed
even after its retry; the reference's: its raw answers). A needed answer that is absent is reported in
`ChainOutcome.missing`, so the caller can ask for all dialogues in one batch and call again (`engine`): the spec
leaves that holder for the next round, the reference stops its walk there (whether it asks its later questions
depends on the answer).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from emocaustics.tasks.longdialogue.data.schema import Chains, Emotion, Event, normalise_label
from emocaustics.tasks.longdialogue.score.judge import ReferenceCrash, answer_value
from emocaustics.tasks.longdialogue.score.refjson import (embed_text, event_list, gt_source_ids, holder_events,
                                                          json_text, pred_emotions_of)
from emocaustics.tasks.longdialogue.score.sextuple import SimFn, first_greatest, text_sim

SCORES = ("state_score", "source_id_score", "reason_llm_score", "reason_embed_score")
COLUMNS = tuple(f"total_{s}_percentage" for s in SCORES)  # the reference's per-file metrics, as it names them
JUDGE_COLUMNS = COLUMNS[2:]  # reason-judge and reason-embed: computed only with a judge


@dataclass(frozen=True, slots=True)
class ChainRules:
    """Where the two modes differ, read by the one walk. The first two are the run's; the rest is the mode's."""

    judge: bool = False  # whether a judge takes part (False = `--judge none`)
    on_judge_error: str = "zero"  # zero | unscored (the spec's; an answer the reference cannot read stops it)
    event_threshold: float = 0.7
    reason_threshold: float = 0.8  # the spec's gate on a reason's counterpart (the reference has none)
    # the published script's reading: its JSON read lazily (`refjson`), texts embedded as it sends them, the first
    # option of greatest cosine above 0, answers read with int(), state compared exactly, source ids with int(), the
    # results as totals over the holders with events, and its walk stopped at the first answer still missing
    published: bool = False
    reuse_events: bool = False  # a predicted event may be taken again by a later GT event
    either_matches: bool = False  # matched unless both cosine and judge fall below the threshold; the judge is
    # then asked about every chosen event (otherwise a match needs both, and the judge is asked only when it decides)

    def __post_init__(self) -> None:
        if self.on_judge_error not in ("zero", "unscored"):
            raise ValueError(f"on_judge_error must be 'zero' or 'unscored', not {self.on_judge_error!r}")


@dataclass(slots=True)
class ChainItem:
    """One explainable row: a GT emotion (kind=emotion), a GT event without emotions (kind=event), or a holder
    whose GT has no events (kind=holder, the spec's). Each mode writes its own columns (`item_rows`). The spec's
    `contribution` summed over a holder's rows is the holder's score; the reference's four scores, each divided by
    the event's emotions and the holder's events, sum to its totals when the event matched."""

    holder: str
    kind: str = "emotion"
    event_index: int | None = None
    gt_event: str | None = None
    pred_event_index: int | None = None
    pred_event: str | None = None
    event_sim: float | None = None
    judge: str | None = None  # yes | no | failed | identical | not_asked (embedding already decided / no judge)
    event_judge: int | None = None  # the reference's judge value for the chosen event (None without a judge)
    event_matched: bool = False
    unscored: bool = False  # the judge failed and --on-judge-error unscored took the event out of the denominator
    emotion_index: int | None = None
    gt_state: str | None = None
    gt_reason: str | None = None
    gt_source: str | None = None
    pred_emotion_index: int | None = None
    pred_state: str | None = None
    pred_reason: str | None = None
    pred_source: str | None = None  # the reference's: the value as JSON text, "2" (an int) vs "\"2\"" (a string)
    reason_sim: float | None = None
    reason_judge: int | None = None
    reason_ok: bool = False
    state_ok: bool = False
    source_ok: bool = False
    state_score: int = 0
    source_id_score: int = 0
    reason_llm_score: int = 0
    reason_embed_score: float = 0.0
    points: float = 0.0
    max_points: float = 0.0
    weight: float = 0.0  # the reference's: 1 / (events of the holder * emotions of the event); 0 for an empty event
    contribution: float = 0.0


SPEC_ONLY = frozenset({"kind", "pred_event_index", "judge", "unscored", "reason_ok", "state_ok", "source_ok",
                       "points", "max_points", "contribution"})
REFERENCE_ONLY = frozenset({"event_judge", "reason_judge", *SCORES})


def item_columns(rules: ChainRules) -> list[str]:
    drop = SPEC_ONLY if rules.published else REFERENCE_ONLY
    return [c for c in ChainItem.__dataclass_fields__ if c not in drop]


def item_rows(dialogue: int, items: Sequence[ChainItem], rules: ChainRules) -> list[dict[str, Any]]:
    """The items table's rows in a mode's own columns (the other mode's are left out)."""
    columns = item_columns(rules)
    return [{"dialogue": dialogue, **{c: getattr(it, c) for c in columns}} for it in items]


@dataclass(slots=True)
class ChainOutcome:
    items: list[ChainItem] = field(default_factory=list)
    holder_scores: dict[str, float | None] = field(default_factory=dict)  # None: every event of the holder unscored
    missing: set[tuple[str, str]] = field(default_factory=set)  # answers still needed; items are incomplete then
    judge_failures: int = 0
    totals: dict[str, float] = field(default_factory=lambda: dict.fromkeys(SCORES, 0.0))  # the reference's
    possible: float = 0.0  # the reference's summed worth of the events

    @property
    def score(self) -> float | None:
        scored = [s for s in self.holder_scores.values() if s is not None]
        return sum(scored) / len(scored) if scored else None

    def percentages(self) -> dict[str, float]:
        return {c: (round(self.totals[s] / self.possible * 100, 2) if self.possible > 0 else 0.0)
                for s, c in zip(SCORES, COLUMNS)}


class _Pending(Exception):
    """An answer is still missing; what depends on it waits for the next round."""


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


def _best(text: str, options: Sequence[tuple[int, Any]], sim: SimFn, rules: ChainRules, where: str,
          bonus: Callable[[int], float] | None = None) -> tuple[int, float] | None:
    """(index, similarity) of the most similar option, or None. The spec's ties (common: a weak embedder maps many
    Chinese texts to nearly the same vector) go to an identical text, then to the option with the larger `bonus`
    (the points it would earn), then the earliest. The reference embeds the texts as it sends them and takes the
    first option of greatest cosine strictly above 0 (it starts from 0.0 and replaces only on `>`: never a NaN)."""
    if rules.published:
        a = embed_text(text, f"{where}, ground truth")
        texts = [(j, embed_text(t, f"{where}, prediction {j}")) for j, t in options]
        found = first_greatest([(j, s) for j, t in texts if (s := float(sim(a, t))) > 0], lambda js: (js[1],))
    else:
        found = first_greatest(options, lambda o: (text_sim(sim, text, o[1]), text.strip() == o[1].strip(),
                                                   bonus(o[0]) if bonus else 0.0, -o[0]))
    return None if found is None else (found[0][0], found[1][0])


def _answer(gt: str, pred: str, answers: Mapping[Any, Any], rules: ChainRules, missing: set[tuple[str, str]],
            where: str) -> Any:
    """The judge's value for a pair: the spec's verdict (True / False / None: failed), the reference's answer read as
    its script reads it (1 or 0; `ReferenceCrash` where its int() raises). Missing: asked for, `_Pending` raised."""
    if (gt, pred) not in answers:
        missing.add((gt, pred))
        raise _Pending
    return answer_value(answers[gt, pred], where) if rules.published else answers[gt, pred]


def _emotion(gt_em: Emotion, ems: Sequence[Any], found: tuple[int, float] | None, answers: Mapping[Any, Any],
             rules: ChainRules, missing: set[tuple[str, str]], where: str) -> dict[str, Any]:
    """A GT emotion's row fields from its counterpart (`found`: its index in `ems` and similarity; none: no fields)."""
    if found is None:
        return {}
    j, s = found
    p = ems[j]
    if not rules.published:
        reason_ok = s >= rules.reason_threshold
        st = reason_ok and normalise_label(p.state) == normalise_label(gt_em.state)
        so = reason_ok and source_ok(gt_em, p)
        return dict(pred_emotion_index=j, pred_state=p.state, pred_reason=p.reason, reason_sim=s, reason_ok=reason_ok,
                    state_ok=st, pred_source=p.source_raw or ",".join(p.source_ids), source_ok=so,
                    points=float(st) + float(so))
    llm = _answer(gt_em.reason, p["reason"], answers, rules, missing, where) if rules.judge else 0
    if "state" not in p:
        raise ReferenceCrash(f"{where}: predicted emotion {j} has no 'state'; the reference raises")
    ids = gt_source_ids(gt_em, where)
    try:
        source_id_ok = int(p["source_id"] in ids)
    except (KeyError, TypeError):  # the reference's bare except: a missing or unhashable id scores 0
        source_id_ok = 0
    return dict(pred_emotion_index=j, pred_state=json_text(p["state"]), pred_reason=json_text(p["reason"]),
                pred_source=json_text(p.get("source_id", "")), reason_sim=s, reason_judge=llm if rules.judge else None,
                state_score=int(gt_em.state == p["state"]), source_id_score=source_id_ok,
                reason_llm_score=llm if llm > 0 else 0, reason_embed_score=s if llm > 0 else 0.0)


def _walk_holder(holder: str, gt_events: Sequence[Event], preds: Sequence[Any], sim: SimFn,
                 answers: Mapping[Any, Any], rules: ChainRules, missing: set[tuple[str, str]]) -> list[list[ChainItem]]:
    """Each GT event's rows, in order: its match, then each of its emotions (the spec's weights are set after)."""
    used: set[int] = set()
    out: list[list[ChainItem]] = []
    for i, ev in enumerate(gt_events):
        where = f"holder {holder} event {i}"
        options = [(j, p["event"] if rules.published else p.event) for j, p in enumerate(preds) if j not in used]
        best = _best(ev.event, options, sim, rules, where)
        j, s = best if best is not None else (None, None)
        pred_text = dict(options).get(j)
        asked = best is not None and rules.judge and (rules.either_matches or (
            s >= rules.event_threshold and ev.event.strip() != pred_text.strip()))
        value = _answer(ev.event, pred_text, answers, rules, missing, where) if asked else None
        if rules.either_matches:
            matched = best is not None and not (s < rules.event_threshold and (value or 0) < rules.event_threshold)
        else:
            matched = best is not None and s >= rules.event_threshold and (not asked or bool(value))
        tag = (None if best is None else "not_asked" if not rules.judge or s < rules.event_threshold
               else "identical" if not asked else "failed" if value is None else "yes" if value else "no")
        row = ChainItem(holder, "emotion", i, ev.event, j, pred_text, s, tag, value, matched,
                        tag == "failed" and rules.on_judge_error == "unscored")
        if matched and not rules.reuse_events:
            used.add(j)  # type: ignore[arg-type]
        if not ev.emotions:
            out.append([replace(row, kind="event", points=float(matched), max_points=1.0)])
            continue
        ems = ((pred_emotions_of(preds[j], f"{where} emotion 0") if rules.published else preds[j].emotions)
               if matched else ())
        rows = []
        for k, gt_em in enumerate(ev.emotions):
            em_where = f"{where} emotion {k}"
            found = _best(gt_em.reason, [(m, e["reason"] if rules.published else e.reason) for m, e in enumerate(ems)],
                          sim, rules, em_where, lambda m: _emotion_points(gt_em, ems[m]))
            rows.append(replace(row, emotion_index=k, gt_state=gt_em.state, gt_reason=gt_em.reason,
                                gt_source=gt_em.source_raw or ",".join(gt_em.source_ids), max_points=2.0,
                                weight=1 / len(ev.emotions) / len(gt_events),
                                **_emotion(gt_em, ems, found, answers, rules, missing, em_where)))
        out.append(rows)
    return out


def _add_holder(out: ChainOutcome, holder: str, events: list[list[ChainItem]], rules: ChainRules) -> None:
    """A walked holder's rows (one list per GT event) and results: the reference's totals over the worth, or the
    spec's holder score, each event's share of it 0 when unscored, else 1 over the scored events."""
    for rows in events:
        out.items.extend(rows)
    if rules.published:
        role = dict.fromkeys(SCORES, 0.0)
        for rows in events:
            for r in rows:
                for s in SCORES if r.event_matched and r.emotion_index is not None else ():
                    role[s] += getattr(r, s) / len(rows) / len(events)
        for s in SCORES:
            out.totals[s] += role[s]
        out.possible += sum(1 / len(events) for _ in events)
        return
    scored = [rows for rows in events if not rows[0].unscored]
    out.judge_failures += sum(rows[0].judge == "failed" for rows in events)
    for rows in events:
        for r in rows:  # made for this holder just now: their share is set in place
            r.weight = (0.0 if r.unscored else 1.0 / len(scored)) / len(rows)
            r.contribution = r.weight * r.points / r.max_points
    # the mean over scored events of points / max points, summed per event from integers so that a perfect
    # prediction gives exactly 1.0 (summing the float contributions would not)
    out.holder_scores[holder] = (math.fsum(sum(r.points for r in rows) / sum(r.max_points for r in rows)
                                           for rows in scored) / len(scored) if scored else None)


def score_dialogue_chains(gt: Chains, pred: Any, sim: SimFn, answers: Mapping[Any, Any] | None = None,
                          rules: ChainRules = ChainRules()) -> ChainOutcome:
    """One dialogue under `rules` (`pred`: our parsed chains for the spec, the published JSON for the reference).
    Raises `ReferenceCrash` where the reference raises; an answer still missing leaves the outcome incomplete, with
    `missing` saying what to ask."""
    out = ChainOutcome()
    for holder, gt_events in gt.items():
        if rules.published:  # read for every ground-truth holder, as the reference does
            raw = holder_events(pred, holder)
            preds: Sequence[Any] = event_list(raw, holder) if gt_events else []
        else:
            preds = tuple(pred.get(holder, ()))
        if not gt_events:
            if not rules.published:  # the spec: full marks only when nothing is predicted for the holder either
                full = not preds
                out.items.append(ChainItem(holder=holder, kind="holder", points=float(full), max_points=1.0,
                                           weight=1.0, contribution=float(full)))
                out.holder_scores[holder] = float(full)
            continue
        try:
            events = _walk_holder(holder, gt_events, preds, sim, answers or {}, rules, out.missing)
        except _Pending:
            if rules.published:
                return out
            continue
        _add_holder(out, holder, events, rules)
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


def needed_pairs(gt: Chains, pred: Chains) -> set[tuple[str, str]]:
    """Every (gt, pred) text pair of the same holder that the spec's walk may compare: the events, and the reasons
    (a superset of what matched events compare)."""
    out: set[tuple[str, str]] = set()
    for h, evs in gt.items():
        preds = pred.get(h, ())
        p_reasons = {e.reason for p in preds for e in p.emotions}
        out.update((g.event, p.event) for g in evs for p in preds)
        out.update((g.reason, r) for ev in evs for g in ev.emotions for r in p_reasons)
    return out
