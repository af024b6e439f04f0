"""Aggregating composite results over many files, and the JSON / Markdown reports.

Macro: the mean over files of each component score, skipping files where it is None (the count of those is given).
Micro: each component's additive counts pooled over the files that scored it, then the component's own
counts -> score function (composite.SCORE_FROM_COUNTS), so one file's micro equals its own score.
`overall_score` is the macro mean of the per-file overall scores; `overall_micro` the weighted mean of the micro
component scores (same renormalised weights as one file).
A failed story (`failed`: its prediction is missing or unusable; `composite.failed_result`) is in both: 0 in the
macro means, its GT items missed in the micro pools. A result carrying `error` (its GT cannot be read) is in neither.
Precision / recall / F1 per component (`prf_from_counts`) come from the same pooled counts.
"""

from __future__ import annotations

import json
from typing import Any

from emocaustics.tasks.narrative.composite import COMPONENTS, SCORE_FROM_COUNTS, parse_weights, weighted_overall
from emocaustics.tasks.narrative.gtmissing import mean_of, prf, ratio

SUMMARY_TOTALS = ("total_events", "predicted_events", "aligned_events", "correct_events", "missed_events",
                  "extra_events")


# The components that have precision / recall / F1, with the counts they come from and what they count. Events have
# recall only: a predicted event absent from GT is not an error (the GT-incomplete rule). Actions (field accuracy) and
# spans (boundary similarity) have none.
PRF_COUNTS: dict[str, tuple[str, ...]] = {"characters": ("tp", "fp", "fn"), "events": ("aligned", "gt_events"),
                                          "relationships": ("tp", "fp", "fn"), "sentiment": ("tp", "fp", "fn")}
PRF_UNIT = {"characters": "characters", "events": "GT events aligned (recall only)",
            "relationships": "relationship pairs", "sentiment": "sentiment labels"}


def prf_from_counts(component: str, counts: dict[str, float]) -> dict[str, float | None]:
    """A component's pooled (or one story's) counts -> {precision, recall, f1}; None where not measured."""
    if component == "events":
        return {"precision": None, "recall": ratio(counts.get("aligned", 0), counts.get("gt_events", 0)), "f1": None}
    p, r, f = prf(counts.get("tp", 0), counts.get("fp", 0), counts.get("fn", 0))
    return {"precision": p, "recall": r, "f1": f}


def prf_columns() -> dict[str, tuple[str, str]]:
    """The per-story count columns the job joins into scores.parquet (`sample_info`), so that the report can pool them
    per config: column -> (component, count)."""
    return {f"n_{c}_{k}": (c, k) for c, keys in PRF_COUNTS.items() for k in keys}


def prf_counts_row(result: dict[str, Any] | None) -> dict[str, int | None]:
    """One story's (compact) result -> its `prf_columns` values (None where the component was not scored)."""
    row: dict[str, int | None] = {}
    for col, (c, k) in prf_columns().items():
        scored = result is not None and result["component_scores"].get(c) is not None
        row[col] = int(result["detailed_results"][c]["counts"].get(k, 0)) if scored else None  # type: ignore[index]
    return row


def aggregate(per_file: dict[str, dict[str, Any]], weights: dict[str, float] | str | None = None,
              skipped: dict[str, Any] | None = None) -> dict[str, Any]:
    """Composite results by story name -> `{overall_score, overall_micro, component_scores, stories, files,
    failed, skipped, per_file, summary}`. Results carrying `error` are listed under skipped.errors, not averaged;
    failed ones (`failed`: the reason) are listed under `failed` and averaged as 0. `stories`: the stories in the
    averages; `files`: those of them scored from a prediction."""
    w = parse_weights(weights)
    ok = {k: r for k, r in per_file.items() if not r.get("error")}
    errors = {k: r["error"] for k, r in per_file.items() if r.get("error")}
    failed = {k: r["failed"] for k, r in ok.items() if r.get("failed")}
    components: dict[str, dict[str, Any]] = {}
    for c in COMPONENTS:
        scored = [r for r in ok.values() if r["component_scores"].get(c) is not None]
        pooled: dict[str, float] = {}
        for r in scored:
            for key, value in r["detailed_results"][c]["counts"].items():
                pooled[key] = pooled.get(key, 0) + value
        components[c] = {"macro": mean_of([r["component_scores"][c] for r in scored]),
                         "micro": SCORE_FROM_COUNTS[c](pooled) if scored else None,
                         "scored": len(scored), "unscored": len(ok) - len(scored),
                         **(prf_from_counts(c, pooled) if c in PRF_COUNTS and scored else
                            {"precision": None, "recall": None, "f1": None})}
    overall = [r["overall_score"] for r in ok.values() if r["overall_score"] is not None]
    summary = {key: sum(r["summary"].get(key, 0) for r in ok.values()) for key in SUMMARY_TOTALS}
    return {
        "overall_score": mean_of(overall),
        "overall_micro": weighted_overall({c: v["micro"] for c, v in components.items()}, w),
        "component_scores": components,
        "stories": len(ok),
        "files": len(ok) - len(failed),
        "failed": failed,
        "skipped": {**(skipped or {}), "errors": errors, "overall_unscored": len(ok) - len(overall)},
        "per_file": {k: ({"overall_score": r["overall_score"], "component_scores": r["component_scores"]}
                         | ({"failed": r["failed"]} if r.get("failed") else {})
                         if not r.get("error") else {"error": r["error"]}) for k, r in sorted(per_file.items())},
        "summary": summary,
    }


