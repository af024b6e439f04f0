"""The judges compared once per run (issue 56 item 4, issue 54 point 4): the tables phase writes
tables/judge_pairs.parquet (`judge_pairs` of each family of judges, with alpha across them) and report.html shows the
table it wrote, never computing the pairs again, nor reading them back. No Ray, no engine: a grid of calibration judges' per-sample rows, built as the job
builds them (`jobs.epochs.score_table`)."""

from __future__ import annotations

import re
from dataclasses import replace
from types import SimpleNamespace

import polars as pl
import pytest

from emocaustics.core.task import get_task
from emocaustics.jobs.epochs import score_table
from emocaustics.report.html import write_report
from emocaustics.report.tables import write_tables
from emocaustics.tasks.dialoguejudge import across
from emocaustics.tasks.dialoguejudge import report as judge_report
from emocaustics.tasks.dialoguejudge.across import families, judge_pairs

TASK = get_task("dialogue-judge")
JUDGES = [("oracle", 0), ("random", 2), ("constant", 0)]  # random and constant fail QC


def job_rows(data) -> pl.DataFrame:
    """scores.parquet of a job of JUDGES on the round in `data`."""
    frames = []
    for method, seed in JUDGES:
        opts = TASK.Options(method=method, seed=seed, resamples=0)
        loaded = TASK.load(TASK.Dataset(data=str(data)), opts)
        scored = TASK.score(loaded.samples, TASK.predict(method, loaded.samples, opts), opts, None)
        cfg = SimpleNamespace(task=TASK, label=f"{method}-{seed}", options=opts, price=None, model=None,
                              kind="calibration")
        frames.append(score_table(cfg, scored, {}, loaded))
    return pl.concat(frames, how="diagonal_relaxed")


@pytest.fixture(scope="module")
def run(small_round, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    scores = job_rows(small_round)
    tables = write_tables(run_dir, scores)
    write_report(run_dir, scores, tables)
    return SimpleNamespace(dir=run_dir, scores=scores, summary=tables.summary, tables=tables)


def test_the_tables_phase_writes_the_pairs_of_judge_pairs(run):
    table = pl.read_parquet(run.dir / "tables" / "judge_pairs.parquet")
    (family,) = families(run.scores)
    pairs = judge_pairs(family)
    assert table.height == 3 and set(table["task"]) == {"dialogue-judge"} and set(table["family"]) == {1}
    assert table.drop("task", "family").equals(pairs)
    assert table["alpha"].n_unique() == 1 and -1 <= table["alpha"][0] <= 1  # alpha across the three judges
    # a judge that failed quality control is marked unreliable in every row it is in
    reliable = {**dict(table.select("config_a", "reliable_a").iter_rows()),
                **dict(table.select("config_b", "reliable_b").iter_rows())}
    assert reliable == {"oracle-0": True, "random-2": False, "constant-0": False}
    assert dict(run.summary.select("run", "qc_pass").iter_rows()) == reliable


def test_the_report_shows_the_tables_numbers(run):
    table = pl.read_parquet(run.dir / "tables" / "judge_pairs.parquet")
    page = (run.dir / "report.html").read_text(encoding="utf-8")
    section = page[page.index("<h3>Judges compared"):]
    assert f"ratings: {table['alpha'][0]:.4f}." in section
    cells = re.findall(r"<tr>(.*?)</tr>", section[section.index("<tbody>"):section.index("</tbody>")])
    assert len(cells) == table.height
    for row, html_row in zip(table.iter_rows(named=True), cells):
        shown = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", html_row)]
        assert shown[:2] == [row["config_a"], row["config_b"]]
        assert shown[2:9] == [f"{row[c]:.4f}" for c in ("r_a", "r_b", "diff", "diff_low", "diff_high", "p", "p_holm")]


def test_the_report_reads_the_table_and_computes_no_pairs(run, monkeypatch):
    """The report shows the table the tables phase handed it (what it wrote), and never calls judge_pairs."""
    table = run.tables.across["dialogue-judge"]["judge_pairs"]
    changed = table.with_columns(pl.lit(0.123456).alias("p"), pl.lit(0.654321).alias("alpha"))

    def computed_again(*args, **kwargs):
        raise AssertionError("the report computed the judges' pairs again")

    monkeypatch.setattr(across, "judge_pairs", computed_again)
    monkeypatch.setattr(judge_report, "judge_pairs", computed_again, raising=False)
    handed = replace(run.tables, across={"dialogue-judge": {"judge_pairs": changed}})
    page = write_report(run.dir, run.scores, handed).read_text(encoding="utf-8")
    section = page[page.index("<h3>Judges compared"):]
    assert "ratings: 0.6543." in section and section.count("<td>0.1235</td>") == table.height
    write_report(run.dir, run.scores, run.tables)

