"""A config of a run as one inspect_ai eval log, in inspect's JSON log format (log version 2: the one
`inspect_ai.log.read_eval_log` reads and `inspect view` lists when the name starts with a timestamp), written from
plain data: inspect_ai is not needed to write it.

- header (`eval`): task `emocaustics/<task>`, the config's label as display name, its options as `task_args`, the
  method as solver, the dataset (name, location, sample ids), the model (`provider/model`; `none` for a calibration
  method), the software (`packages`, git `revision`) and the prompts version (`task_version`);
- `results`: the headline (summary.csv's score and interval: the mean of the per-sample score, each sample's epochs
  reduced) as the metric `mean` of the per-sample metric, with every other corpus-level metric of the config beside
  it; a config solved in epochs has its `epochs` and reducer in `eval.config` and each sample's reduced score in
  `reductions`;
- each sample (once per epoch, with its `epoch`): id, input and target (JSON text where ours is structured), every
  model call of its latest attempt as a `model` event (messages as sent, answer, sampling, tokens, latency, cache hit,
  error; then the scorer's judge calls, role `grader`, under the judge's model), the calls' messages in
  order as `messages`, the answer as `output` (the prediction itself, as JSON, where no model was called), every
  per-sample metric as a score, token usage under the model's name, timing, and a failed sample's reason as `error`.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from emocaustics.exports.names import ModelName, jsonable, model_name, text
from emocaustics.exports.source import ConfigRecord, RunRecord, SampleRecord, utc

ROLES = ("system", "user", "assistant", "tool")


def file_name(cfg: ConfigRecord, log: dict[str, Any]) -> str:
    """`<created>_<label>_<eval id>.json`: inspect lists JSON logs whose names start with their time."""
    stamp = re.sub(r"[:.]", "-", log["eval"]["created"])[:19] + "+00-00"
    return f"{stamp}_{re.sub(r'[^A-Za-z0-9-]+', '-', cfg.label).strip('-')}_{log['eval']['eval_id']}.json"


def inspect_log(run: RunRecord, cfg: ConfigRecord) -> dict[str, Any]:
    model = model_name(cfg.spec)
    name = _name(model)
    samples = [_sample(s, name) for s in cfg.samples]
    used = [s for s in cfg.samples if s.calls or s.prompt_tokens or s.generated_tokens]  # as a sample's model_usage
    costs = [s.cost_usd for s in used if s.cost_usd is not None]
    usage = _usage(sum(s.prompt_tokens for s in used), sum(s.generated_tokens for s in used),
                   sum(costs) if costs else None) if used else None
    soft = cfg.software or {}
    git = soft.get("git")
    finished = [s.finished for s in cfg.samples if s.finished is not None]
    reducer = cfg.reducer and cfg.reducer.replace("pass@", "pass_at_")  # inspect's name of that reducer
    return {
        "version": 2,
        "status": "success" if run.state == "finished" else "started",
        "eval": {
            "eval_id": _id(run.hash, run.dir.name, cfg.label), "run_id": run.hash or run.dir.name,
            "created": utc(iso=cfg.created or run.started) or utc(0.0), "task": f"emocaustics/{cfg.task}",
            "task_id": _id(cfg.task, cfg.label), "task_version": cfg.prompts_version or 0,
            "task_display_name": cfg.label, "task_args": cfg.options, "task_args_passed": cfg.options,
            "solver": cfg.method,
            "dataset": {"name": _dataset_name(cfg), "location": cfg.dataset_info.get("root"),
                        "samples": len(cfg.reduced), "sample_ids": list(cfg.reduced)},
            "model": name, **({"model_base_url": model.base_url} if model and model.base_url else {}),
            "config": {"epochs": cfg.epochs, **({"epochs_reducer": [reducer]} if reducer else {})},
            **({"revision": {"type": "git", "origin": git.get("origin") or "", "commit": git["commit"],
                             "dirty": git.get("dirty")}} if git else {}),
            "packages": {"emocaustics": soft.get("emocaustics", "unknown")},
            "metadata": {"emocaustics": {"run": str(run.dir), "job": run.job, "job_hash": run.hash,
                                         "config": cfg.label, "model_key": cfg.model, "dataset": cfg.dataset,
                                         "dataset_info": cfg.dataset_info, "prompts_version": cfg.prompts_version,
                                         "table": jsonable(cfg.table), "summary": jsonable(cfg.summary)}},
        },
        "plan": {"name": "plan", "steps": [{"solver": cfg.method, "params": cfg.options}], "config": {}},
        "results": _results(cfg, reducer),
        "stats": {"started_at": utc(iso=cfg.created or run.started) or utc(0.0),
                  "completed_at": utc(max(finished)) if finished else utc(iso=run.finished),
                  "model_usage": {name: usage} if usage else {}},
        "samples": samples,
        **({"reductions": [{"scorer": cfg.sample_metric, "reducer": reducer, "samples": [
            {"value": v, "sample_id": sid} for sid, v in cfg.reduced.items() if v is not None]}]} if reducer else {}),
    }


def _name(model: ModelName | None) -> str:
    return f"{model.provider}/{model.model}" if model else "none"  # inspect's `provider/model`


def _id(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:22]


def _dataset_name(cfg: ConfigRecord) -> str:
    """The dataset and its split: the dataset option the task calls its split (core/optionkeys.py; the run's tasks
    were all found when the run folder was read)."""
    from emocaustics.core.optionkeys import dataset_option
    from emocaustics.core.task import get_task

    split = cfg.dataset_info.get("split") or cfg.dataset.get(dataset_option(get_task(cfg.task), "split") or "split")
    return f"{cfg.dataset_info.get('dataset') or cfg.task}{f'/{split}' if split else ''}"


def _results(cfg: ConfigRecord, reducer: str | None) -> dict[str, Any]:
    """inspect's results: the headline as the metric `mean` (its interval in the metric's metadata), then the
    config's other corpus-level values (configs.json's summary: for epochs, the mean over the epochs' own)."""
    table = cfg.table
    metrics: dict[str, Any] = {}
    if cfg.value is not None:
        metrics["mean"] = {"name": "mean", "value": cfg.value, "metadata": {
            k: table[k] for k in ("ci_low", "ci_high", "clusters", "cluster_by") if table.get(k) is not None}}
    for key, value in cfg.summary.items():
        if key not in metrics and isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
            metrics[key] = {"name": key, "value": value}
    failed = sum(s.failed for s in cfg.samples)
    return {"total_samples": len(cfg.samples), "completed_samples": len(cfg.samples) - failed,
            "scores": [{"name": cfg.sample_metric, "scorer": f"emocaustics/{cfg.task}", "reducer": reducer,
                        "scored_samples": len(cfg.samples) - failed, "unscored_samples": failed, "metrics": metrics}]}


