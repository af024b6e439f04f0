"""The statistics benchmark runs (quick inputs) and reports its floor."""

from __future__ import annotations


def test_quick_run_reports_figures_and_floor():
    from benchmarks.stats_bench import run, to_markdown

    out = run(quick=True)
    assert out["inputs"] == {**out["inputs"], "items": 2000, "configs": 5, "resamples": 2000}
    assert out["figures"]["pairs"] == 10 and out["floors"]["config_stats_seconds"]["floor"] == 5.0
    assert "stats_bench" in to_markdown(out)
