"""Score tables and the HTML report, from a hand-built scores table (Polars only, no models)."""

from pathlib import Path

import polars as pl
import pytest

from emocaustics.report.html import write_report
from emocaustics.report.tables import SCORE_COLUMNS, compare, summarise, write_tables
from emocaustics.tasks.longdialogue.report import by_length


def rows(run, task, method, kind, scores, *, model=None, window=None, step=None, lengths=None, failed=()):
    lengths = lengths or [10] * len(scores)
    return [
        {
            "run": run, "task": task, "method": method, "model": model, "K": window, "S": step, "kind": kind,
            "sample_id": str(i + 1), "n_utterances": n, "weight": float(n), "score": s, "failed": i in failed,
            "status": "failed" if i in failed else "ok", "reason": "broken JSON" if i in failed else None, "llm_calls": 3, "cache_hits": 1, "prompt_tokens": 100,
            "generated_tokens": 20, "judge_failures": 0, "seconds": 1.0, "c_sentiment": s,
        }
        for i, (s, n) in enumerate(zip(scores, lengths))
    ]


@pytest.fixture
def scores() -> pl.DataFrame:
    data = (
        rows("sextuple_oracle", "sextuple", "oracle", "calibration", [1.0, 1.0, 1.0], lengths=[10, 30, 200])
        + rows("sextuple_baseline", "sextuple", "baseline", "calibration", [0.2, 0.4, 0.0], lengths=[10, 30, 200])
        + rows("w10", "sextuple", "window", "engine-check", [0.1, 0.3, 0.0], model="smoke", window=10, step=5,
               lengths=[10, 30, 200], failed=(2,))
        + rows("w20", "sextuple", "window", "engine-check", [0.2, 0.2, 0.2], model="smoke", window=20, step=5)
        + rows("w20s10", "sextuple", "window", "engine-check", [0.5, 0.5, 0.5], model="smoke", window=20, step=10)
    )
    return pl.DataFrame(data, schema_overrides=SCORE_COLUMNS)


def test_summary_macro_micro_failures(scores):
    summary = summarise(scores, wall={"w10": 12.5}).sort("run")
    base = summary.filter(pl.col("run") == "sextuple_baseline").row(0, named=True)
    assert base["score"] == pytest.approx(0.2)  # (0.2 + 0.4 + 0.0) / 3
    assert base["micro_score"] == pytest.approx((0.2 * 10 + 0.4 * 30 + 0) / 240)
    w10 = summary.filter(pl.col("run") == "w10").row(0, named=True)
    assert w10["failures"] == 1 and w10["llm_calls"] == 9 and w10["tokens"] == 360 and w10["wall_s"] == 12.5
    assert "NOT a quality figure" in w10["note"]
    assert summary.filter(pl.col("run") == "sextuple_oracle")["score"].item() == 1.0


def test_by_length_splits_short_and_long(scores):
    table = by_length(scores).filter(pl.col("run") == "sextuple_baseline")
    assert dict(zip(table["length"], table["dialogues"])) == {"long (>= 100)": 1, "short (< 100)": 2}


def test_written_tables_report_and_compare(tmp_path: Path, scores):
    run_dir = tmp_path / "job" / "20260101-000000"
    run_dir.mkdir(parents=True)
    page = write_report(run_dir, scores, write_tables(run_dir, scores)).read_text(encoding="utf-8")
    assert pl.read_parquet(run_dir / "scores.parquet").height == scores.height
    md = (run_dir / "summary.md").read_text(encoding="utf-8")
    assert "| sextuple_oracle |" in md and "1.0000" in md
    assert page.count("<svg") >= 3  # the bar chart, the K x S heatmap and the significance matrix
    summary = pl.read_csv(run_dir / "summary.csv")
    oracle = summary.filter(pl.col("run") == "sextuple_oracle").row(0, named=True)
    assert oracle["ci_low"] == oracle["ci_high"] == 1.0  # every sample 1.0: the interval is the point
    base = summary.filter(pl.col("run") == "sextuple_baseline").row(0, named=True)
    assert base["ci_low"] <= base["score"] <= base["ci_high"] and base["ci_low"] < base["ci_high"]
    pairs = pl.read_csv(run_dir / "significance.csv")
    assert pairs.height == 5 * 4 // 2 and "Significance: sextuple" in page
    # identical per-sample scores are never called significant
    assert not pairs.filter(pl.col("diff") == 0)["significant"].any()
    assert "Window x step" in page and "broken JSON" in page and "not a quality figure" in page
    both = compare([run_dir, run_dir])
    assert both.height == 2 * 5
    with pytest.raises(FileNotFoundError, match="no summary.csv"):
        compare([tmp_path])


def test_a_failed_sample_without_a_score_counts_zero(scores):
    """A task may leave a failed sample's score empty: the summary and its interval still count it 0."""
    blank = scores.with_columns(pl.when(pl.col("failed")).then(None).otherwise(pl.col("score")).alias("score"))
    w10 = summarise(blank).filter(pl.col("run") == "w10").row(0, named=True)
    assert w10["score"] == pytest.approx((0.1 + 0.3 + 0.0) / 3) and w10["failures"] == 1
    assert w10["ci_low"] == pytest.approx(0.0)  # the resampled means include the zero


def test_report_shows_engine_startup_once(tmp_path: Path, scores):
    import json

    run_dir = tmp_path / "job" / "20260101-000000"
    run_dir.mkdir(parents=True)
    (run_dir / "startup.json").write_text(json.dumps({"models": {"smoke": 46.21}, "embedder": 3.04}))
    page = write_report(run_dir, scores, write_tables(run_dir, scores, wall={"w10": 12.5})).read_text(encoding="utf-8")
    assert page.count("model smoke: 46.2 s") == 1 and "embedder: 3.0 s" in page
    assert "not part of any config's wall_s" in page


def test_bar_chart_with_a_config_without_any_score(tmp_path: Path, scores):
    """A config whose every sample is unscored (score empty, not failed) is drawn as n/a, not as a zero."""
    from emocaustics.report.html import _bar_chart

    empty = scores.filter(pl.col("run") == "w20").with_columns(pl.lit("w_none").alias("run"),
                                                               pl.lit(None, pl.Float64).alias("score"))
    summary = summarise(pl.concat([scores, empty]))
    chart = _bar_chart(summary, "sextuple")
    assert chart.count('id="bar-sextuple-') == 6 and ">n/a<" in chart
    assert chart.count('id="zero-sextuple-') == 0  # an n/a is not drawn as a zero (no mean here is 0)
