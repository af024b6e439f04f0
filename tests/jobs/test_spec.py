"""Job specs: validation errors name the key and the allowed values; grids expand to their cross product."""

from pathlib import Path

import pytest

from emocaustics.core.errors import UsageError
from emocaustics.jobs.spec import dump_job, load_job

JOBS = Path(__file__).resolve().parents[2] / "jobs"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["quickstart", "paper-100", "long-20-window-grid", "full"])
def test_shipped_jobs_validate(name):
    job = load_job(JOBS / f"{name}.yaml")
    assert job.name == name
    assert job.expand(), "every shipped job has runs"
    labels = [r.label for r in job.expand()]
    assert len(labels) == len(set(labels))


def test_window_grid_is_cross_product():
    job = load_job(JOBS / "long-20-window-grid.yaml")
    window_runs = [r for r in job.expand() if r.options["method"] == "window"]
    assert sorted((r.options["window"], r.options["step"]) for r in window_runs) == [(10, 5), (10, 10), (20, 5), (20, 10), (30, 5), (30, 10)]
    assert {r.model for r in window_runs} == {"llm"}


def test_unknown_key_is_named(tmp_path):
    path = write(tmp_path, "name: x\ndataset: {subset: sample, sbuset: all}\nruns: [{task: sextuple, method: oracle}]\n")
    with pytest.raises(UsageError, match=r"dataset\.sbuset: unknown key"):
        load_job(path)


def test_bad_value_names_allowed_values(tmp_path):
    path = write(tmp_path, "name: x\nruns: [{task: sextuple, method: windw}]\n")
    with pytest.raises(UsageError) as err:
        load_job(path)
    assert "runs.0.options.method" in str(err.value) and "'window'" in str(err.value) and "windw" in str(err.value)


def test_undefined_model_and_bad_combinations(tmp_path):
    with pytest.raises(UsageError, match="names model 'nope'"):
        load_job(write(tmp_path, "name: x\nruns: [{task: sextuple, method: direct, model: nope}]\n"))
    with pytest.raises(UsageError, match="task 'emotion' has no method 'rag'"):
        load_job(write(tmp_path, "name: x\nmodels: {m: {spec: smoke}}\nruns: [{task: emotion, method: rag, model: m}]\n"))
    with pytest.raises(UsageError, match="step 30 is larger than window 10"):
        load_job(write(tmp_path, "name: x\nmodels: {m: {spec: smoke}}\n"
                                 "runs: [{task: sextuple, method: window, model: m, window: 10, step: 30}]\n"))
    with pytest.raises(UsageError, match="no runs"):
        load_job(write(tmp_path, "name: x\n"))
    with pytest.raises(UsageError, match="not found"):
        load_job(tmp_path / "missing.yaml")


def test_resolved_config_round_trips(tmp_path):
    job = load_job(JOBS / "quickstart.yaml")
    text = dump_job(job)
    assert "resolved_runs" in text
    import yaml

    data = yaml.safe_load(text)
    data.pop("resolved_runs")
    again = load_job(write(tmp_path, yaml.safe_dump(data, allow_unicode=True)))
    assert [r.label for r in again.expand()] == [r.label for r in job.expand()]


@pytest.mark.parametrize("word,kept", [("off", "off"), ("on", "on"), ("read-only", "read-only"), ('"off"', "off")])
def test_the_cache_key_takes_yamls_bare_words(tmp_path, word, kept):
    # YAML 1.1 reads a bare `off` / `on` as a boolean: the job still means the cache mode the docs name
    job = load_job(write(tmp_path, "name: x\nmodels: {m: {spec: smoke}}\n"
                                   f"runs: [{{task: sextuple, method: direct, model: m}}]\ncache: {word}\n"))
    assert job.cache == kept
