"""A pool of Ray actors hosting replicas of one model, and the process-wide registry that loads a model once per job.

Placement (models/placement.py): each request or item goes to the least-loaded replica, except that everything with
the same affinity key (a dialogue id) sticks to the replica it first went to, so that the dialogue's shared prompt
prefixes hit that replica's prefix cache. Runs that are chains of dependent answers are placed longest first, and a
replica's load counts its longest chain's duration, so long chains keep lightly loaded replicas.

Failures: actors are created with `max_restarts`, so Ray brings a crashed replica back (its engine restarts on the
first call). Calls in flight on the crashed actor fail with `RayActorError`; the pool retries them (up to `retries`
times, preferring another replica), and only then reports them as failed Completions / `RunFailure`s. Ray's own
`max_task_retries` is not used because it cannot prefer a healthy replica and would hide the failure count.
A model service stopped and served again under a job (new actors under the same names) is waited for, bounded, and
re-attached to (models/comeback.py); if it does not come back, the run stops with `ServiceGone` (a typed stop).

The pool is a model of the `LLM` interface (models/base.py) and adds `start` and `shutdown`; its replica actors
are made (or a service's found) by models/replicas.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sys
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from emocaustics.models import replicas as replica_actors
from emocaustics.core.errors import ServiceGone
from emocaustics.models.base import ChatRequest, Completion, ModelBase
from emocaustics.models.local import RunFailure
from emocaustics.models.placement import Placement
from emocaustics.models.usage import Usage

if TYPE_CHECKING:
    from emocaustics.models.spec import LLMSpec

START_REPORT_EVERY = 10.0  # seconds between "waiting for engines" lines while replicas start


class ReplicaDied(Exception):
    """A call failed on every try because its replica died; the message names the cause (models/replica_death.py)."""
MAX_COMEBACKS = 3  # re-attachments of one call to a restarted service's replica (models/comeback.py)


class ModelPool(ModelBase):
    runs_remotely = True  # `run()` executes next to the engine (see CachedLLM.run)

    def __init__(
        self,
        model: str,
        *,
        name: str,
        cache_id: str | None = None,
        replicas: int = 1,
        engine_opts: dict[str, Any] | None = None,
        gpus_per_replica: int | None = None,
        cpus_per_replica: float = 0.0,
        max_restarts: int = 3,
        retries: int = 2,
        actor_cls: type | None = None,
        actor_options: dict[str, Any] | None = None,
        detached: bool = False,
    ) -> None:
        import ray

        if replicas < 1:
            raise ValueError("replicas must be >= 1")
        self.model = model
        self.name = name
        self.cache_id = cache_id or name
        self.retries = retries
        self.engine_opts = dict(engine_opts or {})
        tp = int(self.engine_opts.get("tensor_parallel_size", 1)) * int(self.engine_opts.get("pipeline_parallel_size", 1))
        if gpus_per_replica is None:  # GPUs when the cluster has them, one per tensor/pipeline-parallel rank
            gpus_per_replica = tp if ray.cluster_resources().get("GPU", 0) > 0 else 0
        self.gpus_per_replica = gpus_per_replica
        key = json.dumps([model, name, self.engine_opts, gpus_per_replica], sort_keys=True, default=str)
        self.actor_prefix = f"model-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
        self._placement_groups: list[Any] = []
        # A stand-in engine (benchmarks/sim_engine.py) replaces VLLMEngineActor through these; extra Ray actor
        # options (custom resources, a scheduling strategy) go through `actor_options`.
        self._actor_cls = actor_cls
        self._actor_options = dict(actor_options or {})
        self.detached = detached  # replicas outlive this process (a model service: models/services.py)
        self.keeper = replica_actors.service_keeper(self)  # a model service's, found once (models/services.py)
        self.attached = self.keeper is not None
        if self.attached:  # the same spec and engine options name the same replicas: route to them, start none
            self._actors = [ray.get_actor(f"{self.actor_prefix}-{i}", namespace=replica_actors.NAMESPACE)
                            for i in range(replicas)]
        else:
            self._actors = [self._make_actor(i, max_restarts, cpus_per_replica) for i in range(replicas)]
        self._place = Placement(replicas)  # load and affinity per replica
        self._load = self._place.work
        self._instances: dict[str, float | None] = {}  # engine instance id -> its start seconds
        self.retried = 0  # calls re-sent after a replica died
        self._deaths_told: set[tuple[int, Any]] = set()  # (replica, pid) of each death already reported
        self.service_wait: float | None = None  # seconds to wait for a stopped service (None: models/comeback.py)
        self._comebacks: dict[tuple[str, str], Any] = {}  # those waits, one per dead replica actor
        self.first_call_at: float | None = None  # epoch of this pool's first request (the run's startup.json)

    # -- placement -------------------------------------------------------------------------------------------
    def _make_actor(self, index: int, max_restarts: int, cpus: float) -> Any:
        """Replica `index`'s actor (models/replicas.py); a stand-in pool (benchmarks/sim_cluster.py) overrides it."""
        return replica_actors.make_actor(self, index, max_restarts, cpus)

    async def _call(self, affinity: str | None, weight: int, method: str, *args: Any, chain: int = 0) -> Any:
        """Call `method` on a replica; on actor death retry elsewhere. Raises the last error when retries run out.
        `chain`: the run's answers that wait for each other in sequence (models/placement.py)."""
        from ray.exceptions import RayActorError

        self.first_call_at = self.first_call_at or time.time()
        tried: set[int] = set()
        attempt = comebacks = 0
        while True:
            i, token = await self._place.place(affinity, weight, chain, tried)
            try:
                return await getattr(self._actors[i], method).remote(*args)
            except RayActorError as exc:
                reason = self._death(i, exc)
                if comebacks < MAX_COMEBACKS and await self._service_back(i):  # a restarted service: not a failed try
                    comebacks += 1
                    self.retried += 1
                    continue
                tried.add(i)
                if attempt == self.retries:
                    raise ReplicaDied(f"replica {i} of model {self.name} died: {reason}") from exc
                self.retried += 1
                await asyncio.sleep(min(0.5 * 2**attempt, 5.0))  # give Ray time to notice and restart the actor
                attempt += 1
            finally:
                self._place.release(i, weight, token)

    async def _service_back(self, i: int) -> bool:
        """A service's replica `i` died: wait (bounded) for the service to put a new actor under its name, and route to
        that one (models/comeback.py). False for a job's own replicas, and when Ray restarts the same actor."""
        if not (self.attached or self.detached):
            return False
        from emocaustics.models import comeback

        actor = await comeback.wait_for_replica(
            self._comebacks, model=self.name, service=self.actor_prefix, name=f"{self.actor_prefix}-{i}",
            dead=self._actors[i], seconds=comeback.wait_seconds(self.service_wait))
        if actor is None:
            return False
        self._actors[i] = actor
        return True

    def _death(self, i: int, exc: BaseException) -> str:
        """Why replica `i` died (what it recorded before exiting, else Ray's error), printed once per death."""
        from emocaustics.models import replica_death

        info = replica_death.recorded(self._actors[i]._actor_id.hex())
        dead_pid = re.search(r"\bpid: (\d+)", str(exc))
        if info and dead_pid and int(dead_pid.group(1)) != info.get("pid"):
            info = None  # left by an earlier death of this replica, not this one
        reason = replica_death.describe(info, exc)
        key = (i, info["pid"] if info else reason)
        if key not in self._deaths_told:
            self._deaths_told.add(key)
            print(f"model {self.name}: replica {i} died: {reason}", file=sys.stderr, flush=True)
        return reason

    # -- LLM protocol ----------------------------------------------------------------------------------------
    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        """One Completion per request, same order; requests are grouped into one actor call per replica."""
        groups: dict[tuple[int, str | None], list[int]] = {}
        for n, r in enumerate(requests):
            i = self._place.pick(r.affinity)
            self._load[i] += 1  # counted while assigning, so that one big batch spreads out
            groups.setdefault((i, r.affinity), []).append(n)
        for (i, _), idx in groups.items():
            self._load[i] -= len(idx)

        async def send(affinity: str | None, idx: list[int]) -> list[Completion]:
            try:
                return await self._call(affinity, len(idx), "generate", [requests[n] for n in idx])
            except ServiceGone:  # a typed stop: the run stops (solve/plan.py), named once
                raise
            except Exception as exc:  # replica gone for good, or a bug in the actor: every request gets the reason
                return [Completion(text="", error=f"model replica failed: {type(exc).__name__}: {exc}")] * len(idx)

        # One actor call per (replica, affinity): a retry after a crash re-places exactly that dialogue's requests.
        results = await asyncio.gather(*(send(aff, idx) for (_, aff), idx in groups.items()))
        out: list[Completion | None] = [None] * len(requests)
        for idx, answers in zip(groups.values(), results):
            for n, c in zip(idx, answers):
                out[n] = c
        return out  # type: ignore[return-value]

    async def run(
        self,
        fn: Callable[[Any, Any], Awaitable[Any]],
        items: list[Any],
        affinity_key: Callable[[Any], str] | None = None,
        *,
        cache_path: Any = None,
        weight_key: Callable[[Any], int] | None = None,
        chain_key: Callable[[Any], int] | None = None,
    ) -> list[Any]:
        """`await fn(llm, item)` for every item inside a replica (the least loaded, or the item's affinity replica).

        Results come back in item order; an item whose function raised, or whose replica died more than `retries`
        times, is a `RunFailure` with the reason. `fn` and items must be picklable (cloudpickle). `weight_key` gives
        an item's expected cost (e.g. its size in answers) so that "least loaded" balances work, not item counts;
        `chain_key` its answers that wait for each other (long chains are placed first, on lightly loaded replicas).
        """
        import ray

        _pickle_by_value_if_local(fn)
        fn_ref = ray.put(fn)  # shipped once, not once per item
        path = str(cache_path) if cache_path is not None else None

        async def one(item: Any) -> Any:
            key = str(affinity_key(item)) if affinity_key is not None else None
            try:
                weight = max(1, int(weight_key(item))) if weight_key is not None else 1
                chain = int(chain_key(item)) if chain_key is not None else 0
                return await self._call(key, weight, "run_one", fn_ref, item, path, chain=chain)
            except ServiceGone:  # a typed stop: the run stops (solve/plan.py), named once
                raise
            except Exception as exc:
                return RunFailure(f"model replica failed: {type(exc).__name__}: {exc}")

        return list(await asyncio.gather(*(one(item) for item in items)))

    # -- lifecycle and numbers -------------------------------------------------------------------------------
    async def start(self, report: Callable[[str], None] | None = None, every: float = START_REPORT_EVERY,
                    starting: Callable[[], None] | None = None) -> float:
        """Start every replica's engine (in parallel); returns the wall seconds it took. `starting()` is called first
        when the engines start here (never when attached to a service's: jobs/startup.py waits on it).

        An engine takes from half a minute (a tiny model on CPU) to many minutes (a large one): while any is starting,
        `report` gets a line every `every` seconds saying how many are ready and what is awaited."""
        if starting is not None and not self.attached:
            starting()
        t0 = time.perf_counter()
        pending = {asyncio.ensure_future(self._start_one(a)) for a in self._actors}
        n = len(pending)
        while pending:
            done, pending = await asyncio.wait(pending, timeout=every)
            for task in done:
                if task.exception() is not None:  # an engine that cannot start fails the start, as before
                    for other in pending:
                        other.cancel()
                    raise task.exception()  # type: ignore[misc]
            if pending and report is not None:
                report(f"model {self.name}: {n - len(pending)} of {n} replica engine(s) ready after "
                       f"{time.perf_counter() - t0:.0f} s; waiting for {len(pending)} (vLLM loads the weights, "
                       "profiles memory and compiles the model)")
        return time.perf_counter() - t0

    async def _start_one(self, actor: Any) -> None:
        info = await actor.start.remote()
        self._instances.setdefault(info["instance"], info["start_seconds"])

    async def stats(self) -> dict[str, Any]:
        """Totals over replicas: calls, tokens, cache hits, engine starts, prefix-cache hit rate, retries."""
        from ray.exceptions import RayActorError

        total = Usage()
        per_replica = []
        for a in self._actors:
            try:
                s = await a.stats.remote()
            except RayActorError as exc:
                per_replica.append({"error": str(exc)})
                continue
            total.add(s)
            if s["started"]:
                self._instances.setdefault(s["instance"], s["start_seconds"])
            per_replica.append(s)
        out: dict[str, Any] = total.as_dict()
        out["engine_starts"] = len(self._instances)  # every engine this pool ever saw start, restarts included
        out["engine_start_seconds"] = [v for v in self._instances.values() if v is not None]
        out["prefix_cache_hit_rate"] = total.cached_prompt_tokens / total.prompt_tokens if total.prompt_tokens else None
        out["replicas"] = len(self._actors)
        out["retried"] = self.retried
        out["per_replica"] = per_replica
        return out

    @property
    def actors(self) -> list[Any]:
        return list(self._actors)

    def shutdown(self) -> None:
        """Kill the replicas (their engines die with them) and forget this pool in the registry. A service's replicas
        (this pool attached to them, or made them for one) are left running: only their service stops them."""
        import ray

        for a in [] if self.attached or self.detached else self._actors:
            try:
                ray.kill(a, no_restart=True)
            except Exception:  # already gone
                pass
        for pg in [] if self.detached else self._placement_groups:
            ray.util.remove_placement_group(pg)
        for key, pool in list(_POOLS.items()):
            if pool is self:
                del _POOLS[key]


