"""`emocaustics compare` says which differences between configs are significant, and which are not although the
means differ (issue 15). A hand-written run folder (the runner's tables from a hand-made per-sample score table: no
engine, no Ray): three configs scored on the same 30 samples.

- `close` = `base` plus small per-sample noise centred near +0.01: the means differ, the paired test does not call
  it significant;
- `far` = `base` + 0.2 on every sample (and a little noise): significant against both others.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from emocaustics.cli import main
from emocaustics.report.tables import SCORE_COLUMNS, write_tables

N = 30


def _rows(run: str, scores: np.ndarray) -> list[dict]:
    return [{"run": run, "task": "sextuple", "method": run, "model": None, "kind": "calibration",
             "sample_id": f"s{i:02d}", "weight": 1.0, "score": float(s), "failed": False, "status": "ok",
             "reason": None, "llm_calls": 0, "cache_hits": 0, "prompt_tokens": 0, "generated_tokens": 0,
             "seconds": 0.0} for i, s in enumerate(scores)]


@pytest.fixture
def run_dir(tmp_path) -> Path:
    rng = np.random.default_rng(11)
    base = rng.uniform(0.3, 0.7, N)
    close = np.clip(base + rng.normal(0.01, 0.05, N), 0, 1)
    far = np.clip(base + 0.2 + rng.normal(0, 0.02, N), 0, 1)
    scores = pl.DataFrame(_rows("base", base) + _rows("close", close) + _rows("far", far),
                          schema_overrides=SCORE_COLUMNS)
    out = tmp_path / "job" / "20260101-000000"
    out.mkdir(parents=True)
    write_tables(out, scores)
    return out


def verdicts(printed: str) -> dict[tuple[str, str], str]:
    out = {}
    for line in printed.splitlines():
        if " vs " in line and "->" in line:
            pair = line.split(": ", 1)[1].split(": diff")[0]
            a, b = pair.split(" vs ")
            out[(a, b)] = line.rsplit("-> ", 1)[1].strip()
    return out


def test_compare_flags_a_difference_that_is_not_significant(run_dir, capsys):
    summary = pl.read_csv(run_dir / "summary.csv")
    means = dict(zip(summary["run"], summary["score"]))
    assert means["close"] != means["base"]  # the means differ ...
    assert main(["compare", str(run_dir)]) == 0
    printed = capsys.readouterr().out
    got = verdicts(printed)
    assert got[("base", "close")] == "NOT significant"  # ... but not significantly
    assert got[("base", "far")] == "significant" and got[("close", "far")] == "significant"
    # the verdicts are those of significance.csv (Holm over the three pairs), the printed diff is the mean difference
    pairs = pl.read_csv(run_dir / "significance.csv")
    row = pairs.filter((pl.col("config_a") == "base") & (pl.col("config_b") == "close")).row(0, named=True)
    assert row["p_holm"] >= 0.05 and row["diff"] == pytest.approx(means["base"] - means["close"], abs=1e-12)
    assert row["diff_low"] < 0 < row["diff_high"]  # its interval holds 0
    assert f"diff {row['diff']:+.4f} over {N} common samples" in printed
    far = pairs.filter(pl.col("config_b") == "far")
    assert (far["p_holm"] < 0.05).all() and (far["diff_high"] < 0).all()


def test_compare_of_two_runs_tests_configs_across_the_runs(run_dir, tmp_path, capsys):
    """Issue 25 point 4: two runs are compared with each other (on their common samples, Holm across the pairs
    tested), not each run with itself; issue 41 point 9: each config with its namesake in the other run, or the
    pairs `--pair` names, not every config against every config (tests/report/test_compare_pairs.py)."""
    other = tmp_path / "job" / "20260102-000000"
    other.mkdir(parents=True)
    for name in ("scores.parquet", "summary.csv", "significance.csv"):
        (other / name).write_bytes((run_dir / name).read_bytes())
    assert main(["compare", str(run_dir), str(other), "--out", str(tmp_path / "both.csv")]) == 0
    printed = capsys.readouterr().out
    pairs = pl.read_csv(tmp_path / "both.csv")
    assert pairs.height == 3 and (pairs["run_a"] != pairs["run_b"]).all() and (pairs["n_common"] == N).all()
    assert (pairs["diff"] == 0).all() and not pairs["significant"].any()  # the same scores in both runs
    assert "job/20260101-000000" in printed and "job/20260102-000000" in printed and "Holm over the 3 pairs" in printed
    assert main(["compare", str(run_dir), str(other), "--pair", "base", "far", "--pair", "far", "close",
                 "--out", str(tmp_path / "named.csv")]) == 0
    by = {(r["config_a"], r["config_b"]): r for r in pl.read_csv(tmp_path / "named.csv").iter_rows(named=True)}
    assert set(by) == {("base", "far"), ("far", "close")}
    assert by[("base", "far")]["significant"] and by[("far", "close")]["significant"]
