"""Warm vs cold (issue 31): the quickstart job (`jobs/quickstart.yaml` as shipped: oracle/baseline rows, sextuple rag,
direct and window, emotion direct and window, on the 8 sample dialogues with the smoke model) run twice as new
processes against a `ray start` head started here:

- cold: no model service on the cluster: the job starts its own engine and drops it at the end;
- warm: after `emocaustics serve` of the job's own `models:` entry (not timed), the job attaches to that service.

Each run is `emocaustics run jobs/quickstart.yaml --ray-address HEAD --out FRESH --allow-failures` in a new process
with a fresh response cache (every answer is generated), timed from the spawn to the exit. Time to the first LLM call:
the run's startup.json `first_llm_call_at` (the first request its pool sent to a replica) minus the spawn time. Every
line the job prints is time-stamped on arrival, so the figures say where the time before the first call went (imports
and data load until "job ...: N configs", Ray's join until "response cache: ...", attach or engine start, the
embedder load).
Issue 31's targets, recorded as ceilings: warm first call <= 2 s; warm wall <= 0.5 x cold wall.

The head: tests/fakes/local_cluster.py (own ports, own --temp-dir; only its own processes are ended).

    python -m benchmarks.warm_bench        # or `python -m benchmarks --only warm_bench`; --quick runs the same job
    WARM_BENCH_PYSPY=/tmp/warm.txt python -m benchmarks.warm_bench   # + a third (warm) run under py-spy, not timed
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
JOB = REPO / "jobs" / "quickstart.yaml"
EMOCAUSTICS = str(Path(sys.executable).parent / "emocaustics")
MARKS = {  # figure name -> the start of the first line that marks it
    "configs_planned_s": "job ",  # imports, spec, data loaded, Ray joined is after it
    "ray_joined_s": "response cache: ",  # Ray joined (and the embedder object made, not loaded)
    "model_ready_s": "model smoke: engine(s) started",
    "embedder_loaded_s": "embedder ",
    "first_config_scored_s": "[score ",
}


def _local_cluster() -> Any:
    spec = importlib.util.spec_from_file_location("_bench_local_cluster", REPO / "tests" / "fakes" / "local_cluster.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _timed_run(args: list[str], env: dict[str, str], log: Path) -> dict[str, Any]:
    """Run the CLI in a new process; every output line with its arrival second since the spawn."""
    lines: list[tuple[float, str]] = []
    spawn_epoch = time.time()
    t0 = time.perf_counter()
    proc = subprocess.Popen([EMOCAUSTICS, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=REPO,
                            text=True, bufsize=1)

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append((round(time.perf_counter() - t0, 2), line.rstrip("\n")))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    rc = proc.wait(timeout=1800)
    wall = time.perf_counter() - t0
    reader.join(10)
    log.write_text("\n".join(f"{t:7.2f} {line}" for t, line in lines) + "\n", encoding="utf-8")
    if rc != 0:
        raise RuntimeError(f"emocaustics {' '.join(args)} exited {rc}; log {log}:\n"
                           + "\n".join(line for _, line in lines[-40:]))
    return {"wall_s": round(wall, 2), "spawn_epoch": spawn_epoch, "lines": lines}


def _run_job(out: Path, address: str, env: dict[str, str], log: Path) -> dict[str, Any]:
    got = _timed_run(["run", str(JOB), "--ray-address", address, "--out", str(out), "--allow-failures"], env, log)
    startup = json.loads((out / "startup.json").read_text(encoding="utf-8"))
    first = startup.get("first_llm_call_at")
    figures: dict[str, Any] = {"wall_s": got["wall_s"],
                               "first_llm_call_s": round(first - got["spawn_epoch"], 2) if first else None,
                               "model_start_s": (startup.get("models") or {}).get("smoke"),
                               "embedder_load_s": startup.get("embedder")}
    for name, prefix in MARKS.items():
        figures[name] = next((t for t, line in got["lines"] if line.startswith(prefix)), None)
    figures["attached"] = any("attached to the running model service" in line for _, line in got["lines"])
    runinfo = json.loads((out / "wall.json").read_text(encoding="utf-8"))
    figures["configs_wall_s"] = round(sum(runinfo.values()), 2)
    return figures


def _profile(flame: Path, out: Path, address: str, env: dict[str, str]) -> None:
    """`py-spy record` of one more warm run: where the time before the first LLM call goes (raw collapsed stacks)."""
    pyspy = str(Path(sys.executable).parent / "py-spy")
    subprocess.run([pyspy, "record", "--format", "raw", "--rate", "50", "--subprocesses", "-o", str(flame), "--",
                    EMOCAUSTICS, "run", str(JOB), "--ray-address", address, "--out", str(out), "--allow-failures"],
                   env=env, cwd=REPO, capture_output=True, timeout=1800, check=True)
    first = json.loads((out / "startup.json").read_text(encoding="utf-8")).get("first_llm_call_at")
    print(f"profiled warm run: {flame}; first_llm_call_at {first}", flush=True)


def run(quick: bool = False) -> dict:
    lc = _local_cluster()
    cluster = lc.LocalCluster()
    env = {k: v for k, v in lc.client_env().items() if k != "EMOCAUSTICS_CACHE"}
    model = yaml.safe_load(JOB.read_text(encoding="utf-8"))["models"]
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="warm-bench-") as tmp:
        logs = Path(tmp)
        try:
            cluster.start_head(num_cpus=2)
            address = f"127.0.0.1:{cluster.gcs_port}"
            figures["load_1m_before"] = round(os.getloadavg()[0], 2)
            figures["cold"] = _run_job(logs / "cold", address, env, logs / "cold.log")
            (logs / "models.yaml").write_text(yaml.safe_dump({"models": model, "idle_timeout": "30m"}),
                                              encoding="utf-8")
            served = _timed_run(["serve", str(logs / "models.yaml"), "--ray-address", address], env,
                                logs / "serve.log")
            figures["serve_s"] = served["wall_s"]  # not part of either run
            figures["warm"] = _run_job(logs / "warm", address, env, logs / "warm.log")
            figures["load_1m_after"] = round(os.getloadavg()[0], 2)
            if os.environ.get("WARM_BENCH_PYSPY"):  # a third run, warm, under py-spy (not part of the figures)
                _profile(Path(os.environ["WARM_BENCH_PYSPY"]), logs / "profiled", address, env)
            _timed_run(["models", "stop", "--all", "--ray-address", address], env, logs / "stop.log")
        finally:
            cluster.close()
    cold, warm = figures["cold"], figures["warm"]
    if not warm["attached"] or cold["attached"]:
        raise RuntimeError(f"the warm run did not attach to the service, or the cold one did: {figures}")
    figures["warm_over_cold_wall"] = round(warm["wall_s"] / cold["wall_s"], 3)
    first = warm["first_llm_call_s"]
    floors = {
        "warm_first_llm_call_s": {"value": first, "ceiling": 2.0, "ok": first is not None and first <= 2.0},
        "warm_over_cold_wall": {"value": figures["warm_over_cold_wall"], "ceiling": 0.5,
                                "ok": figures["warm_over_cold_wall"] <= 0.5},
    }
    return {
        "name": "warm_bench",
        "figures": figures,
        "inputs": {"job": "jobs/quickstart.yaml (as shipped)", "cluster": "ray start --head, 2 CPUs, this machine",
                   "response_cache": "fresh per run (every answer generated)", "quick": quick},
        "notes": ["each run is a new `emocaustics run` process; wall_s is spawn to exit; first_llm_call_s is "
                  "startup.json's first_llm_call_at minus the spawn time",
                  "model_ready_s / embedder_loaded_s / first_config_scored_s: when the job printed that line",
                  "serve_s (the service's engine start) is paid once, outside both runs",
                  f"cpus: {os.cpu_count()}; a shared machine: see the load averages"],
        "floors": floors,
    }


def to_markdown(out: dict) -> str:
    f = out["figures"]
    keys = ["wall_s", "first_llm_call_s", "configs_planned_s", "ray_joined_s", "model_start_s", "model_ready_s",
            "embedder_load_s", "embedder_loaded_s", "first_config_scored_s", "configs_wall_s"]
    lines = [f"`python -m benchmarks.warm_bench`: jobs/quickstart.yaml, cold then warm (after `emocaustics serve`, "
             f"{f['serve_s']} s, not counted); load 1 min {f['load_1m_before']} before / {f['load_1m_after']} after; "
             f"warm/cold wall {f['warm_over_cold_wall']}.", "", "| run | " + " | ".join(keys) + " |",
             "| --- |" + " --- |" * len(keys)]
    for run_name in ("cold", "warm"):
        lines.append(f"| {run_name} | " + " | ".join(str(f[run_name][k]) for k in keys) + " |")
    for name, floor in out["floors"].items():
        lines.append(f"\n{name}: {floor['value']} vs ceiling {floor['ceiling']} ({'ok' if floor['ok'] else 'ABOVE'})")
    return "\n".join(lines) + "\n"


def main() -> None:
    out = run()
    results = REPO / "benchmarks" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "warm_bench.json").write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    (results / "warm_bench.md").write_text("# warm_bench\n\n" + to_markdown(out), encoding="utf-8")
    print(to_markdown(out))


if __name__ == "__main__":
    main()
