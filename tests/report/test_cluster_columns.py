"""Issue 43 point 2 in the tables: scores.parquet's `cluster` / `cluster_by` (written from the loader's
`Sample.meta["cluster"]` and `Loaded.info["cluster"]`), the summary's `clusters` and `cluster_by` and the note under
summary.md, and cross-run compare's `clusters`. Hand-made per-sample scores: no engine, no Ray."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from emocaustics.core.task import Loaded, Sample
from emocaustics.jobs.epochs import clusters
from emocaustics.report.compare import compare_runs, describe
from emocaustics.report.tables import SCORE_COLUMNS, config_statistics, write_tables

TOPICS = 6


def scores(seed: int, *, unit: str | None = "topic") -> pl.DataFrame:
    """Two configs on 60 questions in 6 topics, the better one better by topic (correlated within a topic)."""
    rng = np.random.default_rng(seed)
    topic = np.repeat(np.arange(TOPICS), 10)
    gain = rng.normal(0, 0.3, TOPICS)[topic]
    rows = []
    for label, shift in (("base", 0.0), ("better", 1.0)):
        values = np.clip(0.4 + shift * gain + rng.normal(0, 0.05, topic.size), 0, 1)
        rows += [{"run": label, "task": "aer", "method": "m", "model": "x", "kind": "model", "sample_id": f"q{i}",
                  "weight": 1.0, "score": float(v), "failed": False, "status": "ok", "reason": None, "llm_calls": 0,
                  "cache_hits": 0, "prompt_tokens": 0, "generated_tokens": 0, "seconds": 0.0,
                  **({"cluster": f"t{t}", "cluster_by": unit} if unit else {})}
                 for i, (v, t) in enumerate(zip(values, topic))]
    return pl.DataFrame(rows, schema_overrides=SCORE_COLUMNS)


def test_the_summary_names_the_unit_and_the_number_of_clusters(tmp_path):
    summary = write_tables(tmp_path, scores(1)).summary
    assert summary.select("cluster_by", "clusters").rows() == [("topic", TOPICS)] * 2
    text = (tmp_path / "summary.md").read_text()
    line = "Intervals (ci) and paired tests resample clusters, each drawn with all its samples"
    assert f"|\n\n{line}" in text and "aer: topic, 6 clusters.\n" in text  # right under the main table
    from emocaustics.report.html import summary_section

    assert "<p class='note' id='clusters'>Intervals (ci)" in "".join(summary_section(summary))
    assert pl.read_parquet(tmp_path / "scores.parquet")["cluster"].n_unique() == TOPICS


def test_an_unclustered_table_keeps_its_numbers_and_says_so(tmp_path):
    plain = scores(1, unit=None)
    own = plain.with_columns(pl.col("sample_id").alias("cluster"), pl.lit("sample").alias("cluster_by"))
    (ci, pairs), (ci_own, pairs_own) = config_statistics(plain), config_statistics(own)
    assert ci.equals(ci_own) and pairs.equals(pairs_own) and ci["clusters"].to_list() == [60, 60]
    write_tables(tmp_path, plain)
    assert "aer: sample, 60 clusters (one sample each)" in (tmp_path / "summary.md").read_text()
    clustered, _ = config_statistics(scores(1))
    assert (ci["ci_high"] - ci["ci_low"] < clustered["ci_high"] - clustered["ci_low"]).all()


def test_the_loader_declares_the_cluster():
    loaded = Loaded([Sample("q1", None, meta={"cluster": 3}), Sample("q2", None, meta={"cluster": 3})],
                    info={"cluster": "topic"})
    frame = pl.DataFrame({"sample_id": ["q2", "q1"]}).with_columns(*clusters("aer", loaded))
    assert frame.rows() == [("q2", "3", "topic"), ("q1", "3", "topic")]
    none = pl.DataFrame({"sample_id": ["q1"]}).with_columns(*clusters("t", Loaded([Sample("q1", None)])))
    assert none.rows() == [("q1", "q1", "sample")]
    with pytest.raises(ValueError, match="task 'aer' clusters by topic but sample 'q3' has no meta\\['cluster'\\]"):
        clusters("aer", Loaded([*loaded.samples, Sample("q3", None)], info={"cluster": "topic"}))
    with pytest.raises(ValueError, match="task 't': sample 'q1' has a meta\\['cluster'\\] but .* names no 'cluster'"):
        clusters("t", Loaded(loaded.samples))


def _run(root: Path, name: str, frame: pl.DataFrame) -> Path:
    out = root / "job" / name
    out.mkdir(parents=True)
    write_tables(out, frame)
    return out


def test_compare_resamples_the_clusters_both_runs_declare(tmp_path):
    a, b = _run(tmp_path, "1", scores(1)), _run(tmp_path, "2", scores(2))
    result = compare_runs([a, b])
    assert result.pairs.select("clusters", "cluster_by").rows() == [(TOPICS, "topic")] * 2
    assert "| 6 (topic) |" in describe(result)
    c = _run(tmp_path, "3", scores(2, unit=None))  # an older run without clusters: no unit both share
    assert compare_runs([a, c]).pairs.select("clusters", "cluster_by").rows() == [(60, "sample")] * 2


def test_compare_of_one_run_shows_the_unit(tmp_path, capsys):
    from emocaustics.cli import main

    assert main(["compare", str(_run(tmp_path, "1", scores(1)))]) == 0
    assert "| ci_high | clusters | cluster_by |" in (out := capsys.readouterr().out) and "| 6 | topic |" in out
