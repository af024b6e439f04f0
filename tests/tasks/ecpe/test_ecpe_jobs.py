"""The shipped ECPE job spec loads with the job loader: both LLM methods on the plain `smoke` model (the same engine as
the test session's, so the engine test runs it as shipped), the calibration rows, and a handful of test conversations
whose gold pairs cover all six emotions (checked on the published data when it is here)."""

from __future__ import annotations

from pathlib import Path

from emocaustics.core.task import needs_model
from emocaustics.jobs.spec import load_job
from emocaustics.tasks.ecpe import data

JOB = Path(__file__).resolve().parents[3] / "jobs" / "ecpe-quickstart.yaml"


def test_quickstart_job_loads_with_both_methods_and_the_calibration_rows():
    job = load_job(JOB)
    runs = [(run, *run.resolve()) for run in job.expand()]
    assert sorted(o.method for _, _, o in runs) == ["baseline", "direct", "oracle", "utterance"]
    assert all(t.name == "ecpe" and (run.model == "smoke") == needs_model(t, o) for run, t, o in runs)
    assert job.models["smoke"].parsed().canonical() == "smoke"  # plain: shares the test session's engine
    ids = job.dataset_for(runs[0][0])["ids"]
    assert 3 <= len(ids) <= 6


def test_quickstart_conversations_cover_every_emotion(ecac_root):
    job = load_job(JOB)
    task_ds = job.dataset_for(next(iter(job.expand())))
    loaded = data.load(ecac_root, ids=task_ds["ids"])
    assert [int(s.id) for s in loaded.samples] == task_ds["ids"]
    emotions = {e.split("_")[1] for s in loaded.samples for e, _ in s.target["subtask1"]}
    assert emotions == {"anger", "disgust", "fear", "joy", "sadness", "surprise"}
