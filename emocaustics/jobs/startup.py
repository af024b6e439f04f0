"""A job's start-up: its local engines started (or attached to), its embedder loaded beside them.

Start-up is reported once per model (`startup.json`) and never counted in a config's wall time.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from emocaustics.jobs.spec import JobSpec

# How long the embedder waits for the job's first LLM call before it loads anyway (a resumed job whose calls the
# response cache answers sends none; its scoring would load the embedder on first use in any case).
EMBEDDER_WAIT_S = 5.0


def start_models(job: JobSpec, local: list[str], spec_of: Callable[[str], Any], embedder: Any) -> dict[str, Any]:
    """Start (or attach to) the engines of the job's local models `local` before the first config; the embedder
    loads in the background, once an engine of the job's own starts or the first LLM call has gone out."""
    from emocaustics.models.services import start_job_model

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
    for name in local:
        t0 = time.perf_counter()  # a running model service of the same spec is attached to, not started again
        pools.append(start_job_model(spec_of(name), name, job.models[name].keep_alive,
                                     lambda line: print(line, flush=True), starting=engines_starting.set))
        startup["models"][name] = round(time.perf_counter() - t0, 2)
        print(f"model {name}: engine(s) started in {startup['models'][name]} s (not part of any config's wall time)",
              flush=True)
    return startup


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
