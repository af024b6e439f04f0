"""The Python API: `import emocaustics as ec`, then `ec.eval(...)`, `ec.run(...)`, `ec.score(...)`,
`ec.load_run(...)` and `ec.export(...)`.

`eval` and `run` go through the same runner as the command line (`jobs.runner.run_job`: the same run folder, response
cache, resume, report) and return a `Run`: the run folder read back as Polars frames. They are quiet unless asked
(`quiet=False` prints the progress lines); a mistake raises `UsageError` (a dead endpoint `EndpointDown`), never exits.
Failed samples do not raise: they are rows with status `failed` (`Run.failed` counts them). `score` scores predictions
against gold without a model or a run, and returns a `Scores` (`scoring.generic.Scores`: Polars frames).

Calibration methods need no model, so this runs anywhere the task's data is (here: the shipped narrative stories):

>>> import emocaustics as ec
>>> run = ec.eval("narrative", method="oracle", limit=2, out=str(getfixture("tmp_path") / "run"))
>>> run.summary.select("run", "samples").row(0)
('narrative_oracle', 2)
>>> ec.load_run(run.dir).scores.equals(run.scores)
True
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emocaustics.core.errors import UsageError

if TYPE_CHECKING:
    import polars as pl

    from emocaustics.evallog.read import RunLog
    from emocaustics.jobs.spec import JobSpec
    from emocaustics.report.compare import Comparison, Pairs
    from emocaustics.scoring.generic import Scores


@dataclass
class Run:
    """A finished run folder as data. Frames are None where the run has no such file.

    - `summary`: one row per config (summary.csv: score, interval, failures, cost ...)
    - `scores`: one row per config x sample (scores.parquet); `rows`: the long score rows (rows.parquet:
      sample_id, metric, value, weight, status, reason, run, task); `items`: per-item explanations (items.parquet)
    - `significance`: the paired tests between configs (significance.csv)
    - `configs`: configs.json (each config's task, method, model, options and corpus-level summary)
    - `tables`: the scorers' extra tables (tables/<name>.parquet) by name
    """

    dir: Path
    summary: pl.DataFrame | None = None
    scores: pl.DataFrame | None = None
    rows: pl.DataFrame | None = None
    items: pl.DataFrame | None = None
    significance: pl.DataFrame | None = None
    configs: list[dict[str, Any]] = field(default_factory=list)
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)

    @property
    def log(self) -> RunLog | None:
        """The run's sample log (evallog/: each sample's input, gold, prediction and LLM calls; `evallog.read.RunLog`:
        `run.log.samples(label)`, `run.log.calls(label)`), None where the run has none."""
        from emocaustics.evallog.read import RunLog

        return RunLog(self.dir) if (self.dir / "evallog").is_dir() else None

    @property
    def failed(self) -> int:
        """Samples that failed, over every config (0 when the run has no scores)."""
        from emocaustics.scoring.headline import headline  # the summary's failures: not the per-epoch rows

        return 0 if self.scores is None else int(headline(self.scores)["failures"].sum())

    def compare(self, *others: Run | str | Path, pairs: Pairs | None = None) -> Comparison:
        """Paired tests between this run's configs and those of `others` of the same label (or, with `pairs`, each
        config labelled A of an earlier run against the one labelled B of a later: `{A: B}` or `[(A, B), ...]`) on
        their common samples, Holm-corrected over the pairs tested (`report.compare.compare_runs`, as `emocaustics
        compare A B [--pair A B]`); configs with no partner are listed in `unmatched`."""
        from emocaustics.report.compare import compare_runs

        return compare_runs([self.dir, *(o.dir if isinstance(o, Run) else Path(o) for o in others)], pairs)


def load_run(path: str | Path) -> Run:
    """Read a run folder (`emocaustics run`/`eval` output) into a `Run`; a folder without scores is a UsageError."""
    import polars as pl

    folder = Path(path)
    if not (folder / "scores.parquet").is_file():
        raise UsageError(f"{folder}: no scores.parquet (is this a finished run folder?)")

    def read(name: str) -> pl.DataFrame | None:
        p = folder / name
        if not p.is_file():
            return None
        return pl.read_csv(p) if p.suffix == ".csv" else pl.read_parquet(p)

    configs_path = folder / "configs.json"
    configs = json.loads(configs_path.read_text(encoding="utf-8")) if configs_path.is_file() else []
    tables = {p.stem: pl.read_parquet(p) for p in sorted((folder / "tables").glob("*.parquet"))}
    return Run(folder, summary=read("summary.csv"), scores=read("scores.parquet"), rows=read("rows.parquet"),
               items=read("items.parquet"), significance=read("significance.csv"), configs=configs, tables=tables)


@contextlib.contextmanager
def _quiet(quiet: bool) -> Iterator[None]:
    """Progress lines and reports of the runner go to a null stream when quiet."""
    if not quiet:
        yield
        return
    with open(os.devnull, "w", encoding="utf-8") as null, contextlib.redirect_stdout(null), \
            contextlib.redirect_stderr(null):
        yield


def run(job: str | Path | dict[str, Any] | JobSpec, *, out: str | Path | None = None, resume: bool = False,
        force: bool = False, ray_address: str | None = None, quiet: bool = True, retry_limits: bool = False) -> Run:
    """Run a job (a YAML path, a mapping with the YAML's keys, or a `JobSpec`) as `emocaustics run` does.

    >>> import emocaustics as ec
    >>> job = {"name": "api-doc", "runs": [{"task": "narrative", "options": {"method": "empty"}}],
    ...        "select": {"limit": 1}}
    >>> ec.run(job, out=str(getfixture("tmp_path") / "r")).summary["score"].to_list()
    [0.0]
    """
    from pydantic import ValidationError

    from emocaustics.jobs.runner import run_job
    from emocaustics.jobs.spec import JobSpec, _format_error, load_job

    job_file = None
    if isinstance(job, (str, Path)):
        job_file, spec = job, load_job(job)
    elif isinstance(job, dict):
        try:
            spec = JobSpec.model_validate(job)
        except ValidationError as exc:
            raise UsageError(_format_error("job", exc)) from None
    else:
        spec = job
    with _quiet(quiet):
        run_dir = run_job(spec, out=None if out is None else str(out), resume=resume, force=force,
                          ray_address=ray_address, job_file=job_file, retry_limits=retry_limits)
    return load_run(run_dir)


def eval(task: str, *, model: str | None = None, method: str | None = None, split: str | None = None,  # noqa: A001
         limit: int | None = None, ids: list[str | int] | None = None, options: dict[str, Any] | None = None,
         dataset: dict[str, Any] | None = None, judge: str | None = None, embedder: str | None = None,
         submission_file: str | Path | None = None, out: str | Path | None = None, resume: bool = False,
         force: bool = False, ray_address: str | None = None, quiet: bool = True, cache: str = "on",
         epochs: int | None = None, reducer: str | None = None, token_limit: int | None = None,
         time_limit: float | None = None, config_time_limit: float | None = None, retry_limits: bool = False) -> Run:
    """One task, one method, one model, as `emocaustics eval` (`jobs.oneline.eval_job` builds the job).

    `model`: `openai:MODEL`, `anthropic:MODEL`, `ollama:MODEL`, `vllm:PATH_OR_NAME`, `smoke`,
    or a full spec (`openai:MODEL@URL?concurrency=8`); none for a calibration method. `options`: the task's options; `dataset`: its
    dataset options; `split`: the dataset's split (or subset); `ids`/`limit`: which samples. `submission_file`: copy
    the config's submission (the task's `submission.*` file with that suffix) there. `cache`: the job's `cache:` (on,
    off, read-only or a folder; models/cacheplace.py). `epochs`, `reducer`: each sample solved N times, reduced;
    `token_limit`, `time_limit` (per sample), `config_time_limit`: limits whose excess is a failure row;
    `retry_limits` (with `resume`): those failures solved again (docs/jobs.md).

    >>> import emocaustics as ec
    >>> ec.eval("narrative", method="nope")
    Traceback (most recent call last):
    emocaustics.core.errors.UsageError: --method nope: task narrative has the methods llm, oracle, files, empty
    """
    from emocaustics.jobs.oneline import check_submission, copy_submission, eval_job

    spec = eval_job(task, model=model, method=method, split=split, limit=limit, ids=ids, options=options,
                    dataset=dataset, judge=judge, embedder=embedder, epochs=epochs, reducer=reducer,
                    token_limit=token_limit, time_limit=time_limit,
                    config_time_limit=config_time_limit).model_copy(update={"cache": cache})
    if submission_file is not None:
        check_submission(spec, Path(submission_file))
    result = run(spec, out=out, resume=resume, force=force, ray_address=ray_address, quiet=quiet,
                 retry_limits=retry_limits)
    if submission_file is not None:
        copy_submission(result.dir, spec, Path(submission_file))
    return result


def score(task: str, predictions: str | Path | Run | dict[str, Any], *, data: str | Path | None = None,
          dataset: dict[str, Any] | None = None, options: dict[str, Any] | None = None,
          ignore_provenance: bool = False) -> Scores:
    """Score predictions against the task's gold with its own scorer, without a model: `emocaustics score TASK`'s
    generic path (`scoring.generic.score_predictions`), returned as a `Scores` of Polars frames (`scores` per sample,
    the long `rows`, `failures`, `items`, `tables`) with the primary metric's `value` and the corpus `summary`.

    `predictions`: a folder holding predictions.jsonl (a run's `predictions/<config>`: the dataset and options it
    was made for come from its provenance.json), a run folder or `Run` with one config of this task, or a mapping
    sample id -> prediction (the values predictions.jsonl holds; a sample without one is a failure). `data` /
    `dataset`: the dataset's folder and options; `options`: the task's options (`method` included).

    An empty annotation for one of two stories of the shipped narrative sample; the other has none (a failure):

    >>> import emocaustics as ec
    >>> empty = {"version": "3.0", "characters": [], "narrative_events": []}
    >>> s = ec.score("narrative", {"ferry_en": empty}, dataset={"stories": ["ferry_en", "clockmaker_en"]})
    >>> s.primary_metric, s.value, s.samples, s.failures.rows()
    ('overall', 0.0, 2, [('clockmaker_en', 'solve: no prediction was written for this sample')])
    >>> s.scores.select("sample_id", "score", "failed").rows()
    [('clockmaker_en', 0.0, True), ('ferry_en', 0.0, False)]
    """
    import tempfile

    from emocaustics.core.task import get_task
    from emocaustics.scoring.generic import score_predictions

    extra = dict(dataset or {}) | ({"data": str(data)} if data is not None else {})
    if isinstance(predictions, dict):
        the_task = get_task(task)
        with tempfile.TemporaryDirectory(prefix="ec-score-") as tmp:
            for sid, value in predictions.items():  # the task's own reader turns them into what its scorer takes
                the_task.store.write_prediction(Path(tmp), str(sid), value)
            (Path(tmp) / "predictions.jsonl").touch()
            return score_predictions(task, Path(tmp), dataset=extra, options=options, ignore_provenance=True,
                                     where="predictions")
    folder = _predictions_folder(task, predictions.dir if isinstance(predictions, Run) else Path(predictions))
    return score_predictions(task, folder, dataset=extra, options=options, ignore_provenance=ignore_provenance)


def export(run_dir: str | Path | Run, *, format: str, out: str | Path | None = None) -> list[Path]:  # noqa: A002
    """Write a finished run as `format` (`inspect`: one inspect_ai eval log per config; `eee`: Every Eval Ever
    aggregate and instance-level records) under `out` (default `RUN_DIR/export/FORMAT`), as `emocaustics export`;
    returns the files written. What each format cannot hold: docs/exports.md.

    >>> import emocaustics as ec
    >>> run = ec.eval("narrative", method="oracle", limit=2, out=str(getfixture("tmp_path") / "exported"))
    >>> all(p.suffix == ".json" for p in ec.export(run, format="inspect"))
    True
    """
    from emocaustics.exports import export_run

    return export_run(run_dir.dir if isinstance(run_dir, Run) else run_dir, format, out)


def _predictions_folder(task: str, path: Path) -> Path:
    """`path` itself, or the one predictions folder of `task`'s config in the run folder `path`."""
    if path.is_file() and path.name == "predictions.jsonl":
        return path.parent
    if (path / "predictions.jsonl").is_file() or (path / "failures.jsonl").is_file():
        return path
    if not (path / "predictions").is_dir():
        raise UsageError(f"{path}: neither a predictions folder (predictions.jsonl) nor a run folder (predictions/)")
    configs = json.loads((path / "configs.json").read_text(encoding="utf-8")) if (path / "configs.json").is_file() \
        else []
    labels = [c["run"] for c in configs if c.get("task") == task] or \
        [p.name for p in sorted((path / "predictions").iterdir()) if p.is_dir()]
    if len(labels) != 1:
        raise UsageError(f"{path}: {len(labels)} configs of task {task} ({', '.join(labels) or 'none'}); give the "
                         "folder predictions/<config> of the one to score")
    folder = path / "predictions" / labels[0]
    if not (folder / "predictions.jsonl").is_file() and not (folder / "failures.jsonl").is_file():
        raise UsageError(f"{folder}: no predictions.jsonl (a calibration method predicts when it is scored: run it "
                         "again instead)")
    return folder
