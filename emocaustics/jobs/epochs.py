"""The score phase of a config, solved once or in N epochs (`epochs: N`): its result (per-sample table, configs.json
record, console line, `ConfigResult`); where each epoch's predictions live, which samples a resume solves again, and
how the epochs are scored and reduced (docs/jobs.md, "Epochs and reducers").

    predictions/<label>/epoch-<e>/   each epoch's predictions, failures and stats.jsonl (one epoch: the label's folder)
    evallog: config <label>.epoch-<e> each epoch's samples and calls
    scores.parquet                   one row per sample and epoch (`epoch` 1..N), and the reduced row (`epoch` null)
                                     that the tables use

The reducer (scoring/reducers.py) is the config's `reducer`, else the task's default. A reducer the task's `Options`
maps to a vote in its `reducers` (AER's `mode`: the vote over the epochs' answers) reduces the predictions, which the
task then scores (its official corpus summary and its submission are those of the reduced predictions); any other
reduces each sample's per-epoch scores, and its corpus summary is each epoch's (`per_epoch`) with their mean.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from emocaustics.core.task import Failure, Loaded, Scored, needs_model
from emocaustics.evallog import sink
from emocaustics.scoring.generic import per_sample
from emocaustics.scoring.reducers import reduce_scores
from emocaustics.solve.plan import LIMIT_STEPS

if TYPE_CHECKING:
    from emocaustics.jobs.configs import Config

COST_COLUMNS = ("llm_calls", "cache_hits", "prompt_tokens", "generated_tokens")


@dataclass
class ConfigResult:
    """One config's part of the job's outputs: its per-sample table (and per-epoch one), its scored rows and its
    record in configs.json."""

    cfg: Any
    table: pl.DataFrame
    scored: Scored
    record: dict[str, Any]
    epoch_table: pl.DataFrame | None
    wall: float


def epoch_dir(pred_dir: Path, epoch: int, epochs: int) -> Path:
    """The folder of one epoch's predictions: the config's own for a one-epoch config."""
    return pred_dir if epochs == 1 else pred_dir / f"epoch-{epoch}"


def epoch_label(label: str, epoch: int, epochs: int) -> str:
    """The eval log's name of one epoch of a config."""
    return label if epochs == 1 else f"{label}.epoch-{epoch}"


def to_solve(found: Any, retry_limits: bool) -> bool:
    """Does a resume solve this sample (its prediction or Failure, None when nothing was written)? A sample with no
    prediction and a failed one yes; one over a limit only with `--retry-limits`."""
    if found is None:
        return True
    if isinstance(found, Failure):
        return retry_limits or found.step not in LIMIT_STEPS
    return False


def found_per_epoch(cfg: Any) -> list[tuple[int, Path, dict[str, Any]]]:
    """Per epoch: its number, its folder and what earlier runs wrote there (the resume's read; fresh: nothing)."""
    return [(e, f, cfg.task.store.read_predictions(f) if f.exists() else {})
            for e in range(1, cfg.epochs + 1) for f in [epoch_dir(cfg.pred_dir, e, cfg.epochs)]]


def left_per_epoch(cfg: Any, samples: list, retry_limits: bool = False) -> list[list]:
    """Per epoch, the samples a resume of this config solves (the others are done and skipped)."""
    return [[s for s in samples if to_solve(found.get(s.id), retry_limits)] for _, _, found in found_per_epoch(cfg)]


def resume_line(cfg: Any, samples: list, retry_limits: bool = False) -> str:
    """What a resumed config skips and what it runs."""
    if not needs_model(cfg.task, cfg.options):
        return f"resume: {cfg.label}: calibration predictor, scored again ({len(samples)} samples)"
    done = failed = kept = 0  # answered (skipped); failed and solved again; failed over a limit and kept so
    for got in (found.get(s.id) for _, _, found in found_per_epoch(cfg) for s in samples):
        if to_solve(got, retry_limits):
            failed += isinstance(got, Failure)
        elif isinstance(got, Failure):
            kept += 1
        else:
            done += 1
    total = len(samples) * cfg.epochs
    unit = "samples" if cfg.epochs == 1 else f"sample-epochs ({len(samples)} samples x {cfg.epochs} epochs)"
    return (f"resume: {cfg.label}: {done} of {total} {unit} done (skipped)"
            + (f"; {kept} failed over a limit, kept as failures (--retry-limits tries them again)" if kept else "")
            + f"; {total - done - kept} to run" + (f" ({failed} of them failed before and are tried again)"
                                                    if failed else ""))


