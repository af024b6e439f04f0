"""Why a replica died, told to the driver: one line with the cause instead of Ray's bare `ActorDiedError`.

A replica ends itself when its engine core is gone (vllm_actor: Ray then restarts it). The root cause (the engine
core's or its worker's traceback) is written by those child processes to the actor's own stdout/stderr, which Ray
keeps in a worker log file on the replica's node and, with `log_to_driver=False`, shows nobody. So before it exits,
the replica reads the tail of those files, takes the last exception line, and leaves it in Ray's cluster-wide
key-value store under its actor id; the pool reads it when a call fails with `RayActorError` and prints it once.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

KV_PREFIX = "emocaustics/replica-death/"
TAIL_BYTES = 256 * 1024
# "RuntimeError: text", "vllm.v1.engine.exceptions.EngineDeadError: text" after vLLM's "(EngineCore pid=1) ERROR ..."
_ERROR_LINE = re.compile(r"(?:^|\]\s|\s)((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception)): (.+)$")
_GENERIC = ("EngineDeadError", "ActorDiedError", "RayActorError")


def _own_log_files() -> list[str]:
    """The regular files this process's stdout and stderr point to (Ray's worker-*.out / .err), if any."""
    paths = []
    for fd in (1, 2):
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if os.path.isfile(path) and path not in paths:
            paths.append(path)
    return paths


def last_error(text: str) -> str | None:
    """The last exception line after a traceback in a log text that names a cause (vLLM's generic "engine dead"
    lines skipped). Lines before any traceback are not causes (vLLM logs caught exceptions as warnings at start)."""
    start = text.find("Traceback (most recent call last)")
    if start < 0:
        return None
    found = None
    for line in text[start:].splitlines():
        if " WARNING " in line or " INFO " in line:
            continue
        m = _ERROR_LINE.search(line.rstrip())
        if m and not m.group(1).endswith(_GENERIC):
            found = f"{m.group(1).rsplit('.', 1)[-1]}: {m.group(2).strip()}"
    return found


def engine_death_reason(exc: BaseException) -> dict[str, Any]:
    """The cause of an engine's death as far as this process can tell: the last error its children logged."""
    files = _own_log_files()
    cause = None
    for path in files:
        try:
            with open(path, "rb") as f:
                f.seek(max(0, os.path.getsize(path) - TAIL_BYTES))
                cause = last_error(f.read().decode("utf-8", "replace")) or cause
        except OSError:
            continue
    reason = (f"engine core failed: {cause}" if cause else
              f"engine core process ended without an error message (killed, or out of memory?): {type(exc).__name__}")
    return {"reason": reason, "pid": os.getpid(), "logs": files, "time": time.time()}


def _key(actor_id: str) -> bytes:
    return (KV_PREFIX + actor_id).encode()


def record(info: dict[str, Any]) -> None:
    """Leave `info` where the pool finds it (this actor's id); best effort: the replica is about to exit anyway."""
    try:
        import ray
        from ray.experimental.internal_kv import _internal_kv_put

        _internal_kv_put(_key(ray.get_runtime_context().get_actor_id()), json.dumps(info).encode(), overwrite=True)
    except Exception:  # not in a Ray actor (in-process use), or Ray is going down
        pass


def recorded(actor_id: str) -> dict[str, Any] | None:
    """What a dead replica left (see `record`), or None."""
    try:
        from ray.experimental.internal_kv import _internal_kv_get

        raw = _internal_kv_get(_key(actor_id))
        return json.loads(raw) if raw else None
    except Exception:
        return None


def describe(info: dict[str, Any] | None, exc: BaseException) -> str:
    """One line: the recorded cause and where the full trace is, else the first line of Ray's error."""
    if info:
        logs = f" (full trace in {', '.join(info['logs'])} on the replica's node)" if info.get("logs") else ""
        return f"{info['reason']}{logs}"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}"
