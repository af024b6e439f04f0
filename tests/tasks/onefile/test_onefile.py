"""Issue 40's Done-when: a new task that calls a model, written with the core's reusable solver and scorer, is one
file of at most 60 lines (capitals.py beside this test) and runs through `emocaustics run JOB.yaml`, `emocaustics
eval`, `emocaustics score`, `emocaustics view` (the viewer's data of a sample) and `ec.eval`, on the session's engine."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import polars as pl
import pytest

from emocaustics.core.task import unregister

HERE = Path(__file__).resolve().parent
TASK_FILE = HERE / "capitals.py"


def import_file(path: Path, name: str) -> None:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves the module's annotations through sys.modules
    try:
        spec.loader.exec_module(module)
    finally:  # out of sys.modules, Ray pickles the task by value to the replica (no import of this folder there)
        sys.modules.pop(name, None)


@pytest.fixture
def capitals():
    import_file(TASK_FILE, "onefile_capitals")
    yield "capitals"
    unregister("capitals")


def test_the_task_is_one_file_of_at_most_60_lines() -> None:
    assert len(TASK_FILE.read_text(encoding="utf-8").splitlines()) <= 60


def check_run(run: Path, label: str) -> pl.DataFrame:
    scores = pl.read_parquet(run / "scores.parquet").filter(pl.col("run") == label)
    assert scores.height == 4 and not scores["failed"].any(), scores  # every answer parsed against its schema
    assert set(scores["score"].to_list()) <= {0.0, 1.0} and scores["llm_calls"].sum() + scores["cache_hits"].sum() >= 4
    return scores


def test_the_one_file_task_through_every_verb(capitals, smoke_pool, tmp_path: Path, capsys, monkeypatch) -> None:
    import emocaustics as ec
    from emocaustics.cli import main
    from emocaustics.evallog.read import RunLog
    from emocaustics.view.data import ViewData

    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    job = tmp_path / "job.yaml"
    job.write_text("name: capitals\nmodels:\n  smoke: {spec: smoke}\nruns:\n  - {task: capitals, model: smoke, "
                   "options: {method: generate}}\nscoring: {embedder: minilm}\n", encoding="utf-8")
    assert main(["run", str(job), "--out", str(tmp_path / "run"), "--allow-failures"]) == 0
    ran = check_run(tmp_path / "run", "capitals_generate_smoke")
    preds = {r["id"]: r["prediction"] for r in pl.read_ndjson(
        tmp_path / "run" / "predictions" / "capitals_generate_smoke" / "predictions.jsonl").to_dicts()}
    assert set(preds) == {"france", "japan", "kenya", "peru"}
    assert all(isinstance(p, str) and len(p) <= 40 for p in preds.values())  # the answer's `city`, bounded
    gold = {"france": "Paris", "japan": "Tokyo", "kenya": "Nairobi", "peru": "Lima"}
    assert dict(ran.select("sample_id", "score").iter_rows()) == {
        k: float(preds[k].strip().casefold() == gold[k].casefold()) for k in gold}  # exact match, as scored

    assert main(["eval", "capitals", "--model", "smoke", "--out", str(tmp_path / "eval"), "--allow-failures"]) == 0
    evaled = check_run(tmp_path / "eval", "capitals_generate_smoke")
    assert evaled["score"].to_list() == ran["score"].to_list()  # the same greedy answers (from the cache)

    folder = tmp_path / "run" / "predictions" / "capitals_generate_smoke"
    capsys.readouterr()
    assert main(["score", "capitals", "--pred", str(folder), "--json", "--allow-failures"]) == 0
    assert "exact_match" in capsys.readouterr().out
    rescored = ec.score("capitals", folder)
    assert rescored.scores.sort("sample_id")["score"].to_list() == ran.sort("sample_id")["score"].to_list()

    assert main(["view", str(tmp_path / "run"), "--export", str(tmp_path / "view")]) == 0
    assert (tmp_path / "view" / "index.html").is_file()
    view = ViewData(RunLog(tmp_path / "run"))
    sample = view.sample(0, 0)
    assert sample["sample_id"] == "france" and sample["target"] == "Paris"
    first = sample["calls"][0]  # what the model was asked and answered, from the eval log
    assert first["messages"][-1] == {"role": "user", "content": "What is the capital of France? Answer as JSON."}
    assert first["schema"]["properties"]["city"]["maxLength"] == 40 and first["step"] == "generate"
    assert [s["title"] for s in sample["sections"]] == ["Input", "Gold", "Prediction"]

    run = ec.eval("capitals", model="smoke", out=tmp_path / "api")
    assert run.summary.select("run", "samples").row(0) == ("capitals_generate_smoke", 4)
    assert run.scores.sort("sample_id")["score"].to_list() == ran.sort("sample_id")["score"].to_list()
