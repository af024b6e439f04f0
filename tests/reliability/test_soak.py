"""Chaos soak (`make soak`; marker `soak`, deselected from `make test` by pyproject's addopts): one job holding configs
of every task runs on a two-node Ray cluster started with `ray start` on this machine, while its model replicas are
killed and then its worker node is lost; the job (or `--resume` of it) must end with tables identical to an
undisturbed run's, no sample lost, and every failure named.

The cluster: a head and a worker (tests/fakes/local_cluster.py: own ports, own temp dirs; only the processes it
started are ended). The driver is `emocaustics run JOB --ray-address HEAD` in a child process (it joins the head's
raylet). The smoke model (real vLLM CPU engine, random weights) has two replicas placed one per node
(`placement: spread`). Configs run in this order, `concurrency: 1` (one sample in flight per replica), so each
fault lands while its config still has samples to solve:

1. aer (llm, zero-shot), at its first prediction: both replica actor processes SIGKILLed (Ray restarts them);
2. ecpe (direct), at its first prediction: both SIGKILLed again;
3. narrative (llm), at its first prediction: both SIGKILLed again;
4. sextuple (direct), at its first prediction: the worker node's raylet SIGKILLed (the node is gone; its replica
   cannot come back: the pool sends its calls to the head's replica); emotion (direct) then runs on the head alone.
Beside them: the calibration configs (oracle) of aer, ecpe, narrative, sextuple, emotion, and human (process).

If the job stops (a named failure, exit 3; the cluster lost, exit 5), `emocaustics run JOB --resume --out SAME_DIR`
finishes it on the head. The undisturbed reference is the same job (one replica instead of two: placement is not
part of the job's hash nor of the response cache's model id) in a fresh local Ray, with a copy of the response
cache, so that both runs see the same model answers and a difference in the tables can only come from the
pipeline's bookkeeping under faults (a lost, doubled or half-written sample). "Identical": scores.parquet, summary.csv
and every tables/*.parquet, without the cost and timing columns (they differ by nature: the reference's answers all
come from the cache), floats to 1e-6 relative (the embedder's similarities differ by ~1e-9 between processes).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import polars as pl
import psutil
import pytest
import yaml

from fakes.child_run import cleanup, start_cli
from fakes.local_cluster import LocalCluster

pytestmark = [pytest.mark.soak, pytest.mark.timeout(3600)]

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / "tests" / "badinput"
FIRST_FILE = 900  # seconds for the cluster's engines to start and the first config to write its first prediction
PER_FAULT = 600  # seconds between one fault and the next config's first prediction (engine restarts included)
FINISH = 1200  # seconds for the driver to finish after the last fault
VOLATILE = ("llm_calls", "cache_hits", "tokens", "generated_tokens", "prompt_tokens", "seconds", "wall_s",
            "startup_s", "note", "cost_usd")
# (task, samples): what the job holds of each task
SAMPLES = {"aer": 12, "ecpe": 9, "narrative": 7, "sextuple": 3, "emotion": 3, "human": 4}
FAULTS = [("aer", "kill replicas"), ("ecpe", "kill replicas"), ("narrative", "kill replicas"),
          ("sextuple", "stop worker node")]


def _data(tmp: Path) -> Path:
    """aer and ecpe data of our own (the bad-input corpus bases), enlarged so that each config has samples left after
    its first prediction (a smoke answer takes a fraction of a second); every copy its own text, so that no two
    samples share a request. Built once: the reference run reads the same folder."""
    root = tmp / "data"
    if root.exists():
        return root
    shutil.copytree(BASE / "aer" / "_base" / "data", root / "aer")
    q = root / "aer" / "sample_data" / "questions.jsonl"
    rows = [json.loads(x) for x in q.read_text(encoding="utf-8").splitlines() if x.strip()]
    out = [dict(r, id=f"q-{i + 1}", target_event=f"{r['target_event']} (case {i + 1})")
           for i, r in ((i, rows[i % len(rows)]) for i in range(SAMPLES["aer"]))]
    q.write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")
    (root / "ecpe").mkdir(parents=True)
    for st in (1, 2):
        convs = json.loads((BASE / "ecpe" / "_base" / "gold" / f"Subtask_{st}_test.json").read_text(encoding="utf-8"))
        copies = []
        for i in range(SAMPLES["ecpe"]):
            conv = json.loads(json.dumps(convs[i % len(convs)]))
            conv["conversation_ID"] = i + 1
            conv["conversation"][0]["text"] += f" ( case {i + 1} )"
            copies.append(conv)
        (root / "ecpe" / f"Subtask_{st}_test.json").write_text(json.dumps(copies), encoding="utf-8")
    return root


def _job(tmp: Path, *, replicas: int) -> dict:
    ids = [1, 2, 3]
    data = _data(tmp)
    smoke = {"spec": "smoke", "engine": {"max_model_len": 8192, "kv_cache_memory_bytes": 268435456}}
    if replicas > 1:
        smoke.update(replicas=replicas, placement="spread")
    return {
        "name": "chaos-soak",
        "dataset": {
            "aer": {"split": "sample", "data": str(data / "aer")},
            "ecpe": {"ids": list(range(1, SAMPLES["ecpe"] + 1)), "data": str(data / "ecpe")},
            "narrative": {},  # the shipped sample stories (datasets/narrative): all 7
            "sextuple": {"subset": "sample", "ids": ids},
            "emotion": {"subset": "sample", "ids": ids},
            "human": {"data": str(BASE / "human" / "_base"), "file": "ratings.json"},
        },
        "models": {"smoke": smoke},
        "runs": [
            {"task": "aer", "options": {"method": "oracle"}},
            {"task": "aer", "options": {"method": "llm", "prompt": "zero-shot", "context": "none"}, "model": "smoke"},
            {"task": "ecpe", "options": {"method": "oracle"}},
            {"task": "ecpe", "options": {"method": "direct", "max_pairs": 4}, "model": "smoke"},
            {"task": "narrative", "options": {"method": "oracle"}},
            {"task": "narrative", "options": {"method": "llm", "window_sentences": 6}, "model": "smoke"},
            {"task": "sextuple", "method": "oracle"},
            {"task": "sextuple", "method": "direct", "model": "smoke"},
            {"task": "emotion", "method": "oracle"},
            {"task": "emotion", "method": "direct", "model": "smoke"},
            {"task": "human", "options": {"method": "process"}},
        ],
        "scoring": {"embedder": "minilm", "judge": "none"},
        "concurrency": 1,
        "output": str(tmp / "runs"),
        "cache_dir": str(tmp / "cache"),
        "ray": {"num_cpus": 2, "object_store_memory": 200_000_000},
    }


def _write_job(tmp: Path, name: str, replicas: int, cache: Path) -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump({**_job(tmp, replicas=replicas), "cache_dir": str(cache)}), encoding="utf-8")
    return path


def _model_dir(run_dir: Path, task: str) -> Path | None:
    found = sorted((run_dir / "predictions").glob(f"{task}_*smoke*"))
    return found[0] if found else None


def _done(pred: Path | None) -> int:
    """Samples of a model config with a prediction written (files for sextuple/emotion, lines for the others)."""
    if pred is None or not pred.is_dir():
        return 0
    lines = 0
    if (pred / "predictions.jsonl").exists():
        lines = sum(1 for x in (pred / "predictions.jsonl").read_text(encoding="utf-8").splitlines() if x.strip())
    return len(list(pred.glob("output_*_[0-9]*.json"))) + lines


def _replicas(cluster: LocalCluster) -> dict[str, list[psutil.Process]]:
    """The model replica actor processes on each live node (Ray titles an actor's process `ray::<class>...`)."""
    out: dict[str, list[psutil.Process]] = {}
    for name in cluster.names:
        if name in cluster.stopped:
            continue
        for p in cluster.node_processes(name):
            try:
                if " ".join(p.cmdline()).startswith("ray::VLLMEngineActor"):
                    out.setdefault(name, []).append(p)
            except psutil.NoSuchProcess:
                continue
    return out


def _victims(cluster: LocalCluster) -> list[psutil.Process] | None:
    """One replica actor process per live node, or None while Ray has not restarted them all since the last kill."""
    found = _replicas(cluster)
    live = [n for n in cluster.names if n not in cluster.stopped]
    return [found[n][0] for n in live] if all(len(found.get(n, [])) == 1 for n in live) else None


def _kill_replicas(cluster: LocalCluster, child, deadline: float, victims: list[psutil.Process] | None) -> list[int]:
    """SIGKILL one replica actor process per live node (`victims`, found beforehand so that the kill lands at once;
    else waiting for Ray to have restarted them after the last kill); returns their pids."""
    while victims is None or not all(p.is_running() for p in victims):
        assert child.proc.poll() is None, f"the driver ended before the kill: {child.output()[1][-3000:]}"
        assert time.monotonic() < deadline, f"replicas not back on every node: {_replicas(cluster)}"
        victims = _victims(cluster)
        time.sleep(0.2)
    for p in victims:
        os.kill(p.pid, signal.SIGKILL)
    psutil.wait_procs(victims, timeout=30)
    return [p.pid for p in victims]


def _tables(run_dir: Path) -> dict[str, pl.DataFrame]:
    def keep(df: pl.DataFrame) -> pl.DataFrame:
        cols = [c for c in df.columns if not any(c == v or c.endswith(v) for v in VOLATILE)]
        df = df.select(cols)
        keys = [c for c, t in df.schema.items() if t.is_numeric() or t in (pl.String, pl.Boolean)]
        return df.sort(keys, nulls_last=True, maintain_order=True)  # rows in a fixed order, whatever wrote them

    out = {"scores": keep(pl.read_parquet(run_dir / "scores.parquet")),
           "summary": keep(pl.read_csv(run_dir / "summary.csv"))}
    for p in sorted((run_dir / "tables").glob("*.parquet")):
        out[p.stem] = keep(pl.read_parquet(p))
    return out


def _same_tables(a: Path, b: Path) -> None:
    """Every value equal; floats to 1e-6 relative (an embedding similarity was seen to differ by 2.5e-9 between the
    driver processes of two runs: the embedder's arithmetic, not a lost or doubled sample)."""
    from polars.testing import assert_frame_equal

    ta, tb = _tables(a), _tables(b)
    assert ta.keys() == tb.keys()
    for name in ta:
        try:
            assert_frame_equal(ta[name], tb[name], check_exact=False, rel_tol=1e-6, abs_tol=1e-8)
        except AssertionError as exc:
            raise AssertionError(f"{name} differs from the undisturbed run: {exc}") from None


def _accounted(run_dir: Path) -> dict[str, int]:
    """Every sample of every config has exactly one score row, and every failed one a reason: rows per task."""
    scores = pl.read_parquet(run_dir / "scores.parquet")
    rows: dict[str, int] = {}
    for (run,), part in scores.group_by("run"):
        task = part["task"][0]
        assert part.height == SAMPLES[task], f"{run}: {part.height} score rows for {SAMPLES[task]} samples"
        assert part["sample_id"].n_unique() == part.height, f"{run}: a sample scored twice"
        for row in part.filter(pl.col("failed")).iter_rows(named=True):
            assert row["reason"] and str(row["reason"]).strip() not in ("None", "null"), f"unnamed failure: {row}"
        rows[task] = rows.get(task, 0) + part.height
    assert set(rows) == set(SAMPLES), rows
    return rows


def _failure_rows(run_dir: Path) -> list[dict]:
    rows = []
    for path in (run_dir / "predictions").glob("*/failures.jsonl"):
        rows += [dict(json.loads(x), config=path.parent.name)
                 for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return rows


def _run(args: list[str], tmp: Path, env: dict[str, str], timeout: float) -> tuple[int, str]:
    child = start_cli(args, logs=tmp / "logs", env=env)
    try:
        rc = child.wait(timeout=timeout)
        return rc, child.output()[1]
    finally:
        cleanup(child)


def test_chaos_soak_every_task_on_two_nodes(tmp_path: Path) -> None:
    t0 = time.monotonic()
    job = _write_job(tmp_path, "job.yaml", 2, tmp_path / "cache")
    run_dir = tmp_path / "run"
    env = {"RAY_AUTH_MODE": "token", "PYTHONUNBUFFERED": "1"}
    cluster = LocalCluster()
    injected: list[str] = []
    try:
        cluster.start_head(num_cpus=2)
        worker = cluster.add_worker(num_cpus=1)
        assert len({n["node_id"] for n in cluster.wait_nodes(2)}) == 2
        address = ["--ray-address", f"127.0.0.1:{cluster.gcs_port}"]
        # 1. the disturbed run
        child = start_cli(["run", str(job), "--out", str(run_dir), *address], logs=tmp_path / "logs", env=env)
        try:
            deadline = time.monotonic() + FIRST_FILE
            for task, fault in FAULTS:
                victims, looked = None, 0.0
                while _done(pred := _model_dir(run_dir, task)) == 0:
                    assert child.proc.poll() is None, f"the driver ended before the {task} fault: " \
                                                      f"{child.output()[1][-3000:]}"
                    assert time.monotonic() < deadline, f"no {task} prediction in time: {child.output()[1][-3000:]}"
                    if fault == "kill replicas" and time.monotonic() - looked > 0.5:
                        victims, looked = _victims(cluster), time.monotonic()
                    time.sleep(0.05)
                if fault == "kill replicas":
                    pids = _kill_replicas(cluster, child, time.monotonic() + 300, victims)
                    assert len(pids) == 2, pids  # one per node: both replicas of the model
                    injected += [f"{task}: replica actor pid {pid} SIGKILLed" for pid in pids]
                else:
                    injected.append(f"{task}: worker node {worker} lost (raylet pid {cluster.stop_node(worker)} "
                                    "SIGKILLed)")
                done = _done(pred)
                assert done < SAMPLES[task], f"{task}: every sample was done before the fault; it hit nothing"
                injected[-1] += f" after {done}/{SAMPLES[task]} samples"
                deadline = time.monotonic() + PER_FAULT
            rc = child.wait(timeout=FINISH)
            first_err = child.output()[1]
        finally:
            cleanup(child)
        print("\n[soak] faults:\n  " + "\n  ".join(injected) + f"\n[soak] first run: exit {rc}")
        assert len(cluster.wait_nodes(1)) == 1  # the worker is gone, the head still serves
        assert "Traceback" not in first_err, first_err[-5000:]
        assert rc in (0, 3, 5), f"exit {rc}:\n{first_err[-5000:]}"
        failures = _failure_rows(run_dir)
        assert all(str(r.get("reason") or "").strip() for r in failures), failures  # every failure named
        print(f"[soak] failure rows after the first run: {len(failures)}"
              + "".join(f"\n  {r['config']} {r.get('id', r.get('dialogue'))}: {r['reason'][:160]}" for r in failures))
        # 2. resume on the head alone, when the job did not finish every sample
        resumed = rc != 0
        if resumed:
            rc, err = _run(["run", str(job), "--resume", "--out", str(run_dir), *address], tmp_path, env, FINISH)
            print(f"[soak] --resume: exit {rc}")
            assert "Traceback" not in err, err[-5000:]
    finally:
        cluster.close()
    rows = _accounted(run_dir)
    soak_seconds = time.monotonic() - t0

    # 3. the undisturbed reference: same job and answers (copied cache), own local Ray, one replica
    ref_cache = tmp_path / "ref-cache"
    shutil.copytree(tmp_path / "cache", ref_cache)
    ref_job = _write_job(tmp_path, "ref.yaml", 1, ref_cache)
    ref_rc, ref_err = _run(["run", str(ref_job), "--out", str(tmp_path / "reference")], tmp_path,
                           {"PYTHONUNBUFFERED": "1"}, FINISH)
    assert ref_rc in (0, 3), ref_err[-5000:]
    assert rc == ref_rc, f"soak exit {rc}, undisturbed exit {ref_rc}"
    _same_tables(run_dir, tmp_path / "reference")
    scores = pl.read_parquet(run_dir / "scores.parquet")
    model = scores.filter(pl.col("model") == "smoke")
    assert model["llm_calls"].sum() > 0 and (~model["failed"]).sum() > 0, "no model config solved anything"
    print(f"[soak] result: {sum(rows.values())} samples ({', '.join(f'{t} {n}' for t, n in rows.items())}) over "
          f"{scores['run'].n_unique()} configs; {len(injected)} faults injected; samples lost 0; "
          f"{int(scores['failed'].sum())} named failures in the final tables; "
          f"{'resumed once' if resumed else 'finished without --resume'}; soak wall {soak_seconds:.0f} s; "
          f"tables identical to the undisturbed run", file=sys.stderr)
