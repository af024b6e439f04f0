"""`emocaustics run JOB.yaml`: a whole job (runs and grid) from data to report, resumable.

    load + validate spec -> start/attach Ray -> dataset (one load, defects reported) -> for every config:
      calibration (oracle/baseline): built-in predictors
      model runs: extraction as a Ray Data plan (`emocaustics.extract.runray.run_extract`) against the job's model pools
    -> scoring (the scorer's in-process or Ray Data path, one embedder for the whole job)
    -> scores.parquet / items.parquet / summary.csv / summary.md / report.html under runs/<job>/<timestamp>/

Models load once per job: every config naming a model gets the same process-wide `ModelPool` (registry keyed by the
spec), so a 6-cell grid starts the engine once. Predictions are written per dialogue as each finishes; `--resume`
reruns only dialogues without a prediction file (failed ones are retried), and the response cache answers any call
already made.
"""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlencode

import polars as pl

from emocaustics.cli import UsageError
from emocaustics.pipeline.progress import Progress
from emocaustics.pipeline.spec import CALIBRATION_METHODS, JobSpec, ModelSpec, RunSpec, dump_job

STATS_FILE = "dialogue_stats.jsonl"  # per-dialogue cost figures of every extraction pass (survive resumes)


def model_spec_string(model: ModelSpec) -> str:
    """A job's model entry as a model spec string (`emocaustics.models.spec`)."""
    query: dict[str, Any] = dict(model.engine)
    if model.replicas != 1:
        query["replicas"] = model.replicas
    if model.placement != "default":
        query["placement"] = model.placement
    if model.gpus_per_replica:
        query["gpus"] = int(model.gpus_per_replica)
        if model.gpus_per_replica > 1:
            query["tp"] = int(model.gpus_per_replica)
    if model.spec.startswith("openai:"):
        query = {"concurrency": model.concurrency, **query}
    if not query:
        return model.spec
    sep = "&" if "?" in model.spec else "?"
    return model.spec + sep + urlencode({k: v if isinstance(v, str) else json.dumps(v) for k, v in query.items()})


def run_kind(run: RunSpec, job: JobSpec) -> str:
    if run.method in CALIBRATION_METHODS:
        return "calibration"
    return "engine-check" if job.models[run.model].spec.split("?")[0] == "smoke" else "model"


def resolve_run_dir(job: JobSpec, out: str | None, resume: bool) -> Path:
    if out:
        return Path(out)
    base = Path(job.output) / job.name
    if resume:
        previous = sorted(p for p in base.glob("*") if (p / "config.yaml").exists())
        if not previous:
            raise UsageError(f"--resume: no earlier run of job {job.name!r} under {base}")
        return previous[-1]
    return base / datetime.now().strftime("%Y%m%d-%H%M%S")


def quiet_ray_data() -> None:
    """Our own progress lines replace Ray Data's per-dataset banners and bars (which flood `ray job logs`)."""
    import logging

    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)


def start_ray(job: JobSpec, address: str | None) -> None:
    import os

    import ray

    quiet_ray_data()
    if ray.is_initialized():
        return
    address = address or job.ray.address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, namespace=job.ray.namespace, log_to_driver=False)
    else:
        ray.init(num_cpus=job.ray.num_cpus, object_store_memory=job.ray.object_store_memory,
                 include_dashboard=False, namespace=job.ray.namespace, log_to_driver=False)


