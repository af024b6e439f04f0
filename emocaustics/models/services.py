"""Model services: replicas that outlive the job that started them, shared by later jobs and other users by name.

A service is a pool's replicas created as *detached* Ray actors (`ModelPool(detached=True)`) plus one small detached
keeper actor named `service-<actor prefix>` in the `emocaustics` namespace. The actor prefix is a hash of the model,
its spec and engine options (`ModelPool`), so any driver on the cluster that asks for the same spec computes the same
names: its pool finds the keeper, takes the running replicas by name (`ray.get_actor`) and routes to them exactly as
it routes to its own (least loaded, affinity key sticks to a replica, each request's priority passed to the engine).
An attached pool never stops the replicas; the keeper does, on `emocaustics models stop` or after `idle_timeout`
seconds without a request.

Why not Ray Serve: a window dialogue is a state machine of 5-40 dependent calls that runs inside the replica, next to
its engine (`VLLMEngineActor.run_one`), with the dialogue's affinity deciding the replica; Serve's deployments answer
one HTTP/handle request each and route by their own router, so the in-replica loops and our affinity/priority routing
would have to be rebuilt on top. Named detached actors keep the pool unchanged.

Detached actors outlive a driver only on a cluster started apart from it (`ray start --head`, or a real cluster):
a process's own local Ray ends with the process, so serving there is refused with a message saying what to do.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Any

from emocaustics.core.errors import UsageError
from emocaustics.models.pool import ModelPool, get_pool
from emocaustics.models.replicas import NAMESPACE, SERVICE_PREFIX, named_actor

DEFAULT_IDLE_TIMEOUT = 3600.0  # `keep_alive: true` and `serve` without --idle-timeout
NO_CLUSTER = ("model services need a Ray cluster that outlives this command: start one with `ray start --head` "
              "(see docs/clusters.md, 'Model services') and pass its address (--ray-address or RAY_ADDRESS, e.g. "
              "RAY_ADDRESS=127.0.0.1:6379); this command's own local Ray would end with it, and the service with it")
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def idle_seconds(value: Any) -> float | None:
    """`keep_alive` / `--idle-timeout` as seconds: true -> the default, a number -> seconds, '30m' / '2h' / '90s';
    0 or 'never' -> None (no idle timeout: only `models stop` ends it). A bad value is a ValueError saying so."""
    if value is True:
        return DEFAULT_IDLE_TIMEOUT
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value) or None
    if isinstance(value, str):
        if value.strip().lower() == "never":
            return None
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", value.lower())
        if m:
            return float(m.group(1)) * _UNITS[m.group(2)] or None
    raise ValueError(f"expected true, a number of seconds, a duration like '30m' or '2h', or 'never'; got {value!r}")


def require_lasting_cluster() -> None:
    """A UsageError unless this process is connected to a cluster that was started apart from it."""
    from emocaustics.core.cluster import started_own_ray

    if started_own_ray():
        raise UsageError(NO_CLUSTER)


class ServiceKeeper:
    """The detached actor that describes one service and stops it (on request, or when idle)."""

    def __init__(self, label: str, spec: str, prefix: str, replicas: int, idle_timeout: float | None) -> None:
        self.label, self.spec, self.prefix, self.replicas = label, spec, prefix, replicas
        self.idle_timeout = idle_timeout
        self.created = time.time()
        self.last_touch = self.created  # the last attach or serve: counts as a request
        self.state = "starting"
        self.instances: set[str] = set()  # every engine seen up: restarts count
        self._watch: Any = None

    def _actors(self) -> list[Any]:
        return [a for i in range(self.replicas) if (a := named_actor(f"{self.prefix}-{i}")) is not None]

    async def begin(self) -> None:
        """Start the idle watch (once; a second `serve` of the same service calls this again)."""
        if self._watch is None and self.idle_timeout:
            self._watch = asyncio.ensure_future(self._idle_loop())

    async def touch(self) -> str:
        self.last_touch = time.time()
        return self.state

    async def ready(self) -> None:
        if self.state == "starting":
            self.state = "ready"

    async def info(self) -> dict[str, Any]:
        stats = []
        for a in self._actors():
            try:
                stats.append(await asyncio.wait_for(a.stats.remote(), 30))
            except Exception as exc:  # a replica restarting or gone: listed, not fatal
                stats.append({"error": f"{type(exc).__name__}: {exc}"})
        for s in stats:
            if s.get("started") and s.get("instance"):
                self.instances.add(s["instance"])
        inflight = sum(int(s.get("inflight") or 0) for s in stats)
        last = max([self.last_touch] + [float(s["last_request"]) for s in stats if s.get("last_request")])
        started = [s["started_at"] for s in stats if s.get("started_at")]
        return {"name": self.label, "spec": self.spec, "id": self.prefix, "state": self.state,
                "replicas": self.replicas, "replicas_up": sum(1 for s in stats if s.get("started")),
                "idle_seconds": 0.0 if inflight else round(time.time() - last, 1), "inflight": inflight,
                "idle_timeout": self.idle_timeout, "requests": sum(int(s.get("calls") or 0) for s in stats),
                "engine_starts": len(self.instances), "engine_started_at": min(started) if started else None,
                "created": self.created}

    async def stop(self) -> None:
        """End the replicas (their engines die with them) and their placement groups; the caller ends the keeper."""
        import ray

        self.state = "stopping"
        for a in self._actors():
            try:
                ray.kill(a, no_restart=True)
            except Exception:  # already gone
                pass
        for i in range(self.replicas):
            try:
                ray.util.remove_placement_group(ray.util.get_placement_group(f"{self.prefix}-pg-{i}"))
            except Exception:  # none (no tensor parallelism), or already removed
                pass

    async def _idle_loop(self) -> None:
        import ray

        every = max(0.5, min(10.0, self.idle_timeout / 4))  # type: ignore[operator]
        while True:
            await asyncio.sleep(every)
            if self.state != "ready":
                continue
            info = await self.info()
            if not info["inflight"] and info["idle_seconds"] >= self.idle_timeout:  # type: ignore[operator]
                await self.stop()
                ray.kill(ray.get_runtime_context().current_actor, no_restart=True)
                return


def serve_model(spec: Any, label: str, idle_timeout: float | None, report: Callable[[str], None] = print,
                starting: Callable[[], None] | None = None) -> dict[str, Any]:
    """Start (or find running) the service for `spec` and wait until its engines are up; returns its `info()`.
    `starting()` is called first when engines start here (none running to attach to).

    Needs a connected cluster that outlives this process (`require_lasting_cluster`)."""
    require_lasting_cluster()
    return serve_pool(get_pool(spec, detached=True), label, idle_timeout, report, starting)


def serve_pool(pool: ModelPool, label: str, idle_timeout: float | None, report: Callable[[str], None] = print,
               starting: Callable[[], None] | None = None) -> dict[str, Any]:
    """`serve_model` for a pool made with `detached=True` (or attached to a running service)."""
    import ray

    keeper = pool.keeper  # the running service's, found when the pool was made (models/replicas.py)
    if pool.attached:
        report(f"model {label}: service {pool.actor_prefix} already running ({pool.name}); attached")
    else:
        keeper = ray.remote(ServiceKeeper).options(
            name=SERVICE_PREFIX + pool.actor_prefix, namespace=NAMESPACE, lifetime="detached", get_if_exists=True,
            num_cpus=0, max_concurrency=1000).remote(label, pool.name, pool.actor_prefix, len(pool.actors),
                                                     idle_timeout)
    asyncio.run(pool.start(report=report, starting=starting))
    ray.get([keeper.ready.remote(), keeper.begin.remote()])
    return ray.get(keeper.info.remote())


def start_job_model(spec: Any, label: str, keep_alive: Any, report: Callable[[str], None] = print,
                    starting: Callable[[], None] | None = None) -> ModelPool:
    """A job's model: its own replicas (stopped when the job ends), or a service's — the running one for this spec
    (attached), or a new one when the job says `keep_alive` (it stays up after the job, until idle or stopped).
    `starting()` is called before engines start here (never when attaching: jobs/startup.py)."""
    from emocaustics.models.factory import join_ray

    join_ray()  # in this (main) thread: the job's settings (core.cluster.configure)
    if keep_alive not in (None, False):  # `serve_model` for the job, keeping the pool it serves (one lookup)
        idle_timeout = idle_seconds(keep_alive)
        require_lasting_cluster()
        pool: ModelPool = get_pool(spec, detached=True)
        serve_pool(pool, label, idle_timeout, report, starting)
        return pool
    pool = get_pool(spec)
    if pool.attached:
        report(f"model {label}: attached to the running model service {pool.actor_prefix} (it stays up after "
               "this job)")
    asyncio.run(pool.start(report=report, starting=starting))
    return pool


def list_services() -> list[dict[str, Any]]:
    """Every model service on the connected cluster, with its `info()`, oldest first."""
    import ray

    names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
             if a.get("namespace") == NAMESPACE and a["name"].startswith(SERVICE_PREFIX)]
    out = []
    for name in names:
        try:
            out.append(ray.get(ray.get_actor(name, namespace=NAMESPACE).info.remote(), timeout=60))
        except Exception:  # stopped between the listing and the call
            continue
    return sorted(out, key=lambda s: s["created"])


def stop_services(names: list[str], everything: bool = False) -> list[str]:
    """Stop the services named (by name, id or spec), or all; returns the ids stopped. An unknown name is a
    UsageError listing the running ones."""
    import ray

    running = list_services()
    chosen = running if everything else [s for s in running if {s["name"], s["id"], s["spec"]} & set(names)]
    unknown = [n for n in names if not any(n in (s["name"], s["id"], s["spec"]) for s in running)]
    if unknown and not everything:
        raise UsageError(f"no model service named {', '.join(map(repr, unknown))}; running: "
                         + (", ".join(f"{s['name']} ({s['id']})" for s in running) or "none"))
    for s in chosen:
        keeper = named_actor(SERVICE_PREFIX + s["id"])
        if keeper is None:
            continue
        ray.get(keeper.stop.remote(), timeout=120)
        ray.kill(keeper, no_restart=True)
    return [s["id"] for s in chosen]
