"""The one place that connects to Ray: a cluster's address (argument, job spec or RAY_ADDRESS), else a small local
Ray with the object store capped and no dashboard. Ray Data's own banners and progress bars are turned off: our
progress lines replace them (they flood `ray job logs` and a terminal alike)."""

from __future__ import annotations

import logging
import os


def quiet_ray_data() -> None:
    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)


def connect(address: str | None = None, *, num_cpus: int | None = None, object_store_memory: int | None = None,
            namespace: str = "emocaustics") -> bool:
    """Join or start Ray unless this process is already connected; returns whether this call connected."""
    import ray

    quiet_ray_data()
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, namespace=namespace, log_to_driver=False)
    else:
        store = object_store_memory or int(os.environ.get("EMOCAUSTICS_OBJECT_STORE", 300_000_000))
        # "local": a new local Ray of our own. A bare `ray.init()` would join the cluster recorded in the Ray temp
        # dir's `ray_current_cluster` (the last `ray start` on this machine): a head that is gone fails the run, and
        # a live one is joined with our CPU count rejected.
        ray.init(address="local", num_cpus=num_cpus, object_store_memory=store, include_dashboard=False,
                 namespace=namespace, log_to_driver=False)
    return True
