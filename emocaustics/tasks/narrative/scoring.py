"""The task's scoring of one story and the assembly of many into the common score tables.

`score_sample` turns one (prediction, GT) into the story's long score rows (one per component, plus `overall`), its
per-component item rows, its reported issues and the compact result the aggregate needs. It is a plain function of
JSON-able values so that the same code runs in the driver (a few stories) and in Ray Data workers (thousands:
`rayscore.score_samples_ray`); `assemble` builds the `Scored` tables from the per-story outputs in sample order.

Rows: a component whose GT is wholly missing is `unscored` with the reason; a failed prediction is 0 and `failed`
on the components its GT could score (those an empty prediction is scored on), `unscored` on the others; a story
without readable GT is `unscored` everywhere with the reader's error.

One definition of what is scored, for `run` and `score narrative` alike: every GT story is a sample; a story whose
prediction is missing or unusable is failed and counts 0 in the rows *and* in the aggregate (`overall` of the
summary is the mean of the rows' `overall`, failures 0, unscored stories left out: the figure of summary.md).
`score_files` is the file-based entry of the same rule (the CLI and its Ray Data path).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import polars as pl

from emocaustics.core.task import Failure, Scored, rows_frame
from emocaustics.tasks.narrative.aggregate import PRF_COUNTS, aggregate, compact, prf_columns, prf_counts_row
from emocaustics.tasks.narrative.composite import COMPONENTS, error_result, failed_result, score_pair, score_story
from emocaustics.tasks.narrative.io import load_story
from emocaustics.tasks.narrative.schema import NarrativeFormatError, parse_story
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
        if meta.get("gt_error"):  # a GT file that cannot be read is a failed story (0, named), as `score narrative`
            rows[-1] |= {"value": 0.0, "status": "failed", "reason": f"ground truth unreadable: {reason}"}
        return {"rows": rows, "items": [], "issues": [], "result": None}
    if not isinstance(pred, Failure):
        result = score_pair(pred, target, weights, pred_name=f"prediction {sample_id}",
                            gt_name=meta.get("gt_file", sample_id), taxonomy=tax, n_t=n_t)
        if result.get("error_in") == "pred":
            pred = Failure("prediction", result["error"])
    if isinstance(pred, Failure):
        # 0 and `failed` on the components GT could score (those an empty prediction is scored on), and the same
        # story counted 0 in the aggregate: the rows and the summary are one definition
        try:
            gt = parse_story(target, meta.get("gt_file", sample_id))
        except NarrativeFormatError as exc:
            return score_sample(sample_id, pred, None, meta | {"gt_error": str(exc)})
        failed = failed_result(gt, str(pred), weights, tax, n_t)
        rows = []
        for m in (*COMPONENTS, "overall"):
            value = failed["component_scores"].get(m) if m != "overall" else failed["overall_score"]
            rows.append({"sample_id": sample_id, "metric": m, "value": value,
                         "status": "unscored" if value is None else "failed", "reason": str(pred)})
        return {"rows": rows, "items": [], "issues": [], "result": compact(failed)}
    rows, items = [], []  # each component's row and its item, in one pass
    for c, r in result["detailed_results"].items():
        scored = r["score"] is not None
        rows.append({"sample_id": sample_id, "metric": c, "value": r["score"],
                     "status": "ok" if scored else "unscored", "reason": None if scored else r["reason"]})
        items.append({"sample_id": sample_id, "component": c, "score": r["score"], "gt_incomplete": r["gt_incomplete"],
                      "reason": r["reason"], "skipped_events": r["skipped_events"], "metrics": _dumps(r["metrics"]),
                      "extra": _dumps(r["extra"]), "missing": _dumps(r["missing"])})
    overall = result["overall_score"]
    rows.append({"sample_id": sample_id, "metric": "overall", "value": overall,
                 "status": "ok" if overall is not None else "unscored",
                 "reason": None if overall is not None else "no component could be scored"})
    issues = [{"sample_id": sample_id, **i} for i in result["summary"]["issues"] + result["summary"]["out_of_taxonomy"]]
    return {"rows": rows, "items": items, "issues": issues, "result": compact(result)}


def score_files(pred: str | Path | None, gt: str | Path, *, missing: str, weights: dict[str, float] | None = None,
                taxonomy: Taxonomy | None = None, n_t: int = 2) -> dict[str, Any]:
    """One GT file and its prediction file (None: there is none; `missing` says why) -> the composite result. A GT
    that cannot be read gives `error` (the story cannot be scored); a missing or unreadable prediction a failed
    result (`composite.failed_result`), as the job scores a sample without a usable prediction."""
    gs = load_story(gt)
    if isinstance(gs, NarrativeFormatError):
        return error_result(str(gs), "gt")
    ps = load_story(pred) if pred else None
    if ps is None or isinstance(ps, NarrativeFormatError):
        return failed_result(gs, missing if ps is None else str(ps), weights, taxonomy, n_t)
    return score_story(ps, gs, weights, taxonomy, n_t)


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
        if c in PRF_COUNTS:
            summary |= {f"{c}_{k}": v[k] for k in ("precision", "recall", "f1")}
    summary |= {"files_scored": agg["files"], "stories_failed": len(agg["failed"]), **agg["summary"],
                **(extra_summary or {})}
    # each story's P/R/F1 counts, joined into the job's scores.parquet: the report pools them per config
    info = pl.DataFrame([{"sample_id": sid, **prf_counts_row(results.get(sid))} for sid in sample_ids],
                        schema={"sample_id": pl.Utf8, **{c: pl.Int64 for c in prf_columns()}})
    return Scored(rows_frame(rows), summary,
                  {"issues": pl.DataFrame(issues, schema=ISSUE_SCHEMA), "sample_info": info},
                  pl.DataFrame(items, schema=ITEM_SCHEMA))
