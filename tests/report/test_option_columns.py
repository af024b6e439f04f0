"""Issue 26: a task's per-config option columns (EmoCaustics's window size K and step S) are the task's own: the
task declares them (`Report.option_column_docs`) and the report shows and defines what the run's tasks
declare, naming none itself. A test task with a column `Z` gets it in every table and in the glossary; a task that
declares none shows none, even when its rows carry a column called K."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, ClassVar

import polars as pl
import pytest

from emocaustics.core.task import Methods, Task, get_task, register, unregister
from emocaustics.report.columns import declared_option_columns, legend, main_table, option_columns
from emocaustics.report.latex import latex_columns, write_latex
from emocaustics.report.tables import SCORE_COLUMNS, summarise, write_tables

Z_DOC = "zoom level of a zoomed config (test task)"
PACKAGE = Path(__file__).resolve().parents[2] / "emocaustics"


class ZoomTask(Task):
    name = "zoomtest"
    methods = Methods(calibration=("oracle",))
    option_column_docs: ClassVar[dict[str, str]] = {"Z": Z_DOC}

    def summary_columns(self, options: Any) -> dict[str, Any]:
        return {"Z": 3}


class PlainTask(Task):  # declares no option column
    name = "plaintest"
    methods = Methods(calibration=("oracle",))


@pytest.fixture(autouse=True)
def tasks():
    register(ZoomTask())
    register(PlainTask())
    yield
    unregister("zoomtest")
    unregister("plaintest")


def rows(run: str, task: str, scores: list[float], **extra: Any) -> list[dict]:
    return [{"run": run, "task": task, "method": "oracle", "model": None, "kind": "calibration",
             "sample_id": f"s{i}", "weight": 1.0, "score": s, "failed": False, "status": "ok", "reason": None,
             "llm_calls": 0, "cache_hits": 0, "prompt_tokens": 0, "generated_tokens": 0, "seconds": 0.5, **extra}
            for i, s in enumerate(scores)]


def frame(*parts: list[dict]) -> pl.DataFrame:
    return pl.concat([pl.DataFrame(p, schema_overrides=SCORE_COLUMNS) for p in parts], how="diagonal_relaxed")


@pytest.fixture
def zoom_and_plain() -> pl.DataFrame:
    # plaintest's rows carry a column named K that it never declared: it must not be shown
    return frame(rows("z3", "zoomtest", [0.5, 1.0], Z=3), rows("z7", "zoomtest", [0.0, 0.5], Z=7),
                 rows("p", "plaintest", [1.0, 1.0], K=5))


def test_the_declaration_is_the_protocol():
    assert get_task("zoomtest").report.option_column_docs and not get_task("plaintest").report.option_column_docs
    assert declared_option_columns(["plaintest", "zoomtest", "no-such-task"]) == {"Z": Z_DOC}


def test_a_task_declared_column_is_summarised_shown_and_defined(tmp_path, zoom_and_plain):
    summary = summarise(zoom_and_plain)
    assert summary.columns[:6] == ["run", "task", "method", "model", "Z", "kind"]
    assert "K" not in summary.columns  # not declared by plaintest
    assert dict(zip(summary["run"], summary["Z"])) == {"z3": 3, "z7": 7, "p": None}
    assert dict(zip(summary["run"], summary["score"])) == {"z3": 0.75, "z7": 0.25, "p": 1.0}
    assert option_columns(summary) == {"Z": Z_DOC}
    assert main_table(summary).columns[:5] == ["kind", "run", "task", "method", "Z"]  # no model called: empty
    shown = legend(["run", "Z", "samples"], None, option_columns(summary))
    assert [c for c, _ in shown] == ["run", "Z", "samples"] and dict(shown)["Z"] == Z_DOC
    run_dir = tmp_path / "job" / "20260101-000000"
    run_dir.mkdir(parents=True)
    write_tables(run_dir, zoom_and_plain)
    md = (run_dir / "summary.md").read_text(encoding="utf-8")
    assert md.splitlines()[2].startswith("| run | task | method | Z | samples | score |")
    assert f"- `Z`: {Z_DOC}\n" in md and "`K`" not in md
    assert latex_columns(summary)[:4] == ["run", "task", "method", "Z"]
    tex = write_latex(run_dir).read_text(encoding="utf-8")
    assert f"Z: {Z_DOC}" in tex


def test_a_run_of_tasks_without_declarations_shows_none(zoom_and_plain):
    plain = zoom_and_plain.filter(pl.col("task") == "plaintest")
    summary = summarise(plain)
    assert summary.columns[:5] == ["run", "task", "method", "model", "kind"]
    assert option_columns(summary) == {} and "K" not in main_table(summary).columns


def test_emocaustics_declares_k_and_s_beside_another_tasks_column():
    sextuple = get_task("sextuple")
    scores = frame(rows("w", "sextuple", [0.2, 0.4], K=20, S=5), rows("z3", "zoomtest", [0.5, 1.0], Z=3))
    summary = summarise(scores)
    assert summary.columns[:8] == ["run", "task", "method", "model", "K", "S", "Z", "kind"]
    assert summary.select("K", "S", "Z").rows() == [(20, 5, None), (None, None, 3)]
    docs = option_columns(summary)
    assert sextuple.report.option_column_docs and list(docs) == ["K", "S", "Z"]
    assert docs["K"] == sextuple.option_column_docs["K"] and docs["S"] == sextuple.option_column_docs["S"]
    shown = [c for c, _ in legend(main_table(summary).drop("kind").columns, None, docs)]
    assert shown[:6] == ["run", "task", "method", "K", "S", "Z"]  # no model called: the model column is empty


def test_no_module_outside_the_tasks_names_k_or_s():
    """The report, jobs and core modules hold no string "K" or "S" (a window size's columns): only the EmoCaustics
    task folder declares them."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "tasks" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in ("K", "S"):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []
