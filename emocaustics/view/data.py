"""The viewer's data, built from a run's eval log (`evallog.read.RunLog`) as small JSON documents:

    index            the run and its configs (task, method, model, samples, failures, mean score)
    c/<i>            config i's samples: one row each (id, status, score, metrics, calls, tokens, a search text)
    s/<i>/<j>        sample j of config i: input, gold, prediction, item decisions, the task's sections, transcript

Each document is delivered as a script that hands it to the page (`window.__ev(path, data)`), so the same files work
served from 127.0.0.1 and opened from disk (`file://` pages may load scripts, not fetch JSON).

A task shows its own sample through its report part (`Report.view_sample`: sections of text, tables and JSON);
without it the viewer shows input, gold and prediction as JSON. Either way the scorer's item decisions are a table
with their outcome marked.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from emocaustics.evallog.read import RunLog
from emocaustics.evallog.record import dumps

# A task's report part may give its sample page (`Report.view_sample`), as sections built from the values as the
# eval log holds them (the sample's input, its gold, the prediction, and the scorer's item rows for this sample):
#     {"title": str, "kind": "text", "text": str}
#     {"title": str, "kind": "table", "columns": [str], "rows": [[value]], "marks": [str | None]}
#     {"title": str, "kind": "json", "value": any}
# A table's marks are a class per row: "ok", "bad", "miss" colour the decision.

SEARCH_CHARS = 4000  # of each sample's input, gold and prediction kept for the list's text search


def script(path: str, data: Any) -> str:
    """The document as the page loads it, by the eval log's encoder (`record.dumps`, orjson): NaN and infinities as
    null (JSON has neither), keys as text, what JSON cannot hold as its text."""
    return f"window.__ev({json.dumps(path)},{dumps(data)});\n"


def natural(key: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", key)]


def ordered(frame: Any) -> list[dict[str, Any]]:
    """A config's rows (`RunLog.table`) in the viewer's order: natural sample id order."""
    return sorted(frame.to_dicts(), key=lambda r: natural(str(r["sample_id"])))


def addresses(run_dir: Path) -> tuple[dict[str, int], dict[tuple[str, str], tuple[int, int]]]:
    """The viewer's numbers of a run (what report.html links to): config label -> i (`#/c/<i>`), (label, sample id)
    -> (i, j) (`#/s/<i>/<j>`); empty without an eval log. The numbers `ViewData` gives its configs (log order) and
    their samples (`ordered`), without building each config's list and its search text."""
    if not (run_dir / "evallog").is_dir():
        return {}, {}
    log = RunLog(run_dir)
    configs = {label: i for i, label in enumerate(log.labels())}
    return configs, {(label, str(r["sample_id"])): (i, j) for label, i in configs.items()
                     for j, r in enumerate(ordered(log.table(label)))}


class Documents:
    """The documents of a view by path: `index`, `<list>/<i>` (`table(i)`) and `<sample>/<i>/<j>` (`sample(i, j)`)."""

    list_prefix, sample_prefix = "c", "s"

    def document(self, path: str) -> Any:
        """The document at `path`; KeyError or IndexError where there is none."""
        m = re.match(rf"^(?:(index)|{self.list_prefix}/(\d+)|{self.sample_prefix}/(\d+)/(\d+))$", path)
        if m is None:
            raise KeyError(path)
        if m.group(1):
            return self.index()
        return self.table(int(m.group(2))) if m.group(2) is not None else self.sample(int(m.group(3)),
                                                                                       int(m.group(4)))

    def paths(self) -> list[str]:
        """Every document's path (what `--export` writes)."""
        return ["index", *(p for i in range(self.count())
                           for p in [f"{self.list_prefix}/{i}",
                                     *(f"{self.sample_prefix}/{i}/{j}" for j in range(len(self.table(i)["rows"])))])]


class ViewData(Documents):
    def __init__(self, log: RunLog) -> None:
        self.log = log
        self.labels = log.labels()
        self.table = functools.cache(self._table)  # each config's list made once, when first asked

    def index(self) -> dict[str, Any]:
        """The run's configs with summary.csv's figures (`scoring.headline.headline`), one solved in epochs before its
        epochs' logs (its samples: the first's); one not scored (a run going, an epoch's log): counts so far only."""
        from emocaustics.scoring.headline import headline

        heads = {} if self.log.scores is None else {r["run"]: r for r in headline(self.log.scores).to_dicts()}
        configs = []
        for i, label in enumerate(self.labels):
            config, rows = re.sub(r"\.epoch-\d+$", "", label), self.table(i)["rows"]
            for name in ([config] if label == f"{config}.epoch-1" and config in heads else []) + [label]:
                rec = self.log.records.get(config, {})
                head = heads.get(name) or {"samples": len(rows), "failures": sum(r["status"] != "ok" for r in rows)}
                configs.append({"i": i, "label": name, "task": rec.get("task"), "method": rec.get("method"),
                                "model": rec.get("model"), "kind": rec.get("kind"), "samples": head["samples"],
                                "failed": head["failures"], "score": head.get("score")})
        return {"run": self.log.run_dir.name, "path": str(self.log.run_dir), "configs": configs}

    def _table(self, i: int) -> dict[str, Any]:
        label = self.labels[i]
        frame = self.log.table(label)
        inputs = self.log.samples(label)
        blobs = {}
        for r in inputs.to_dicts():
            parts = [self.log.text([r["input"]]) if r["input"] else "",
                     self.log.text([r["target"]]) if r["target"] else "", r["prediction"] or ""]
            blobs[r["sample_id"]] = " ".join(p[:SEARCH_CHARS] for p in parts)
        rows = ordered(frame)
        for r in rows:
            r["search"] = " ".join(filter(None, [str(r["sample_id"]), r.get("reason") or "",
                                                blobs.get(r["sample_id"], "")]))
        metrics = [c for c in frame.columns if c == "score" or c.startswith("c_")
                   or c in ("calls", "cache_hits", "prompt_tokens", "generated_tokens", "seconds")]
        return {"i": i, "label": label, "metrics": metrics, "rows": rows,
                "task": self.log.records.get(label, {}).get("task")}

    def sample(self, i: int, j: int) -> dict[str, Any]:
        table = self.table(i)
        sid = str(table["rows"][j]["sample_id"])
        got = self.log.sample(table["label"], sid)
        got["j"], got["i"] = j, i
        got["sections"] = task_sections(got)
        return got

    def count(self) -> int:
        return len(self.labels)


def task_sections(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The task's own view of the sample (`Report.view_sample`), or input, gold and prediction as JSON."""
    from emocaustics.core.errors import UsageError
    from emocaustics.core.task import get_task

    try:
        task = get_task(sample["task"]) if sample.get("task") else None
    except UsageError:  # a task of a plug-in not installed here: the generic view
        task = None
    if task is not None:
        try:
            sections = task.report.view_sample(sample["input"], sample["target"], sample["prediction"], sample["items"])
            if sections is not None:
                return sections
        except Exception as exc:  # a view bug must not hide the sample: say so, and show the generic view
            return [{"title": "task view failed", "kind": "text", "text": f"{type(exc).__name__}: {exc}"},
                    *generic_sections(sample)]
    return generic_sections(sample)


def generic_sections(sample: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"title": "Input", "kind": "json", "value": sample["input"]},
            {"title": "Gold", "kind": "json", "value": sample["target"], "side": "gold"},
            {"title": "Prediction", "kind": "json", "value": sample["prediction"], "side": "prediction"}]
