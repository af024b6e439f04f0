"""`emocaustics eval TASK --no-score` (issue 54 item 5): the one driver of the solving plan solves and writes the
predictions, scores nothing; `--resume` without it scores them without asking the model again. Its mistakes are one
line, exit status 2. A model through an OpenAI-compatible stand-in on loopback; no Ray, no engine."""

from __future__ import annotations

import json

import pytest

from emocaustics.cli import main
from emocaustics.jobs.oneline import eval_job
from emocaustics.jobs.spec import result_fields
from fakes.openai_chat import FakeOpenAIServer
from tasks.aer.aer_fixtures import standard_dataset


def test_no_score_is_a_job_field_outside_the_run_hash():
    plain = eval_job("narrative", method="llm", model="openai:m@http://127.0.0.1:9/v1")
    solve_only = eval_job("narrative", method="llm", model="openai:m@http://127.0.0.1:9/v1", no_score=True)
    assert (plain.no_score, solve_only.no_score) == (False, True)
    # the same run: `--resume` without --no-score continues (and scores) a --no-score run
    assert result_fields(solve_only) == result_fields(plain)


@pytest.mark.parametrize("extra,msg", [
    (["--method", "oracle", "--no-score"], "--no-score: method oracle of task narrative calls no model"),
    (["--method", "llm", "--model", "openai:m@http://127.0.0.1:9/v1", "--no-score", "--submission-file", "s.jsonl"],
     "a --no-score run writes no submission"),
])
def test_usage_errors(extra, msg, tmp_path, capsys):
    assert main(["eval", "narrative", *extra, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("emocaustics: error:") and msg in err and err.count("\n") == 1
    assert not (tmp_path / "run").exists()


def test_dry_run_with_no_score_runs_nothing(tmp_path, capsys):
    data = standard_dataset(tmp_path / "aer")
    assert main(["eval", "aer", "--model", "openai:m@http://127.0.0.1:9/v1", "--limit", "2", "-D", f"data={data}",
                 "--no-score", "--dry-run", "--out", str(tmp_path / "run")]) in (0, 2)
    assert not (tmp_path / "run").exists()


def test_the_predictions_only_then_a_resume_scores_them_without_asking_again(tmp_path, monkeypatch, capsys):
    data = standard_dataset(tmp_path / "aer")
    run = tmp_path / "run"
    args = ["eval", "aer", "--model", "openai:fake-chat", "--limit", "3", "-T", "context=none", "-D", f"data={data}",
            "--out", str(run)]
    monkeypatch.setenv("EMOCAUSTICS_RESPONSE_CACHE", str(tmp_path / "cache"))
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert main([*args, "--no-score"]) == 0
        asked = len(server.bodies)
        (folder,) = (run / "predictions").iterdir()
        solved = [json.loads(x)["id"] for x in (folder / "predictions.jsonl").read_text().splitlines()]
        assert asked == 3 and sorted(solved) == ["q-1", "q-2", "q-3"]
        assert not (run / "scores.parquet").exists() and not (run / "summary.csv").exists()
        record = json.loads((run / "run.json").read_text())
        assert record["state"] == "finished" and (record["samples"], record["failed_samples"]) == (3, 0)
        assert main([*args, "--resume"]) == 0  # the same run, scored now
        assert len(server.bodies) == asked  # from the predictions written, not the model
    import polars as pl

    assert sorted(pl.read_parquet(run / "scores.parquet")["sample_id"].to_list()) == ["q-1", "q-2", "q-3"]
