"""Issue 25 point 8: Holm's family leaves calibration rows out.

The demo's shape: 8 dialogues, per task an oracle (1.0), a baseline and model configs. With the oracle and baseline
pairs in Holm's family (16 pairs over two tasks), even "oracle 1.0 vs smoke 0.09" on every dialogue was NOT
significant (p_holm 0.128). The pairs a reader draws conclusions from are the model configs' pairs; the calibration
pairs are reported apart, unadjusted.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from emocaustics.report.tables import SCORE_COLUMNS, config_statistics, write_tables

N = 8


def _rows(run: str, task: str, method: str, kind: str, scores, model: str | None = None) -> list[dict]:
    return [{"run": run, "task": task, "method": method, "model": model, "kind": kind, "sample_id": f"d{i}",
             "weight": 1.0, "score": float(s), "failed": False, "status": "ok", "reason": None, "llm_calls": 0,
             "cache_hits": 0, "prompt_tokens": 0, "generated_tokens": 0, "seconds": 0.0}
            for i, s in enumerate(scores)]


def demo_scores(seed: int = 3) -> pl.DataFrame:
    """Two tasks as in the quickstart: oracle, baseline and three (sextuple) / two (emotion) smoke configs; `window`
    beats `direct` on every dialogue by ~0.5."""
    rng = np.random.default_rng(seed)
    data: list[dict] = []
    for task, methods in (("sextuple", ("direct", "window", "rag")), ("emotion", ("direct", "window"))):
        data += _rows(f"{task}_oracle", task, "oracle", "calibration", np.ones(N))
        data += _rows(f"{task}_baseline", task, "baseline", "calibration", rng.uniform(0.0, 0.1, N))
        for method in methods:
            level = 0.6 if method == "window" else 0.09
            data += _rows(f"{task}_{method}_smoke", task, method, "engine-check",
                          np.clip(level + rng.normal(0, 0.02, N), 0, 1), model="smoke")
    return pl.DataFrame(data, schema_overrides=SCORE_COLUMNS)


def test_calibration_pairs_are_out_of_the_holm_family():
    scores = demo_scores()
    _, pairs = config_statistics(scores)
    kinds = dict(scores.group_by("run").agg(pl.first("kind")).iter_rows())
    calibration = {r for r, k in kinds.items() if k == "calibration"}
    touches = pl.col("config_a").is_in(calibration) | pl.col("config_b").is_in(calibration)
    family, apart = pairs.filter(~touches), pairs.filter(touches)
    assert family.height == 3 + 1  # the model configs' pairs of both tasks, no more
    assert (family["family"] == "configs").all() and (apart["family"] == "calibration").all()
    # Holm over exactly the family: p_holm is the step-down adjustment of the family's own p-values
    from emocaustics.stats import holm

    assert family["p_holm"].to_list() == pytest.approx(holm(family["p_randomisation"].to_numpy()).tolist())
    # window beats direct on all 8 dialogues: significant once the calibration pairs no longer inflate the family
    win = family.filter(pl.col("config_a").str.contains("direct") & pl.col("config_b").str.contains("window"))
    assert win.height == 2 and win["significant"].all() and (win["p_holm"] < 0.05).all()
    # calibration pairs: no Holm adjustment, their verdict is that of the unadjusted test
    assert apart["p_holm"].is_null().all()
    assert apart["significant"].to_list() == (apart["p_randomisation"] < 0.05).to_list()


def test_a_scoring_only_task_keeps_its_pairs_in_the_family(tmp_path):
    """Configs that are all calibration (human ratings under QC thresholds, prediction files) are what the job
    evaluates: their pairs stay in the family."""
    rng = np.random.default_rng(1)
    scores = pl.DataFrame(
        _rows("human_process", "human", "process", "calibration", rng.uniform(0, 1, N))
        + _rows("human_process_qc_threshold=0.1", "human", "process", "calibration", rng.uniform(0, 1, N)),
        schema_overrides=SCORE_COLUMNS)
    _, pairs = config_statistics(scores)
    assert pairs["family"].to_list() == ["configs"] and pairs["p_holm"].is_not_null().all()


def test_summary_md_names_the_family_size(tmp_path):
    write_tables(tmp_path, demo_scores())
    md = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "Holm over 4 pairs" in md and "left out of the family" in md
