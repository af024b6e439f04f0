"""The task's scoring of one story and the assembly of many into the common score tables.

`score_sample` turns one (prediction, GT) into the story's long score rows (one per component, plus `overall`), its
per-component item rows, its reported issues and the compact result the aggregate needs. It is a plain function of
JSON-able values so that the same code runs in the driver (a few stories) and in Ray Data workers (thousands:
`rayscore.score_samples_ray`); `assemble` builds the `Scored` tables from the per-story outputs in sample order.

Rows: a component whose GT is wholly missing is `unscored` with the reason; a failed prediction is 0 and `failed`
on the components its GT could score (those an empty prediction is scored on), `unscored` on the others; a story
without readable GT is `unscored` everywhere with the reader's error.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import polars as pl

from emocaustics.core.task import Failure, Scored, rows_frame
from emocaustics.tasks.narrative.aggregate import aggregate, compact
from emocaustics.tasks.narrative.composite import COMPONENTS, score_pair
from emocaustics.tasks.narrative.taxonomy import Taxonomy, default_taxonomy, load_taxonomy

ISSUE_SCHEMA = {k: pl.Utf8 for k in ("sample_id", "kind", "role", "path", "message")}
ITEM_SCHEMA = {"sample_id": pl.Utf8, "component": pl.Utf8, "score": pl.Float64, "gt_incomplete": pl.Boolean,
               "reason": pl.Utf8, "skipped_events": pl.Int64, "metrics": pl.Utf8, "extra": pl.Utf8,
               "missing": pl.Utf8}


@functools.lru_cache(maxsize=8)
def taxonomy_for(folder: str | None) -> Taxonomy:
    """The shipped taxonomies, or a user's folder replacing them (cached: loaded once per process / Ray worker)."""
    return load_taxonomy(folder) if folder else default_taxonomy()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def score_sample(sample_id: str, pred: Any, target: Any, meta: dict[str, Any], *,
                 weights: dict[str, float] | None = None, taxonomy: str | None = None,
                 n_t: int = 2) -> dict[str, Any]:
    """One story -> {"rows", "items", "issues", "result"} (`result`: the compact composite, None if not scored)."""
    tax = taxonomy_for(taxonomy)
    if target is None:
        reason = meta.get("gt_error", "no ground truth")
        rows = [{"sample_id": sample_id, "metric": m, "value": None, "status": "unscored", "reason": reason}
                for m in (*COMPONENTS, "overall")]
        return {"rows": rows, "items": [], "issues": [], "result": None}
    if not isinstance(pred, Failure):
        result = score_pair(pred, target, weights, pred_name=f"prediction {sample_id}",
                            gt_name=meta.get("gt_file", sample_id), taxonomy=tax, n_t=n_t)
        if result.get("error_in") == "pred":
            pred = Failure("prediction", result["error"])
    if isinstance(pred, Failure):
        # which components GT could score: those an empty prediction would be scored on
        floor = score_pair({"version": "3.0"}, target, weights, taxonomy=tax, n_t=n_t)
        rows = []
        for m in (*COMPONENTS, "overall"):
            value = floor["component_scores"].get(m) if m != "overall" else floor["overall_score"]
            has_gt = value is not None
            rows.append({"sample_id": sample_id, "metric": m, "value": 0.0 if has_gt else None,
                         "status": "failed" if has_gt else "unscored", "reason": str(pred)})
        return {"rows": rows, "items": [], "issues": [], "result": None}
    rows = []
    for c, r in result["detailed_results"].items():
        scored = r["score"] is not None
        rows.append({"sample_id": sample_id, "metric": c, "value": r["score"],
                     "status": "ok" if scored else "unscored", "reason": None if scored else r["reason"]})
    overall = result["overall_score"]
    rows.append({"sample_id": sample_id, "metric": "overall", "value": overall,
                 "status": "ok" if overall is not None else "unscored",
                 "reason": None if overall is not None else "no component could be scored"})
    items = [{"sample_id": sample_id, "component": c, "score": r["score"], "gt_incomplete": r["gt_incomplete"],
              "reason": r["reason"], "skipped_events": r["skipped_events"], "metrics": _dumps(r["metrics"]),
              "extra": _dumps(r["extra"]), "missing": _dumps(r["missing"])}
             for c, r in result["detailed_results"].items()]
    issues = [{"sample_id": sample_id, **i} for i in result["summary"]["issues"] + result["summary"]["out_of_taxonomy"]]
    return {"rows": rows, "items": items, "issues": issues, "result": compact(result)}


def assemble(sample_ids: list[str], outputs: dict[str, dict[str, Any]],
             weights: dict[str, float] | None = None, extra_summary: dict[str, Any] | None = None) -> Scored:
    """Per-story outputs (by sample id) -> the task's Scored: rows, summary (aggregate macro/micro), items, issues."""
    rows: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    issues: list[dict[str, Any]] = []
    results: dict[str, dict[str, Any]] = {}
    for sid in sample_ids:
        out = outputs[sid]
        rows += out["rows"]
        items += out["items"]
        issues += out["issues"]
        if out["result"] is not None:
            results[sid] = out["result"]
    agg = aggregate(results, weights)
    summary: dict[str, Any] = {"overall": agg["overall_score"], "overall_micro": agg["overall_micro"]}
    for c, v in agg["component_scores"].items():
        summary |= {f"{c}_macro": v["macro"], f"{c}_micro": v["micro"], f"{c}_files_unscored": v["unscored"]}
    summary |= {"files_scored": agg["files"], **agg["summary"], **(extra_summary or {})}
    return Scored(rows_frame(rows), summary, {"issues": pl.DataFrame(issues, schema=ISSUE_SCHEMA)},
                  pl.DataFrame(items, schema=ITEM_SCHEMA))
