"""`run --dry-run` of every shipped job: the plan prints (configs, samples, forecast, models with placement, outputs
and cache), exit 0, nothing is written and Ray is not started. Hub names are accepted as model and embedder specs;
offline, the pre-flight says so in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from emocaustics.cli import main
from emocaustics.core.errors import UsageError
from emocaustics.jobs.spec import load_job

JOBS = sorted((Path(__file__).resolve().parents[2] / "jobs").glob("*.yaml"))


def test_there_are_jobs():
    assert len(JOBS) >= 4


@pytest.mark.parametrize("path", JOBS, ids=[p.name for p in JOBS])
def test_every_shipped_job_dry_runs(path, tmp_path, capsys):
    import ray

    was_running = ray.is_initialized()
    out = tmp_path / "run"
    assert main(["run", str(path), "--dry-run", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    job = load_job(path)
    for run in job.expand():
        assert f"| {run.label} |" in text
    assert f"outputs: {out}" in text and "response cache:" in text and "dry run: nothing was started" in text
    for name in {r.model for r in job.expand() if r.model}:
        assert f"  {name}: {job.models[name].spec} -- " in text
    assert not out.exists()
    assert ray.is_initialized() == was_running


def test_the_cache_goes_under_emocaustics_cache_or_the_run_folder(tmp_path, monkeypatch, capsys):
    job = JOBS[0]
    monkeypatch.delenv("EMOCAUSTICS_CACHE", raising=False)
    assert main(["run", str(job), "--dry-run", "--out", str(tmp_path / "r")]) == 0
    assert f"response cache: {tmp_path / 'r' / 'cache'}/responses.sqlite" in capsys.readouterr().out
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "c"))
    assert main(["run", str(job), "--dry-run", "--out", str(tmp_path / "r")]) == 0
    assert f"response cache: {tmp_path / 'c'}/responses.sqlite" in capsys.readouterr().out


def test_hub_names_are_specs_and_offline_says_so(monkeypatch):
    from emocaustics.models.embedders import check_embedder, parse_embedder_spec

    assert parse_embedder_spec("BAAI/bge-m3").kind == "hub"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UsageError, match=r"embedder 'BAAI/bge-m3' is not in the local Hugging Face cache and "
                                         r"offline mode is on \(HF_HUB_OFFLINE=1\)"):
        check_embedder("BAAI/bge-m3")
    with pytest.raises(UsageError, match="not a hub name"):
        parse_embedder_spec("/no/such/folder")


def test_the_dry_run_forecast_counts_calls_per_sample(tmp_path, capsys):
    """The sample dialogues' `direct` sextuple config: one call per utterance."""
    from emocaustics.tasks.emocaustics.data.subsets import resolve

    dialogues, _ = resolve("sample", None)
    job = tmp_path / "j.yaml"
    job.write_text("name: f\ndataset: {subset: sample}\nmodels: {m: {spec: smoke}}\n"
                   "runs: [{task: sextuple, method: direct, model: m}]\n", encoding="utf-8")
    assert main(["run", str(job), "--dry-run", "--out", str(tmp_path / "r")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| sextuple_direct_m |"))
    n = sum(len(d.utterances) for d in dialogues)
    assert row.split("|")[5].strip() == str(len(dialogues)) and row.split("|")[6].strip() == f"{n:,}"
