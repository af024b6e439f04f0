"""The scale benchmark's projections of the grid's wall time on N GPUs never go below a measured bound."""

from benchmarks.scale_bench import projections


def _run(makespan: float) -> dict:
    return {"sim_makespan_s": makespan, "dialogues": 400}


def test_a_projection_below_the_measured_run_at_more_replicas_is_raised_to_it():
    # 2 replicas projected at 100 s by rate, but 4 replicas took 300 s: 2 replicas cannot be faster than that
    out = projections({4: _run(300.0)}, grid_tokens=2_000.0, base=10.0, efficiency=1.0, crit=50.0)
    row = out["8_gpus"]
    assert row["rate_projection_s"] == 100.0 and row["raised_to_bound"]
    assert row["seconds"] == row["bound_s"] == 300.0 and row["bound"] == "simulated run at 4 replicas"


def test_a_projection_below_the_critical_path_is_raised_to_it():
    out = projections({}, grid_tokens=2_000.0, base=10.0, efficiency=0.5, crit=500.0)
    assert out["8_gpus"]["rate_projection_s"] == 200.0
    assert out["8_gpus"]["seconds"] == 500.0 and out["8_gpus"]["bound"] == "critical path"
    assert out["256_gpus"]["seconds"] == 500.0  # every replica count: the longest chain alone takes 500 s


def test_a_replica_count_that_was_simulated_reports_the_run_not_a_projection():
    out = projections({16: _run(1334.0)}, grid_tokens=1e7, base=1000.0, efficiency=0.9, crit=447.4)
    row = out["64_gpus"]
    assert row["kind"] == "simulated run" and row["seconds"] == 1334.0 and row["bound_s"] == 447.4
    assert all(r["seconds"] >= r["bound_s"] for r in out.values())
