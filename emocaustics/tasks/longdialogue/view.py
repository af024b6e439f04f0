"""EmoCaustics' sample page in `emocaustics view` (`Report.view_sample`): the dialogue with each utterance's
gold and predicted sextuples (sextuple task), the holders' gold and predicted event chains (emotion task), and the
scorer's per-utterance and per-event matches with their similarities."""

from __future__ import annotations

from typing import Any

FIELDS = ("target", "aspect", "opinion", "sentiment", "rationale")


def _six(d: Any) -> str:
    if not isinstance(d, dict):
        return ""
    return " | ".join(f"{f}: {d.get(f, '')}" for f in FIELDS if d.get(f) not in (None, ""))


def _chains(chains: Any) -> list[list[Any]]:
    rows = []
    for holder, events in (chains or {}).items() if isinstance(chains, dict) else []:
        for n, ev in enumerate(events or []):
            emos = "; ".join(f"{e.get('state')}: {e.get('reason')} (source "
                             f"{','.join(map(str, e.get('source_ids') or []))})"
                             for e in ev.get("emotions") or [] if isinstance(e, dict))
            rows.append([holder, n, ev.get("event", ""), emos])
    return rows


def _ok(value: Any) -> str | None:
    return None if value is None else ("ok" if value else "bad")


def view_sample(input: Any, target: Any, prediction: Any, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    inp = input if isinstance(input, dict) else {}
    utts = inp.get("utterances") or []
    sections: list[dict[str, Any]] = []
    per_utt = prediction if isinstance(prediction, list) else None
    by_utt = {it.get("utterance"): it for it in items if it.get("utterance") is not None}
    rows, marks = [], []
    for n, u in enumerate(utts):
        idx = u.get("index", n)
        pred = " || ".join(_six(p) for p in (per_utt[n] if per_utt and n < len(per_utt) else []) or [])
        it = by_utt.get(idx, {})
        rows.append([idx, u.get("holder", ""), u.get("sentence", ""), _six(u.get("gt")) if per_utt is not None
                     else "", pred, it.get("points")])
        marks.append(None if not it else "ok" if it.get("points") and all(
            it.get(f"{f}_ok") is not False for f in FIELDS if f != "target") else "bad")
    title = f"Dialogue {inp.get('id', '')}" + (": gold and predicted sextuples" if per_utt is not None else "")
    sections.append({"title": title, "kind": "table",
                     "columns": ["utt", "holder", "sentence", "gold sextuple", "predicted sextuple", "points"],
                     "rows": rows, "marks": marks})
    if isinstance(prediction, dict) or not per_utt:
        for title, chains in (("Gold event chains", inp.get("chains")), ("Predicted event chains", prediction)):
            chain_rows = _chains(chains)  # a prediction that is not a chains object has none
            sections.append({"title": title, "kind": "table", "columns": ["holder", "event", "text", "emotions"],
                             "rows": chain_rows, "marks": [None] * len(chain_rows)})
    events = [it for it in items if it.get("gt_event") is not None or it.get("kind") is not None]
    if events:
        matched = sum(1 for it in events if it.get("event_matched"))
        sections.append({
            "title": f"Event and chain matches: {matched} of {len(events)} matched", "kind": "table",
            "columns": ["holder", "kind", "gold event", "predicted event", "event sim", "matched", "gold emotion",
                        "predicted emotion", "reason sim", "points"],
            "rows": [[it.get("holder"), it.get("kind"), it.get("gt_event"), it.get("pred_event"), it.get("event_sim"),
                      it.get("event_matched"), f"{it.get('gt_state') or ''}: {it.get('gt_reason') or ''}",
                      f"{it.get('pred_state') or ''}: {it.get('pred_reason') or ''}", it.get("reason_sim"),
                      it.get("points")] for it in events],
            "marks": [_ok(it.get("event_matched")) for it in events]})
    sections.append({"title": "Gold", "kind": "json", "value": target if target is not None else
                     {"utterances": [u.get("gt") for u in utts], "chains": inp.get("chains")}, "side": "gold"})
    sections.append({"title": "Prediction", "kind": "json", "value": prediction, "side": "prediction"})
    return sections
