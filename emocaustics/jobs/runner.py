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
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import polars as pl

from emocaustics.core import aio
from emocaustics.core.errors import NothingToResume, Stop, UsageError
from emocaustics.core.predictions import pair
from emocaustics.core.task import Loaded, ScoreContext, needs_model
from emocaustics.core.writes import writing
from emocaustics.jobs import cost, rundir
from emocaustics.jobs.configs import Config, judge_spec, resolve
from emocaustics.jobs.rundir import RUN_FILE
from emocaustics.jobs.results import score_line, score_table, summary_record, with_run, write_extra_tables
from emocaustics.jobs.spec import JobSpec, dump_job, output_path
from emocaustics.jobs.startup import start_models
from emocaustics.jobs.together import resume_line, solve_together
from emocaustics.models.registry import is_remote
from emocaustics.score.reducers import table_rows

if TYPE_CHECKING:
    from emocaustics.jobs.preflight import DryRun


def resolve_run_dir(job: JobSpec, out: str | None, resume: bool) -> Path:
    """The run folder, absolute: a relative `--out` or `output:` is resolved against `spec.base_dir()` (the folder a
    submitted job was sent from), so the path the job prints is where its results are."""
    if out:
        return output_path(out)
    base = output_path(job.output) / job.name
    if resume:
        previous = sorted(p for p in base.glob("*") if (p / RUN_FILE).exists() or (p / "config.yaml").exists())
        if not previous:
            raise NothingToResume(f"--resume: no earlier run of job {job.name!r} under {base}")
        return previous[-1]
    return base / datetime.now().strftime("%Y%m%d-%H%M%S")


def _order(configs: list[Config], *, to_run: bool = False) -> list[Config]:
    """Configs others build on first (`SideInputs.builds_on`: a config that reuses another config's predictions); `to_run`
    (the order they run in): then those that ask a model before the calibration ones, so that a job against a warm
    model reaches its first LLM call at once (the calibration rows' scoring would wait for the embedder's load first;
    warm_bench). The tables keep the job's order."""
    needed = {c.prior for c in configs if c.prior is not None}
    return sorted(configs, key=lambda c: (c.pred_dir not in needed, to_run and not needs_model(c.task, c.options)))


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

    run_dir = resolve_run_dir(job, out, resume)
    configs = _order(resolve(job, run_dir))
    # one heap collection for all configs' dry solves, not one each (1.4 s a config with aer's test split loaded)
    with aio.many_calls():
        return describe(job, configs, load_all(configs), run_dir, choose(job.cache), resume=resume,
                        retry_limits=retry_limits)


