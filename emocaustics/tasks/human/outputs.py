"""Files of a human-assessment run, under the original tool's names (CSV with XLSX twins for every table), the
plots (PNG and SVG) and a JSON summary; and reading a run's system tables back for self-replication.

`process` output folder:
  system_scores.csv/.xlsx (model, N, z, <sorted score types>), system_raw_scores.csv/.xlsx (model, N, raw, ...),
  system_scores_{failed,all}[_raw].csv/.xlsx (the same from failing / all workers), passrate.csv/.xlsx,
  duration.csv/.xlsx, sig_test.csv/.xlsx, corr_between_scores.csv/.xlsx, corr_between_raw_scores.csv/.xlsx,
  quality_control.csv/.xlsx (per worker p-value), rater_agreement.csv/.xlsx, conversations.csv (every rated
  conversation with its raw and z values), passed_workers.json, failed_workers.json, passed_assignment.json,
  failed_assignment.json, passed_hit.json, failed_hit.json, model_metadata.json, defects.json, sig_test.png/.svg,
  rater_agreement.png/.svg, summary.json.
`replicate` output folder: corr_zscore_r1r2.csv/.xlsx, corr_rawscore_r1r2.csv/.xlsx, replication.json.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from emocaustics.core.errors import UsageError
from emocaustics.stats.matrix import figure, plot_significance, significance_frame
from emocaustics.tasks.human.method import Processed
from emocaustics.tasks.human.significance import Agreement, rater_agreement, score_correlations, system_significance

PLOT_FORMATS = ("png", "svg")


@dataclass
class Statistics:
    """Step 7 on a processed run."""

    sig: pl.DataFrame  # sig_test table
    agreement_passed: Agreement
    agreement_failed: Agreement
    corr_scores: pl.DataFrame
    corr_raw_scores: pl.DataFrame


def statistics(result: Processed) -> Statistics:
    models = result.ranked_models
    p = system_significance(result.group_rows("passed"), models)
    z_table, raw_table = result.scores["passed"]
    return Statistics(significance_frame(p, models, corner=""), rater_agreement(result.group_rows("passed")),
                      rater_agreement(result.group_rows("failed")), score_correlations(z_table),
                      score_correlations(raw_table))


def write_table(df: pl.DataFrame, out: Path, stem: str, *, excel: bool = True) -> list[Path]:
    """`<stem>.csv` and, unless excel=False, its `<stem>.xlsx` twin (needs xlsxwriter)."""
    paths = [out / f"{stem}.csv"]
    df.write_csv(paths[0])
    if excel:
        try:
            df.write_excel(out / f"{stem}.xlsx", autofit=True)
        except ModuleNotFoundError as exc:
            raise UsageError(f"writing {stem}.xlsx needs the xlsxwriter package ({exc}); pip install xlsxwriter") \
                from None
        paths.append(out / f"{stem}.xlsx")
    return paths


def write_json(obj: Any, path: Path) -> Path:
    path.write_text(json.dumps(_clean(obj), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def conversations_csv(result: Processed) -> pl.DataFrame:
    """Every rated conversation: keys, worker mean/sd, per-conversation z and raw, then z_<score> and raw_<score>."""
    names = result.metadata.score_names
    conv = result.conversations
    passed = set(result.passed_workers)
    return conv.select(
        "record", "hit", "assignment", "worker", "model",
        pl.col("worker").is_in(sorted(passed)).alias("passed"), "mean", "sd", "z", "raw",
        *[pl.col(f"z:{s}").alias(f"z_{s}") for s in names], *[pl.col(f"raw:{s}").alias(f"raw_{s}") for s in names])


def plot_agreement(passed: Agreement, failed: Agreement, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig, ax = figure(6, 4)
    bins = [i / 10 for i in range(-10, 11)]
    for label, agr, colour in (("passed", passed, "#1f77b4"), ("failed", failed, "#ff7f0e")):
        values = agr.pairs.get_column("correlation").to_list()
        ax.hist(values, bins=bins, alpha=0.6, color=colour, label=f"{label} (n={len(values)})")
    ax.set_xlim(-1, 1)
    ax.set_xticks(bins[::2])
    ax.set_xlabel("Pearson r between two assignments")
    ax.set_ylabel("pairs of assignments")
    ax.legend()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path


def summary(result: Processed, stats: Statistics, source: str) -> dict[str, Any]:
    z_table = result.scores["passed"][0]
    rates = {r[""]: {"passed": r["passed"], "total": r["total"], "passrate": r["passrate"]}
             for r in result.passrate.iter_rows(named=True)}
    agreement = {}
    for label, agr in (("passed", stats.agreement_passed), ("failed", stats.agreement_failed)):
        col = agr.pairs.get_column("correlation")
        agreement[label] = {"pairs": agr.pairs.height, "undefined": agr.undefined,
                            "mean_r": col.mean() if agr.pairs.height else None}
    return {
        "source": source, "qc_model": result.metadata.qc_model, "ranked_models": result.ranked_models,
        "ranking_given": result.metadata.ranking is not None, "score_types": list(result.metadata.sorted_scores),
        "assignments": len(result.passed_assignments) + len(result.failed_assignments),
        "workers": {"passed": len(result.passed_workers), "failed": len(result.failed_workers)},
        "passrate": rates, "duration_minutes_per_conversation": result.duration.row(0, named=True),
        "system_z": dict(zip(z_table.get_column("model").to_list(), z_table.get_column("z").to_list())),
        "rater_agreement": agreement, "defects": [d.to_json() for d in result.defects],
    }


def write_process(result: Processed, out: Path, *, source: str = "", stats: Statistics | None = None) -> list[Path]:
    """Write every table, list, plot and the summary of a processed run into `out`; returns the paths. `stats`:
    step 7 when the caller has it already (the task's score did it for the same result)."""
    out.mkdir(parents=True, exist_ok=True)
    stats = stats or statistics(result)
    paths: list[Path] = []
    for group, suffix in (("passed", ""), ("failed", "_failed_workers"), ("all", "_all_workers")):
        gz, graw = result.scores[group]
        paths += write_table(gz, out, f"system_scores{suffix}") + write_table(graw, out, f"system_raw_scores{suffix}")
    for df, stem in ((result.passrate, "passrate"), (result.duration, "duration"), (stats.sig, "sig_test"),
                     (stats.corr_scores, "corr_between_scores"), (stats.corr_raw_scores, "corr_between_raw_scores"),
                     (result.qc, "quality_control")):
        paths += write_table(df, out, stem)
    agreement = pl.concat([stats.agreement_passed.pairs.with_columns(pl.lit("passed").alias("pass")),
                           stats.agreement_failed.pairs.with_columns(pl.lit("failed").alias("pass"))])
    paths += write_table(agreement, out, "rater_agreement")
    paths += write_table(conversations_csv(result), out, "conversations", excel=False)
    for name, value in (("passed_workers", result.passed_workers), ("failed_workers", result.failed_workers),
                        ("passed_assignment", result.passed_assignments),
                        ("failed_assignment", result.failed_assignments), ("passed_hit", result.passed_hits),
                        ("failed_hit", result.failed_hits),
                        ("model_metadata", {"ranked_model": result.ranked_models,
                                            "qc_model": result.metadata.qc_model}),
                        ("defects", [d.to_json() for d in result.defects])):
        paths.append(write_json(value, out / f"{name}.json"))
    sig = stats.sig.drop("").to_numpy()
    for fmt in PLOT_FORMATS:
        paths.append(plot_significance(sig, result.ranked_models, out / f"sig_test.{fmt}",
                                       title="row system > column system (one-sided Mann-Whitney p)"))
        paths.append(plot_agreement(stats.agreement_passed, stats.agreement_failed, out / f"rater_agreement.{fmt}"))
    paths.append(write_json(summary(result, stats, source), out / "summary.json"))
    return paths


def read_system_tables(run_dir: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(system_scores, system_raw_scores) of a `process` output folder."""
    tables = []
    for stem in ("system_scores", "system_raw_scores"):
        path = Path(run_dir) / f"{stem}.csv"
        if not path.is_file():
            raise UsageError(f"{path}: not found (is {run_dir} the output folder of `human process`?)")
        df = pl.read_csv(path)
        if "model" not in df.columns:
            raise UsageError(f"{path}: no 'model' column")
        tables.append(df.with_columns(pl.col("model").cast(pl.Utf8)))
    return tables[0], tables[1]


def write_replication(corr_z: pl.DataFrame, corr_raw: pl.DataFrame, out: Path, *, run1: str,
                      run2: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = write_table(corr_z, out, "corr_zscore_r1r2") + write_table(corr_raw, out, "corr_rawscore_r1r2")
    report = {"run1": run1, "run2": run2,
              "z": {r[""]: {k: v for k, v in r.items() if k} for r in corr_z.iter_rows(named=True)},
              "raw": {r[""]: {k: v for k, v in r.items() if k} for r in corr_raw.iter_rows(named=True)}}
    paths.append(write_json(report, out / "replication.json"))
    return paths


def _clean(obj: Any) -> Any:
    """JSON has no NaN: write null."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj
