"""Issue 25 point 4: `emocaustics compare RUN_A RUN_B` tests the configs of one run against those of the other.

Real run folders of calibration-only jobs of the test task `count` (no model, no Ray): run A scores `right` and
`half` on 12 samples, run B `wrong` and `half` on the first 8 of them, run C `right` on 8 samples that reuse A's ids
for other numbers (`offset`). Expected (issue 41 point 9: configs are paired by label, or by --pair): by label, the
one pair half/half; with --pair, exactly the pairs named, each paired on the 8 common samples, Holm across those; no
pair within a run; nothing paired between A and C (same ids, other content).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from count_task import write_job

from emocaustics.cli import main
from emocaustics.stats import holm

JOB = """
name: {name}
dataset: {{n: {n}, offset: {offset}}}
runs:
{runs}
scoring: {{embedder: minilm}}
"""


def _run(tmp_path: Path, name: str, n: int, methods: list[str], offset: int = 0) -> Path:
    runs = "\n".join(f"  - {{task: count, method: {m}}}" for m in methods)
    job = write_job(tmp_path / f"{name}.yaml", JOB.format(name=name, n=n, offset=offset, runs=runs))
    out = tmp_path / "runs" / name / "20260101-000000"
    assert main(["run", str(job), "--out", str(out), "--allow-failures"]) == 0
    return out


@pytest.fixture
def runs(count_task, tmp_path):
    return (_run(tmp_path, "a", 12, ["right", "half"]), _run(tmp_path, "b", 8, ["wrong", "half"]),
            _run(tmp_path, "c", 8, ["right"], offset=1))


def test_compare_tests_configs_across_runs_on_common_samples(runs, tmp_path, capsys):
    a, b, _ = runs
    capsys.readouterr()
    out = tmp_path / "pairs.csv"
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    pairs = pl.read_csv(out)
    ra, rb = "a/20260101-000000", "b/20260101-000000"
    # by label: half with half; right (only in A) and wrong (only in B) are listed, not tested
    assert [(r["config_a"], r["config_b"]) for r in pairs.iter_rows(named=True)] == [("count_half", "count_half")]
    assert "Not compared" in printed and "count_right" in printed and "count_wrong" in printed
    assert main(["compare", str(a), str(b), "--out", str(out), "--pair", "count_right", "count_wrong",
                 "--pair", "count_half", "count_half"]) == 0
    printed = capsys.readouterr().out
    pairs = pl.read_csv(out)
    got = {(r["run_a"], r["config_a"], r["run_b"], r["config_b"]) for r in pairs.iter_rows(named=True)}
    assert got == {(ra, "count_right", rb, "count_wrong"), (ra, "count_half", rb, "count_half")}
    assert (pairs["n_common"] == 8).all() and (pairs["n_only_a"] == 4).all() and (pairs["n_only_b"] == 0).all()
    # Holm across exactly the pairs compared
    assert pairs["p_holm"].to_list() == pytest.approx(holm(pairs["p_randomisation"].to_numpy()).tolist())
    by = {(r["config_a"], r["config_b"]): r for r in pairs.iter_rows(named=True)}
    right_wrong = by[("count_right", "count_wrong")]
    assert right_wrong["score_a"] == 1.0 and right_wrong["score_b"] == 0.0 and right_wrong["diff"] == 1.0
    assert right_wrong["significant"]
    same = by[("count_half", "count_half")]  # the same predictor on the same samples: no difference
    assert same["diff"] == 0.0 and not same["significant"]
    # the printed table names each config by run and label, with the verdict
    lines = [line for line in printed.splitlines() if ra in line and rb in line]
    assert len(lines) == 2 and sum("NOT significant" in line for line in lines) == 1
    assert "Holm over the 2 pairs" in printed


def test_same_ids_with_other_content_are_not_paired(runs, tmp_path, capsys):
    a, _, c = runs
    capsys.readouterr()
    out = tmp_path / "pairs.csv"
    assert main(["compare", str(a), str(c), "--out", str(out)]) == 0
    assert "nothing to compare" in capsys.readouterr().out
    assert not out.exists() or pl.read_csv(out).height == 0


def test_a_run_given_twice_or_without_scores_is_a_usage_error(runs, tmp_path, capsys):
    a, b, _ = runs
    assert main(["compare", str(a), str(a)]) == 2
    (b / "scores.parquet").unlink()
    assert main(["compare", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert "given twice" in err and "no scores.parquet" in err