@contextmanager
def watch(progress: Progress, count: Any, interval: float = 1.0) -> Iterator[None]:
    """Update `progress` from `count()` (files on disk) in a background thread while a blocking stage runs."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval):
            done = count()
            if done > progress.done:
                progress.update(done - progress.done)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        done = count()
        if done > progress.done:
            progress.update(done - progress.done)
        progress.close()


def _failure_reasons(pred_dir: Path) -> dict[int, str]:
    path = pred_dir / "failures.jsonl"
    reasons: dict[int, str] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            reasons[int(row["dialogue"])] = f"extraction failed at {row.get('step')}: {row.get('reason')}"
    return reasons


def _read_stats(pred_dir: Path) -> dict[int, dict[str, Any]]:
    stats: dict[int, dict[str, Any]] = {}
    path = pred_dir / STATS_FILE
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            stats[int(row["dialogue"])] = row  # the latest pass wins
    return stats


def extract(run: RunSpec, job: JobSpec, dialogues: list, pred_dir: Path, from_dir: Path | None,
            cache_dir: Path) -> None:
    """Extraction for one model config; only dialogues without a prediction file are (re)run."""
    from emocaustics.extract.output import prediction_path
    from emocaustics.extract.runner import ExtractConfig
    from emocaustics.extract.runray import run_extract

    todo = [d for d in dialogues if not prediction_path(pred_dir, run.task, d.id).exists()]
    progress = Progress(f"extract {run.label}", len(dialogues))
    progress.done = len(dialogues) - len(todo)
    if not todo:
        progress.close()
        return
    cfg = ExtractConfig(task=run.task, method=run.method, window=run.window, step=run.step, **run.options)
    counted = lambda: sum(prediction_path(pred_dir, run.task, d.id).exists() for d in dialogues)  # noqa: E731
    with watch(progress, counted):
        run_extract(todo, cfg, llm_spec=model_spec_string(job.models[run.model]), out=pred_dir,
                    embedder_spec=job.scoring.embedder, from_dir=from_dir, cache_dir=cache_dir,
                    concurrency=job.concurrency)
    manifest = json.loads((pred_dir / "manifest.json").read_text(encoding="utf-8"))
    with (pred_dir / STATS_FILE).open("a", encoding="utf-8") as fh:
        for row in manifest.get("per_dialogue", []):
            fh.write(json.dumps({"dialogue": row["dialogue"], "seconds": row.get("seconds") or 0.0,
                                 **(row.get("stats") or {})}) + "\n")


def predictions_for(run: RunSpec, dialogues: list, pred_dir: Path) -> dict[int, Any]:
    """Parsed predictions by dialogue id; a failure reason (str) where extraction failed or the file is bad."""
    if run.method in CALIBRATION_METHODS:
        from emocaustics.score.predictors import predict

        return predict(run.method, run.task, dialogues)
    from emocaustics.score.predictions import read_chain_predictions, read_sextuple_predictions

    found = (read_sextuple_predictions if run.task == "sextuple" else read_chain_predictions)(pred_dir).predictions
    predictions: dict[int, Any] = _failure_reasons(pred_dir)
    predictions.update(found)
    return predictions


def score(run: RunSpec, job: JobSpec, dialogues: list, predictions: dict[int, Any], embedder: Any) -> Any:
    from emocaustics.score.cli import RAY_ABOVE

    judge = job.scoring.judge
    judge = None if judge == "none" else (model_spec_string(job.models[judge]) if judge in job.models else judge)
    kw = dict(judge=judge, compat=job.scoring.compat, on_judge_error=job.scoring.on_judge_error)
    if len(dialogues) > RAY_ABOVE:
        from emocaustics.score.plan import score_with_ray

        return score_with_ray(run.task, dialogues, predictions, embedder=job.scoring.embedder, **kw)
    import asyncio

    from emocaustics.score.engine import ascore

    return asyncio.run(ascore(run.task, dialogues, predictions, embedder=embedder, **kw))


def score_rows(run: RunSpec, job: JobSpec, result: Any, stats: dict[int, dict[str, Any]]) -> pl.DataFrame:
    d = result.dialogues
    cost = pl.DataFrame(
        [{"dialogue": k, "llm_calls": int(v.get("llm_calls", 0)), "cache_hits": int(v.get("cache_hits", 0)),
          "prompt_tokens": int(v.get("prompt_tokens", 0)), "generated_tokens": int(v.get("generated_tokens", 0)),
          "seconds": float(v.get("seconds", 0.0))} for k, v in stats.items()],
        schema={"dialogue": pl.Int64, "llm_calls": pl.Int64, "cache_hits": pl.Int64, "prompt_tokens": pl.Int64,
                "generated_tokens": pl.Int64, "seconds": pl.Float64},
    )
    comps = [c for c in d.columns if c.startswith("c_")]
    return (
        d.select("dialogue", "status", "n_utterances", "weight", "score", "failed", "reason", "judge_failures", *comps)
        .with_columns(pl.col("dialogue").cast(pl.Int64))
        .join(cost, on="dialogue", how="left")
        .with_columns(
            pl.lit(run.label).alias("run"), pl.lit(run.task).alias("task"), pl.lit(run.method).alias("method"),
            pl.lit(run.model, pl.Utf8).alias("model"),
            pl.lit(run.window_or_default if run.method in ("window", "rag") else None, pl.Int64).alias("window"),
            pl.lit(run.step_or_default if run.method in ("window", "rag") else None, pl.Int64).alias("step"),
            pl.lit(run_kind(run, job)).alias("kind"),
            pl.col("llm_calls", "cache_hits", "prompt_tokens", "generated_tokens").fill_null(0),
            pl.col("seconds").fill_null(0.0),
            pl.col("judge_failures").cast(pl.Int64),
        )
    )


def _order(runs: list[RunSpec]) -> list[RunSpec]:
    """Sextuple configs first: a chain `window` config reuses the events of the same model's sextuple window run."""
    return sorted(runs, key=lambda r: r.task != "sextuple")


