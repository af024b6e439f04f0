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


SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
DATA_VARS = {"EMOCAUSTICS_DATA": "emocaustics", "EMOCAUSTICS_AER_DATA": "aer", "EMOCAUSTICS_ECAC_DATA": "ecac",
             "EMOCAUSTICS_HUMANEVAL_DATA": "humaneval"}


@pytest.mark.parametrize("path", JOBS, ids=[p.name for p in JOBS])
def test_every_shipped_job_dry_runs(path, tmp_path, capsys, monkeypatch):
    import ray

    for var, name in DATA_VARS.items():  # the published data where this machine has it
        if (SHARED / name).is_dir():
            monkeypatch.setenv(var, str(SHARED / name))
    was_running = ray.is_initialized()
    out = tmp_path / "run"
    rc = main(["run", str(path), "--dry-run", "--out", str(out)])
    text = capsys.readouterr().out
    problems = [line for line in text.splitlines() if line.startswith("  problem ")]
    # a dataset this machine lacks is the only problem a shipped job may have (exit 2, listed first); else exit 0
    assert rc == (2 if problems else 0) and all(": dataset: " in p for p in problems), text
    job = load_job(path)
    for run in job.expand():
        assert f"| {run.label} |" in text
    assert f"outputs: {out}" in text and "response cache:" in text and "dry run: nothing was started" in text
    for name in {r.model for r in job.expand() if r.model}:
        assert f"  {name}: {job.models[name].spec} -- " in text
    assert not out.exists()
    assert ray.is_initialized() == was_running


def test_the_response_cache_is_the_shared_one_under_emocaustics_cache(tmp_path, monkeypatch, capsys):
    job = next(p for p in JOBS if p.name == "narrative-quickstart.yaml")  # its data is in the repository
    monkeypatch.delenv("EMOCAUSTICS_RESPONSE_CACHE", raising=False)
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "c"))
    assert main(["run", str(job), "--dry-run", "--out", str(tmp_path / "r")]) == 0
    assert f"response cache: {tmp_path / 'c' / 'responses'}/responses.sqlite" in capsys.readouterr().out
    monkeypatch.setenv("EMOCAUSTICS_RESPONSE_CACHE", str(tmp_path / "rc"))
    assert main(["run", str(job), "--dry-run", "--out", str(tmp_path / "r")]) == 0
    assert f"response cache: {tmp_path / 'rc'}/responses.sqlite" in capsys.readouterr().out


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
    from emocaustics.tasks.longdialogue.data.subsets import resolve

    dialogues, _ = resolve("sample", None)
    job = tmp_path / "j.yaml"
    job.write_text("name: f\ndataset: {subset: sample}\nmodels: {m: {spec: smoke}}\n"
                   "runs: [{task: sextuple, method: direct, model: m}]\n", encoding="utf-8")
    assert main(["run", str(job), "--dry-run", "--out", str(tmp_path / "r")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| sextuple_direct_m |"))
    n = sum(len(d.utterances) for d in dialogues)
    assert row.split("|")[5].strip() == str(len(dialogues)) and row.split("|")[6].strip() == f"{n:,}"


def test_a_dry_run_with_problems_lists_them_first_forecasts_nothing_it_cannot_run_and_exits_2(tmp_path, capsys):
    """Issue 41 (5, 15): a model whose folder is missing and a selection naming an unknown id; the plan still shows
    every config, with the one that can run forecast, and every row has the header's 9 cells."""
    job = tmp_path / "j.yaml"
    job.write_text("name: p\ndataset: {narrative: {}}\nmodels: {ok: {spec: smoke}, gone: {spec: 'vllm:/nonexistent'}}\n"
                   "runs:\n  - {task: narrative, method: llm, model: ok}\n"
                   "  - {task: narrative, method: llm, model: gone}\n"
                   "  - {task: narrative, method: llm, model: ok, name: picked, select: {ids: [no-such-story]}}\n",
                   encoding="utf-8")
    assert main(["run", str(job), "--dry-run", "--out", str(tmp_path / "r")]) == 2
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].startswith("PROBLEMS: 2 ")
    assert lines[1].startswith("  problem 1: models.gone: model 'vllm:/nonexistent': /nonexistent is neither")
    assert lines[2].startswith("  problem 2: config picked: dataset: select.ids: ") and "no-such-story" in lines[2]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
            for line in lines if line.startswith("| ") and not line.startswith("| config |")}
    assert all(len(cells) == 9 for cells in rows.values()), rows
    assert rows["narrative_llm_gone"][5:] == ["not forecast: problem 1", "-", "-", "-"]
    assert rows["picked"][4:] == ["?", "not forecast: problem 2", "-", "-", "-"]
    assert int(rows["narrative_llm_ok"][5].replace(",", "")) > 0  # the config that can run is forecast
    assert "weights: see problem 1" in captured.out
    err = [line for line in captured.err.splitlines() if line.strip()]
    assert err == [f"emocaustics: error: the dry run found 2 problem(s): {lines[1][len('  problem 1: '):]} "
                   "(and 1 more, listed above)"]
    assert not (tmp_path / "r").exists()
