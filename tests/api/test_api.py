"""The Python API (`import emocaustics as ec`): `ec.eval` / `ec.run` return a `Run` read back from the run folder,
`ec.load_run` gives the same frames, quiet unless asked, errors raise (never exit), `import emocaustics` stays cheap,
and the module's docstring examples run."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys

import polars as pl
import pytest

import emocaustics as ec
from emocaustics.core.errors import UsageError
from fakes.openai_chat import FakeOpenAIServer
from tasks.aer.aer_fixtures import standard_dataset

FRAMES = ("summary", "scores", "rows", "items", "significance")


def _same(a: ec.Run, b: ec.Run) -> None:
    for name in FRAMES:
        fa, fb = getattr(a, name), getattr(b, name)
        assert (fa is None) == (fb is None), name
        if fa is not None:
            assert fa.equals(fb), name
    assert a.configs == b.configs and a.tables.keys() == b.tables.keys()
    assert all(a.tables[k].equals(b.tables[k]) for k in a.tables)


def test_eval_round_trip_through_load_run(tmp_path, capsys):
    data = standard_dataset(tmp_path / "aer")
    run = ec.eval("aer", method="oracle", limit=4, dataset={"data": str(data)}, out=tmp_path / "run")
    assert capsys.readouterr() == ("", "")  # quiet
    assert isinstance(run, ec.Run) and run.dir == tmp_path / "run"
    assert run.scores["sample_id"].to_list() == ["q-1", "q-2", "q-3", "q-4"] and run.failed == 0
    assert run.summary["score"].to_list() == [1.0] and run.configs[0]["method"] == "oracle"
    assert set(run.rows.columns) >= {"sample_id", "metric", "value", "status", "reason", "run", "task"}
    assert run.tables  # aer's by-topic tables
    _same(run, ec.load_run(run.dir))
    # the frames are the files, not a copy made on the way
    assert run.scores.equals(pl.read_parquet(run.dir / "scores.parquet"))


def test_eval_through_an_endpoint_and_compare(tmp_path, capsys):
    data = standard_dataset(tmp_path / "aer")
    with FakeOpenAIServer() as server:
        model = ec.eval("aer", model=f"openai:fake@{server.base_url}", options={"context": "none"},
                        ids=["q-1", "q-3", "q-5"], dataset={"data": str(data)}, out=tmp_path / "model",
                        submission_file=tmp_path / "sub.zip")
    assert capsys.readouterr() == ("", "")
    assert sorted(model.scores["sample_id"]) == ["q-1", "q-3", "q-5"] and (tmp_path / "sub.zip").is_file()
    label = model.summary["run"][0]
    assert sorted(model.log.samples(label)["sample_id"]) == ["q-1", "q-3", "q-5"]  # the sample log
    assert model.log.calls(label).height == 3
    oracle = ec.eval("aer", method="oracle", dataset={"data": str(data)}, out=tmp_path / "oracle")
    assert oracle.compare(model).pairs.height == 0  # no config of the same label: nothing paired (issue 41)
    result = oracle.compare(model, pairs={oracle.summary["run"][0]: label})
    pair = result.pairs.row(0, named=True)
    assert result.pairs.height == 1 and pair["n_common"] == 3 and pair["n_only_a"] == 3 and not result.unmatched


def test_run_takes_a_mapping_or_a_file_and_is_loud_when_asked(tmp_path, capsys):
    data = standard_dataset(tmp_path / "aer")
    job = {"name": "api-run", "dataset": {"aer": {"data": str(data)}}, "select": {"ids": [2, "q-6"]},
           "runs": [{"task": "aer", "options": {"method": "oracle"}}]}
    with pytest.raises(UsageError, match="select.ids: dataset aer .* has no sample 2"):
        ec.run(job, out=tmp_path / "bad")
    job["select"] = {"ids": ["q-2", "q-6"]}
    run = ec.run(job, out=tmp_path / "a", quiet=False)
    assert "[score aer_oracle]" in capsys.readouterr().out
    assert run.scores["sample_id"].to_list() == ["q-2", "q-6"]
    path = tmp_path / "job.yaml"
    path.write_text(json.dumps(job))  # JSON is YAML
    _same_scores = ec.run(path, out=tmp_path / "b").scores
    assert _same_scores["sample_id"].equals(run.scores["sample_id"])
    with pytest.raises(UsageError, match="job: runs: Input should be a valid list"):
        ec.run({"name": "x", "runs": 3})


def test_errors_raise_and_never_exit(tmp_path):
    with pytest.raises(UsageError, match="method llm of task aer calls a model"):
        ec.eval("aer")
    with pytest.raises(UsageError, match="the hf: provider was removed; use vllm:gpt2"):
        ec.eval("aer", model="hf:gpt2?tp=2")
    with pytest.raises(UsageError, match="no scores.parquet"):
        ec.load_run(tmp_path)


def test_import_is_cheap_and_attributes_are_lazy():
    code = ("import sys, emocaustics as ec; heavy = [m for m in ('polars', 'ray', 'pydantic', 'emocaustics.api') "
            "if m in sys.modules]; print(heavy); ec.eval; print('emocaustics.api' in sys.modules, ec.__version__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]" and out[1].startswith("True ")
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ec.nope  # noqa: B018


def test_the_docstring_examples_run(tmp_path, monkeypatch):
    import emocaustics.api as api

    monkeypatch.chdir(tmp_path)
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(api, globs={"getfixture": lambda name: tmp_path}) if t.examples]
    assert len(tests) >= 3
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_score_gives_a_runs_scores_from_its_predictions_or_from_a_mapping(tmp_path):
    data = standard_dataset(tmp_path / "aer")
    with FakeOpenAIServer() as server:
        run = ec.eval("aer", model=f"openai:fake@{server.base_url}", options={"context": "none"},
                      ids=["q-1", "q-2", "q-3"], dataset={"data": str(data)}, out=tmp_path / "run")
    label = run.summary["run"][0]
    per_sample = run.scores.select("sample_id", "score").sort("sample_id")
    folder = run.dir / "predictions" / label
    for source in (run, run.dir, folder, folder / "predictions.jsonl"):
        s = ec.score("aer", source)  # the dataset and selection come from the folder's provenance.json
        assert isinstance(s, ec.Scores) and (s.task, s.samples, s.failed, s.unpaired) == ("aer", 3, 0, [])
        assert s.scores.select("sample_id", "score").sort("sample_id").equals(per_sample)
        assert s.value == pytest.approx(run.summary["score"][0]) and s.primary_metric in s.summary
        assert set(s.rows.columns) >= {"sample_id", "metric", "value", "weight", "status", "reason"}
    # the same answers as a mapping, one left out: that sample is a failure, the others score as in the run
    answers = dict(json.loads(line).values() for line in (folder / "predictions.jsonl").read_text().splitlines())
    del answers["q-3"]
    s = ec.score("aer", answers, data=data)
    got = dict(s.scores.select("sample_id", "score").rows())
    assert {k: got[k] for k in ("q-1", "q-2")} == dict(per_sample.filter(pl.col("sample_id") != "q-3").rows())
    assert "q-3" in s.failures["sample_id"].to_list() and got["q-3"] == 0.0
    with pytest.raises(UsageError, match="no prediction pairs with any of the"):
        ec.score("aer", {"nope": "A"}, data=data)
    oracle = ec.eval("aer", method="oracle", limit=2, dataset={"data": str(data)}, out=tmp_path / "oracle")
    with pytest.raises(UsageError, match=r"no predictions.jsonl \(a calibration method"):
        ec.score("aer", oracle)
