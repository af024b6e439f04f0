"""ECPE's sample page in `emocaustics view` (`Report.view_sample`): the conversation with each utterance's gold
and predicted emotion and causes, the gold cause spans marked in the text, and every pair with the scorer's outcome."""

from __future__ import annotations

from typing import Any

MARK = {"correct": "ok", "wrong": "bad", "missed": "miss"}


def _pairs(block: Any) -> list[tuple[int, str, int, str]]:
    """[["3_anger", "1_span text" | "1"], ...] -> (emotion utterance, emotion, cause utterance, span or "")."""
    out = []
    for pair in block or []:
        try:
            emo, cause = str(pair[0]), str(pair[1])
            e_utt, emotion = emo.split("_", 1)
            c_utt, _, span = cause.partition("_")
            out.append((int(e_utt), emotion, int(c_utt), span))
        except (ValueError, IndexError, TypeError):  # a malformed pair is shown as the scorer saw it: not at all
            continue
    return out


def _marked(text: str, spans: list[str]) -> str:
    for span in spans:  # «…» around each gold cause span found in the utterance
        if span and span in text and f"«{span}»" not in text:
            text = text.replace(span, f"«{span}»", 1)
    return text


def view_sample(input: Any, target: Any, prediction: Any, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    inp = input if isinstance(input, dict) else {}
    gold = target if isinstance(target, dict) else {}
    pred = prediction if isinstance(prediction, dict) else {}
    gold_pairs = _pairs(gold.get("subtask1")) or _pairs(gold.get("subtask2"))
    pred_pairs = _pairs(pred.get("subtask1")) or _pairs(pred.get("subtask2"))
    emotions = gold.get("emotions") or []
    rows, marks = [], []
    for n, u in enumerate(inp.get("utterances") or []):
        uid = u.get("utterance_ID", n + 1)
        spans = [s for e, _, c, s in gold_pairs if c == uid]
        g_causes = sorted({c for e, _, c, _ in gold_pairs if e == uid})
        p_causes = sorted({c for e, _, c, _ in pred_pairs if e == uid})
        p_emo = sorted({em for e, em, _, _ in pred_pairs if e == uid})
        g_emo = emotions[n] if n < len(emotions) else ""
        rows.append([uid, u.get("speaker", ""), _marked(str(u.get("text", "")), spans), g_emo,
                     ", ".join(map(str, g_causes)), ", ".join(p_emo), ", ".join(map(str, p_causes))])
        marks.append(None if not (g_causes or p_causes) else "ok" if set(g_causes) == set(p_causes) and
                     (not g_causes or g_emo in p_emo) else "bad")
    pair_rows, pair_marks = [], []
    for it in items:
        span = ""
        if it.get("start") is not None and it.get("end") is not None:
            utts = {u.get("utterance_ID"): str(u.get("text", "")) for u in inp.get("utterances") or []}
            # token offsets, end inclusive (the submission's "utt_start_end")
            span = " ".join(utts.get(it.get("cause_utterance"), "").split()[int(it["start"]):int(it["end"]) + 1])
        pair_rows.append([it.get("subtask"), it.get("emotion_utterance"), it.get("emotion"), it.get("cause_utterance"),
                          span, it.get("outcome")])
        pair_marks.append(MARK.get(str(it.get("outcome"))))
    counts = {k: sum(1 for r in pair_rows if r[-1] == k) for k in MARK}
    return [
        {"title": f"Conversation {inp.get('conversation_ID', '')} (gold cause spans in «»)", "kind": "table",
         "columns": ["utt", "speaker", "text", "gold emotion", "gold causes", "predicted emotion",
                     "predicted causes"], "rows": rows, "marks": marks},
        {"title": "Pairs: " + ", ".join(f"{v} {k}" for k, v in counts.items()), "kind": "table",
         "columns": ["subtask", "emotion utt", "emotion", "cause utt", "cause span", "outcome"],
         "rows": pair_rows, "marks": pair_marks},
        {"title": "Gold", "kind": "json", "value": target, "side": "gold"},
        {"title": "Prediction", "kind": "json", "value": prediction, "side": "prediction"},
    ]
