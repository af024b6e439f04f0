"""A job's start-up phase: its ledger, response cache and run folder made real, Ray's settings, its eval log, its
local engines started (or attached to) and its embedder loaded beside them, each config's folder and provenance.

Start-up is reported once per model (`startup.json`) and never counted in a config's wall time.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from emocaustics.core.task import Loaded, ScoreContext
from emocaustics.jobs import rundir
from emocaustics.jobs.configs import Resolved
from emocaustics.jobs.preflight import Checked

# How long the embedder waits for the job's first LLM call before it loads anyway (a resumed job whose calls the
# response cache answers sends none; its scoring would load the embedder on first use in any case).
EMBEDDER_WAIT_S = 5.0


@dataclass
class Started:
    """What the start phase hands on: the scoring context every config shares (the embedder loaded once, and the
    response cache, `ctx.cache`, the solve's too: None when off), the eval log, the data defects every task's loader
    found, and the start-up figures (`startup.json`)."""

    ctx: ScoreContext
    evallog: Any
    defects: list[dict[str, Any]]
    startup: dict[str, Any]


def start_job(resolved: Resolved, checked: Checked, claimed: rundir.Claim, address: str | None,
              retry_limits: bool) -> Started:
    """The start phase, after every pre-flight check passed (`checked`: the samples, prices and cache it found):
    run.json and config.yaml (`rundir.start`), the job's Ray settings (joined when first needed:
    `models.factory.join_ray`), the eval log, the local engines with the embedder loading beside them
    (`start_models`), the ledger (`max_cost_usd`, spent against the endpoints' prices: models/budget.py), then each
    config's folder and provenance (and a resume's line of what it skips)."""
    from emocaustics.core.cluster import configure
    from emocaustics.evallog.writer import EvalLog
    from emocaustics.jobs.epochs import resume_line
    from emocaustics.models.budget import activate

    job, configs, run_dir = resolved.job, resolved.configs, claimed.run_dir
    loaded, cache_dir = checked.loaded, checked.cache
    # in run.json: where the response cache is, never what it holds
    claimed.record["response_cache"] = cache_dir.record() if cache_dir is not None else {"mode": "off"}
    rundir.start(claimed)  # run.json and config.yaml
    print(f"job {job.name}: {len(configs)} configs -> {run_dir}" + (" (resumed)" if claimed.resumed else ""),
          flush=True)
    # Ray joined when first needed: by a local engine's start, or by scoring that fans out through Ray Data (large
    # EmoCaustics or narrative inputs), on the cluster named if one is; a job against endpoints never starts Ray.
    configure(address=address, num_cpus=job.ray.num_cpus, object_store_memory=job.ray.object_store_memory,
              namespace=job.ray.namespace)
    print(f"response cache: {cache_dir.describe() if cache_dir is not None else 'off'}", flush=True)
    evallog = EvalLog(run_dir, prompts=job.log.prompts)  # every call of every sample: `emocaustics view RUN_DIR`
    embedder, startup = start_models(resolved)
    activate(job.max_cost_usd, checked.prices)  # the ledger, before any call is asked
    # the judge parsed with the job (one that does not parse stopped the pre-flight)
    ctx = ScoreContext(embedder=embedder, embedder_spec=job.scoring.embedder, judge=resolved.judge,
                       scoring=job.scoring.task_options, use_ray=True, cache=cache_dir)
    (run_dir / "startup.json").write_text(json.dumps(startup, indent=1), encoding="utf-8")
    defects: list[dict[str, Any]] = []
    seen_tasks: set[str] = set()
    for cfg in configs:  # before anything is solved: what a resume skips, each config's folder and provenance
        got = loaded[cfg.label]
        if cfg.task.name not in seen_tasks:  # one list for the job; each defect says which task's loader found it
            seen_tasks.add(cfg.task.name)
            defects.extend({"task": cfg.task.name, **d.to_json()} for d in got.defects)
        if claimed.resumed:
            print(resume_line(cfg, got.samples, retry_limits), flush=True)
        write_provenance(cfg, got)  # its folder made there
    return Started(ctx, evallog, defects, startup)


def write_provenance(cfg: Any, loaded: Loaded) -> None:
    """What the predictions of this config were made from (`core.provenance`): task, dataset with a content hash,
    sample ids with their fingerprints, model (and its identity: local weights by their fingerprint), method,
    options and prompt version."""
    from emocaustics.core.provenance import record, write

    write(cfg.pred_dir, record(cfg.task, loaded, dataset=cfg.dataset.model_dump(mode="json"), options=cfg.options,
                               model=cfg.spec, identity=cfg.llm.identity if cfg.llm is not None else None))


def finish_startup(started: Started, claimed: rundir.Claim) -> None:
    """startup.json and run.json's `startup` with the Unix time of the first request sent to a local model (how soon
    a job against warm models gets to work), and the embedder's load time said."""
    from emocaustics.models.pool import registered_pools

    startup = started.startup
    startup["first_llm_call_at"] = min((p.first_call_at for p in registered_pools().values() if p.first_call_at),
                                       default=None)
    (claimed.run_dir / "startup.json").write_text(json.dumps(startup, indent=1), encoding="utf-8")
    claimed.record["startup"] = startup
    if startup["embedder"] is not None:
        print(f"embedder {started.ctx.embedder_spec}: loaded in {startup['embedder']} s, beside the start", flush=True)