def run_job(job: JobSpec, *, out: str | None = None, resume: bool = False, force: bool = False,
            ray_address: str | None = None, check: bool = True, job_file: str | Path | None = None,
            retry_limits: bool = False) -> Path:
    """Run a job into its folder. Nothing is written until the folder is claimed (`rundir.claim`) and every
    pre-flight check passed (`preflight`; `check=False` skips the network checks, for tests). `job_file`: the spec's
    file, named in the command a stopped run prints to continue it. `retry_limits` (with `resume`): samples that
    failed over a limit are solved again too."""
    if retry_limits and not resume:
        raise UsageError("--retry-limits applies to --resume (a fresh run solves every sample)")
    from emocaustics.core.cluster import configure
    from emocaustics.jobs.preflight import load_all, preflight
    from emocaustics.models.cacheplace import choose
    from emocaustics.report.html import write_report
    from emocaustics.report.tables import write_tables

    run_dir = resolve_run_dir(job, out, resume)
    claimed = rundir.claim(run_dir, job, resume=resume, force=force)
    configs = _order(resolve(job, run_dir))
    loaded_by_label = load_all(configs)
    if check:
        preflight(job, configs, loaded_by_label)
    else:
        for label, got in loaded_by_label.items():
            if isinstance(got, UsageError):
                raise got
    for c in configs:
        if c.model and c.llm is None:  # a spec that does not parse as the model layer takes it: its error
            job.models[c.model].parsed()
    cost.start_ledger(job, configs)  # max_cost_usd: every endpoint priced (else a usage error), then spent against
    # the job's `cache:` (models/cacheplace.py): the shared cache by default (read-only), a folder of the job's, or
    # None (`off`, `--no-cache`); in run.json: where, never what it holds
    cache_dir = choose(job.cache)
    claimed.record["response_cache"] = cache_dir.record() if cache_dir is not None else {"mode": "off"}
    rundir.start(claimed)
    (run_dir / "config.yaml").write_text(dump_job(job), encoding="utf-8")
    print(f"job {job.name}: {len(configs)} configs -> {run_dir}" + (" (resumed)" if claimed.resumed else ""),
          flush=True)
    local = sorted({c.model for c in configs if c.llm is not None and not is_remote(c.llm)})  # engines here
    address = ray_address or job.ray.address or os.environ.get("RAY_ADDRESS")
    # The job's Ray, joined when first needed (`models.factory.join_ray`): by a local engine's start, or by scoring
    # that fans out through Ray Data (large EmoCaustics or narrative inputs), on the cluster named if one is, never on
    # a private local Ray of its own then. A job against endpoints alone never starts Ray.
    configure(address=address, num_cpus=job.ray.num_cpus, object_store_memory=job.ray.object_store_memory,
              namespace=job.ray.namespace)
    from emocaustics.models.embedders import make_embedder

    embedder = make_embedder(job.scoring.embedder)  # loaded once, shared by every config's scoring
    ctx = ScoreContext(embedder=embedder, embedder_spec=job.scoring.embedder, judge=judge_spec(job),
                       scoring=job.scoring.task_options, use_ray=True)
    print(f"response cache: {cache_dir.describe() if cache_dir is not None else 'off'}", flush=True)
    from emocaustics.evallog.writer import EvalLog

    evallog = EvalLog(run_dir, prompts=job.log.prompts)  # every call of every sample: `emocaustics view RUN_DIR`
    startup = start_models(job, local, {c.model: c.llm for c in configs if c.model}.__getitem__, embedder)
    (run_dir / "startup.json").write_text(json.dumps(startup, indent=1), encoding="utf-8")
    frames, long_rows, items, wall, defects, records = [], [], [], {}, [], []
    tables: dict[str, list[pl.DataFrame]] = {}  # the scorers' extra tables by name, every config's
    seen_tasks: set[str] = set()
    for cfg in configs:  # before anything is solved: what a resume skips, each config's folder and provenance
        loaded_cfg: Loaded = loaded_by_label[cfg.label]  # type: ignore[assignment]  # errors were raised above
        if cfg.task.name not in seen_tasks:  # one list for the job; each defect says which task's loader found it
            seen_tasks.add(cfg.task.name)
            defects.extend({"task": cfg.task.name, **d.to_json()} for d in loaded_cfg.defects)
        if claimed.resumed:
            print(resume_line(cfg, loaded_cfg.samples, retry_limits), flush=True)
        cfg.pred_dir.mkdir(parents=True, exist_ok=True)
        write_provenance(cfg, loaded_cfg)
    with _named(f"job {job.name}", job_file, run_dir):  # every model config on one plan: their prepared samples
        solved = solve_together(job, configs, loaded_by_label, ctx, cache_dir,  # type: ignore[arg-type]
                                evallog.config, lambda label: rundir.WallClock(claimed, label), retry_limits)
    outputs: dict[str, tuple[Any, ...]] = {}  # label -> what its config adds to the job's tables
    for cfg in _order(configs, to_run=True):
        with rundir.WallClock(claimed, cfg.label) as clock:  # stopped and saved however the config ends
            loaded: Loaded = loaded_by_label[cfg.label]  # type: ignore[assignment]
            rows = solved.pop(cfg.label, None)  # a model config's rows, in memory (scored, then let go)
            samples = rows.samples if rows is not None else loaded.samples
            epoch_frame = None
            if rows is not None and cfg.epochs > 1:  # each epoch scored, then reduced (jobs/epochs.py)
                from emocaustics.jobs.epochs import score_epochs

                scored, frame, epoch_frame = score_epochs(cfg, rows, ctx, evallog, loaded)
            else:
                if rows is None:  # a calibration predictor
                    predictions, stats = cfg.task.predict(cfg.options.method, samples, cfg.options), {}
                else:  # the rule `score TASK` shares: nothing written is a Failure
                    predictions, stats = rows.epoch(1)
                    predictions = pair(samples, predictions).predictions
                evallog.config(cfg.label).finish(samples, predictions)
                scored = cfg.task.scorer.score(samples, predictions, cfg.options, ctx)
                cfg.task.scorer.finalize(cfg.pred_dir, samples, predictions, cfg.options)
                frame = score_table(cfg, scored, stats, loaded)
            outputs[cfg.label] = (frame, scored, summary_record(cfg, scored, len(loaded.defects), frame),
                                  epoch_frame)
            wall[cfg.label] = clock.stop()  # every attempt of this config: a resumed config's time is the sum
        print(score_line(cfg, scored, frame, wall[cfg.label]), flush=True)  # summary.csv's headline, not its own
    wall = {cfg.label: wall[cfg.label] for cfg in configs}
    for cfg in configs:  # the job's tables in the job's order of configs, whatever order they ran in
        frame, scored, record, epoch_frame = outputs[cfg.label]
        frames.extend([frame] if epoch_frame is None else [frame, epoch_frame])
        long_rows.append(scored.rows.with_columns(pl.lit(cfg.label).alias("run"), pl.lit(cfg.task.name).alias("task")))
        if scored.items is not None:
            items.append(scored.items.with_columns(pl.lit(cfg.label).alias("run")))
        for name, table in scored.tables.items():
            if name != "sample_info":  # that one is joined into scores.parquet
                tables.setdefault(name, []).append(with_run(table, cfg.label))
        records.append(record)
    scores = pl.concat(frames, how="diagonal_relaxed")
    with writing(run_dir):  # the tables and the report on a full disk: one line naming the file (or the folder)
        pl.concat(long_rows, how="diagonal_relaxed").write_parquet(run_dir / "rows.parquet")
        if items:
            pl.concat(items, how="diagonal_relaxed").write_parquet(run_dir / "items.parquet")
        write_extra_tables(run_dir / "tables", tables)
        (run_dir / "data_defects.json").write_text(json.dumps(defects, ensure_ascii=False, indent=1), encoding="utf-8")
        (run_dir / "configs.json").write_text(json.dumps(records, ensure_ascii=False, indent=1, default=str),
                                              encoding="utf-8")
        (run_dir / "wall.json").write_text(json.dumps(wall, indent=1), encoding="utf-8")
        # scores.parquet: every row; the tables: the reduced rows; the report reads the tables' statistics
        report = write_report(run_dir, scores, write_tables(run_dir, scores, wall))
        scores = table_rows(scores)
        claimed.record["failed_samples"] = int(scores["failed"].sum())
        claimed.record["samples"] = scores.height
        from emocaustics.models.pool import registered_pools

        # Unix time of the first request sent to a local model (how soon a job against warm models gets to work)
        startup["first_llm_call_at"] = min((p.first_call_at for p in registered_pools().values() if p.first_call_at),
                                           default=None)
        (run_dir / "startup.json").write_text(json.dumps(startup, indent=1), encoding="utf-8")
    claimed.record["startup"] = startup
    rundir.finish(claimed)
    if startup["embedder"] is not None:
        print(f"embedder {job.scoring.embedder}: loaded in {startup['embedder']} s, beside the start", flush=True)
    print(f"summary: {run_dir / 'summary.md'}\nreport:  {report}", flush=True)
    return run_dir


def write_provenance(cfg: Config, loaded: Loaded) -> None:
    """What the predictions of this config were made from (`core.provenance`): task, dataset with a content hash,
    sample ids with their fingerprints, model, method, options and prompt version."""
    from emocaustics.core.provenance import record, write

    write(cfg.pred_dir, record(cfg.task, loaded, dataset=cfg.dataset.model_dump(mode="json"), options=cfg.options,
                               model=cfg.spec))


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
