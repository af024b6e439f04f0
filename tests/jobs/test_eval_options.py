"""Issue 54 item 10: an `eval` option is one row of `jobs.evaloptions.EVAL_OPTIONS` (and its docs): the parser, the
one-liner's job and the words of its errors follow from the row. And a Ctrl-C of `eval` takes `run`'s one path: its
run.json says `interrupted` and the command that continues it is printed. No Ray, no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emocaustics.cli import build_parser, main
from emocaustics.core.errors import UsageError
from emocaustics.jobs import rundir
from emocaustics.jobs.evaloptions import EVAL_OPTIONS, EvalOption
from emocaustics.jobs.oneline import eval_arguments, eval_job
from emocaustics.jobs.configs import resolve as _resolved  # the claim takes the job as resolved

FAKE = [EvalOption("prompt", "option", "a fake row: aer's prompt as a flag"),
        EvalOption("data", "dataset", "a fake row: the dataset's folder", flag="--data"),
        EvalOption("concurrency", "model", "a fake row: the model entry's concurrency", argparse={"type": int})]


@pytest.fixture
def fake_rows():
    EVAL_OPTIONS.extend(FAKE)
    yield
    del EVAL_OPTIONS[-len(FAKE):]


def _job(argv: list[str]):
    args = build_parser().parse_args(["eval", *argv])
    return args, eval_job(args.task, **eval_arguments(args))


def test_a_row_added_to_the_table_is_a_flag_and_lands_where_it_says(fake_rows):
    args, job = _job(["aer", "--model", "openai:m@http://127.0.0.1:9/v1", "--prompt", "cot", "--data", "d/aer",
                      "--concurrency", "3"])
    assert (args.prompt, args.data, args.concurrency) == ("cot", "d/aer", 3)
    assert job.runs[0].options["prompt"] == "cot"  # a task option
    assert job.dataset == {"aer": {"data": "d/aer"}}  # a dataset option
    assert job.models["m"].concurrency == 3  # a key of the model's entry
    with pytest.raises(UsageError, match=r"^--prompt: Input should be 'zero-shot'"):  # its errors name its flag
        _job(["aer", "--method", "oracle", "--prompt", "best"])
    with pytest.raises(UsageError, match=r"^--concurrency: method oracle of task aer calls no model"):
        _job(["aer", "--method", "oracle", "--concurrency", "3"])


def test_the_rows_that_land_in_the_job_reach_it_and_their_errors_name_the_flag():
    _, job = _job(["aer", "--model", "openai:m@http://127.0.0.1:9/v1", "--limit", "2", "--ids", "q-1,q-2",
                   "--judge", "openai:j@http://127.0.0.1:9/v1", "--epochs", "2", "--token-limit", "9",
                   "--no-score"])
    assert len({o.name for o in EVAL_OPTIONS}) == len(EVAL_OPTIONS)  # a row's name is its keyword: one each
    run = job.runs[0]
    assert (job.select.limit, job.select.ids, job.no_score) == (2, ["q-1", "q-2"], True)
    assert (run.epochs, run.token_limit, job.scoring.judge) == (2, 9, "openai:j@http://127.0.0.1:9/v1")
    for flag, value in (("--time-limit", "0"), ("--config-time-limit", "-1"), ("--epochs", "0")):
        with pytest.raises(UsageError, match=rf"^{flag}: Input should be greater than"):
            _job(["aer", "--model", "smoke", flag, value])
    with pytest.raises(TypeError, match="'nope'"):  # a keyword that no row has
        eval_job("aer", method="oracle", nope=1)


def test_a_ctrl_c_of_eval_marks_the_run_interrupted_and_prints_the_eval_resume_command(tmp_path, count_task,
                                                                                       monkeypatch, capsys):
    run_dir = tmp_path / "out"

    def run_job(job, *, out, resume, force, **_):  # the job's start, then a Ctrl-C mid-way
        rundir.start(rundir.claim(Path(out), _resolved(job, Path(out)), resume=resume, force=force))
        raise KeyboardInterrupt

    monkeypatch.setattr("emocaustics.jobs.runner.run_job", run_job)
    for extra in ([], ["--no-score"]):  # the scored path (`ec.eval`) and the solve-only one
        assert main(["eval", "count", "--model", "vllm:org/model", "--out", str(run_dir), *extra,
                     *(["--resume"] if extra else [])]) == 130
        err = capsys.readouterr().err
        assert f"emocaustics eval <the same arguments> --resume --out {run_dir}" in err, err
        assert err.rstrip().endswith("emocaustics: interrupted") and "JOB.yaml" not in err
        assert json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["state"] == "interrupted"
        assert rundir._HELD == {}  # let go: the resume takes the folder
