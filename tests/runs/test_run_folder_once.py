"""The run folder decided in one module (`jobs/rundir.py`): where it is (`resolve_run_dir`, against `base_dir()`),
whether the job may use it (`claim`, which reads the job's result fields once: its hash and run.json's `fields`), and
what of the job it keeps (`start` writes run.json and config.yaml, `claim` nothing). Fast: the `count` test task, no
Ray, no model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from emocaustics.jobs import rundir, spec
from emocaustics.jobs.spec import JobSpec, dump_job
from emocaustics.jobs.configs import resolve as _resolved  # the claim takes the job as resolved

BASE: dict[str, Any] = {"name": "once", "dataset": {"n": 3}, "runs": [{"task": "count", "method": "ask", "model": "m"}],
                        "models": {"m": {"spec": "vllm:org/model"}}}


def test_the_run_folder_is_placed_against_the_base_dir(count_task, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(rundir.BASE_DIR_ENV, str(tmp_path))
    job = JobSpec.model_validate({**BASE, "output": "out"})
    assert rundir.resolve_run_dir(job, "elsewhere/r1", resume=False) == tmp_path / "elsewhere" / "r1"
    made = rundir.resolve_run_dir(job, None, resume=False)
    assert made.parent == tmp_path / "out" / "once"


def test_the_job_is_expanded_once_for_its_configs_its_hash_and_its_config_yaml(count_task, tmp_path,
                                                                               monkeypatch) -> None:
    job = JobSpec.model_validate(BASE)  # validated: the spec's own check expands it (not counted)
    calls: list[str] = []
    expand = JobSpec.expand

    def counted(self: JobSpec) -> list:
        calls.append(self.name)
        return expand(self)

    monkeypatch.setattr(JobSpec, "expand", counted)
    claimed = rundir.claim(tmp_path / "r", _resolved(job, tmp_path / "r"), resume=False, force=False)
    assert calls == ["once"]  # resolve, then the claim: one expansion (three before: configs, fields, config.yaml)
    monkeypatch.setattr(JobSpec, "expand", expand)
    assert claimed.record["fields"] == spec.result_fields(job)
    assert claimed.record["hash"] == rundir.job_hash(job)
    assert claimed.config_yaml == dump_job(job)


def test_config_yaml_is_written_when_the_claim_is_made_real(count_task, tmp_path) -> None:
    job = JobSpec.model_validate(BASE)
    run_dir = tmp_path / "r"
    claimed = rundir.claim(run_dir, _resolved(job, run_dir), resume=False, force=False)
    assert not run_dir.exists()  # a claim writes nothing
    rundir.start(claimed)
    try:
        text = (run_dir / "config.yaml").read_text(encoding="utf-8")
        assert text == dump_job(job)
        assert [r["label"] for r in yaml.safe_load(text)["resolved_runs"]] == ["count_ask_m"]
    finally:
        rundir.finish(claimed)
    again = rundir.claim(run_dir, _resolved(job, run_dir), resume=True, force=False)  # a resume writes it again
    (run_dir / "config.yaml").unlink()
    rundir.start(again)
    rundir.finish(again)
    assert (run_dir / "config.yaml").read_text(encoding="utf-8") == text


@pytest.fixture(autouse=True)
def _no_base_dir(monkeypatch) -> None:
    monkeypatch.delenv("EMOCAUSTICS_BASE_DIR", raising=False)
