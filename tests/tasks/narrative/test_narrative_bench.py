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


def test_run_and_results_file(tmp_path):
    result = run(files=12, workers=2)
    f = result["figures"]
    assert f["files"] == 12 and f["files_per_s_1_process"] > 0 and f["files_per_s_2_processes"] > 0
    assert main(["--files", "6", "--workers", "1", "--out", str(tmp_path)]) == 0
    saved = json.loads((tmp_path / "narrative_bench.json").read_text())
    assert saved["name"] == "narrative_bench" and saved["figures"]["files"] == 6
