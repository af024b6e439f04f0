"""A config of a run as Every Eval Ever records (schema 0.3.0): one aggregate record and its instance-level records,
laid out as that project's repository holds them:

    data/<task>/<developer>/<model>/<uuid>.json            the aggregate record
    data/<task>/<developer>/<model>/<uuid>_samples.jsonl   one instance record per sample

The aggregate holds the headline, summary.csv's score (the mean of the per-sample metric, each sample's epochs
reduced by the config's reducer) with summary.csv's 95 % bootstrap interval, and every other corpus-level metric as
its `details` (the schema's details are texts); the instances, one per sample and epoch (`metadata.epoch`), hold its
input, gold, answer (or, for several calls, every call's messages), score, token usage, latency and error. A
calibration method is the model `emocaustics/<method>`. What the schema has no field for is in docs/exports.md.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime
from typing import Any

from emocaustics.exports.names import jsonable, model_name, text
from emocaustics.exports.source import ConfigRecord, RunRecord, SampleRecord, utc

SCHEMA_VERSION = "0.3.0"


def _strings(values: dict[str, Any]) -> dict[str, str]:
    return {str(k): v if isinstance(v, str) else json.dumps(jsonable(v), ensure_ascii=False)
            for k, v in values.items() if v is not None}


def _resampled(table: dict[str, Any]) -> str:
    """How the interval was drawn: over whole clusters where the task declares them (stats/bootstrap.py)."""
    unit, clusters = table.get("cluster_by"), table.get("clusters")
    if unit and clusters:
        return f"bootstrap over {int(clusters)} clusters ({unit}), percentile"
    return "bootstrap over samples (percentile)"


def _model(cfg: ConfigRecord) -> tuple[str, str, str, dict[str, Any]]:
    """(model id, developer, the id's last part, model_info)."""
    name = model_name(cfg.spec)
    if name is None:  # a calibration method: no model was asked
        mid = f"emocaustics/{cfg.method}"
        info = {"name": cfg.method, "id": mid, "developer": "emocaustics",
                "additional_details": {"deployment_type": "unknown", "model_availability": "unknown",
                                       "calibration": "a calibration method of the task; no model was called"}}
        return mid, "emocaustics", cfg.method, info
    mid = name.model if "/" in name.model else f"{name.provider}/{name.model}"
    info = {"name": cfg.model or name.model, "id": mid, "developer": name.developer,
            "inference_platform": name.provider,
            "additional_details": {"deployment_type": "externally_managed" if name.remote else "self_deployed",
                                   "model_availability": "unknown", "spec": cfg.spec or ""}}
    return mid, name.developer, mid.rsplit("/", 1)[-1], info


def _safe(part: str) -> str:
    return "".join(c if c.isalnum() or c in "-._" else "-" for c in part).strip("-.") or "unknown"


def records(run: RunRecord, cfg: ConfigRecord) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """(the aggregate's path under the output folder, the aggregate record, its instance records)."""
    from emocaustics.stats.bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES

    model_id, developer, short, info = _model(cfg)
    digest = hashlib.sha256("\0".join((run.hash, str(run.dir.name), cfg.label)).encode("utf-8")).digest()
    ident = str(uuid.UUID(bytes=digest[:16], version=4))
    folder = f"data/{_safe(cfg.task)}/{_safe(developer)}/{_safe(short)}"
    done = run.finished or run.started or cfg.created
    retrieved = str(int(datetime.fromisoformat(done).timestamp())) if done else "0"
    eid = f"{cfg.task}/{model_id}/{retrieved}"
    instances = [_instance(cfg, s, eid, model_id) for s in cfg.samples]
    table = cfg.table
    uncertainty: dict[str, Any] = {"num_samples": len(cfg.reduced)}
    low, high = table.get("ci_low"), table.get("ci_high")
    if isinstance(low, float) and isinstance(high, float):
        uncertainty |= {"confidence_interval": {"lower": low, "upper": high, "confidence_level": DEFAULT_LEVEL,
                                                "method": _resampled(table)},
                        "num_bootstrap_samples": DEFAULT_RESAMPLES}
    details = dict(cfg.summary)  # the task's own corpus values (epochs: the mean over the epochs' own)
    details |= {f"table.{k}": v for k, v in table.items() if k not in ("run", "task", "method", "model")}
    epochs = f", each sample's {cfg.epochs} epochs reduced by {cfg.reducer}" if cfg.reducer else ""
    sampling = next((c.get("sampling") for s in cfg.samples for c in s.calls if c.get("sampling")), None) or {}
    soft = cfg.software or {}
    git = soft.get("git") or {}
    aggregate = {
        "schema_version": SCHEMA_VERSION, "evaluation_id": eid,
        "evaluation_timestamp": utc(iso=cfg.created or run.started), "retrieved_timestamp": retrieved,
        "source_metadata": {"source_name": f"emocaustics run {run.job} ({cfg.label})", "source_type": "evaluation_run",
                            "source_organization_name": "unknown", "evaluator_relationship": "other",
                            "additional_details": _strings({"job": run.job, "job_hash": run.hash,
                                                            "config": cfg.label})},
        "eval_library": {"name": "emocaustics", "version": str(soft.get("emocaustics") or "unknown"),
                         "additional_details": _strings({"git_commit": git.get("commit"), "git_dirty": git.get("dirty"),
                                                         "git_origin": git.get("origin") or None,
                                                         "prompts_version": cfg.prompts_version})},
        "model_info": info,
        "evaluation_results": [{
            "evaluation_result_id": cfg.sample_metric, "evaluation_name": cfg.task,
            "source_data": {"dataset_name": str(cfg.dataset_info.get("dataset") or cfg.task), "source_type": "other",
                            "additional_details": _strings({**cfg.dataset, **cfg.dataset_info})},
            "evaluation_timestamp": utc(iso=cfg.created or run.started),
            "metric_config": {"evaluation_description": f"{cfg.task}, method {cfg.method}: the mean over samples of "
                                                        f"{cfg.sample_metric} (a failure counts 0){epochs}",
                              "metric_id": f"emocaustics.{cfg.task}.{cfg.sample_metric}",
                              "metric_name": cfg.sample_metric, "lower_is_better": False,
                              **({"metric_parameters": {"epochs": cfg.epochs, "reducer": cfg.reducer}}
                                 if cfg.reducer else {})},
            "score_details": {"score": cfg.value if cfg.value is not None else 0.0, "details": _strings(details),
                              "uncertainty": uncertainty},
            "generation_config": {
                "generation_args": {k: sampling[k] for k in ("temperature", "top_p", "max_tokens") if k in sampling},
                "additional_details": _strings({"method": cfg.method, **cfg.options})},
        }],
        "detailed_evaluation_results": {"format": "jsonl", "file_path": f"{folder}/{ident}_samples.jsonl",
                                        "hash_algorithm": "sha256", "total_rows": len(instances)},
    }
    return f"{folder}/{ident}.json", aggregate, instances


def _instance(cfg: ConfigRecord, s: SampleRecord, eid: str, model_id: str) -> dict[str, Any]:
    raw, reference = text(s.input), [text(s.target)]
    answer = text(s.prediction)
    multi = len(s.calls) > 1
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "evaluation_id": eid, "model_id": model_id, "evaluation_name": cfg.task,
        "evaluation_result_id": cfg.sample_metric, "sample_id": s.id,
        "sample_hash": hashlib.sha256((raw + "".join(reference)).encode("utf-8")).hexdigest(),
        "interaction_type": "multi_turn" if multi else "single_turn",
        "input": {"raw": raw, "reference": reference},
    }
    if multi:
        messages = []
        for call in s.calls:
            messages += [{"role": m["role"], "content": m["content"]} for m in call.get("messages") or []]
            messages.append({"role": "assistant", "content": call.get("text")})
        record["messages"] = [{"turn_idx": i, **m} for i, m in enumerate(messages)]
        record["output"] = None
        source = f"messages[{len(messages) - 1}].content"
    else:
        if s.calls:
            record["input"]["formatted"] = "\n\n".join(f"{m['role']}: {m['content']}"
                                                       for m in s.calls[0].get("messages") or [])
        record["output"] = {"raw": [s.calls[0].get("text") or "" if s.calls else answer]}
        record["messages"] = None
        source = "output.raw"
    record["answer_attribution"] = [{"turn_idx": len(record["messages"]) - 1 if multi else 0, "source": source,
                                     "extracted_value": answer, "is_terminal": True,
                                     "extraction_method": "json_schema" if s.calls else "calibration"}]
    score = s.score if s.score is not None else 0.0
    record["evaluation"] = {"score": score, "is_correct": not s.failed and score >= 1.0,
                            **({"num_turns": len(record["messages"])} if multi else {})}
    if s.calls:
        record["token_usage"] = {"input_tokens": s.prompt_tokens, "output_tokens": s.generated_tokens,
                                 "total_tokens": s.prompt_tokens + s.generated_tokens}
    record["performance"] = {"latency_ms": s.seconds * 1000.0, "additional_details": _strings(
        {"llm_calls": s.llm_calls, "cache_hits": s.cache_hits, "cost_usd": s.cost_usd})}
    record["error"] = (s.reason or "failed") if s.failed else None
    record["metadata"] = _strings({"config": cfg.label, "epoch": s.epoch, "status": s.status,
                                   **{f"metric.{k}": v for k, v in s.metrics.items()},
                                   **({"score_missing": "true"} if s.score is None else {}),
                                   # the scorer's judge calls (the schema has no place for a grader's)
                                   **({"judge.model": s.judge["model"], "judge.calls": s.judge["calls"]}
                                      if s.judge else {})})
    return record

