"""Issue 53 (findings 2, 10, 16 and 17), fast: what `emocaustics export` writes, read back and held against the one
place the run's numbers come from (summary.csv's row), on run folders made by the real job runner without Ray or an
engine (the model is a stand-in of a remote endpoint, the embedder is not loaded).

- a config solved in 4 epochs and reduced by `max`: each sample once per epoch with its `epoch`, its prediction and
  score those of that epoch (the eval log `LABEL.epoch-E`, scores.parquet's epoch rows), the eval config's `epochs`
  and `epochs_reducer`, the reduced scores as inspect's `reductions`; the headline and its interval are summary.csv's
  (not the mean over epochs), in inspect and in Every Eval Ever, whose records validate against the published schemas;
- a config of the same run solved once: every sample once, epoch 1;
- a YAML task's run exported and reported again by a new process started elsewhere; a task file gone is named;
- Every Eval Ever's `developer` of a provider's own model at its own API.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from emocaustics.core.errors import UsageError
from emocaustics.core.task import DatasetOptions, Loaded, Methods, Sample, Scored, Task, register, rows_frame, unregister
from emocaustics.jobs.spec import JobSpec
from emocaustics.models.base import ChatRequest, Completion, ModelBase

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO.parent / "shared" / "schemas" / "every-eval-ever"
RIGHT = {"a": 1, "b": 2, "c": 9, "d": 0}  # how many of a sample's calls answer right (c: each, in both configs)
EPOCHS, ONCE = "epochs-test_ask_m_epochs=4_reducer=max", "once"


class Scripted(ModelBase):
    """Stands in for an endpoint: sample `x` is answered right (`x`) in its first RIGHT[x] calls, then wrong."""

    name = "scripted"

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        out = []
        for r in requests:
            sid = r.messages[-1]["content"]
            self.seen[sid] = self.seen.get(sid, 0) + 1
            out.append(Completion(text=sid if self.seen[sid] <= RIGHT[sid] else "no", prompt_tokens=2,
                                  generated_tokens=1))
        return out


class EpochsTask(Task):
    name = "epochs-test"
    methods = Methods(solver=("ask",))
    Dataset = DatasetOptions

    def load(self, dataset: DatasetOptions, options: Any) -> Loaded:
        return Loaded([Sample(k, {"q": k}, target=k) for k in RIGHT])

    async def solve(self, llm: Any, sample: Sample, options: Any) -> Any:
        got = await llm.generate([ChatRequest(messages=({"role": "user", "content": sample.id},))])
        return got[0].text

    def score(self, samples: list[Sample], predictions: dict[str, Any], options: Any, ctx: Any) -> Scored:
        rows = [{"sample_id": s.id, "metric": "accuracy", "value": float(predictions.get(s.id) == s.target),
                 "status": "ok", "reason": None} for s in samples]
        return Scored(rows_frame(rows), {"accuracy": sum(r["value"] for r in rows) / len(rows)})


@pytest.fixture(scope="module")
def stand_in() -> Any:
    import emocaustics.models.embedders as embedders
    import emocaustics.models.factory as factory

    mp = pytest.MonkeyPatch()
    model = Scripted()
    mp.setattr(factory, "make_llm", lambda *a, **k: model)
    mp.setattr(embedders, "make_embedder", lambda *a, **k: None)  # no task here embeds
    yield model
    mp.undo()


def _run(tmp: Path, runs: list[dict[str, Any]]) -> Path:
    from emocaustics.jobs.runner import run_job

    job = JobSpec.model_validate({"name": "exports", "output": str(tmp / "runs"), "cache_dir": str(tmp / "cache"),
                                  "models": {"m": {"spec": "openai:m@http://127.0.0.1:9/v1"}}, "runs": runs})
    with contextlib.redirect_stdout(io.StringIO()):
        return run_job(job, out=str(tmp / "run"), check=False)


@pytest.fixture(scope="module")
def run_dir(stand_in: Scripted, tmp_path_factory: pytest.TempPathFactory) -> Path:
    task = register(EpochsTask())
    try:
        base = {"task": task.name, "model": "m", "options": {"method": "ask"}}
        return _run(tmp_path_factory.mktemp("epochs"), [{**base, "epochs": 4, "reducer": "max"},
                                                        {**base, "name": ONCE, "select": {"ids": ["c", "d"]}}])
    finally:
        unregister(task.name)


def _summary(run: Path, label: str) -> dict[str, Any]:
    """The one place: summary.csv's row of the config."""
    return pl.read_csv(run / "summary.csv").filter(pl.col("run") == label).to_dicts()[0]