def compact(result: dict[str, Any]) -> dict[str, Any]:
    """What `aggregate` needs of one composite result (scores, counts, event totals): small enough to ship between
    processes or as a Ray Data row; the detailed lists stay behind."""
    if result.get("error"):
        return {"overall_score": None, "component_scores": result["component_scores"], "error": result["error"]}
    out = {"overall_score": result["overall_score"], "component_scores": result["component_scores"],
           "detailed_results": {c: {"counts": r["counts"]} for c, r in result["detailed_results"].items()},
           "summary": {k: result["summary"].get(k, 0) for k in SUMMARY_TOTALS}}
    if result.get("failed"):
        out["failed"] = result["failed"]
    return out


def _fmt(v: Any) -> str:
    return "—" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v)


def markdown_story(name: str, result: dict[str, Any]) -> str:
    """One story's composite result as Markdown."""
    if result.get("error"):
        return f"# {name}\n\nNot scored: {result['error']}\n"
    lines = [f"# {name}", "", f"**Overall score**: {_fmt(result['overall_score'])}", "",
             "| component | score | GT incomplete | skipped events | note |", "|---|---|---|---|---|"]
    for c, r in result["detailed_results"].items():
        lines.append(f"| {c} | {_fmt(r['score'])} | {'yes' if r['gt_incomplete'] else 'no'} | "
                     f"{r['skipped_events']} | {r['reason'] or ''} |")
    s = result["summary"]
    lines += ["", f"Events: {s['total_events']} in GT, {s['predicted_events']} predicted, {s['aligned_events']} "
                  f"aligned, {s['correct_events']} correct, {s['missed_events']} missed, "
                  f"{s['extra_events']} extra.", ""]
    for c, r in result["detailed_results"].items():
        shown = {k: v for k, v in r["metrics"].items() if v is not None}
        if shown:
            lines.append(f"- **{c}**: " + ", ".join(f"{k} {_fmt(v)}" for k, v in shown.items()))
        if r["missing"]:
            lines.append(f"  - missing: {', '.join(map(str, r['missing'][:20]))}")
        if r["extra"]:
            lines.append(f"  - extra (not errors): {', '.join(map(str, r['extra'][:20]))}")
    if s["issues"] or s["out_of_taxonomy"]:
        lines += ["", "Issues:"] + [f"- {i['role']} {i['path']}: {i['message']}"
                                    for i in s["issues"] + s["out_of_taxonomy"]]
    return "\n".join(lines) + "\n"


def markdown_aggregate(agg: dict[str, Any]) -> str:
    """A folder's aggregate as Markdown: what was not scored first (prediction files that pair with no GT story,
    failed and unreadable stories), then the overall score, the components, their precision / recall / F1 and each
    story."""
    sk = agg["skipped"]
    lines = ["# Narrative annotation scores", ""]
    if sk.get("unpaired_pred"):
        lines += [f"**{len(sk['unpaired_pred'])} prediction file(s) pair with no ground-truth story and were not "
                  f"scored** (a prediction pairs by name: `<story>.json` or `<story>_pred.json` for the GT "
                  f"`<story>.json`): {', '.join(sk['unpaired_pred'])}", ""]
    if agg["failed"]:
        lines += [f"**{len(agg['failed'])} of {agg['stories']} ground-truth stories failed** (counted 0):"]
        lines += [f"- {name}: {reason}" for name, reason in agg["failed"].items()] + [""]
    if sk["errors"]:
        lines += [f"**{len(sk['errors'])} ground-truth stories could not be read** (not scored):"]
        lines += [f"- {name}: {reason}" for name, reason in sk["errors"].items()] + [""]
    lines += [f"Overall (macro over {agg['stories']} ground-truth stories, failures count 0): "
              f"{_fmt(agg['overall_score'])}; micro: {_fmt(agg['overall_micro'])}; stories scored from a prediction: "
              f"{agg['files']}; failed: {len(agg['failed'])}", "",
              "| component | macro | micro | files scored | files unscored |", "|---|---|---|---|---|"]
    for c, v in agg["component_scores"].items():
        lines.append(f"| {c} | {_fmt(v['macro'])} | {_fmt(v['micro'])} | {v['scored']} | {v['unscored']} |")
    lines += ["", "Precision, recall and F1 per component (micro: counts pooled over the stories; actions and spans "
                  "have none):", "", "| component | of | precision | recall | F1 |", "|---|---|---|---|---|"]
    for c in PRF_COUNTS:
        v = agg["component_scores"][c]
        lines.append(f"| {c} | {PRF_UNIT[c]} | {_fmt(v['precision'])} | {_fmt(v['recall'])} | {_fmt(v['f1'])} |")
    lines += ["", "| file | overall | " + " | ".join(COMPONENTS) + " |", "|---" * (len(COMPONENTS) + 2) + "|"]
    for name, r in agg["per_file"].items():
        if "error" in r:
            lines.append(f"| {name} | error: {r['error']} |" + " |" * len(COMPONENTS))
        else:
            lines.append(f"| {name}{' (failed)' if 'failed' in r else ''} | {_fmt(r['overall_score'])} | "
                         + " | ".join(_fmt(r["component_scores"][c]) for c in COMPONENTS) + " |")
    unlisted = [n for n in sk.get("unpaired_gt") or [] if n not in agg["failed"]]  # the CLI's are failed, above
    for key, names in (("unpaired_gt", unlisted), ("duplicates", sk.get("duplicates"))):
        if names:
            lines.append(f"\n{key}: {', '.join(names)}")
    return "\n".join(lines) + "\n"


def to_json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2)
