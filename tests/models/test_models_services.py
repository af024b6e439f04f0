"""Model services (models/services.py) with a stand-in replica on the test session's Ray: attach by name, share, list,
idle timeout, stop; and the refusals (no lasting cluster, bad durations). The real engine on a `ray start` cluster is
tested in tests/jobs/test_jobs_services.py."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid

import pytest

from emocaustics.core.errors import ServiceGone, UsageError
from emocaustics.models.base import ChatRequest, Completion
from emocaustics.models.pool import ModelPool
from emocaustics.models.services import idle_seconds, list_services, serve_model, serve_pool, stop_services


class CountingActor:
    """Answers every request with the replica's instance id; counts calls and engine starts like VLLMEngineActor."""

    def __init__(self, model, engine_opts, name, cache_id=None) -> None:
        self.instance = uuid.uuid4().hex
        self.calls = 0
        self.started = False
        self.last_request = time.time()
        self.seen: list[tuple[str | None, int]] = []  # (affinity, priority) of each request

    async def start(self):
        self.started = True
        return {"instance": self.instance, "start_seconds": 0.0}

    async def generate(self, requests):
        self.started = True
        self.calls += len(requests)
        self.seen += [(r.affinity, r.priority) for r in requests]
        self.last_request = time.time()
        return [Completion(text=self.instance) for _ in requests]

    async def seen_requests(self):
        return self.seen

    async def stats(self):
        return {"calls": self.calls, "instance": self.instance, "started": self.started, "start_seconds": 0.0,
                "inflight": 0, "last_request": self.last_request, "started_at": 1.0}


def _request(affinity: str, priority: int = 0) -> ChatRequest:
    return ChatRequest(messages=({"role": "user", "content": "hi"},), affinity=affinity, priority=priority)


def _wait_gone(service_id: str, deadline_s: float = 60) -> bool:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if all(s["id"] != service_id for s in list_services()):
            return True
        time.sleep(0.5)
    return False


def test_a_second_pool_attaches_by_name_shares_the_replicas_and_never_stops_them(ray_local) -> None:
    import ray

    name = f"svc-{uuid.uuid4().hex[:6]}"
    served = ModelPool("m", name=name, replicas=2, actor_cls=CountingActor, gpus_per_replica=0, detached=True)
    starting: list[str] = []  # told before engines start here, never on an attach (the job's embedder waits on it)
    info = serve_pool(served, "mine", idle_timeout=None, report=lambda line: None,
                      starting=lambda: starting.append("served"))
    try:
        assert info["state"] == "ready" and info["replicas_up"] == 2 and info["id"] == served.actor_prefix
        # another driver (or job) asking for the same spec: a new pool object, same names
        job = ModelPool("m", name=name, replicas=2, actor_cls=CountingActor, gpus_per_replica=0)
        assert job.attached and not served.attached
        serve_pool(job, "mine", idle_timeout=None, report=lambda line: None, starting=lambda: starting.append("job"))
        assert starting == ["served"]
        assert [a._actor_id for a in job.actors] == [a._actor_id for a in served.actors]
        answers = asyncio.run(job.generate([_request("d1", 3), _request("d1", 3), _request("d2", 1)]))
        d1 = {c.text for c in answers[:2]}
        assert len(d1) == 1 and answers[2].text not in d1  # affinity: d1 on one replica, d2 on the other
        seen = sorted(x for a in job.actors for x in ray.get(a.seen_requests.remote()))
        assert seen == [("d1", 3), ("d1", 3), ("d2", 1)]  # each call kept its priority through the service
        job.shutdown()  # the attached job ends
        listed = next(s for s in list_services() if s["id"] == served.actor_prefix)
        assert listed["requests"] == 3 and listed["engine_starts"] == 2 and listed["state"] == "ready"
        assert listed["name"] == "mine" and listed["spec"] == name
        assert ray.get(served.actors[0].stats.remote())["calls"] >= 1  # still alive after the job's shutdown
    finally:
        stop_services([served.actor_prefix])
    assert _wait_gone(served.actor_prefix)
    with pytest.raises(ValueError):  # the replicas are gone with the service
        ray.get_actor(f"{served.actor_prefix}-0", namespace="emocaustics")


def test_an_idle_service_stops_by_itself_and_an_unknown_name_is_a_usage_error(ray_local) -> None:
    import ray

    pool = ModelPool("m", name=f"idle-{uuid.uuid4().hex[:6]}", replicas=1, actor_cls=CountingActor,
                     gpus_per_replica=0, detached=True)
    serve_pool(pool, "idle", idle_timeout=1.0, report=lambda line: None)
    with pytest.raises(UsageError, match="no model service named 'nope'"):
        stop_services(["nope"])
    assert _wait_gone(pool.actor_prefix), "idle service still listed"
    with pytest.raises(ValueError):
        ray.get_actor(f"{pool.actor_prefix}-0", namespace="emocaustics")


def test_serving_on_this_process_own_ray_is_refused_with_what_to_do(ray_local) -> None:
    with pytest.raises(UsageError, match="ray start --head"):
        serve_model("smoke", "smoke", 60.0)