def _pickle_by_value_if_local(fn: Any) -> None:
    """Functions from scripts, tests and benchmarks travel by value: workers cannot import those modules by name.

    Functions of installed packages (ours included) keep travelling by reference, which is smaller and faster.
    """
    from pathlib import Path

    from ray import cloudpickle

    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    file = getattr(module, "__file__", None)
    if module is None or file is None or module.__name__ == "__main__":
        return  # __main__ and builtins: cloudpickle already does the right thing
    here = Path(file).resolve()
    package_dir = Path(__file__).resolve().parents[1]  # .../emocaustics
    if "site-packages" in here.parts or "dist-packages" in here.parts or package_dir in here.parents:
        return
    cloudpickle.register_pickle_by_value(module)


# -- registry ------------------------------------------------------------------------------------------------
_POOLS: dict[str, ModelPool] = {}


def get_pool(spec: LLMSpec, *, detached: bool = False) -> ModelPool:
    """The one pool of this process for a parsed `smoke` / `vllm:` spec; created on first use.

    Engine options are part of the key: the same model with another max_model_len is another pool.
    `detached`: replicas that outlive this process, for a model service (models/services.py).
    """
    from emocaustics.models.poolargs import pool_arguments

    key = spec.canonical()
    pool = _POOLS.get(key)
    if pool is None:
        pool = _POOLS[key] = ModelPool(**pool_arguments(spec, key), detached=detached)
    return pool


def registered_pools() -> dict[str, ModelPool]:
    return dict(_POOLS)


def shutdown_pools() -> None:
    for pool in list(_POOLS.values()):
        pool.shutdown()