def _prior_dir(run: RunSpec, runs: list[RunSpec], run_dir: Path) -> Path | None:
    if run.task != "emotion" or run.method != "window":
        return None
    for other in runs:
        if other.task == "sextuple" and other.method == "window" and other.model == run.model and not other.options:
            return run_dir / "predictions" / other.label
    return None


def run_job(job: JobSpec, *, out: str | None = None, resume: bool = False, ray_address: str | None = None) -> Path:
    from emocaustics.data.subsets import resolve
    from emocaustics.report.html import write_report
    from emocaustics.report.tables import write_tables

    run_dir = resolve_run_dir(job, out, resume)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(dump_job(job), encoding="utf-8")
    ds = job.dataset
    dialogues, corpus = resolve(ds.subset, ds.ids, root=ds.data, pairing=ds.pairing, repair=ds.repair,
                                strict=ds.strict)
    (run_dir / "data_defects.json").write_text(
        json.dumps([{"kind": d.kind, "where": d.where(), "message": d.message} for d in corpus.defects],
                   ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"job {job.name}: {len(dialogues)} dialogues, {len(job.expand())} configs -> {run_dir}", flush=True)
    start_ray(job, ray_address)
    from emocaustics.models.embedders import make_embedder

    embedder = make_embedder(job.scoring.embedder)  # loaded once, shared by every config's scoring
    cache_dir = Path(job.cache_dir) if job.cache_dir else Path(job.output) / ".cache"
    runs = _order(job.expand())
    frames, items, wall = [], [], {}
    for run in runs:
        t0 = time.perf_counter()
        pred_dir = run_dir / "predictions" / run.label
        pred_dir.mkdir(parents=True, exist_ok=True)
        if run.method not in CALIBRATION_METHODS:
            extract(run, job, dialogues, pred_dir, _prior_dir(run, runs, run_dir), cache_dir)
        result = score(run, job, dialogues, predictions_for(run, dialogues, pred_dir), embedder)
        frames.append(score_rows(run, job, result, _read_stats(pred_dir)))
        items.append(result.items.with_columns(pl.lit(run.label).alias("run")))
        wall[run.label] = round(time.perf_counter() - t0, 2)
        s = result.summary
        print(f"[score {run.label}] score {s['score'] if s['score'] is None else round(s['score'], 4)}, "
              f"{len(s['failures'])} failures, {wall[run.label]} s", flush=True)
    scores = pl.concat(frames, how="diagonal_relaxed")
    pl.concat(items, how="diagonal_relaxed").write_parquet(run_dir / "items.parquet")
    (run_dir / "wall.json").write_text(json.dumps(wall, indent=1), encoding="utf-8")
    write_tables(run_dir, scores, wall)
    report = write_report(run_dir, scores, wall)
    print(f"summary: {run_dir / 'summary.md'}\nreport:  {report}", flush=True)
    return run_dir


def rebuild_report(run_dir: Path) -> Path:
    from emocaustics.report.html import write_report

    scores_path = run_dir / "scores.parquet"
    if not scores_path.exists():
        raise UsageError(f"{run_dir}: no scores.parquet (is this a finished run directory?)")
    wall_path = run_dir / "wall.json"
    wall = json.loads(wall_path.read_text(encoding="utf-8")) if wall_path.exists() else None
    return write_report(run_dir, pl.read_parquet(scores_path), wall)
