"""The one place that connects to Ray: a cluster's address (argument, job spec or RAY_ADDRESS), else a small local
Ray with the object store capped and no dashboard. Ray Data's own banners and progress bars are turned off: our
progress lines replace them (they flood `ray job logs` and a terminal alike)."""

from __future__ import annotations

import importlib.abc
import importlib.util
import logging
import os
import sys
from typing import Any


def _quiet_now() -> None:
    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)


class _QuietOnImport(importlib.abc.MetaPathFinder):
    """Quiets Ray Data right after `ray.data` is first imported (its import sets its own logging up, so the level
    must be set after it). Importing Ray Data costs about half a second (pandas, pyarrow): a job that never scores
    through it must not pay that before its first LLM call (warm_bench)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "ray.data":
            return None
        if self in sys.meta_path:  # one shot; the other finders locate the module
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            load(module)
            _quiet_now()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def quiet_ray_data() -> None:
    """Ray Data without its banners and progress bars: now if it is imported, else as soon as it is."""
    if "ray.data" in sys.modules:
        _quiet_now()
    elif not any(isinstance(f, _QuietOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _QuietOnImport())


# What the front door said about Ray (a job's `ray:` section, `--ray-address`), recorded by `configure` without
# connecting: Ray is joined or started lazily, by `models.factory.join_ray` alone, when a Ray-hosted model, a model
# service or a Ray Data fan-out first needs it (a job against endpoints never starts Ray).
SETTINGS: dict[str, Any] = {}


def configure(address: str | None = None, *, num_cpus: int | None = None, object_store_memory: int | None = None,
              namespace: str = "emocaustics") -> None:
    """The Ray settings of the job or command this process runs now (no connection made here)."""
    SETTINGS.clear()
    SETTINGS.update(address=address, num_cpus=num_cpus, object_store_memory=object_store_memory, namespace=namespace)


def held() -> bool:
    """Whether the job or command named a cluster to join: a fan-out that joined it leaves it joined."""
    return bool(SETTINGS.get("address"))


def connect(address: str | None = None, *, num_cpus: int | None = None, object_store_memory: int | None = None,
            namespace: str | None = None) -> bool:
    """Join or start Ray unless this process is already connected; returns whether this call connected. What the
    caller leaves out comes from the settings in force (`configure`). Called from `models.factory` only."""
    import ray

    quiet_ray_data()
    _watch_for_raylet_death()
    if ray.is_initialized():
        return False
    address = address or SETTINGS.get("address") or os.environ.get("RAY_ADDRESS")
    num_cpus = num_cpus if num_cpus is not None else SETTINGS.get("num_cpus")
    object_store_memory = object_store_memory or SETTINGS.get("object_store_memory")
    namespace = namespace or SETTINGS.get("namespace") or "emocaustics"
    if address:
        # Ray's "Connecting to existing Ray cluster ..." INFO lines are not ours to print (`emocaustics models`)
        ray.init(address=address, namespace=namespace, log_to_driver=False, logging_level=logging.WARNING)
    else:
        store = object_store_memory or int(os.environ.get("EMOCAUSTICS_OBJECT_STORE", 300_000_000))
        # "local": a new local Ray of our own. A bare `ray.init()` would join the cluster recorded in the Ray temp
        # dir's `ray_current_cluster` (the last `ray start` on this machine): a head that is gone fails the run, and
        # a live one is joined with our CPU count rejected.
        ray.init(address="local", num_cpus=num_cpus, object_store_memory=store, include_dashboard=False,
                 namespace=namespace, log_to_driver=False)
        _OWN_RAY.append(True)
    return True


_OWN_RAY: list[bool] = []  # set when `connect` started a Ray of this process's own (it ends with the process)


def started_own_ray() -> bool:
    """Whether this process runs a Ray it started itself (`ray.init` without an address: gone when we exit), rather
    than one joined by address. Model services (models/services.py) need the latter."""
    import ray

    if _OWN_RAY:
        return True
    # a Ray started elsewhere in this process (a test's `ray.init()`): this process runs its node's processes
    node = getattr(ray._private.worker, "_global_node", None)
    try:
        return ray.is_initialized() and node is not None and bool(node.live_processes())
    except Exception:  # Ray's internals moved: assume a joined cluster, as the address check above passed
        return False


# Set when Ray tells this driver that a raylet died (see `_watch_for_raylet_death`): the command then ends with
# the cluster-lost line (exit status 5, `cli._cluster_lost`) whatever error the loss caused on the way.
RAYLET_DIED: list[str] = []
_RAYLET_DIED_TEXT = "Raylet is terminated. Termination is unexpected"


OTHER_RAYLET_DIED: list[int] = []  # said once: another node's raylet died


def _own_raylet_alive() -> bool:
    """Does the raylet this driver talks to still accept connections on its Unix socket? (Ray's message does not say
    which node's raylet died; on one machine every node has the same address.) False where it cannot tell."""
    import socket

    try:
        from ray._private import worker

        path = worker.global_worker.node.raylet_socket_name
    except Exception:  # noqa: BLE001 - no connected driver, or Ray's internals moved: cannot tell
        return False
    if not isinstance(path, str) or not path.startswith("/"):
        return False
    probe = socket.socket(socket.AF_UNIX)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def _watch_for_raylet_death() -> None:
    """Ray's driver prints a dead raylet's last 20 log lines (its published RAYLET_DIED error); print one line instead
    and remember it. Ray offers no hook for these messages, so its printer is wrapped (a no-op where it is absent)."""
    from ray._private import worker

    printer = getattr(worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "_emocaustics", False):
        return

    def condensed(data, ignore_prefix):  # type: ignore[no-untyped-def]
        lines = data.get("lines") or []
        if data.get("pid") == "raylet" and any(_RAYLET_DIED_TEXT in str(line) for line in lines):
            if _own_raylet_alive():  # another node's raylet: Ray moves the work to the nodes left, the command goes on
                if not OTHER_RAYLET_DIED:
                    OTHER_RAYLET_DIED.append(1)
                    print("emocaustics: a Ray raylet on another node died (killed, out of memory, or crashed); the "
                          "command goes on with the nodes left", file=sys.stderr, flush=True)
                return None
            if not RAYLET_DIED:
                RAYLET_DIED.append("a Ray raylet died (killed, out of memory, or crashed); its log: raylet.out in "
                                   "the Ray session's logs folder")
                print(f"emocaustics: {RAYLET_DIED[0]}", file=sys.stderr, flush=True)
            return None
        return printer(data, ignore_prefix)

    condensed._emocaustics = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = condensed


def lost_cluster(exc: BaseException) -> str | None:
    """Why the Ray cluster is gone, if this failure comes from its loss: a raylet death Ray announced, or a Ray
    system error (a node died, the GCS cannot be reached) anywhere in the exception's chain."""
    if RAYLET_DIED:
        return RAYLET_DIED[0]
    if "ray" not in sys.modules:
        return None
    from ray import exceptions as rex

    kinds = tuple(k for k in (getattr(rex, n, None) for n in ("RaySystemError", "NodeDiedError", "GcsUnavailable",
                                                                "RpcError")) if isinstance(k, type))
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kinds):
            first = (str(seen).strip().splitlines() or [""])[0]
            return f"Ray failed: {type(seen).__name__}: {first}"
        seen = seen.__cause__ or seen.__context__
    return None