def _usage(prompt: int, generated: int, cost: float | None = None) -> dict[str, Any]:
    return {"input_tokens": prompt, "output_tokens": generated, "total_tokens": prompt + generated,
            **({"total_cost": cost} if cost is not None else {})}


def _message(role: str, content: str | None, model: str | None = None) -> dict[str, Any]:
    role = role if role in ROLES else "user"
    out: dict[str, Any] = {"role": role, "content": content or ""}
    if role == "assistant":
        out |= {"source": "generate", **({"model": model} if model else {})}
    return out


def _event(call: dict[str, Any], model: str, start: float | None, role: str | None = None) -> dict[str, Any]:
    sampling = call.get("sampling") or {}
    answer = call.get("text") or ""
    return {
        "event": "model", "timestamp": utc(start + float(call.get("start") or 0.0)) if start is not None else utc(0.0),
        "working_start": float(call.get("start") or 0.0), "model": model,
        "input": [_message(m["role"], m["content"]) for m in call.get("messages") or []],
        "tools": [], "tool_choice": "none",
        "config": {k: sampling[k] for k in ("max_tokens", "temperature", "top_p", "seed")
                   if sampling.get(k) is not None},
        "output": {"model": model, "choices": [{"message": _message("assistant", answer, model),
                                               "stop_reason": "stop" if not call.get("error") else "unknown"}],
                   "completion": answer, "usage": _usage(int(call.get("prompt_tokens") or 0),
                                                         int(call.get("generated_tokens") or 0)),
                   "time": call.get("latency"), **({"error": call["error"]} if call.get("error") else {})},
        "retries": call.get("retry"), **({"error": call["error"]} if call.get("error") else {}),
        **({"cache": "read"} if call.get("cached") else {}), "working_time": call.get("latency"),
        **({"role": role} if role else {}),  # `grader`: a scorer's call
        "metadata": {k: call.get(k) for k in ("seq", "step", "parse_error", "repaired", "schema", "parsed")
                     if call.get(k) is not None} or None,
    }


def _sample(s: SampleRecord, model: str) -> dict[str, Any]:
    started = s.finished - s.seconds if s.finished is not None else None
    judge = s.judge or {}
    messages: list[dict[str, Any]] = []
    for call in s.calls:
        messages += [_message(m["role"], m["content"]) for m in call.get("messages") or []]
        messages.append(_message("assistant", call.get("text"), model))
    answer = s.calls[-1].get("text") if s.calls else None
    completion = answer if answer is not None else text(s.prediction)
    short = json.dumps(jsonable(s.prediction), ensure_ascii=False)  # the answer column of inspect's sample list
    out: dict[str, Any] = {
        "id": s.id, "epoch": s.epoch, "input": text(s.input), "target": text(s.target), "messages": messages,
        "output": {"model": model, "choices": [{"message": _message("assistant", completion, model),
                                               "stop_reason": "stop"}], "completion": completion,
                   **({"usage": _usage(s.prompt_tokens, s.generated_tokens)} if s.calls else {})},
        "scores": {m: {"value": v, **({"answer": short} if i == 0 else {}),
                       **({"explanation": s.reason} if s.reason else {}), "metadata": {"status": s.status}}
                   for i, (m, v) in enumerate((m, v) for m, v in s.metrics.items() if v is not None)},
        "metadata": {"status": s.status, "reason": s.reason, "prediction": jsonable(s.prediction),
                     "unscored_metrics": [m for m, v in s.metrics.items() if v is None],
                     "llm_calls": s.llm_calls, "cache_hits": s.cache_hits, "cost_usd": s.cost_usd},
        # the scorer's judge calls after the solver's, as inspect logs a scorer's model calls (role `grader`)
        "events": [_event(c, model, started) for c in s.calls] + [_event(c, _name(model_name(judge["model"])),
                                                                         judge["finished"] - judge["seconds"], "grader")
                                                                  for c in judge.get("calls", [])],
        "total_time": s.seconds, "working_time": s.seconds,
        **({"started_at": utc(started), "completed_at": utc(s.finished)} if started is not None else {}),
    }
    if s.calls or s.prompt_tokens or s.generated_tokens:
        out["model_usage"] = {model: _usage(s.prompt_tokens, s.generated_tokens, s.cost_usd)}
    if s.failed:
        out["error"] = {"message": s.reason or "failed", "traceback": "", "traceback_ansi": ""}
    return out
