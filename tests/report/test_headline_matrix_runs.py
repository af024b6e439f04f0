"""Issue 53's matrix, on real run folders (tests/report/matrix_runs.py: the job runner, no Ray, no engine): every task x
{one epoch, epochs with each reducer, a YAML task, cache hits, batch, a sample over a limit, a resume} x every output
gives one score, sample count and failure count per config. The outputs: the console's score line, summary.csv,
summary.md, report.html, `compare`, the viewer's index, `Run` (the API) and the inspect_ai and Every Eval Ever exports.
The reference of each config is `scoring.headline.headline` of its scores.parquet (the one place); each output is read
back from what it wrote or returned, as a user would read it."""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
from pathlib import Path
from typing import Any, Callable

import polars as pl
import pytest

from report.matrix_runs import BUILTIN, DATA_HERE, EPOCHS, IDS, LONG, REDUCERS, MadeRun, MatrixTask
from report.matrix_runs import axes_runs, builtin_run  # noqa: F401  (the module's fixtures)

Figures = dict[str, tuple[Any, int, int]]  # config label -> (score, samples, failures)


def _num(value: Any) -> float | None:
    if value in (None, "", "None", "n/a", "—", "-"):
        return None
    return round(float(value), 4)


def _head(score: Any, samples: Any, failures: Any) -> tuple[Any, int, int]:
    return _num(score), int(samples), int(failures)


# -- every output, read back ------------------------------------------------------------------------------------------
def console(run: MadeRun, tmp: Path) -> Figures:
    got = {}
    for m in re.finditer(r"^\[score (\S+)\] .+? (-?[0-9.]+|None), (\d+) failures, (\d+) samples, ", run.console,
                         re.MULTILINE):
        got[m.group(1)] = _head(m.group(2), m.group(4), m.group(3))
    return got


def summary_csv(run: MadeRun, tmp: Path) -> Figures:
    return {r["run"]: _head(r["score"], r["samples"], r["failures"])
            for r in csv.DictReader((run.dir / "summary.csv").open(encoding="utf-8"))}


def summary_md(run: MadeRun, tmp: Path) -> Figures:
    table = (run.dir / "summary.md").read_text(encoding="utf-8").split("\n\n")[1].splitlines()
    head = [c.strip() for c in table[0].strip("|").split("|")]
    rows = [dict(zip(head, (c.strip() for c in line.strip("|").split("|")))) for line in table[2:]]
    return {r["run"]: _head(r["score"], r["samples"], r["failures"]) for r in rows}


def _cells(fragment: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>",
                                                                                   fragment, re.S)]


