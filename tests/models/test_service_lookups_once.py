"""A job's model service is looked up once: `start_job_model` with `keep_alive` takes its pool from the registry once
and hands that pool to `serve_pool` (it looked it up again to return it), and `serve_pool` uses the keeper the pool
found when it was made (`ModelPool.keeper`) instead of asking Ray for it by name a second time. No Ray, no engine."""

from __future__ import annotations

from types import SimpleNamespace

from emocaustics.models import factory, services


class _Keeper:
    def __getattr__(self, method: str) -> SimpleNamespace:
        return SimpleNamespace(remote=lambda *a: method)


def test_a_kept_alive_job_model_looks_its_pool_up_once_and_serves_that_pool(monkeypatch) -> None:
    pool, lookups, served = object(), [], []
    monkeypatch.setattr(factory, "join_ray", lambda: None)
    monkeypatch.setattr(services, "require_lasting_cluster", lambda: None)
    monkeypatch.setattr(services, "get_pool", lambda spec, detached=False: lookups.append((spec, detached)) or pool)
    monkeypatch.setattr(services, "serve_pool", lambda p, label, idle, report, starting: served.append((p, idle)))
    assert services.start_job_model("spec", "mine", "30m", report=lambda line: None) is pool
    assert lookups == [("spec", True)] and served == [(pool, 1800.0)]


def test_serving_an_attached_pool_asks_ray_for_no_keeper_by_name(monkeypatch) -> None:
    import ray

    asked, said, started = [], [], []

    async def start(report=None, starting=None) -> float:
        started.append(starting)
        return 0.0

    pool = SimpleNamespace(attached=True, keeper=_Keeper(), actor_prefix="model-1", name="smoke", actors=[],
                           start=start)
    monkeypatch.setattr(services, "named_actor", lambda name: asked.append(name) or pool.keeper)
    monkeypatch.setattr(ray, "get", lambda refs, **kw: {"state": "ready"} if refs == "info" else refs)
    assert services.serve_pool(pool, "mine", None, report=said.append) == {"state": "ready"}
    assert asked == [] and said == ["model mine: service model-1 already running (smoke); attached"]
    assert len(started) == 1
