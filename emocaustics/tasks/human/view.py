"""The human task's sample page in `emocaustics view` (`Report.view_sample`): one assignment of a HIT, every
conversation's ratings per dimension (the degraded qc system's rows marked), and the worker's quality-control outcome
as the scorer decided it (p-value against the threshold)."""

from __future__ import annotations

from typing import Any


def view_sample(input: Any, target: Any, prediction: Any, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    inp = input if isinstance(input, dict) else {}
    results = [r for r in inp.get("result") or [] if isinstance(r, dict)]
    dims = sorted({d for r in results for d in (r.get("score") or {})})
    qc = {it.get("qc_model") for it in items} - {None} or {"qc"}
    rows = [[r.get("model"), *[(r.get("score") or {}).get(d) for d in dims]] for r in results]
    marks = ["miss" if r.get("model") in qc else None for r in results]
    sections: list[dict[str, Any]] = [
        {"title": f"HIT {inp.get('hit', '')}, worker {inp.get('worker', '')}, {inp.get('duration', '')} s",
         "kind": "table", "columns": ["system", *dims], "rows": rows, "marks": marks}]
    for it in items:
        passed = it.get("passed")
        sections.append({"title": f"Quality control: {'passed' if passed else 'failed'}", "kind": "table",
                         "columns": ["worker", "p-value", "threshold", "z systems", "z qc", "reason"],
                         "rows": [[it.get("worker"), it.get("qc_p"), it.get("qc_threshold"), it.get("z_systems"),
                                   it.get("z_qc"), it.get("reason") or ""]], "marks": ["ok" if passed else "bad"]})
    if inp.get("feedback"):
        sections.append({"title": "Worker feedback", "kind": "text", "text": str(inp["feedback"])})
    return sections