def report_html(run: MadeRun, tmp: Path) -> Figures:
    page = (run.dir / "report.html").read_text(encoding="utf-8")
    main = re.search(r"<div id='summary'><table[^>]*>(.*?)</table>", page, re.S).group(1)
    head = _cells(re.search(r"<thead>(.*?)</thead>", main, re.S).group(1))
    rows = [dict(zip(head, _cells(r))) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", main.split("<tbody>")[1], re.S)]
    return {r["run"]: _head(r["score"], r["samples"], r["failures"]) for r in rows}


def compare(run: MadeRun, tmp: Path) -> Figures:
    from emocaustics.report.compare import compare_runs

    twin = tmp / "twin" / run.dir.name
    if not twin.exists():
        shutil.copytree(run.dir, twin)
    configs = compare_runs([run.dir, twin]).configs
    mine = configs.filter(pl.col("run") == configs["run"][0])
    return {r["config"]: _head(r["score"], r["samples"], r["failures"]) for r in mine.iter_rows(named=True)}


def viewer(run: MadeRun, tmp: Path) -> Figures:
    from emocaustics.evallog.read import RunLog
    from emocaustics.view.data import ViewData

    index = ViewData(RunLog(run.dir)).index()
    return {c["label"]: _head(c["score"], c["samples"], c["failed"]) for c in index["configs"]
            if ".epoch-" not in c["label"]}


def api(run: MadeRun, tmp: Path) -> Figures:
    import emocaustics as ec

    loaded = ec.load_run(run.dir)
    got = {r["run"]: _head(r["score"], r["samples"], r["failures"]) for r in loaded.summary.iter_rows(named=True)}
    assert loaded.failed == sum(f for _, _, f in got.values())  # `Run.failed`: the headline's failures, summed
    return got


def _export(run: MadeRun, fmt: str, tmp: Path) -> list[Path]:
    from emocaustics.core.task import register, unregister
    from emocaustics.exports import export_run

    task = register(MatrixTask())
    try:
        return export_run(run.dir, fmt, tmp / f"{fmt}-{run.name}")
    finally:
        unregister(task.name)


def inspect_export(run: MadeRun, tmp: Path) -> Figures:
    """inspect's own fields: the headline as the metric `mean`, the dataset's samples; its failures are
    `unscored_samples` counted per epoch (inspect's `total_samples` is samples x epochs), so for an epochs config the
    headline's failures are read from the summary row the log carries."""
    got = {}
    for path in _export(run, "inspect", tmp):
        log = json.loads(path.read_text(encoding="utf-8"))
        label, score = log["eval"]["task_display_name"], log["results"]["scores"][0]
        epochs = log["eval"]["config"]["epochs"]
        assert log["results"]["total_samples"] == log["eval"]["dataset"]["samples"] * epochs, label
        assert len(log["samples"]) == log["results"]["total_samples"], label
        failures = score["unscored_samples"] if epochs == 1 else \
            log["eval"]["metadata"]["emocaustics"]["table"]["failures"]
        mean = score["metrics"].get("mean", {}).get("value")
        got[label] = _head(mean, log["eval"]["dataset"]["samples"], failures)
    return got


def eee_export(run: MadeRun, tmp: Path) -> Figures:
    got = {}
    for path in _export(run, "eee", tmp):
        if path.suffix != ".json":
            continue
        record = json.loads(path.read_text(encoding="utf-8"))
        result = record["evaluation_results"][0]
        label = record["source_metadata"]["additional_details"]["config"]
        details = result["score_details"]["details"]
        score = None if details.get("table.score") in (None, "None") else result["score_details"]["score"]
        got[label] = _head(score, result["score_details"]["uncertainty"]["num_samples"], details["table.failures"])
    return got


OUTPUTS: dict[str, Callable[[MadeRun, Path], Figures]] = {
    "console": console, "summary.csv": summary_csv, "summary.md": summary_md, "report.html": report_html,
    "compare": compare, "viewer": viewer, "api": api, "inspect": inspect_export, "eee": eee_export}


# -- the runs and the cells -------------------------------------------------------------------------------------------
def _reference(run: MadeRun) -> Figures:
    from emocaustics.scoring.headline import headline

    return {r["run"]: _head(r["score"], r["samples"], r["failures"])
            for r in headline(pl.read_parquet(run.dir / "scores.parquet")).iter_rows(named=True)}


def _label(run: MadeRun, name: str) -> str:
    """A config's label in the run: its job name (`name:`)."""
    assert name in _reference(run), (name, list(_reference(run)))
    return name


# each axis's configs in the runs: the stand-in task's and, where the public data is here, the built-in tasks' solvers
SOLVERS = ("ecpe", "emotion", "sextuple", "narrative", "dialogue-judge")
AXES = {"one epoch": ("one", "aer-one", *(f"{t}-llm" for t in SOLVERS)),
        **{f"epochs {r}": (f"epochs-{r.replace('@', '')}",) for r in REDUCERS},
        "epochs, built-in tasks": ("aer-epochs-max", *(f"{t}-llm-epochs" for t in SOLVERS)),
        "yaml task": ("yaml",), "over a limit": ("limit", "aer-limit"), "batch": ("batch", "aer-batch")}


def _builtin(name: str) -> bool:
    return name.startswith(tuple(f"{t}-" for t in BUILTIN))


@pytest.fixture(scope="module")
def read(tmp_path_factory: pytest.TempPathFactory) -> Callable[[MadeRun, str], Figures]:
    """Each output of each run read once."""
    tmp, seen = tmp_path_factory.mktemp("outputs"), {}

    def get(run: MadeRun, output: str) -> Figures:
        if (run.name, output) not in seen:
            seen[run.name, output] = OUTPUTS[output](run, tmp)
        return seen[run.name, output]

    return get


@pytest.mark.parametrize("output", OUTPUTS)
@pytest.mark.parametrize("axis", [*AXES, "cache hits", "resume"])
def test_every_axis_gives_the_headline_in_every_output(axes_runs, read, axis, output):
    run = axes_runs["cached" if axis == "cache hits" else "resumed" if axis == "resume" else "first"]
    reference, got = _reference(run), read(run, output)
    names = [n for names in (AXES.values() if axis in ("cache hits", "resume") else [AXES[axis]]) for n in names
             if DATA_HERE or not _builtin(n)]
    if not names:
        pytest.skip("the public data of the built-in tasks is not beside the checkout")
    for name in names:
        label = _label(run, name)
        assert got.get(label) == reference[label], f"{output} of {run.name}'s {label}: {got.get(label)} != " \
                                                   f"the headline {reference[label]}"
        if axis in ("cache hits", "resume"):  # a rerun from the cache or a resume gives the first run's numbers
            first = axes_runs["first"]
            assert reference[label] == _reference(first)[_label(first, name)], label


@pytest.mark.parametrize("output", OUTPUTS)
@pytest.mark.parametrize("task", BUILTIN)
def test_every_builtin_task_gives_the_headline_in_every_output(builtin_run, read, task, output):
    reference, got = _reference(builtin_run), read(builtin_run, output)
    labels = [lab for lab in reference if lab.startswith(f"{task}_")]
    assert labels, list(reference)
    for label in labels:
        assert got.get(label) == reference[label], f"{output}'s {label}: {got.get(label)} != " \
                                                   f"the headline {reference[label]}"


def test_the_runs_exercise_what_their_axes_name(axes_runs):
    """The matrix is only as good as its runs: failures and an unscored sample where they should be, epochs that
    differ by reducer, a sample over its limit, a batch, a second run made of cache hits, a resume that solved the
    samples a kill lost (from the cache) and kept the others."""
    first, cached, resumed = axes_runs["first"], axes_runs["cached"], axes_runs["resumed"]
    ref = _reference(first)
    assert len({ref[_label(first, f"epochs-{r.replace('@', '')}")][0] for r in REDUCERS}) >= 3, ref
    assert all(ref[lab][1] == len(IDS) for lab in ref if lab != "yaml" and not _builtin(lab)), ref
    assert {n for names in AXES.values() for n in names if DATA_HERE or not _builtin(n)} == set(ref), ref
    assert ref[_label(first, "one")][2] > 0 and ref[_label(first, "yaml")][1:] == (4, 0), ref
    scores = pl.read_parquet(first.dir / "scores.parquet")
    of = {name: scores.filter(pl.col("run") == _label(first, name)) for name in ("one", "limit")}
    assert of["limit"].filter(pl.col("sample_id") == LONG)["failed"].to_list() == [True]
    assert of["one"].filter(pl.col("sample_id") == LONG)["failed"].to_list() == [False]  # the limit's doing
    assert of["one"].filter(~pl.col("failed"))["score"].null_count() == 1  # the unscored sample
    assert first.calls > 0 and first.batched > 0 and (cached.calls, cached.batched) == (0, 0)
    again = pl.read_parquet(cached.dir / "scores.parquet")
    assert again["llm_calls"].sum() == 0 and again["cache_hits"].sum() > 0
    assert (resumed.calls, resumed.batched) == (0, 0) and _reference(resumed) == ref
    epochs = pl.read_parquet(resumed.dir / "scores.parquet").filter(
        (pl.col("run") == _label(resumed, "epochs-max")) & pl.col("epoch").is_not_null())
    hits = dict(epochs.group_by("epoch").agg(pl.col("cache_hits").sum()).iter_rows())
    assert hits[EPOCHS] > 0 and hits[1] == 0, hits  # the lost epoch solved again (from the cache), the rest kept
