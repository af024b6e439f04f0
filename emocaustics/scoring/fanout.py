"""The one scoring fan-out: a task's per-batch scoring steps run in this process for small runs, or as a Ray Data
stream of `map_batches` stages above a size the task declares.

A task that scores many independent units (EmoCaustics' dialogues, narrative's stories) hands this module its items
(plain dicts) and its stages: a function of a batch (a plain Ray task per batch) or a class whose instances are the
stage (an actor pool: a stage that loads a model once, such as an embedder). The task declares its threshold once
(`RAY_ABOVE` beside its scorer); `wants_ray` is the one rule for every caller: a job, `ec.score`, a task's own
`score` command. Ray is joined or started through `models.factory.join_ray`, and a Ray this call started is stopped
after it. Rows cross the Ray boundary as the stages make them (the tasks put irregular documents in JSON strings,
which Arrow's column inference would coerce), and come back in no particular order: callers key them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Stage:
    fn: Any  # a function batch -> batch (a Ray task per batch) or a class (an actor pool of `actors` instances)
    kwargs: dict[str, Any] = field(default_factory=dict)  # the function's keyword arguments, or the class's
    actors: int | None = None  # a class only: how many instances serve the stage


def wants_ray(engine: str, units: int, above: int, *, allowed: bool = True) -> bool:
    """Whether to fan out through Ray: `engine` "ray" always, "local" never, "auto" when Ray is allowed here and
    there are more than `above` units (below it Ray's start-up costs more than it saves)."""
    if engine not in ("auto", "local", "ray"):
        raise ValueError(f"scoring engine {engine!r}: expected auto, local or ray")
    return engine == "ray" or (engine == "auto" and allowed and units > above)


def ray_map(items: list[dict[str, Any]], stages: list[Stage], *, batch_size: int, blocks: int | None = None,
            num_cpus: int | None = None) -> list[dict[str, Any]]:
    """`items` through `stages` as one Ray Data stream on the connected Ray (a local one is started when none is,
    with `num_cpus`, and stopped after); every output row, in no particular order."""
    import ray

    from emocaustics.core.cluster import held
    from emocaustics.models.factory import join_ray

    started = join_ray(num_cpus=num_cpus) and not held()  # a cluster the job named stays joined
    try:
        ds = ray.data.from_items(items, override_num_blocks=blocks or max(1, -(-len(items) // batch_size)))
        for stage in stages:
            if stage.actors:
                ds = ds.map_batches(stage.fn, fn_constructor_kwargs=stage.kwargs, batch_size=batch_size,
                                    compute=ray.data.ActorPoolStrategy(size=stage.actors), batch_format="numpy")
            else:
                ds = ds.map_batches(stage.fn, fn_kwargs=stage.kwargs, batch_size=batch_size, batch_format="numpy")
        return ds.take_all()
    finally:
        if started:
            ray.shutdown()
