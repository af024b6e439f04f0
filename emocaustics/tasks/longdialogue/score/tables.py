"""Score rows -> Polars tables (items, dialogues) -> the summary; and writing them (`--out`).

- `items`: one row per scored item (an utterance for sextuples; a GT emotion / empty event / empty holder for
  chains) with the texts, the similarities and the decisions, so every point can be re-checked.
- `dialogues`: one row per input dialogue, failures included (`failed`, `reason`), with `score`, the micro-average
  `weight` (utterances for sextuples, GT holders for chains) and component columns `c_<name>`.
- summary: task, dialogues, score (mean of dialogue scores, failures count 0), micro_score, components (pooled over
  the items of scored dialogues), per_dialogue, failures, judge_failures, and how the numbers were made.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from emocaustics.tasks.longdialogue.data.schema import Dialogue
from emocaustics.tasks.longdialogue.score.chains import ChainItem, ChainRules, item_columns
from emocaustics.tasks.longdialogue.score.sextuple import UtteranceScore

SEXTUPLE_COMPONENTS = ("sentiment", "aspect", "opinion", "rationale")
CHAIN_COMPONENTS = ("event_match", "reason_match", "state", "source")

DIALOGUE_SCHEMA: dict[str, Any] = {
    "dialogue": pl.Int64, "status": pl.Utf8, "failed": pl.Boolean, "reason": pl.Utf8, "n_utterances": pl.Int64,
    "weight": pl.Float64, "score": pl.Float64, "judge_failures": pl.Int64, "prediction_notes": pl.Int64,
}


@dataclass(slots=True)
class ScoreResult:
    items: pl.DataFrame
    dialogues: pl.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)

    def write(self, out: str | Path) -> dict[str, Path]:
        """items.parquet, dialogues.parquet, summary.csv (one row: the scalar summary fields and components) and
        summary.json (everything)."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"items": out / "items.parquet", "dialogues": out / "dialogues.parquet",
                 "summary_csv": out / "summary.csv", "summary_json": out / "summary.json"}
        self.items.write_parquet(paths["items"])
        self.dialogues.write_parquet(paths["dialogues"])
        flat = {k: v for k, v in self.summary.items() if not isinstance(v, (dict, list))}
        flat.update({f"c_{k}": v for k, v in self.summary.get("components", {}).items()})
        flat["failures"] = len(self.summary.get("failures", []))
        with paths["summary_csv"].open("w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(flat))
            w.writeheader()
            w.writerow(flat)
        paths["summary_json"].write_text(json.dumps(self.summary, ensure_ascii=False, indent=1), encoding="utf-8")
        return paths


def sextuple_item_rows(dialogue: int, rows: list[UtteranceScore]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        d: dict[str, Any] = {"dialogue": dialogue, "utterance": r.index, "holder": r.holder, "sentence": r.sentence,
                             "gt_empty": r.gt_empty, "rule": r.rule, "n_candidates": r.n_candidates,
                             "chosen": r.chosen}
        for f in ("target", "aspect", "opinion", "sentiment", "rationale"):
            d[f"gt_{f}"] = getattr(r.gt, f)
            d[f"pred_{f}"] = getattr(r.pred, f)
            if f != "sentiment":
                d[f"{f}_sim"] = getattr(r, f"{f}_sim")
            if f != "target":
                d[f"{f}_ok"] = getattr(r, f"{f}_ok")
        d["points"] = r.points
        out.append(d)
    return out


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> pl.DataFrame:
    if not rows:
        return pl.DataFrame({c: [] for c in columns})
    return pl.DataFrame(rows, infer_schema_length=None)


SEXTUPLE_ITEM_COLUMNS = [
    "dialogue", "utterance", "holder", "sentence", "gt_empty", "rule", "n_candidates", "chosen",
    "gt_target", "pred_target", "target_sim", "gt_aspect", "pred_aspect", "aspect_sim", "aspect_ok",
    "gt_opinion", "pred_opinion", "opinion_sim", "opinion_ok", "gt_sentiment", "pred_sentiment", "sentiment_ok",
    "gt_rationale", "pred_rationale", "rationale_sim", "rationale_ok", "points"]
CHAIN_ITEM_COLUMNS = ["dialogue", *item_columns(ChainRules())]  # the spec's


def _mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def dialogue_row(d: Dialogue, status: str, reason: str | None, weight: float, score: float | None,
                 judge_failures: int = 0, notes: int = 0, **components: float | None) -> dict[str, Any]:
    """One row of the dialogues table: `DIALOGUE_SCHEMA`'s columns, then the components `c_<name>`."""
    return {"dialogue": d.id, "status": status, "failed": status == "failed", "reason": reason,
            "n_utterances": len(d.utterances), "weight": weight, "score": score, "judge_failures": judge_failures,
            "prediction_notes": notes, **components}


def dialogues_frame(rows: list[dict[str, Any]], components: list[str]) -> pl.DataFrame:
    schema = dict(DIALOGUE_SCHEMA) | {c: pl.Float64 for c in components}
    return (pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)).sort("dialogue")


def summarise(task: str, dia: pl.DataFrame, components: dict[str, float | None], micro: float | None,
              extra: dict[str, Any]) -> dict[str, Any]:
    """The summary of a dialogues table (both modes): the mean dialogue score with failures counted 0 and dialogues
    without ground truth left out, the micro-average `micro`, the components, failures and how it was made."""
    return {
        "task": task,
        "dialogues": dia.height,
        "scored": int(dia.filter(pl.col("status") == "ok").height),
        "score": _mean(dia.filter(pl.col("status") != "no_gt")["score"].to_list()),
        "micro_score": micro,
        "components": components,
        "per_dialogue": {str(r["dialogue"]): r["score"] for r in dia.iter_rows(named=True)},
        "failures": [{"dialogue": r["dialogue"], "reason": r["reason"]}
                     for r in dia.filter(pl.col("status") != "ok").iter_rows(named=True)],
        "judge_failures": int(dia["judge_failures"].sum() or 0),
        **extra,
    }


def build_result(task: str, items: list[dict[str, Any]], dialogues: list[dict[str, Any]], extra: dict[str, Any],
                 columns: Sequence[str] | None = None,
                 components: Callable[[str, pl.DataFrame], dict[str, float | None]] | None = None) -> ScoreResult:
    """The tables and summary of either mode: the spec's (pooled components) or, with the reference's component
    `columns` and its over-file averages (`components` of the dialogues table), the reference's."""
    if columns is None:
        items_df = _frame(items, SEXTUPLE_ITEM_COLUMNS if task == "sextuple" else CHAIN_ITEM_COLUMNS)
        columns = [*SEXTUPLE_COMPONENTS, "target_sim"] if task == "sextuple" else CHAIN_COMPONENTS
    else:  # the reference's item columns are whatever its rows hold
        items_df = pl.DataFrame(items, infer_schema_length=None) if items else pl.DataFrame()
    dia_df = dialogues_frame(dialogues, [f"c_{c}" for c in columns])
    wsum = dia_df.filter((pl.col("status") != "no_gt") & pl.col("score").is_not_null() & (pl.col("weight") > 0))
    micro = float((wsum["score"] * wsum["weight"]).sum() / wsum["weight"].sum()) if wsum.height else None
    comps = components(task, dia_df) if components else pooled_components(task, items_df)
    return ScoreResult(items_df, dia_df, summarise(task, dia_df, comps, micro, extra))


def pooled_components(task: str, items: pl.DataFrame) -> dict[str, float | None]:
    if items.height == 0:
        return {}
    if task == "sextuple":
        out = {c: float(items[f"{c}_ok"].mean()) for c in SEXTUPLE_COMPONENTS}  # type: ignore[arg-type]
        ts = items.filter(~pl.col("gt_empty"))["target_sim"]
        out["target_sim"] = float(ts.mean()) if ts.len() else None  # type: ignore[arg-type]
        return out
    scored = items.filter(~pl.col("unscored"))
    events = scored.filter(pl.col("kind") != "holder").unique(["dialogue", "holder", "event_index"])
    emotions = scored.filter(pl.col("kind") == "emotion")

    def rate(df: pl.DataFrame, col: str) -> float | None:
        return float(df[col].mean()) if df.height else None  # type: ignore[arg-type]

    return {"event_match": rate(events, "event_matched"), "reason_match": rate(emotions, "reason_ok"),
            "state": rate(emotions, "state_ok"), "source": rate(emotions, "source_ok")}


def sextuple_dialogue_components(rows: list[UtteranceScore]) -> dict[str, float | None]:
    n = len(rows)
    out: dict[str, float | None] = {f"c_{c}": (sum(getattr(r, f"{c}_ok") for r in rows) / n if n else None)
                                    for c in SEXTUPLE_COMPONENTS}
    out["c_target_sim"] = _mean([r.target_sim for r in rows if not r.gt_empty])
    return out


def chain_dialogue_components(items: list[ChainItem]) -> dict[str, float | None]:
    scored = [i for i in items if not i.unscored]
    events = {(i.holder, i.event_index): i.event_matched for i in scored if i.kind != "holder"}
    emos = [i for i in scored if i.kind == "emotion"]
    return {"c_event_match": _mean([float(v) for v in events.values()]),
            "c_reason_match": _mean([float(i.reason_ok) for i in emos]),
            "c_state": _mean([float(i.state_ok) for i in emos]),
            "c_source": _mean([float(i.source_ok) for i in emos])}