def _epoch_rows(run: Path, label: str) -> dict[tuple[str, int], float]:
    scores = pl.read_parquet(run / "scores.parquet").filter((pl.col("run") == label) & pl.col("epoch").is_not_null())
    return {(r["sample_id"], r["epoch"]): r["score"] for r in scores.iter_rows(named=True)}


def _export(run: Path, format: str, out: Path) -> list[Path]:  # noqa: A002
    from emocaustics.exports import export_run

    task = register(EpochsTask())
    try:
        return export_run(run, format, out)
    finally:
        unregister(task.name)


def _inspect(run: Path, out: Path) -> dict[str, dict[str, Any]]:
    paths = _export(run, "inspect", out)
    return {log["eval"]["task_display_name"]: log for log in (json.loads(p.read_text()) for p in paths)}


def test_an_epochs_config_exports_each_sample_once_per_epoch_and_summarys_headline(run_dir: Path, tmp_path: Path):
    log = _inspect(run_dir, tmp_path / "inspect")[EPOCHS]
    table = _summary(run_dir, EPOCHS)
    assert table["score"] == 0.75  # max over epochs: a, b and c were right once or more; d never
    result = log["results"]["scores"][0]
    assert (result["name"], result["reducer"]) == ("accuracy", "max")
    assert result["metrics"]["mean"]["value"] == table["score"]  # not 7/16, the mean over epochs
    assert (result["metrics"]["mean"]["metadata"]["ci_low"], result["metrics"]["mean"]["metadata"]["ci_high"]) == (
        table["ci_low"], table["ci_high"])
    assert log["eval"]["config"] == {"epochs": 4, "epochs_reducer": ["max"]}
    assert log["eval"]["dataset"]["samples"] == 4 and log["results"]["total_samples"] == 16
    rows = _epoch_rows(run_dir, EPOCHS)
    got = {(s["id"], s["epoch"]): s for s in log["samples"]}
    assert set(got) == set(rows) and len(log["samples"]) == 16
    from emocaustics.evallog.read import RunLog

    runlog = RunLog(run_dir)
    for (sid, epoch), sample in got.items():
        assert sample["scores"]["accuracy"]["value"] == rows[(sid, epoch)]
        said = runlog.sample(f"{EPOCHS}.epoch-{epoch}", sid)["prediction"]
        assert sample["metadata"]["prediction"] == said == sample["output"]["completion"]
        assert (said == sid) == (rows[(sid, epoch)] == 1.0)
    right = {sid: sum(1 for (s, _), v in rows.items() if s == sid and v == 1.0) for sid in RIGHT}
    assert right == {sid: min(n, 4) for sid, n in RIGHT.items()}  # `a`'s one right epoch is exported so
    reduced = {r["sample_id"]: r["value"] for r in log["reductions"][0]["samples"]}
    assert reduced == {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.0} and log["reductions"][0]["reducer"] == "max"


def test_a_config_solved_once_beside_it_is_each_sample_once_in_epoch_one(run_dir: Path, tmp_path: Path):
    log = _inspect(run_dir, tmp_path / "inspect")[ONCE]
    assert log["eval"]["config"] == {"epochs": 1} and "reductions" not in log
    assert [(s["id"], s["epoch"], s["scores"]["accuracy"]["value"]) for s in log["samples"]] == [
        ("c", 1, 1.0), ("d", 1, 0.0)]
    assert log["results"]["scores"][0]["metrics"]["mean"]["value"] == _summary(run_dir, ONCE)["score"] == 0.5


def test_every_eval_ever_holds_the_headline_interval_and_an_instance_per_epoch(run_dir: Path, tmp_path: Path):
    jsonschema = pytest.importorskip("jsonschema")
    written = _export(run_dir, "eee", tmp_path / "eee")
    schemas = {n: json.loads((SCHEMAS / n).read_text()) for n in ("eval.schema.json", "instance_level_eval.schema.json")
               if (SCHEMAS / n).is_file()}
    for path in (p for p in written if p.suffix == ".json"):
        record = json.loads(path.read_text())
        label = record["source_metadata"]["additional_details"]["config"]
        table, result = _summary(run_dir, label), record["evaluation_results"][0]
        assert result["score_details"]["score"] == table["score"]
        interval = result["score_details"]["uncertainty"]["confidence_interval"]
        assert (interval["lower"], interval["upper"]) == (table["ci_low"], table["ci_high"])
        lines = (tmp_path / "eee" / record["detailed_evaluation_results"]["file_path"]).read_text().splitlines()
        instances = [json.loads(x) for x in lines]
        if label == EPOCHS:
            assert result["metric_config"]["metric_parameters"] == {"epochs": 4, "reducer": "max"}
            rows = _epoch_rows(run_dir, EPOCHS)
            assert {(i["sample_id"], int(i["metadata"]["epoch"])): i["evaluation"]["score"] for i in instances} == rows
            assert len(instances) == 16
        else:
            assert [(i["sample_id"], i["metadata"]["epoch"]) for i in instances] == [("c", "1"), ("d", "1")]
        for name, data in (("eval.schema.json", [record]), ("instance_level_eval.schema.json", instances)):
            for item in data if name in schemas else []:
                jsonschema.validate(item, schemas[name])


