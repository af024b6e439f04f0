"""`emocaustics run JOB.yaml`: a whole job (runs and grid, any task) from data to report, resumable.

    validate spec -> the job's Ray settings (joined when first needed: `models.factory.join_ray`)
    -> task.data.load of every config (data defects reported)
    -> every config that asks a model solved at once on one plan (`jobs/together.py`, `solve.plan`: task.solver.prepare,
      the job's model pool, a typed stop named once) -> for every config: the calibration predictor, or its
      predictions -> task.score (long rows) -> task.finalize
    -> rows.parquet (long) / scores.parquet (one row per config x sample) / tables/<name>.parquet (a scorer's extra
    tables) / summary.csv / summary.md / report.html

Models load once per job: every config naming a model gets the same process-wide `ModelPool`, so a grid starts each
engine once. Predictions are written per sample as each finishes; `--resume` solves only samples without a
prediction (failed ones are tried again) and the response cache answers any call already made.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import polars as pl

from emocaustics.core import aio
from emocaustics.core.errors import Stop, UsageError
from emocaustics.jobs import rundir
from emocaustics.jobs.configs import resolve
from emocaustics.jobs.spec import JobSpec
from emocaustics.jobs.together import solve_together, solved_counts

if TYPE_CHECKING:
    from emocaustics.jobs.preflight import DryRun


def resume_command(job_file: str | Path | None, run_dir: Path) -> str:
    """The command that continues a run, ready to paste. A job sent by `jobs/submit.sh` (it runs in Ray's copy of
    the project, which goes away) is continued by sending it again."""
    job = str(job_file) if job_file is not None else "JOB.yaml"
    if os.environ.get("EMOCAUSTICS_SUBMITTED"):  # set by jobs/submit.sh (cluster/job_env.py)
        return f"jobs/submit.sh {shlex.quote(job)} -- --resume --out {shlex.quote(str(run_dir))}"
    if job_file is not None:
        job = os.path.abspath(job)
    return f"emocaustics run {shlex.quote(job)} --resume --out {shlex.quote(str(run_dir))}"


@contextmanager
def _named(where: str, job_file: str | Path | None, run_dir: Path) -> Iterator[None]:
    """A typed stop of the solving (a dead endpoint, the budget, a service gone: `core.errors.Stop`) ends the job
    with its exit status, named once: where it happened and the command that continues the run."""
    try:
        yield
    except Stop as stop:
        raise stop.continued(where, resume_command(job_file, run_dir)) from None


def plan_job(job: JobSpec, *, out: str | None = None, resume: bool = False, retry_limits: bool = False) -> DryRun:
    """The dry run: what `run_job` would do, without starting Ray or writing anything; its problems first
    (`DryRun.check` raises the exit-2 error when there is one)."""
    from emocaustics.jobs.preflight import describe, load_all
    from emocaustics.models.cacheplace import choose

    run_dir = rundir.resolve_run_dir(job, out, resume)
    resolved = resolve(job, run_dir)
    # one heap collection for all configs' dry solves, not one each (1.4 s a config with aer's test split loaded)
    with aio.many_calls():
        return describe(resolved, load_all(resolved.configs), run_dir, choose(job.cache), resume=resume,
                        retry_limits=retry_limits)


def run_job(job: JobSpec, *, out: str | None = None, resume: bool = False, force: bool = False,
            ray_address: str | None = None, check: bool = True, job_file: str | Path | None = None,
            retry_limits: bool = False) -> Path:
    """Run a job into its folder, phase by phase: resolve, claim, pre-flight, start, solve, score, tables and report,
    finish. Nothing is written until the folder is claimed (`rundir.claim`) and every pre-flight check passed
    (`preflight.checked`; `check=False` skips the network checks, for tests). `job_file`: the spec's file, named in the
    command a stopped run prints to continue it. `retry_limits` (with `resume`): samples that failed over a limit are
    solved again too."""
    if retry_limits and not resume:
        raise UsageError("--retry-limits applies to --resume (a fresh run solves every sample)")
    from emocaustics.jobs.preflight import checked
    from emocaustics.jobs.epochs import score_config
    from emocaustics.jobs.results import write_results
    from emocaustics.jobs.startup import finish_startup, start_job

    marks = {"handler": time.time()}  # each phase's start (epoch seconds): startup.json's `timings`, for startup_bench
    run_dir = rundir.resolve_run_dir(job, out, resume)
    resolved = resolve(job, run_dir)
    claimed = rundir.claim(run_dir, resolved, resume=resume, force=force)
    configs = resolved.configs
    marks["data_start"] = time.time()
    checks = checked(resolved, network=check)
    marks["data_loaded"] = marks["llm_start"] = time.time()
    started = start_job(resolved, checks, claimed, ray_address or job.ray.address or os.environ.get("RAY_ADDRESS"),
                        retry_limits)
    marks["llm_ready"] = marks["first_submitted"] = time.time()
    with _named(f"job {job.name}", job_file, run_dir):  # every model config on one plan: their prepared samples
        solved = solve_together(job, configs, checks.loaded, started.ctx, started.evallog.config,
                                lambda label: rundir.WallClock(claimed, label), retry_limits)
    marks["extract_done"] = time.time()
    if job.no_score:  # `eval --no-score`: the predictions, written as each sample ended; no scores, tables, report
        claimed.record.update(solved_counts(solved))
        said = f"predictions: {run_dir / 'predictions'} (not scored: --no-score)"
    else:
        results = {cfg.label: score_config(cfg, checks.loaded[cfg.label], solved.pop(cfg.label, None), started,
                                           rundir.WallClock(claimed, cfg.label))
                   for cfg in resolved.run_order}  # the job's tables keep the job's order of configs
        report = write_results(run_dir, [results[cfg.label] for cfg in configs], started.defects, claimed)
        said = f"summary: {run_dir / 'summary.md'}\nreport:  {report}"
    started.startup["timings"] = {**marks, "manifest_written": time.time()}
    finish_startup(started, claimed)
    rundir.finish(claimed)
    print(said, flush=True)
    return run_dir


def rebuild_report(run_dir: Path) -> Path:
    """The tables and report.html of a finished run again, from its scores.parquet (e.g. after an upgrade)."""
    from emocaustics.report.html import write_report
    from emocaustics.report.tables import write_tables
    from emocaustics.tasks.yamltask.recorded import register_run_tasks

    scores_path = run_dir / "scores.parquet"
    if not scores_path.exists():
        raise UsageError(f"{run_dir}: no scores.parquet (is this a finished run directory?)")
    wall_path = run_dir / "wall.json"
    wall = json.loads(wall_path.read_text(encoding="utf-8")) if wall_path.exists() else None
    scores = pl.read_parquet(scores_path)
    register_run_tasks(run_dir)  # a task file's task, by the name the run knows it by, in this process too
    return write_report(run_dir, scores, write_tables(run_dir, scores, wall))
