"""`emocaustics eval TASK`: one line per evaluation for every task. Calibration methods (no model) on each task with
--limit / --ids / -T / -D / --split; a model through an OpenAI-compatible stand-in (a real HTTP server on loopback)
for aer with --submission-file; the model shorthands; and the errors, each one line with exit status 2."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import polars as pl
import pytest
import yaml

from emocaustics.cli import main
from emocaustics.core.task import parse_options
from fakes.openai_chat import FakeOpenAIServer
from tasks.aer.aer_fixtures import standard_dataset

SHARED = Path(__file__).resolve().parents[3] / "shared" / "datasets"


def _shared(env: str, folder: str, probe: str) -> Path:
    for cand in ([Path(os.environ[env])] if os.environ.get(env) else []) + [SHARED / folder]:
        if (cand / probe).exists():
            return cand
    pytest.skip(f"{folder} data not here ({env} or ../shared/datasets/{folder})")


def _scored(run: Path) -> list[str]:
    return pl.read_parquet(run / "scores.parquet")["sample_id"].to_list()


def _run_options(run: Path) -> dict:
    return yaml.safe_load((run / "config.yaml").read_text())["resolved_runs"][0]["options"]


def test_aer_calibration_with_ids_options_and_split(tmp_path, capsys):
    data = standard_dataset(tmp_path / "aer")
    run = tmp_path / "run"
    assert main(["eval", "aer", "--method", "oracle", "--split", "dev", "--ids", "q-12,q-10", "--ids", "q-13",
                 "--limit", "2", "-T", "prompt=cot", "-D", f"data={data}", "--out", str(run)]) == 0
    assert _scored(run) == ["q-10", "q-12"]  # the split's order, then the first two
    assert _run_options(run)["prompt"] == "cot"
    assert yaml.safe_load((run / "config.yaml").read_text())["dataset"] == {"aer": {"data": str(data), "split": "dev"}}
    assert pl.read_csv(run / "summary.csv")["score"].to_list() == [1.0]


def test_ecpe_calibration_with_ids_and_an_option(tmp_path):
    data = _shared("EMOCAUSTICS_ECAC_DATA", "ecac", "Subtask_1_test.json")
    run = tmp_path / "run"
    assert main(["eval", "ecpe", "--method", "oracle", "--ids", "1424,1401", "-T", "subtask=1", "-D", f"data={data}",
                 "--submission-file", str(tmp_path / "sub.zip"), "--out", str(run)]) == 0
    assert sorted(_scored(run)) == ["1401", "1424"] and _run_options(run)["subtask"] == 1
    import zipfile

    assert zipfile.ZipFile(tmp_path / "sub.zip").namelist() == ["Subtask_1_pred.json"]


def test_narrative_calibration_with_limit_and_an_option(tmp_path):
    run = tmp_path / "run"
    assert main(["eval", "narrative", "--method", "oracle", "--limit", "2", "-T", "n_t=3", "--out", str(run)]) == 0
    assert len(_scored(run)) == 2 and _run_options(run)["n_t"] == 3


@pytest.mark.parametrize("task", ["sextuple", "emotion"])
def test_emocaustics_calibration_on_the_sample_subset(task, tmp_path):
    from emocaustics.core.task import get_task

    t = get_task(task)
    ids = [s.id for s in t.load(t.Dataset(subset="sample"), parse_options(t, {"method": "oracle"})).samples]
    run = tmp_path / "run"
    assert main(["eval", task, "--method", "baseline", "--split", "sample", "--ids", ",".join(ids[-2:]),
                 "-T", "max_events=4", "--out", str(run)]) in (0, 3)
    assert sorted(_scored(run)) == sorted(ids[-2:]) and _run_options(run)["max_events"] == 4


def test_human_with_limit_and_an_option(tmp_path):
    data = _shared("EMOCAUSTICS_HUMANEVAL_DATA", "humaneval", "hits_data_FreeTopicRound1.json")
    run = tmp_path / "run"
    assert main(["eval", "human", "--limit", "40", "-T", "qc_threshold=0.1", "-D", f"data={data}",
                 "--out", str(run)]) == 0
    assert len(_scored(run)) == 40 and _run_options(run) == {"method": "process", "qc_threshold": 0.1}


def test_aer_through_an_openai_compatible_endpoint_with_a_submission_file(tmp_path, monkeypatch, capsys):
    """`openai:MODEL` takes its server from $OPENAI_BASE_URL; the run is an ordinary run folder; the config's
    submission.jsonl is copied where --submission-file says."""
    data = standard_dataset(tmp_path / "aer")
    run, sub = tmp_path / "run", tmp_path / "out" / "sub.jsonl"
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert main(["eval", "aer", "--model", "openai:fake-chat", "--limit", "3", "-T", "context=none",
                     "-D", f"data={data}", "--submission-file", str(sub), "--out", str(run)]) == 0
        asked = {b["model"] for b in server.bodies}
    assert asked == {"fake-chat"} and len(server.bodies) == 3
    assert f"submission: {sub}" in capsys.readouterr().out
    lines = [json.loads(x) for x in sub.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["q-1", "q-2", "q-3"] and all(x["answer"] == "A" for x in lines)
    label = pl.read_csv(run / "summary.csv")["run"].to_list()
    assert sub.read_bytes() == (run / "predictions" / label[0] / "submission.jsonl").read_bytes()
    spec = yaml.safe_load((run / "config.yaml").read_text())["models"]["fake-chat"]["spec"]
    assert spec == f"openai:fake-chat@{server.base_url}"  # the run records the server that answered
    assert json.loads((run / "run.json").read_text())["state"] == "finished"


def test_ollama_goes_to_its_openai_compatible_api_at_ollama_host(tmp_path, monkeypatch):
    data = standard_dataset(tmp_path / "aer")
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OLLAMA_HOST", server.base_url.removeprefix("http://").removesuffix("/v1"))
        assert main(["eval", "aer", "--model", "ollama:llama3.1:8b", "--ids", "q-1", "-T", "context=none",
                     "-D", f"data={data}", "--out", str(tmp_path / "run")]) == 0
        assert [b["model"] for b in server.bodies] == ["llama3.1:8b"]


def test_a_missing_key_or_server_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    data = standard_dataset(tmp_path / "aer")
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "EMOCAUSTICS_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    base = ["eval", "aer", "-D", f"data={data}", "--limit", "1"]
    assert main([*base, "--model", "openai:gpt-4o-mini", "--out", str(tmp_path / "a")]) == 2
    assert "no API key: set OPENAI_API_KEY" in capsys.readouterr().err
    assert main([*base, "--model", "anthropic:claude-x", "--out", str(tmp_path / "b")]) == 2
    assert "no API key: set ANTHROPIC_API_KEY" in capsys.readouterr().err
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    assert main([*base, "--model", "openai:m", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert f"http://127.0.0.1:{port}/v1: cannot connect" in err and len(err.strip().splitlines()) == 1
    assert not any((tmp_path / d).exists() for d in "abc")


@pytest.mark.parametrize("args, message", [
    # the transformers provider is gone (round 8): its specs say what to use instead
    (["aer", "--model", "hf:x/y?tp=2"], "model spec 'hf:x/y?tp=2': the hf: provider was removed; use vllm:x/y "
                                        "for local weights, ollama:MODEL, or openai:MODEL@URL"),
    (["aer", "--model", "huggingface:"], "the huggingface: provider was removed; use vllm:PATH_OR_NAME for local"),
    (["aer", "--model", "hf:smoke"], "the hf: provider was removed; use smoke for local weights"),
    (["aer"], "method llm of task aer calls a model: give --model SPEC"),
    (["aer", "--method", "oracle", "-T", "promt=cot"], "-T promt: task aer has no option 'promt'; its options: "
                                                       "prompt, context,"),
    (["aer", "--method", "oracle", "-T", "prompt=best"], "-T prompt: Input should be 'zero-shot', 'few-shot' or"),
    (["aer", "--method", "oracle", "-D", "splt=dev"], "-D splt: task aer has no dataset option 'splt'"),
    (["human", "--split", "dev"], "--split: task human has no split; its dataset options: data, file"),
    (["narrative", "--method", "oracle", "--submission-file", "x.jsonl"], "task narrative writes no submission"),
    (["aer", "--method", "oracle", "--submission-file", "s.csv"], "--submission-file s.csv: task aer writes "
                                                                  "submission.jsonl, submission.zip; give a path"),
    (["narrative", "--method", "guess"], "--method guess: task narrative has the methods llm, oracle, files, empty"),
    (["aer", "--method", "oracle", "--limit", "0"], "--limit: Input should be greater than or equal to 1"),
    (["nosuchtask"], "unknown task 'nosuchtask'"),
    (["aer", "--method", "oracle", "--resume", "--force"], "--resume and --force exclude each other"),
])
def test_usage_errors_are_one_line_with_status_2(args, message, tmp_path, capsys):
    assert main(["eval", *args, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "run").exists()


def test_an_unknown_id_is_a_usage_error_naming_it(tmp_path, capsys):
    data = standard_dataset(tmp_path / "aer")
    assert main(["eval", "aer", "--method", "oracle", "--ids", "q-1,q-99", "-D", f"data={data}",
                 "--out", str(tmp_path / "run")]) == 2
    assert "select.ids: dataset aer (data=" in capsys.readouterr().err
    assert main(["eval", "aer", "--method", "oracle", "--ids", "q-99", "-D", f"data={data}", "--dry-run"]) == 2
    assert "has no sample q-99" in capsys.readouterr().out  # listed first in the plan (issue 41: exit 2)


def test_the_dry_run_shows_the_selection_and_writes_nothing(tmp_path, capsys):
    data = standard_dataset(tmp_path / "aer")
    assert main(["eval", "aer", "--model", "smoke", "--limit", "2", "-T", "context=none", "-D", f"data={data}",
                 "--dry-run", "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| aer_llm_smoke"))
    assert row.split("|")[5].strip() == "2" and "smoke: smoke -- 1 replica(s)" in out
    assert not (tmp_path / "run").exists()


def test_shorthands_expand_and_full_specs_stay():
    from emocaustics.models.spec import expand_shorthand

    env = {"OPENAI_BASE_URL": "http://box:8000/v1/", "OLLAMA_HOST": "0.0.0.0"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        assert expand_shorthand("openai:gpt-4o-mini?concurrency=4") == "openai:gpt-4o-mini@http://box:8000/v1?concurrency=4"
        assert expand_shorthand("ollama:qwen2.5:7b") == "openai:qwen2.5:7b@http://0.0.0.0:11434/v1"
        for spec in ("openai:m@http://x/v1", "anthropic:claude", "vllm:Qwen/Q", "smoke", "smoke?max_model_len=4096"):
            assert expand_shorthand(spec) == spec
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def test_a_dead_endpoint_stops_with_the_eval_resume_hint_and_resume_continues(tmp_path, capsys):
    """Spec query options that are model keys (`max_server_errors`) reach the breaker; the hint to continue names
    `eval`, not a job file; `--resume` once the server answers solves what was left."""
    data = standard_dataset(tmp_path / "aer")
    run = tmp_path / "run"
    with FakeOpenAIServer(script=["500"] * 3) as server:  # then every request is answered
        args = ["eval", "aer", "--model", f"openai:m@{server.base_url}?max_retries=0&max_server_errors=2",
                "-T", "context=none", "--limit", "3", "-D", f"data={data}", "--out", str(run)]
        assert main(args) == 4
        err = capsys.readouterr().err
        assert f"emocaustics eval <the same arguments> --resume --out {run}" in err and "JOB.yaml" not in err
        assert main([*args, "--resume"]) == 0
        # How many samples finished before the breaker tripped depends on timing (requests are in flight at once);
        # what matters is that the resume line counts them and runs the rest.
        resumed = re.search(r"resume: aer_llm_m_context=none: (\d) of 3 samples done \(skipped\); (\d) to run",
                            capsys.readouterr().out)
        assert resumed and int(resumed[1]) < 3 and int(resumed[1]) + int(resumed[2]) == 3
    assert pl.read_parquet(run / "scores.parquet")["failed"].sum() == 0
