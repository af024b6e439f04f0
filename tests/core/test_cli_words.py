"""Issue 41 point 15, wrong words: where to give a dataset's path (`-D data=` under eval, not only `--data`), the
name `data fetch` is documented with (ecpe, not its source's name ecac), a wall time with one decimal (not
"18.8000"), and an id of 5,000 characters echoed in an error shortened, not in full."""

from __future__ import annotations

import polars as pl
import pytest

from emocaustics.cli.data import sources_for
from emocaustics.core.errors import UsageError, shorten
from emocaustics.core.task import Sample, get_task
from emocaustics.jobs.spec import SelectSpec
from emocaustics.core.htmltable import table
from emocaustics.report.tables import SCORE_COLUMNS, write_tables


@pytest.mark.parametrize("task", ["aer", "ecpe", "human"])
def test_a_missing_dataset_names_every_way_to_give_it_and_the_documented_fetch(task, tmp_path, monkeypatch):
    (source,) = get_task(task).data_sources
    monkeypatch.setenv("EMOCAUSTICS_CACHE", str(tmp_path))
    monkeypatch.delenv(source.env_var, raising=False)
    with pytest.raises(UsageError) as err:
        source.locate(None)
    text = str(err.value)
    assert "--data, -D data=PATH under eval, or dataset.data in a job" in text
    assert f"`emocaustics data fetch {task}`" in text and source in sources_for(task)  # the name fetches it
    assert f"`emocaustics data fetch {task}`" in source.hint()


def test_wall_seconds_have_one_decimal_in_the_summary_and_the_report(tmp_path):
    rows = [{"run": "cfg", "task": "aer", "method": "oracle", "model": None, "kind": "calibration",
             "sample_id": "q-1", "weight": 1.0, "score": 0.5, "failed": False, "status": "ok", "reason": None,
             "llm_calls": 0, "cache_hits": 0, "prompt_tokens": 0, "generated_tokens": 0, "seconds": 0.0}]
    write_tables(tmp_path, pl.DataFrame(rows, schema_overrides=SCORE_COLUMNS), wall={"cfg": 18.8})
    main = (tmp_path / "summary.md").read_text(encoding="utf-8").splitlines()[4]
    assert "| 18.8 |" in main and "18.8000" not in main and "| 0.5000 |" in main  # a score keeps four
    html = table(pl.DataFrame({"score": [0.5], "wall_s": [18.8]}))
    assert "<td>18.8</td>" in html and "<td>0.5000</td>" in html


def test_a_long_id_is_echoed_shortened():
    long_id = "q" * 5000
    with pytest.raises(UsageError) as err:
        SelectSpec(ids=[long_id, "q-2"]).apply([Sample("q-1", {})], "dataset aer (split sample)")
    text = str(err.value)
    assert len(text) < 300 and "(5000 characters)" in text and "q-2" in text
    assert shorten("q-1") == "q-1" and shorten(long_id).startswith("q" * 30)


def test_run_refuses_resume_with_force_before_reading_the_job(tmp_path, capsys):
    from emocaustics.cli import main

    assert main(["run", str(tmp_path / "none.yaml"), "--resume", "--force"]) == 2
    assert "--resume and --force exclude each other" in capsys.readouterr().err


def test_run_and_eval_take_no_cache_alike(capsys):
    """`--no-cache` is one flag of `run` and `eval` (cli/job.run_flags): the dry run of either says the cache is off."""
    from emocaustics.cli import main

    for argv in (["run", "jobs/quickstart.yaml"], ["eval", "aer", "--method", "oracle", "--limit", "1"]):
        main([*argv, "--dry-run", "--no-cache"])  # status 2 where the task's data is not here: the plan still prints
        assert "response cache: off" in capsys.readouterr().out
        main([*argv, "--dry-run"])
        assert "response cache: off" not in capsys.readouterr().out