def score_config(cfg: Any, loaded: Any, solved: Any, started: Any, clock: Any) -> ConfigResult:
    """The score phase of one config: its calibration predictor's predictions or its solved rows (`solved`, let go
    once scored), scored (each epoch, then reduced: jobs/epochs.py) and finalized; its wall clock (`clock`, started
    by the runner: `rundir.WallClock`) runs meanwhile and its console line is summary.csv's headline."""
    evallog, ctx = started.evallog, started.ctx
    with clock:  # stopped and saved however the config ends
        samples = solved.samples if solved is not None else loaded.samples
        epoch_table = None
        if solved is not None and cfg.epochs > 1:  # each epoch scored, then reduced (jobs/epochs.py)
            scored, table, epoch_table = score_epochs(cfg, solved, ctx, evallog, loaded)
        else:
            if solved is None:  # a calibration predictor
                predictions, stats = cfg.task.predict(cfg.options.method, samples, cfg.options), {}
            else:  # nothing written is a Failure (`Solved.epoch`)
                predictions, stats = solved.epoch(1)
            scored = _scored(cfg, cfg.label, cfg.pred_dir, samples, predictions, ctx, evallog)
            table = score_table(cfg, scored, stats, loaded)
        record = summary_record(cfg, scored, len(loaded.defects), table)
        wall = clock.stop()  # every attempt of this config: a resumed config's time is the sum
    print(score_line(cfg, scored, table, wall), flush=True)  # summary.csv's headline, not a figure of its own
    return ConfigResult(cfg, table, scored, record, epoch_table, wall)


def score_epochs(cfg: Any, solved: Any, ctx: Any, evallog: Any,
                 loaded: Any = None) -> tuple[Scored, pl.DataFrame, pl.DataFrame]:
    """Score each epoch of a config and reduce them: (the reduced `Scored`, the reduced per-sample table, the
    per-epoch tables with their `epoch`); each epoch's and the reduced predictions go to the eval log and to the
    task's `finalize`. `solved`: the config's samples and each epoch's rows (`jobs.together.Solved`)."""
    task, epochs, reducer, samples = cfg.task, cfg.epochs, cfg.reducer, solved.samples
    per_epoch, frames, rows, summaries, stats_all = [], [], [], [], []
    for e in range(1, epochs + 1):
        folder = epoch_dir(cfg.pred_dir, e, epochs)
        predictions, stats = solved.epoch(e)
        # each epoch's own log and submission / official files
        scored = _scored(cfg, epoch_label(cfg.label, e, epochs), folder, samples, predictions, ctx, evallog)
        stats_all.append(stats)
        frames.append(score_table(cfg, scored, stats, loaded).with_columns(pl.lit(e, pl.Int64).alias("epoch")))
        rows.append(scored.rows.with_columns(pl.lit(e, pl.Int64).alias("epoch")))
        per_epoch.append(predictions)
        summaries.append(scored.summary)
    epoch_frame = pl.concat(frames, how="diagonal_relaxed")
    vote = dict(getattr(task.Options, "reducers", None) or {}).get(reducer)
    if vote is not None:  # the task reduces the predictions, then scores them as one
        reduced = {}
        for s in samples:
            got = [p.get(s.id) for p in per_epoch]
            reduced[s.id] = vote(got) or next((p for p in got if isinstance(p, Failure)), got[0])
        scored = _scored(cfg, cfg.label, cfg.pred_dir, samples, reduced, ctx, evallog)
        table = score_table(cfg, scored, _summed(stats_all), loaded)
        scored.summary.update(reducer=reducer, epochs=epochs, per_epoch=summaries)
        return scored, table, epoch_frame
    table = reduce_table(epoch_frame, reducer)
    summary = {k: sum(s[k] for s in summaries) / epochs for k in summaries[0]
               if all(isinstance(s.get(k), (int, float)) and not isinstance(s.get(k), bool) for s in summaries)}
    summary.update(reducer=reducer, epochs=epochs, per_epoch=summaries)
    return Scored(pl.concat(rows, how="diagonal_relaxed"), summary), table, epoch_frame


