"""A task written in YAML runs through every verb on the session's engine (issue 43 point 4): `data fetch` (checks
the data and records its hash), `run JOB.yaml` (task: the file's path), `eval PATH.yaml`, `score PATH.yaml --pred`,
`view` (the viewer's data of a sample), `export` and `ec.eval`. Once with a local JSONL file and the generate solver,
once with a Hugging Face dataset saved locally by `datasets` (no hub) at a pinned revision and multiple choice with
self-consistency; the revision is in the run's provenance."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"
MC = """name: {name}
description: pick the fruit, from a saved Hugging Face dataset
dataset:
  hf: example/fruits
  revision: 3f2a9c1
  split: test
  saved: fruits-saved
fields: {{id: qid, target: label}}
solver:
  name: multiple_choice
  prompt: "{{question}}\\n{{choices}}\\nAnswer with the letter, as JSON."
  n: 3
  temperature: 0.8
scorer: {{name: exact_match, field: answer}}
"""


def every_verb(task_file: Path, name: str, label: str, n: int, tmp: Path, capsys, calls_per_sample: int) -> dict:
    import emocaustics as ec
    from emocaustics.cli import main
    from emocaustics.evallog.read import RunLog
    from emocaustics.view.data import ViewData

    capsys.readouterr()
    assert main(["data", "fetch", str(task_file), "--to", str(tmp / "fetched")]) == 0
    out = capsys.readouterr().out
    assert f"{n} samples checked, sha256 " in out and "sha256: " in (tmp / "fetched" / "SOURCE.md").read_text()

    job = tmp / "job.yaml"
    job.write_text(f"name: {name}\nmodels:\n  smoke: {{spec: smoke}}\nruns:\n  - {{task: {task_file}, model: smoke, "
                   "options: {method: " + ("generate" if "generate" in label else "multiple_choice") + "}}\n"
                   "scoring: {embedder: minilm}\n", encoding="utf-8")
    assert main(["run", str(job), "--out", str(tmp / "run"), "--allow-failures"]) == 0
    scores = pl.read_parquet(tmp / "run" / "scores.parquet")
    assert scores["run"].unique().to_list() == [label] and scores.height == n and not scores["failed"].any(), scores
    assert scores["llm_calls"].sum() + scores["cache_hits"].sum() >= n * calls_per_sample
    folder = tmp / "run" / "predictions" / label
    provenance = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))

    assert main(["eval", str(task_file), "--model", "smoke", "--out", str(tmp / "eval"), "--allow-failures"]) == 0
    again = pl.read_parquet(tmp / "eval" / "scores.parquet")
    assert again.sort("sample_id")["score"].to_list() == scores.sort("sample_id")["score"].to_list()

    capsys.readouterr()
    assert main(["score", str(task_file), "--pred", str(folder), "--json", "--allow-failures"]) == 0
    assert "exact_match" in capsys.readouterr().out

    assert main(["view", str(tmp / "run"), "--export", str(tmp / "view")]) == 0
    sample = ViewData(RunLog(tmp / "run")).sample(0, 0)
    assert len(sample["calls"]) >= calls_per_sample and sample["prediction"] is not None
    assert main(["export", str(tmp / "run"), "--format", "inspect", "--out", str(tmp / "inspect")]) == 0
    assert list((tmp / "inspect").rglob("*.json"))

    run = ec.eval(str(task_file), model="smoke", out=tmp / "api")
    assert run.scores.sort("sample_id")["score"].to_list() == scores.sort("sample_id")["score"].to_list()
    return {"scores": scores, "provenance": provenance, "sample": sample, "folder": folder}


def test_a_yaml_task_on_a_local_jsonl_file(smoke_pool, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    for f in ("capitals.yaml", "capitals.jsonl"):
        shutil.copy(EXAMPLES / f, tmp_path / f)
    got = every_verb(tmp_path / "capitals.yaml", "yaml-capitals", "capitals-yaml_generate_smoke", 3, tmp_path,
                     capsys, 1)
    preds = {r["id"]: r["prediction"] for r in pl.read_ndjson(got["folder"] / "predictions.jsonl").to_dicts()}
    assert set(preds) == {"fr", "jp", "ke"} and all(set(p) == {"answer"} for p in preds.values())
    assert len(got["provenance"]["dataset_info"]["sha256"]) == 64
    gold = {"fr": "Paris", "jp": "Tokyo", "ke": "Nairobi"}
    assert dict(got["scores"].select("sample_id", "score").iter_rows()) == {
        k: float(preds[k]["answer"].strip().casefold() == gold[k].casefold()) for k in gold}
    first = got["sample"]["calls"][0]
    assert first["messages"][0] == {"role": "system", "content": "You answer briefly."}
    assert first["messages"][-1]["content"] == "What is the capital of France? Answer as JSON."
    assert first["schema"]["properties"]["answer"]["maxLength"] == 40


def test_a_yaml_task_on_a_saved_hugging_face_dataset(smoke_pool, tmp_path: Path, capsys, monkeypatch) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path / "cache"))
    rows = {"qid": ["q1", "q2"], "question": ["Which is a fruit?", "Which can you eat?"],
            "choices": [["stone", "apple", "chair"], ["bread", "brick", "cloud"]], "label": ["B", "A"]}
    datasets.DatasetDict({"test": datasets.Dataset.from_dict(rows)}).save_to_disk(str(tmp_path / "fruits-saved"))
    task_file = tmp_path / "fruits.yaml"
    task_file.write_text(MC.format(name="fruits"), encoding="utf-8")
    got = every_verb(task_file, "yaml-fruits", "fruits_multiple_choice_smoke", 2, tmp_path, capsys, 3)
    info = got["provenance"]["dataset_info"]  # the pinned revision and the hash of the Arrow files read
    assert info["revision"] == "3f2a9c1" and info["hf"] == "example/fruits" and len(info["sha256"]) == 64
    preds = {r["id"]: r["prediction"] for r in pl.read_ndjson(got["folder"] / "predictions.jsonl").to_dicts()}
    for p in preds.values():  # three votes, the winner among them
        assert sum(p["votes"].values()) == 3 and p["votes"][p["answer"]] == max(p["votes"].values())
    calls = got["sample"]["calls"]
    assert [c["sampling"]["seed"] for c in calls[:3]] == [0, 1, 2]
    assert "A. stone\nB. apple\nC. chair" in calls[0]["messages"][-1]["content"]