def start_models(resolved: Resolved) -> tuple[Any, dict[str, Any]]:
    """The job's embedder (made once, shared by every config's scoring) and the start-up figures: the engines of the
    job's local models (`smoke`, `vllm:`) started (or attached to) before the first config, the embedder loading in
    the background once an engine of the job's own starts or the first LLM call has gone out."""
    from emocaustics.models.embedders import make_embedder
    from emocaustics.models.pool import _pickle_by_value_if_local
    from emocaustics.models.services import start_job_model

    embedder = make_embedder(resolved.job.scoring.embedder)
    local = {c.model: c.llm for c in resolved.configs if c.llm is not None and not c.llm.remote}  # engines here
    startup: dict[str, Any] = {"models": {}, "embedder": None}
    load = getattr(embedder, "_load", None)
    # Loaded beside the engines' start and the first configs' calls, not before them: against a warm (attached) model
    # the embedder's 4-5 s of imports were most of the time to the first LLM call (warm_bench), and while they run they
    # hold the interpreter from the attach and the first config's set-up (about 1 s on 2 cores): so against running
    # services the load waits for the first call to go out, while an engine of the job's own (tens of seconds) starts
    # at once beside it. Jobs without a local engine (calibration, endpoints) load it when scoring first needs it, so
    # that a dead endpoint is found without waiting for an embedder. Scoring that comes first waits for this load (the
    # embedder's lock), never loads twice.
    pools: list[Any] = []
    engines_starting = threading.Event()
    if load is not None and local:
        ready = lambda: engines_starting.is_set() or any(p.first_call_at for p in list(pools))  # noqa: E731
        _load_in_background(load, startup, ready)
    for name in sorted(local):
        t0 = time.perf_counter()  # a running model service of the same spec is attached to, not started again
        pools.append(start_job_model(local[name], name, resolved.job.models[name].keep_alive,
                                     lambda line: print(line, flush=True), starting=engines_starting.set))
        startup["models"][name] = round(time.perf_counter() - t0, 2)
        print(f"model {name}: engine(s) started in {startup['models'][name]} s (not part of any config's wall time)",
              flush=True)
    for c in resolved.configs:  # the replicas run these configs' solvers: a task whose module is no installed
        if c.model in local:  # package's (a test's, a script's) travels to them by value (models/pool.py)
            _pickle_by_value_if_local(type(c.task))
    return embedder, startup


def _load_in_background(load: Callable[[], Any], startup: dict[str, Any],
                        ready: Callable[[], bool] = lambda: True, wait: float | None = None) -> None:
    """`load()` in a daemon thread once `ready()` (polled) or after `wait` seconds (default EMBEDDER_WAIT_S); its
    seconds go to `startup["embedder"]` (the job's log says so at its end: printed from here, the line could land in
    whatever the process printed after a short job, such as the JSON of the next command in the same process). A
    failure is left to the first use, which loads again under the embedder's lock and raises there, in the config
    that needs it."""

    def run() -> None:
        deadline = time.monotonic() + (EMBEDDER_WAIT_S if wait is None else wait)
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.02)
        t0 = time.perf_counter()
        try:
            load()
        except Exception:  # noqa: BLE001 - reported by the first use
            return
        startup["embedder"] = round(time.perf_counter() - t0, 2)

    threading.Thread(target=run, name="embedder-load", daemon=True).start()
