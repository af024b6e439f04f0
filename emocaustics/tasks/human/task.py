"""`human`: the ACL 2022 human-assessment method on the task interface. No model is called: the crowd ratings are
the input, `process` (a calibration-style method) runs the method, and the score rows describe each assignment.

- load: one Sample per assignment (id = assignment id; input = hit, worker, duration, the rated conversations;
  meta = the record index and the file's metadata, so scoring needs nothing but the samples).
- score: steps 1-7 over all samples of the config; long rows per assignment: `qc_passed` (primary: 1 when the
  assignment's worker passed quality control), `qc_p` (the worker's p-value), `z_systems` / `z_qc` (mean
  per-conversation z over the competing systems / the qc system), `z:<system>` (the conversation's mean z);
  summary: pass rates, workers, top system and each system's z from passing workers; tables: the tool's tables.
- finalize: every file of `emocaustics human process` in the config's folder (`<out>/human/`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar, Literal

import polars as pl
from pydantic import Field

from emocaustics.core.datasource import DataSource
from emocaustics.core.errors import UsageError
from emocaustics.core.task import DatasetOptions, Loaded, Methods, Options, Sample, ScoreContext, Scored, Task, rows_frame
from emocaustics.tasks.human.data import DEFAULT_FILE, NAME, SOURCE, Hits, hits_path, parse_hits
from emocaustics.tasks.human.mturk import read_ratings
from emocaustics.tasks.parts import lazy


class HumanDataset(DatasetOptions):
    file: str = DEFAULT_FILE  # a normative JSON file inside the data folder (or `data` names the file itself)
    metadata: str | None = None  # a raw MTurk .csv needs this: a JSON (e.g. a hits_data file) holding its metadata


class HumanOptions(Options):
    method: Literal["process"] = "process"
    qc_threshold: float = Field(0.05, gt=0, le=1)  # pass iff the QC p-value is below this
    ranking: list[str] | None = None  # overrides metadata.ranking


def hits_from_samples(samples: list[Sample]) -> Hits:
    """Rebuild (and re-validate) the ratings from the samples `load` made."""
    if not samples:
        raise ValueError("human: no samples to process")
    meta = samples[0].meta["metadata"]
    data = [{"hit": s.input["hit"], "assignment": s.id, "worker": s.input["worker"],
             "duration in seconds": s.input["duration"], "result": s.input["result"],
             "feedback": s.input.get("feedback")} for s in samples]
    return parse_hits({"metadata": meta, "data": data}, file=str(samples[0].meta.get("file", "<samples>")))


class HumanTask(Task):
    name: ClassVar[str] = "human"
    description: ClassVar[str] = "human assessment of dialogue systems (ACL 2022): z-scores, QC, significance"
    Options: ClassVar[type[Options]] = HumanOptions
    Dataset: ClassVar[type[DatasetOptions]] = HumanDataset
    methods = Methods(calibration=("process",))
    primary_metric: ClassVar[str] = "qc_passed"
    data_sources: ClassVar[tuple[DataSource, ...]] = (SOURCE,)
    # what the per-assignment metrics mean (the report's legend); `z:` covers every `z:<system>`
    metric_docs: ClassVar[dict[str, str]] = {
        "qc_passed": "1 when the assignment's worker passed quality control (one-sided Mann-Whitney of the qc "
                     "system's z against the competing systems', p below qc_threshold), else 0",
        "qc_p": "the worker's quality-control p-value (unscored when the worker rated no qc conversation)",
        "z_systems": "mean per-conversation z of the competing systems in the assignment",
        "z_qc": "mean per-conversation z of the degraded qc system in the assignment",
        "z:": "the assignment's conversation z for system <name>, over ALL workers (the ranking from passing "
              "workers only is in the human-assessment section)",
    }

    def load(self, ds: HumanDataset, options: Options) -> Loaded:
        path = hits_path(ds.data, ds.file)
        hits = read_ratings(path, ds.metadata)
        if not hits.assignments:  # as `human process` says it (issue 41 point 4: no ground truth, no silent run)
            raise UsageError(f"{path}: no assignments ('data' is empty): no ratings to process")
        meta = hits.metadata.to_json()
        samples = [Sample(a.assignment,
                          {"hit": a.hit, "worker": a.worker, "duration": a.duration_s, "feedback": a.feedback,
                           "result": [{"model": r.model, "score": dict(r.scores)} for r in a.result]},
                          None, {"record": a.record, "file": str(path), "metadata": meta, "cluster": a.worker})
                   for a in hits.assignments]  # cluster: one worker's assignments share its QC verdict and z-scale
        return Loaded(samples, list(hits.defects), {"dataset": NAME, "file": str(path), "cluster": "worker",
                                                    "assignments": len(samples)})

    def predict(self, method: str, samples: list[Sample], options: Options) -> dict[str, Any]:
        # `process` only (HumanOptions.method admits no other): nothing to predict, the ratings are the input
        return {s.id: {"method": "process"} for s in samples}

    def _run(self, samples: list[Sample], opts: HumanOptions) -> tuple[Any, Any]:
        """The method and its step 7 over a config's samples. `score` and then `finalize` ask for the same config: the
        last pair is kept for the very same samples list and equal options (held, so the list cannot be another one)."""
        from emocaustics.tasks.human.method import process
        from emocaustics.tasks.human.outputs import statistics

        last = getattr(self, "_last", None)
        if last is not None and last[0] is samples and last[1] == opts:
            return last[2]
        result = process(hits_from_samples(samples), ranking=opts.ranking, threshold=opts.qc_threshold)
        self._last = (samples, opts, (result, statistics(result)))
        return self._last[2]

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: Options,
              ctx: ScoreContext) -> Scored:
        from emocaustics.tasks.human.outputs import summary

        result, stats = self._run(samples, options)
        qc = {r["worker"]: r for r in result.qc.iter_rows(named=True)}
        conv = result.conversations
        systems = set(result.metadata.models)
        rows: list[dict[str, Any]] = []
        decisions: list[dict[str, Any]] = []  # each assignment's QC decision: the viewer's item rows
        threshold = getattr(options, "qc_threshold", None)
        for (assignment,), part in conv.group_by("assignment", maintain_order=True):
            worker = part.get_column("worker")[0]
            q = qc[worker]
            rows.append({"sample_id": assignment, "metric": "qc_passed", "value": 1.0 if q["passed"] else 0.0})
            p = q["p_value"]
            rows.append({"sample_id": assignment, "metric": "qc_p", "value": None if math.isnan(p) else p,
                         "status": "unscored" if math.isnan(p) else "ok", "reason": q["reason"] or None})
            by_model: dict[str, list[float]] = {}
            for m, z in zip(part.get_column("model").to_list(), part.get_column("z").to_list()):
                by_model.setdefault(m, []).append(z)
            means = {}
            for metric, values, why in (("z_systems", [z for m, zl in by_model.items() if m in systems for z in zl],
                                         "no competing system rated"),
                                        ("z_qc", by_model.get(result.metadata.qc_model, []),
                                         "no qc conversation in this assignment")):
                means[metric] = sum(values) / len(values) if values else None
                rows.append({"sample_id": assignment, "metric": metric, "value": means[metric],
                             "status": "ok" if values else "unscored", "reason": None if values else why})
            decisions.append({"sample_id": assignment, "worker": worker, "passed": bool(q["passed"]),
                              "qc_p": None if math.isnan(p) else p, "qc_threshold": threshold,
                              "qc_model": result.metadata.qc_model, "reason": q["reason"] or None, **means})
            for m, zl in by_model.items():
                if m in systems:
                    rows.append({"sample_id": assignment, "metric": f"z:{m}", "value": sum(zl) / len(zl)})
        tool = summary(result, stats, "")  # `human process`'s summary.json, flat for the job's summary table
        n_assign, rates = tool["assignments"], tool["passrate"]
        flat: dict[str, Any] = {
            "qc_passed": len(result.passed_assignments) / n_assign if n_assign else float("nan"),
            "hit_passrate": rates["HIT"]["passrate"], "worker_passrate": rates["Worker"]["passrate"],
            "workers_passed": tool["workers"]["passed"], "workers_failed": tool["workers"]["failed"],
            "top_system": next(iter(tool["ranked_models"]), None),
            "minutes_per_conversation": tool["duration_minutes_per_conversation"]["all"],
            **{f"z:{m}": z for m, z in tool["system_z"].items()}}
        info = pl.DataFrame([{"sample_id": s.id, "hit": s.input["hit"], "worker": s.input["worker"],
                              "conversations": len(s.input["result"])} for s in samples],
                            schema={"sample_id": pl.Utf8, "hit": pl.Utf8, "worker": pl.Utf8,
                                    "conversations": pl.Int64})
        tables = {"system_scores": result.scores["passed"][0], "system_raw_scores": result.scores["passed"][1],
                  "passrate": result.passrate, "duration": result.duration, "sig_test": stats.sig,
                  "corr_between_scores": stats.corr_scores, "quality_control": result.qc, "sample_info": info}
        items = pl.DataFrame(decisions, infer_schema_length=None) if decisions else None
        return Scored(rows_frame(rows), flat, tables, items)

    view_sample = lazy("emocaustics.tasks.human.view", "view_sample")  # the HIT's ratings and its QC outcome

    def finalize(self, out: Path, samples: list[Sample], predictions: dict[str, Any], options: Options) -> list[Path]:
        from emocaustics.tasks.human.outputs import write_process

        result, stats = self._run(samples, options)
        return write_process(result, out / "human", stats=stats,
                             source=str(samples[0].meta.get("file", "")) if samples else "")

    report_sections = lazy("emocaustics.tasks.human.report", "sections")
