"""Aggregating composite results over many files, and the JSON / Markdown reports.

Macro: the mean over files of each component score, skipping files where it is None (the count of those is given).
Micro: each component's additive counts pooled over the files that scored it, then the component's own
counts -> score function (composite.SCORE_FROM_COUNTS), so one file's micro equals its own score.
`overall_score` is the macro mean of the per-file overall scores; `overall_micro` the weighted mean of the micro
component scores (same renormalised weights as one file).
"""

from __future__ import annotations

import json
from typing import Any

from emocaustics.tasks.narrative.composite import COMPONENTS, SCORE_FROM_COUNTS, parse_weights, weighted_overall

SUMMARY_TOTALS = ("total_events", "predicted_events", "aligned_events", "correct_events", "missed_events",
                  "extra_events")


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate(per_file: dict[str, dict[str, Any]], weights: dict[str, float] | str | None = None,
              skipped: dict[str, Any] | None = None) -> dict[str, Any]:
    """Composite results by story name -> `{overall_score, overall_micro, component_scores, files, skipped,
    per_file, summary}`. Results carrying `error` are listed under skipped.errors, not averaged."""
    w = parse_weights(weights)
    ok = {k: r for k, r in per_file.items() if not r.get("error")}
    errors = {k: r["error"] for k, r in per_file.items() if r.get("error")}
    components: dict[str, dict[str, Any]] = {}
    for c in COMPONENTS:
        scored = [r for r in ok.values() if r["component_scores"].get(c) is not None]
        pooled: dict[str, float] = {}
        for r in scored:
            for key, value in r["detailed_results"][c]["counts"].items():
                pooled[key] = pooled.get(key, 0) + value
        components[c] = {"macro": _mean([r["component_scores"][c] for r in scored]),
                         "micro": SCORE_FROM_COUNTS[c](pooled) if scored else None,
                         "scored": len(scored), "unscored": len(ok) - len(scored)}
    overall = [r["overall_score"] for r in ok.values() if r["overall_score"] is not None]
    summary = {key: sum(r["summary"].get(key, 0) for r in ok.values()) for key in SUMMARY_TOTALS}
    return {
        "overall_score": _mean(overall),
        "overall_micro": weighted_overall({c: v["micro"] for c, v in components.items()}, w),
        "component_scores": components,
        "files": len(ok),
        "skipped": {**(skipped or {}), "errors": errors, "overall_unscored": len(ok) - len(overall)},
        "per_file": {k: ({"overall_score": r["overall_score"], "component_scores": r["component_scores"]}
                         if not r.get("error") else {"error": r["error"]}) for k, r in sorted(per_file.items())},
        "summary": summary,
    }


def compact(result: dict[str, Any]) -> dict[str, Any]:
    """What `aggregate` needs of one composite result (scores, counts, event totals): small enough to ship between
    processes or as a Ray Data row; the detailed lists stay behind."""
    if result.get("error"):
        return {"overall_score": None, "component_scores": result["component_scores"], "error": result["error"]}
    return {"overall_score": result["overall_score"], "component_scores": result["component_scores"],
            "detailed_results": {c: {"counts": r["counts"]} for c, r in result["detailed_results"].items()},
            "summary": {k: result["summary"].get(k, 0) for k in SUMMARY_TOTALS}}


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
    """A folder's aggregate as Markdown."""
    lines = ["# Narrative annotation scores", "",
             f"Overall (macro over files): {_fmt(agg['overall_score'])}; micro: {_fmt(agg['overall_micro'])}; "
             f"files scored: {agg['files']}", "",
             "| component | macro | micro | files scored | files unscored |", "|---|---|---|---|---|"]
    for c, v in agg["component_scores"].items():
        lines.append(f"| {c} | {_fmt(v['macro'])} | {_fmt(v['micro'])} | {v['scored']} | {v['unscored']} |")
    lines += ["", "| file | overall | " + " | ".join(COMPONENTS) + " |", "|---" * (len(COMPONENTS) + 2) + "|"]
    for name, r in agg["per_file"].items():
        if "error" in r:
            lines.append(f"| {name} | error: {r['error']} |" + " |" * len(COMPONENTS))
        else:
            lines.append(f"| {name} | {_fmt(r['overall_score'])} | "
                         + " | ".join(_fmt(r["component_scores"][c]) for c in COMPONENTS) + " |")
    sk = agg["skipped"]
    for key in ("unpaired_pred", "unpaired_gt", "duplicates"):
        if sk.get(key):
            lines.append(f"\n{key}: {', '.join(sk[key])}")
    return "\n".join(lines) + "\n"


def to_json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2)