def test_durations() -> None:
    assert idle_seconds(True) == 3600.0 and idle_seconds(90) == 90.0 and idle_seconds("30m") == 1800.0
    assert idle_seconds("2h") == 7200.0 and idle_seconds("never") is None and idle_seconds(0) is None
    for bad in ("soon", -1, "3 weeks"):
        with pytest.raises(ValueError, match="duration"):
            idle_seconds(bad)


def test_keep_alive_is_checked_in_the_job_spec_and_left_out_of_the_job_hash() -> None:
    from emocaustics.jobs.rundir import job_hash
    from emocaustics.jobs.spec import JobSpec, ModelSpec

    with pytest.raises(ValueError, match="keep_alive"):
        ModelSpec(spec="smoke", keep_alive="soon")
    base = {"name": "k", "dataset": {"subset": "sample"}, "runs": [{"task": "sextuple", "method": "oracle"}]}
    plain = JobSpec.model_validate({**base, "models": {"m": {"spec": "smoke"}}})
    kept = JobSpec.model_validate({**base, "models": {"m": {"spec": "smoke", "keep_alive": "30m"}}})
    assert job_hash(plain) == job_hash(kept)


class SlowActor(CountingActor):
    """CountingActor whose answers take 3 s, so that a test can stop the service while calls are in flight."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.inflight = 0

    async def generate(self, requests):
        self.inflight += len(requests)
        try:
            await asyncio.sleep(3.0)
            return await super().generate(requests)
        finally:
            self.inflight -= len(requests)

    async def stats(self):
        return {**(await super().stats()), "inflight": self.inflight}


def _slow_service(name: str) -> ModelPool:
    pool = ModelPool("m", name=name, replicas=1, actor_cls=SlowActor, gpus_per_replica=0, detached=True)
    serve_pool(pool, "slow", idle_timeout=None, report=lambda line: None)
    return pool


def _generate_in_thread(pool: ModelPool, requests: list[ChatRequest]) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def go() -> None:
        t0 = time.monotonic()
        try:
            out["answers"] = asyncio.run(pool.generate(requests))
        except ServiceGone as stop:  # the typed stop (core/errors.py): kept for the test to look at
            out["stop"] = stop
        out["seconds"] = time.monotonic() - t0

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread, out


def _wait_inflight(pool: ModelPool) -> None:
    import ray

    deadline = time.monotonic() + 30
    while ray.get(pool.actors[0].stats.remote())["inflight"] == 0:
        assert time.monotonic() < deadline, "the job's calls never reached the service"
        time.sleep(0.05)


def test_a_job_survives_its_service_being_stopped_and_served_again_mid_call(ray_local) -> None:
    name = f"restart-{uuid.uuid4().hex[:6]}"
    first = _slow_service(name)
    job = ModelPool("m", name=name, replicas=1, actor_cls=SlowActor, gpus_per_replica=0)
    assert job.attached
    job.service_wait = 60.0
    try:
        thread, out = _generate_in_thread(job, [_request(f"d{n}") for n in range(4)])
        _wait_inflight(first)  # the job's 4 calls are in the old replica
        stop_services([first.actor_prefix])
        assert _wait_gone(first.actor_prefix)
        time.sleep(2.0)
        assert thread.is_alive(), "the job gave up while its service was down"
        second = _slow_service(name)  # `emocaustics serve` again: new actors under the same names
        assert second.actors[0]._actor_id != first.actors[0]._actor_id
        thread.join(60)
        assert not thread.is_alive()
        import ray

        new_instance = ray.get(second.actors[0].stats.remote())["instance"]
        assert [c.error for c in out["answers"]] == [None] * 4  # no call lost
        assert {c.text for c in out["answers"]} == {new_instance}  # every one answered by the restarted service
        assert job.actors[0]._actor_id == second.actors[0]._actor_id and job.retried >= 4
        assert job.first_call_at is not None and job.first_call_at < time.time()  # startup.json's first_llm_call_at
    finally:
        if any(s["id"] == first.actor_prefix for s in list_services()):
            stop_services([first.actor_prefix])
    assert _wait_gone(first.actor_prefix)


def test_a_service_that_does_not_come_back_stops_the_calls_with_the_typed_stop_once(ray_local) -> None:
    name = f"gone-{uuid.uuid4().hex[:6]}"
    first = _slow_service(name)
    job = ModelPool("m", name=name, replicas=1, actor_cls=SlowActor, gpus_per_replica=0)
    job.service_wait = 2.0
    thread, out = _generate_in_thread(job, [_request("d1"), _request("d2")])
    _wait_inflight(first)
    stop_services([first.actor_prefix])
    thread.join(60)
    assert not thread.is_alive()
    # the typed stop (exit 4 in a job), not a failed answer per request
    assert "answers" not in out and isinstance(out["stop"], ServiceGone)
    assert "did not come back within 2 s" in str(out["stop"]) and "--resume" in str(out["stop"])
    later, again = _generate_in_thread(job, [_request("d3")])  # the wait ran out once: no second wait
    later.join(30)
    assert isinstance(again["stop"], ServiceGone) and again["seconds"] < 1.5