def test_the_real_inspect_reader_reads_the_epochs_back(run_dir: Path, tmp_path: Path):
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    _inspect(run_dir, tmp_path / "inspect")
    for path in (tmp_path / "inspect").glob("*.json"):
        log = read_eval_log(str(path))
        if log.eval.task_display_name == EPOCHS:
            assert log.eval.config.epochs == 4 and log.eval.config.epochs_reducer == ["max"]
            assert sorted({s.epoch for s in log.samples}) == [1, 2, 3, 4]
            assert log.results.scores[0].metrics["mean"].value == _summary(run_dir, EPOCHS)["score"]


YAML = """name: capitals-export
dataset: {path: capitals.jsonl}
fields: {id: qid, target: answer}
solver: {name: generate, prompt: "Capital of {country}? Answer as JSON."}
scorer: {name: exact_match}
"""


class Capitals(ModelBase):
    name = "capitals"

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        return [Completion(text=json.dumps({"answer": "Paris"}), prompt_tokens=2, generated_tokens=1)
                for _ in requests]


def test_a_yaml_task_run_is_exported_and_reported_by_a_new_process_elsewhere(tmp_path: Path, monkeypatch):
    import emocaustics.models.embedders as embedders
    import emocaustics.models.factory as factory

    monkeypatch.setattr(factory, "make_llm", lambda *a, **k: Capitals())
    monkeypatch.setattr(embedders, "make_embedder", lambda *a, **k: None)
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "capitals.yaml").write_text(YAML, encoding="utf-8")
    (tmp_path / "tasks" / "capitals.jsonl").write_text(
        '{"qid": "fr", "country": "France", "answer": "Paris"}\n{"qid": "jp", "country": "Japan", "answer": "Tokyo"}\n',
        encoding="utf-8")
    monkeypatch.chdir(tmp_path / "tasks")  # the job names the file relative to where it ran
    run = _run(tmp_path, [{"task": "capitals.yaml", "model": "m", "options": {"method": "generate"}}])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = ("import sys; from pathlib import Path; from emocaustics.exports import export_run; "
              "from emocaustics.jobs.runner import rebuild_report; run = Path(sys.argv[1]); "
              "print(rebuild_report(run)); print(len(export_run(run, 'eee', Path('eee'))))")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script, str(run)], cwd=elsewhere, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(run / "report.html"), "2"]  # the report, then an aggregate and its lines
    result = json.loads(next((elsewhere / "eee").rglob("*[!s].json")).read_text())["evaluation_results"][0]
    assert result["evaluation_name"] == "capitals-export"
    assert result["score_details"]["score"] == _summary(run, "capitals-export_generate_m")[
        "score"] == 0.5


def test_a_task_file_gone_since_the_run_is_named_with_the_provenance_that_recorded_it(tmp_path: Path):
    from emocaustics.tasks.yamltask.recorded import register_run_tasks

    folder = tmp_path / "run" / "predictions" / "cfg"
    folder.mkdir(parents=True)
    gone = tmp_path / "moved" / "t.yaml"
    (folder / "provenance.json").write_text(json.dumps({"task": "t-gone", "samples": {},
                                                        "dataset_info": {"task_file": str(gone)}}))
    with pytest.raises(UsageError, match=r"provenance.json: task 't-gone' was read from the task file .*moved/t.yaml"):
        register_run_tasks(tmp_path / "run")


@pytest.mark.parametrize("spec, developer", [
    ("openai:gpt-4o@https://api.openai.com/v1", "openai"),  # the provider's own model at its own API
    ("anthropic:claude-3-5-haiku", "anthropic"),
    ("openai:m@http://127.0.0.1:9/v1", "unknown"),  # some server's model: its maker is not known
    ("vllm:Qwen/Qwen2.5-0.5B", "Qwen"),
    ("openai:meta-llama/Llama-3-8B@http://127.0.0.1:9/v1", "meta-llama"),
])
def test_the_developer_of_a_model(spec: str, developer: str):
    from emocaustics.exports.names import model_name

    assert model_name(spec).developer == developer
