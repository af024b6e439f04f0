"""The narrative benchmark on a few synthetic pairs: valid documents, same result in one and in several processes."""

import json

from benchmarks.narrative_bench import main, run, synthetic_pair

from emocaustics.tasks.narrative.composite import score_pair


def test_synthetic_pairs_are_deterministic_and_valid():
    pred, gt = synthetic_pair(3)
    assert (pred, gt) == synthetic_pair(3)
    r = score_pair(pred, gt)
    assert "error" not in r and 0 < r["overall_score"] <= 1
    assert score_pair(gt, gt)["overall_score"] == 1.0


def test_run_and_results_file(ray_local, tmp_path):
    result = run(files=12, workers=2)  # the three paths must agree (asserted inside run)
    f = result["figures"]
    assert f["files"] == 12 and f["files_per_s_1_process"] > 0 and f["files_per_s_2_processes"] > 0
    assert f["files_per_s_ray_data"] > 0 and f["ray_cpus"] >= 1
    assert f["files_per_s_task_ray_data"] > 0 and f["seconds_task_score"] > 0
    assert set(result["load_average_1min"]) == {"1_process", "2_processes", "ray_data", "task_ray_data"}
    assert result["command"] == "python -m benchmarks.narrative_bench --files 12 --workers 2"
    assert main(["--files", "6", "--workers", "1", "--no-ray", "--out", str(tmp_path)]) == 0
    saved = json.loads((tmp_path / "narrative_bench.json").read_text())
    assert saved["name"] == "narrative_bench" and saved["figures"]["files"] == 6
    assert "files_per_s_ray_data" not in saved["figures"] and "--no-ray" in saved["command"]
    assert "Rerun: `python -m benchmarks.narrative_bench" in (tmp_path / "narrative_bench.md").read_text()
