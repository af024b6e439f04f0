"""A pool's replica actors, made or found: the Ray actor options of a replica (its name in the namespace, restarts,
GPUs, a tensor-parallel replica's placement group, strict spread over nodes), and whether a model service
(models/services.py) already holds a pool's replicas, to attach to instead."""

from __future__ import annotations

from typing import Any

NAMESPACE = "emocaustics"
# A model service (models/services.py) is a keeper actor named SERVICE_PREFIX + the pool's actor prefix, beside its
# detached replicas: a pool that finds one attaches to those replicas and never stops them.
SERVICE_PREFIX = "service-"


def make_actor(pool: Any, index: int, max_restarts: int, cpus: float) -> Any:
    """Replica `index` of `pool` (a `models.pool.ModelPool`): its actor, created or, by name, found running."""
    import ray

    from emocaustics.models.vllm_actor import VLLMEngineActor

    opts: dict[str, Any] = {
        "name": f"{pool.actor_prefix}-{index}",
        "namespace": NAMESPACE,
        "get_if_exists": True,  # a second driver process of the same job reuses the loaded replica
        "max_restarts": max_restarts,
        "max_task_retries": 0,  # the pool retries (models/pool.py)
        "max_concurrency": 100_000,  # async actor: every dialogue of the job may be in flight
        "num_cpus": cpus,  # the engine core is a process vLLM spawns, outside Ray's accounting either way
    }
    if pool.detached:  # lives on when this driver ends, until its service stops it (models/services.py)
        opts["lifetime"] = "detached"
    engine_opts = dict(pool.engine_opts)
    g = pool.gpus_per_replica
    if g == 1:
        opts["num_gpus"] = 1
    elif g > 1:
        # Tensor parallel: reserve all ranks' GPUs on one node; vLLM's Ray executor places its workers in the
        # placement group it runs in (captured as the current one).
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        pg = placement_group([{"GPU": 1, "CPU": 1}] * g, strategy="STRICT_PACK",
                             **({"name": f"{pool.actor_prefix}-pg-{index}", "lifetime": "detached"}
                                if pool.detached else {}))
        ray.get(pg.ready())
        pool._placement_groups.append(pg)
        opts["scheduling_strategy"] = PlacementGroupSchedulingStrategy(pg, placement_group_capture_child_tasks=True)
        engine_opts.setdefault("distributed_executor_backend", "ray")
    spread = pool._actor_options.get("scheduling_strategy") == "SPREAD"
    opts.update({k: v for k, v in pool._actor_options.items() if not (spread and k == "scheduling_strategy")})
    if spread and g <= 1:  # tensor-parallel replicas keep their placement group (one node per replica anyway)
        opts["scheduling_strategy"] = spread_strategy(index, g)
    cls = ray.remote(pool._actor_cls or VLLMEngineActor)
    return cls.options(**opts).remote(pool.model, engine_opts, pool.name, pool.cache_id)


def spread_strategy(index: int, gpus: float) -> Any:
    """Replica `index` on the index-th eligible node, round robin. Ray's own "SPREAD" is best effort and was seen
    putting both replicas of a 2-node cluster on one node, and so was *soft* node affinity (3 runs in 5); strict
    affinity held. The price: a replica whose node is gone is not restarted elsewhere; the pool then retries its
    calls on the other replicas (models/pool.py)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive") and n["Resources"].get("GPU", 0) >= gpus)
    if not nodes:
        return "SPREAD"
    return NodeAffinitySchedulingStrategy(node_id=nodes[index % len(nodes)], soft=False)


def named_actor(name: str) -> Any | None:
    """The actor of that name in our namespace; None when there is none."""
    import ray

    try:
        return ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:  # no actor of that name
        return None


def service_keeper(pool: Any) -> Any | None:
    """The keeper of the model service that holds `pool`'s replicas (None: no service does); attaching counts as a
    request for its idle clock."""
    import ray

    keeper = named_actor(SERVICE_PREFIX + pool.actor_prefix)
    if keeper is not None and ray.get(keeper.touch.remote()) == "stopping":
        raise RuntimeError(f"model service {pool.name} ({pool.actor_prefix}) is stopping; run again once it is "
                           "gone (`emocaustics models` lists the services)")
    return keeper