def _scored(cfg: Any, label: str, folder: Path, samples: list, predictions: dict[str, Any], ctx: Any,
            evallog: Any) -> Scored:
    """`predictions` scored (a judge's calls join each sample's line in the eval log's `label`, then finished) and
    finalized into `folder` (the task's submission, its official files)."""
    log = evallog.config(label)
    with sink.active(log):
        scored = cfg.task.scorer.score(samples, predictions, cfg.options, ctx)
    log.finish(samples, predictions)
    cfg.task.scorer.finalize(folder, samples, predictions, cfg.options)
    return scored


def score_table(cfg: Config, scored: Scored, stats: dict[str, dict[str, Any]],
                loaded: Loaded | None = None) -> pl.DataFrame:
    """One row per sample of this config: primary metric as `score`, the others as `c_<metric>`, cost and status,
    and its `cluster` (`clusters`)."""
    rows = scored.rows
    # The per-sample score is the primary metric where the task scores it per sample; a corpus-level primary
    # (an official F1) lives in configs.json, and its first per-sample metric stands in the per-sample table.
    main = per_sample(rows, cfg.task.report.primary_metric)
    info = scored.tables.get("sample_info")
    if info is not None:
        main = main.join(info, on="sample_id", how="left")
    from emocaustics.models.prices import sample_cost

    price = cfg.price
    cost = pl.DataFrame(
        [{"sample_id": k, **{c: int(v.get(c, 0)) for c in COST_COLUMNS}, "seconds": float(v.get("seconds", 0.0)),
          "cost_usd": sample_cost(price, v)} for k, v in stats.items()],
        schema={"sample_id": pl.Utf8, **{c: pl.Int64 for c in COST_COLUMNS}, "seconds": pl.Float64,
                "cost_usd": pl.Float64})
    # A sample with no calls recorded cost nothing; a priced model's calls cost what their tokens say; an unpriced
    # model's calls cost an unknown amount (null, never 0).
    no_calls = pl.lit(0.0) if (price is not None or cfg.model is None) else pl.lit(None, pl.Float64)
    extra = cfg.task.report.summary_columns(cfg.options)
    return (
        main.join(cost, on="sample_id", how="left")
        .with_columns(
            pl.lit(cfg.label).alias("run"), pl.lit(cfg.task.name).alias("task"),
            pl.lit(cfg.options.method).alias("method"), pl.lit(cfg.model, pl.Utf8).alias("model"),
            pl.lit(cfg.kind).alias("kind"),
            *[pl.lit(v, pl.Int64 if isinstance(v, int) or v is None else None).alias(k) for k, v in extra.items()],
            pl.col(*COST_COLUMNS).fill_null(0), pl.col("seconds").fill_null(0.0),
            pl.col("cost_usd").fill_null(no_calls),
            *clusters(cfg.task.name, loaded),
        )
    )


def clusters(task: str, loaded: Loaded | None) -> tuple[pl.Expr, pl.Expr]:
    """`cluster` (the sample's `meta["cluster"]`: what its statistics resample together) and `cluster_by` (what the
    task clusters by, `Loaded.info["cluster"]`); without a declared cluster each sample is its own ("sample")."""
    unit = (loaded.info.get("cluster") if loaded else None) or "sample"
    of = {s.id: s.meta.get("cluster") for s in (loaded.samples if loaded else [])}
    lacking = [i for i, c in of.items() if c is None]
    named = {i: str(c) for i, c in of.items() if c is not None}
    if unit != "sample" and lacking:
        raise ValueError(f"task {task!r} clusters by {unit} but sample {lacking[0]!r} has no meta['cluster']")
    if unit == "sample" and named:
        raise ValueError(f"task {task!r}: sample {next(iter(named))!r} has a meta['cluster'] but the task's "
                         "Loaded.info names no 'cluster' (what it clusters by)")
    return (pl.col("sample_id").replace_strict(named, default=pl.col("sample_id"), return_dtype=pl.Utf8)
            .alias("cluster"), pl.lit(unit).alias("cluster_by"))


