"""Reliability: a damaged dataset folder gives clear errors naming file / record / field, and the rest of the run is
unharmed (the good dialogues score 1.0 with the oracle; the bad ones are reported, none silently).

Damage (tests/fakes/broken_dataset.py): broken JSON, a missing field, a wrong type, a duplicated dialogue, an empty
dialogue, a 10 MB utterance, non-UTF-8 bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakes.broken_dataset import BrokenDataset, build_broken_dataset

REPO = Path(__file__).resolve().parents[2]
CLI_SECONDS = 120  # generous bound for one CLI call on a loaded 2-core machine (measured: 2-4 s)


@pytest.fixture(scope="module")
def broken(tmp_path_factory) -> BrokenDataset:
    return build_broken_dataset(tmp_path_factory.mktemp("broken") / "data")


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "emocaustics", *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=CLI_SECONDS)
    proc.seconds = time.perf_counter() - t0  # type: ignore[attr-defined]
    return proc


def _names(case_file: str) -> str:
    return case_file.split("/")[-1]


def _where_lines(stats: dict) -> list[str]:
    """Every place `data stats --json` reports a defect, as text."""
    lines = list(stats["defects_in_selection"])
    lines += [f"{m['file']}, line {m['line']} column {m['column']}: {m['error']}" for m in stats["malformed"]]
    lines += [" = ".join(pair) for pair in stats["duplicate_pairs"]]
    return lines


def test_data_stats_names_every_defect_and_keeps_the_good_dialogues(broken: BrokenDataset) -> None:
    proc = _cli("data", "stats", "--data", str(broken.root), "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    stats = json.loads(proc.stdout)
    assert set(broken.good) | {broken.big_id} <= set(stats["ids"])
    lines = _where_lines(stats)
    for name, case in broken.bad.items():
        file = _names(case.file)
        hits = [line for line in lines if file in line]
        assert hits, f"{name}: no defect names {file}; reported: {lines}"
        if case.record is not None:
            assert any(f"record {case.record}" in h and repr(case.field) in h for h in hits), (name, hits)
    # broken JSON and non-UTF-8 bytes carry a position, so a person can open the file at the spot
    malformed = {m["file"]: m for m in stats["malformed"]}
    for name in ("broken_json", "non_utf8"):
        m = malformed[_names(broken.bad[name].file)]
        assert m["line"] >= 1 and m["column"] >= 1, m
    assert stats["defect_counts"]["duplicate"] >= 1 and stats["defect_counts"]["empty"] >= 1
    # the 10 MB utterance is data, not damage: loaded whole, and not slow
    assert stats["utterances_per_dialogue"]["max"] >= 14
    assert proc.seconds < 60, f"data stats took {proc.seconds:.1f}s on a 10 MB utterance"


@pytest.fixture(scope="module")
def scored(broken: BrokenDataset, tmp_path_factory) -> tuple[dict, subprocess.CompletedProcess]:
    """`emocaustics score sextuple --pred oracle` on the broken folder, run once for the tests below."""
    out = tmp_path_factory.mktemp("score")
    proc = _cli("score", "sextuple", "--pred", "oracle", "--data", str(broken.root), "--json", "--out", str(out),
                "--allow-failures")  # the broken dialogues fail (exit status 3 without this flag)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout), proc


def test_score_oracle_on_a_broken_dataset_gives_the_good_dialogues_full_marks(broken: BrokenDataset,
                                                                              scored) -> None:
    summary, proc = scored
    per = {int(k): v for k, v in summary["per_dialogue"].items()}
    for i in [*broken.good, broken.big_id]:
        assert per[i] == pytest.approx(1.0), (i, per)
    assert proc.seconds < 90


def test_score_reports_dialogues_without_utterances_instead_of_scoring_them(scored) -> None:
    summary, _ = scored
    per = {int(k): v for k, v in summary["per_dialogue"].items()}
    explained = {int(f["dialogue"]) for f in summary["failures"]}
    silent = [i for i, v in per.items() if v != pytest.approx(1.0) and i not in explained]
    assert not silent, f"dialogues scored below 1.0 by the oracle without a reason: {silent}"


def test_score_cli_reports_the_data_defects(broken: BrokenDataset, scored) -> None:
    summary, proc = scored
    text = proc.stderr + json.dumps(summary, ensure_ascii=False)
    missing = [c.file for c in broken.bad.values() if _names(c.file) not in text]
    assert not missing, f"score output does not mention {missing}"


@pytest.mark.slow
def test_run_job_with_oracle_rows_on_a_broken_dataset(broken: BrokenDataset, tmp_path: Path, ray_local) -> None:
    import polars as pl

    from emocaustics.jobs.runner import run_job
    from emocaustics.jobs.spec import JobSpec

    job = JobSpec.model_validate({
        "name": "broken-data", "dataset": {"subset": "all", "data": str(broken.root)},
        "runs": [{"task": "sextuple", "method": "oracle"}, {"task": "emotion", "method": "oracle"}],
        "output": str(tmp_path / "runs")})
    t0 = time.perf_counter()
    run_dir = run_job(job, out=str(tmp_path / "run"))
    seconds = time.perf_counter() - t0
    defects = json.loads((run_dir / "data_defects.json").read_text(encoding="utf-8"))
    where = " | ".join(f"{d['kind']}: {d['where']}: {d['message']}" for d in defects)
    for name, case in broken.bad.items():
        assert _names(case.file) in where, f"{name}: {case.file} not in data_defects.json: {where}"
    assert "record 2, field 'Holder'" in where and "record 1, field 'sentence'" in where
    scores = pl.read_parquet(run_dir / "scores.parquet")
    for task in ("sextuple", "emotion"):
        rows = {int(r["sample_id"]): r for r in scores.filter(pl.col("task") == task).iter_rows(named=True)}
        for i in [*broken.good, broken.big_id]:
            assert rows[i]["score"] == pytest.approx(1.0), (task, i, rows[i])
    assert (run_dir / "summary.md").exists() and (run_dir / "report.html").exists()
    print(f"\n[reliability] broken dataset: oracle job done in {seconds:.1f}s; {len(defects)} defects reported")
