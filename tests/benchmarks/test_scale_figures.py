"""scale_bench's derived figures (benchmarks/scale_figures.derive) on a worked example, nothing measured."""

from __future__ import annotations

import pytest

from benchmarks.scale_figures import derive


def _run(replicas: int, tokens: float, makespan: float) -> dict:
    return {"replicas": replicas, "generated_tokens": tokens, "sim_makespan_s": makespan,
            "sim_tokens_per_s": tokens / makespan, "dialogues": 400, "overhead_ms_per_call": 0.4,
            "driver_rss_peak_mib": 2000.0, "llm_calls": 1000, "failed": 0, "mean_batch": 50.0}


def test_the_share_of_the_critical_path_bound_is_the_critical_path_over_the_makespan():
    # one replica makes 1000 tok/s; 64 replicas make 16e6 tokens in 500 s: efficiency 32000 / 64000 = 0.5. Perfect
    # scaling would take 16e6 / 64000 = 250 s, but the longest chain alone takes 450 s: bound 250 / 450 = 0.556,
    # and the run reached 0.5 / 0.556 = 0.9 of it (= 450 / 500)
    res = {"runs": {"1": _run(1, 4e6, 4000.0), "64": _run(64, 16e6, 500.0)}, "scaled": None,
           "critical_path_s": {"direct": 30.0, "window": 450.0}}
    f = derive(res, copies=0, scale_r=64, n_dialogues=400)
    assert f["efficiency_64_replicas"] == 0.5 and f["efficiency_bound_64_replicas"] == 0.556
    assert f["share_of_bound_64_replicas"] == pytest.approx(0.9)
    assert f["share_of_bound_1_replicas"] == 1.0  # one replica's bound is 1: its ideal (4000 s) outlasts the chain
