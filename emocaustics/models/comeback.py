"""A model service restarted under a running job: the job's pool waits for the service's replica to come back under its
name, and re-attaches to it.

A service's replicas are named detached actors (models/services.py). `emocaustics models stop` ends them for good
(`ray.kill(no_restart=True)`), and a later `emocaustics serve` of the same spec (or a job with `keep_alive`) makes new
actors under the same names. A job attached to the service holds handles to the old actors: every call on them fails
with `RayActorError`. Instead of spending its retries on a dead handle and losing the samples, the pool
(`ModelPool._call`) asks `wait_for_replica` here: it polls the replica's name until an actor with another id holds it
(the service is back: the pool swaps the handle in and re-sends the call, which then waits for the new engine to start
inside the replica), for at most `EMOCAUSTICS_SERVICE_WAIT` seconds (default 600: a real model's engine start takes
minutes), else raises `ServiceGone` (core/errors.py: a typed stop that ends the run), naming the service and what
to do. The calls in flight on one replica share one
wait; once a wait for a dead replica has run out, later calls on it fail at once instead of waiting again.

A replica that Ray itself restarts (a crash, `max_restarts`) keeps its actor id: `wait_for_replica` answers None and
the pool's ordinary retries handle it, as for a job's own replicas.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

from emocaustics.core.errors import ServiceGone  # a typed stop (exit 4): the run stops and names it once

DEFAULT_WAIT_S = 600.0
POLL_S = 0.5


def wait_seconds(configured: float | None = None) -> float:
    """The pool's own setting, else EMOCAUSTICS_SERVICE_WAIT (seconds), else 600."""
    if configured is not None:
        return float(configured)
    raw = os.environ.get("EMOCAUSTICS_SERVICE_WAIT")
    try:
        return float(raw) if raw else DEFAULT_WAIT_S
    except ValueError:
        raise ValueError(f"EMOCAUSTICS_SERVICE_WAIT={raw!r}: expected a number of seconds") from None


async def wait_for_replica(waits: dict[tuple[str, str], Any], *, model: str, service: str, name: str,
                           dead: Any, seconds: float) -> Any | None:
    """The new actor named `name` once it is not the `dead` handle's actor; None when `name` still names the dead
    actor (Ray restarting it, or its end not recorded yet). `waits` (the pool's) holds one wait per dead actor, shared
    by every call that saw it die. Raises ServiceGone after `seconds` without a new actor."""
    key = (name, dead._actor_id.hex())
    task = waits.get(key)
    loop = asyncio.get_running_loop()
    running = task is not None and not task.done() and task.get_loop() is loop
    ran_out = task is not None and task.done() and not task.cancelled() and task.exception() is not None
    if ran_out:  # this replica's wait already ran out: fail at once
        raise ServiceGone(str(task.exception()))  # type: ignore[union-attr]
    if not running:  # a wait that found an actor is not kept: its answer was for that moment
        task = waits[key] = loop.create_task(_poll(model, service, name, key[1], seconds))
    return await asyncio.shield(task)  # type: ignore[arg-type]


async def _poll(model: str, service: str, name: str, dead_id: str, seconds: float) -> Any | None:
    from emocaustics.models.replicas import named_actor

    deadline = time.monotonic() + seconds
    told = False
    while True:
        actor = named_actor(name)  # None: the service is stopped (or not yet started again)
        if actor is not None:
            if actor._actor_id.hex() == dead_id:
                return None
            if told:
                print(f"model {model}: model service {service} is back; re-attached to {name}", file=sys.stderr,
                      flush=True)
            return actor
        if time.monotonic() >= deadline:
            raise ServiceGone(f"model service {service} (model {model}) went away during this job and did not come "
                              f"back within {seconds:g} s (EMOCAUSTICS_SERVICE_WAIT); start it again with "
                              "`emocaustics serve` and continue the run with --resume")
        if not told:
            told = True
            print(f"model {model}: model service {service} is gone (stopped or restarting); waiting up to "
                  f"{seconds:g} s for it to come back under {name}", file=sys.stderr, flush=True)
        await asyncio.sleep(POLL_S)