def reduce_table(epoch_frame: pl.DataFrame, reducer: str) -> pl.DataFrame:
    """The reduced per-sample rows of a config from its per-epoch rows: `score` by the reducer, the other metrics
    (`c_*`) by their mean, cost summed over the epochs, `failed` when every epoch failed (its status and reason then
    epoch 1's, else those of the first epoch that did not fail); the rest as in epoch 1."""
    from emocaustics.scoring.headline import failures_count_zero

    epoch_frame = failures_count_zero(epoch_frame)  # a failed epoch counts 0 (scoring/reducers.py), as a failed sample
    comps = [c for c in epoch_frame.columns if c.startswith("c_")]
    summed = [c for c in (*COST_COLUMNS, "seconds", "cost_usd") if c in epoch_frame.columns]
    own = [c for c in ("status", "reason") if c in epoch_frame.columns]  # an epoch that did not fail speaks for it
    kept = [c for c in epoch_frame.columns if c not in {"sample_id", "score", "failed", "epoch", *comps, *summed, *own}]
    cost = pl.col("cost_usd")
    grouped = (epoch_frame.sort("epoch").group_by("sample_id", maintain_order=True)
               .agg(pl.col("score"), pl.col("failed").all(), *[pl.col(c).mean() for c in comps],
                    *[pl.col(c).sum() for c in summed if c != "cost_usd"],
                    *([pl.when(cost.null_count() == 0).then(cost.sum())] if "cost_usd" in summed else []),
                    *[pl.when(pl.col("failed").all()).then(pl.col(c).first())
                      .otherwise(pl.col(c).filter(~pl.col("failed")).first()).alias(c) for c in own],
                    *[pl.col(c).first() for c in kept]))
    reduced = [reduce_scores(v, reducer) for v in grouped["score"].to_list()]
    return (grouped.with_columns(pl.Series("score", reduced, dtype=pl.Float64))
            .select(epoch_frame.drop("epoch").columns))


def _summed(stats: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each sample's cost over the epochs: its numbers summed (a Counter adds them), the rest left out."""
    out: dict[str, Counter] = {}
    for per in stats:
        for sid, row in per.items():
            out.setdefault(sid, Counter()).update(
                {k: v for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    return out


def score_line(cfg: Config, scored: Scored, table: pl.DataFrame, wall: float) -> str:
    """The console's line of a config, `[score LABEL] METRIC VALUE, F failures, N samples, T s`: summary.csv's
    figures (`scoring.headline.headline` of the config's per-sample table: for epochs its reduced rows), named by the
    per-sample metric its `score` holds (the primary metric, or where that is a corpus figure such as ECPE's official
    F1, the first per-sample one: `per_sample`) and, for epochs, the reducer that made it."""
    from emocaustics.scoring.headline import headline

    top = headline(table).row(0, named=True)
    metrics, name = scored.rows["metric"], cfg.task.report.primary_metric
    name = name if name in metrics or metrics.is_empty() else metrics[0]
    name += f" ({cfg.reducer} over {cfg.epochs} epochs)" if cfg.epochs > 1 else ""
    value = None if top["score"] is None else round(top["score"], 4)
    return f"[score {cfg.label}] {name} {value}, {top['failures']} failures, {top['samples']} samples, {wall} s"


def summary_record(cfg: Config, scored: Scored, loaded_defects: int, table: pl.DataFrame) -> dict[str, Any]:
    """configs.json's record of a config; its dollars: its samples' sum, or None (unknown) when any sample's is."""
    cost = table.get_column("cost_usd", default=pl.Series([None]))
    return {"run": cfg.label, "task": cfg.task.name, "method": cfg.options.method, "model": cfg.model,
            "options": cfg.options.model_dump(mode="json"), "summary": scored.summary, "data_defects": loaded_defects,
            "prompts_version": cfg.task.prompts_version,
            "cost_usd": None if cost.null_count() else round(float(cost.sum()), 6)}
