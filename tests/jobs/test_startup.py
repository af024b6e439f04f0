"""A job's start-up (jobs/startup.py): when its embedder starts loading, relative to the engines' start and the first
LLM call, and that the command's own imports stay light until then (issue 31: a job against warm models reaches its
first LLM call within 2 s). No Ray here: the model start is stood in for."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from emocaustics.jobs import startup
from emocaustics.jobs.configs import resolve
from emocaustics.jobs.spec import JobSpec

REPO = Path(__file__).resolve().parents[2]


class FakePool:
    first_call_at: float | None = None


class RecordingEmbedder:
    """An embedder whose load only records when it began."""

    def __init__(self) -> None:
        self.began: float | None = None
        self.loaded = threading.Event()

    def _load(self) -> None:
        self.began = time.monotonic()
        self.loaded.set()


def _job() -> JobSpec:
    return JobSpec.model_validate({"name": "t", "models": {"m": {"spec": "smoke"}},
                                   "runs": [{"task": "emotion", "method": "direct", "model": "m"}]})


def _start(monkeypatch, attached: bool, pool: FakePool) -> tuple[RecordingEmbedder, dict, float]:
    """start_models with a stand-in model start: attached (no engine starts) or starting one of the job's own."""
    import emocaustics.models.embedders as embedders
    import emocaustics.models.services as services

    def start_job_model(spec, label, keep_alive, report, starting=None):
        assert spec.kind == "smoke" and label == "m" and keep_alive is False  # the model parsed with the job
        if not attached:
            starting()
        return pool

    monkeypatch.setattr(services, "start_job_model", start_job_model)
    embedder = RecordingEmbedder()
    monkeypatch.setattr(embedders, "make_embedder", lambda spec: embedder)  # the job's embedder, made where it loads
    t0 = time.monotonic()
    made, got = startup.start_models(resolve(_job(), Path("/tmp/unused")))
    assert made is embedder
    return embedder, got, t0


def test_against_a_running_service_the_embedder_waits_for_the_first_llm_call(monkeypatch) -> None:
    pool = FakePool()
    embedder, got, _ = _start(monkeypatch, attached=True, pool=pool)
    assert set(got["models"]) == {"m"}
    time.sleep(0.3)
    assert embedder.began is None  # attached, no call yet: the embedder's imports would delay the first call
    sent = time.monotonic()
    pool.first_call_at = time.time()
    assert embedder.loaded.wait(5)
    assert 0 <= embedder.began - sent < 1.0


def test_an_engine_of_the_job_own_starting_loads_the_embedder_beside_it_at_once(monkeypatch) -> None:
    embedder, _, t0 = _start(monkeypatch, attached=False, pool=FakePool())
    assert embedder.loaded.wait(5)
    assert embedder.began - t0 < 1.0  # no call has gone out: the engine start is what it loads beside


def test_without_any_call_the_embedder_loads_after_the_wait(monkeypatch) -> None:
    monkeypatch.setattr(startup, "EMBEDDER_WAIT_S", 0.5)
    embedder, _, t0 = _start(monkeypatch, attached=True, pool=FakePool())  # e.g. every answer in the cache
    assert embedder.loaded.wait(5)
    assert 0.5 <= embedder.began - t0 < 1.5


@pytest.mark.slow
def test_a_run_command_imports_no_model_library_before_its_first_call() -> None:
    """What `emocaustics run jobs/quickstart.yaml` imports up to its configs (parser, job spec, tasks, data) and
    Ray's join: none of torch, vllm, sentence_transformers, scipy.optimize or Ray Data (each is loaded where it is
    used: the engine in its replica, the embedder beside the first calls, Ray Data by the scorers that use it)."""
    code = """
import sys
from pathlib import Path
import emocaustics.cli
emocaustics.cli.build_parser()
from emocaustics.core.cluster import quiet_ray_data
from emocaustics.jobs.preflight import load_all
from emocaustics.jobs.configs import resolve
from emocaustics.jobs.spec import load_job
import emocaustics.models.services, emocaustics.models.embedders, emocaustics.jobs.startup
job = load_job("jobs/quickstart.yaml")
configs = resolve(job, Path("/tmp/unused")).configs
load_all(configs)
quiet_ray_data()
heavy = ("torch", "vllm", "sentence_transformers", "transformers", "scipy.optimize", "ray.data", "pandas")
print(len(configs), [m for m in heavy if m in sys.modules])
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "9 []"


@pytest.mark.slow
def test_ray_data_is_quieted_when_it_is_first_imported() -> None:
    code = """
import logging, sys
from emocaustics.core.cluster import quiet_ray_data
quiet_ray_data(); quiet_ray_data()
print("ray.data" in sys.modules)
import ray
ctx = ray.data.DataContext.get_current()
print(ctx.enable_progress_bars, ctx.print_on_execution_start, logging.getLogger("ray.data").level)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:2] == ["False", f"False False {logging.WARNING}"]


def test_the_background_load_prints_nothing(capsys) -> None:
    """Its seconds go to startup.json and the job's last lines; a line printed from the thread landed, after a short
    job, in whatever the process printed next (once, the JSON of a `score --json` run in the same test process)."""
    done = threading.Event()
    got: dict = {"embedder": None}
    startup._load_in_background(lambda: time.sleep(0.05) or done.set(), got, wait=0)
    assert done.wait(5)
    for _ in range(100):  # the seconds are recorded just after the load returns
        if got["embedder"] is not None:
            break
        time.sleep(0.01)
    assert got["embedder"] is not None and got["embedder"] >= 0.05
    assert capsys.readouterr() == ("", "")
