"""The task of docs/adding-a-task.md ("A task that asks a model") works as written (issue 41 point 10): the block is
taken from the page, registered, run on the session's engine with every sample answered, and its calibration config
scored; the same task with a plain `str` answer field is refused when it registers, with the field and the fix named.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import polars as pl
import pytest

from emocaustics.core.errors import UsageError
from emocaustics.core.task import get_task, task_names, unregister

PAGE = Path(__file__).resolve().parents[2] / "docs" / "adding-a-task.md"
BOUNDED = "reason: str = Field(max_length=200)"


def docs_block() -> str:
    section = PAGE.read_text(encoding="utf-8").split("## A task that asks a model", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _import(code: str, folder: Path, name: str) -> None:
    path = folder / f"{name}.py"
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves the module's annotations through sys.modules
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)


@pytest.fixture
def docs_task(tmp_path: Path):
    _import(docs_block(), tmp_path, "docs_yesno")
    yield get_task("yesno")
    unregister("yesno")


def test_a_plain_str_answer_field_is_refused_when_the_task_registers(tmp_path: Path) -> None:
    code = docs_block()
    assert BOUNDED in code  # the page shows the bound
    with pytest.raises(UsageError) as caught:
        _import(code.replace(BOUNDED, "reason: str"), tmp_path, "docs_yesno_unbounded")
    message = str(caught.value)
    assert "task 'yesno'" in message and "Answer, field 'reason'" in message and "Field(max_length=N)" in message
    assert "yesno" not in task_names()
    with pytest.raises(UsageError, match=r"field 'reasons\[\]'.*Field\(max_length=N\)"):  # a list of unbounded strings
        _import(code.replace(BOUNDED, "reasons: list[str] = Field(max_length=3)"), tmp_path, "docs_yesno_list")


def test_an_undeclared_unbounded_answer_schema_stops_the_dry_run(tmp_path: Path, capsys) -> None:
    from emocaustics.cli import main

    declared = "    answer_models: ClassVar[tuple[type[BaseModel], ...]] = (Answer,)\n"
    code = docs_block()
    assert declared in code
    _import(code.replace(BOUNDED, "reason: str").replace(declared, ""), tmp_path, "docs_yesno_undeclared")
    try:
        capsys.readouterr()
        assert main(["eval", "yesno", "--model", "smoke", "--dry-run", "--out", str(tmp_path / "run")]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and "answer schema Answer, field 'reason'" in err and "Field(max_length=N)" in err
    finally:
        unregister("yesno")


def test_the_calibration_config_runs_and_score_says_what_it_holds(docs_task, tmp_path: Path, capsys) -> None:
    from emocaustics.cli import main

    run = tmp_path / "run"
    assert main(["eval", "yesno", "--method", "always-yes", "--out", str(run)]) == 0
    assert pl.read_csv(run / "summary.csv")["score"].to_list() == [pytest.approx(2 / 3)]
    folder = run / "predictions" / "yesno_always-yes"
    capsys.readouterr()
    assert main(["score", "yesno", "--pred", str(folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "calibration method 'always-yes'" in err[0] and "scores.parquet" in err[0], err


def test_the_docs_task_runs_on_the_engine_with_every_sample_answered(docs_task, smoke_pool, tmp_path: Path) -> None:
    from emocaustics.jobs.runner import run_job
    from emocaustics.jobs.spec import load_job

    job_file = tmp_path / "job.yaml"
    job_file.write_text("name: docs-yesno\nmodels:\n  smoke: {spec: smoke}\nruns:\n  - {task: yesno, model: smoke, "
                        "options: {method: ask}}\nscoring: {embedder: minilm}\n", encoding="utf-8")
    job = load_job(job_file, overrides={"output": str(tmp_path / "runs"), "cache_dir": str(tmp_path / "cache")})
    run_dir = run_job(job, out=str(tmp_path / "run"))
    scores = pl.read_parquet(run_dir / "scores.parquet")
    assert scores.height == 3 and not scores["failed"].any(), scores  # every answer parsed against its schema
