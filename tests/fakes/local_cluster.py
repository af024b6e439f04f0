"""A real multi-process Ray cluster on this machine for tests: a head and workers, each `ray start --block` on
127.0.0.1 with token auth (not a stand-in: these are Ray's own processes).

Safety on a shared machine: every cluster has its own ports (free ones, picked here) and its own --temp-dir, so a
plain `ray.init()` elsewhere (the test session's own Ray, other people's tests) never finds and joins it. `ray stop
--force` is NOT used: it kills every Ray process of the user on the machine. Each `ray start --block` runs in a new
session and `close()` ends exactly the processes it started (and their descendants, collected before killing);
`stop_node()` kills one node's raylet the way a crashed machine loses it, and remembers that node's processes so that
`close()` ends any of them still alive (orphans of the dead raylet).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
RAY = str(BIN / "ray")


_ISSUED: set[int] = set()


def free_port() -> int:
    """A free port never handed out before in this process: the kernel gives a port it just released to the next
    bind, so two calls in a row can return the same one, and `ray start` refuses a port given to two components."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _ISSUED:
            _ISSUED.add(port)
            return port


def client_env() -> dict[str, str]:
    """What a client of a token-auth cluster needs (see shared/notes/ray.md); offline model hub."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_AUTH_MODE="token", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONUNBUFFERED="1")
    return env


class LocalCluster:
    """A head (and optional workers) started with `ray start --block` on 127.0.0.1; `close()` ends exactly those."""

    def __init__(self) -> None:
        # Short path: Ray's unix sockets live under it and have a length limit.
        self.temp_dir = tempfile.mkdtemp(prefix="rayjt-", dir="/tmp")
        self.gcs_port, self.dashboard_port = free_port(), free_port()
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        self.names: list[str] = []  # "head", "w1", ...: one per entry of procs
        self._orphans: list = []  # psutil.Process of stopped nodes, ended by close() if still alive
        self.stopped: set[str] = set()  # names of the nodes stop_node() took down

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def _node_ports(self) -> list[str]:
        return ["--node-ip-address=127.0.0.1", f"--node-manager-port={free_port()}",
                f"--object-manager-port={free_port()}", f"--dashboard-agent-listen-port={free_port()}",
                f"--dashboard-agent-grpc-port={free_port()}", f"--metrics-export-port={free_port()}",
                f"--runtime-env-agent-port={free_port()}", "--object-store-memory=200000000", "--disable-usage-stats"]

    def _start(self, args: list[str], name: str) -> None:
        log = Path(self.temp_dir) / f"{name}.out"
        self.logs.append(log)
        fh = log.open("wb")
        # New session: the teardown signals this process group, never anything by name.
        proc = subprocess.Popen([RAY, "start", "--block", *args, *self._node_ports()], stdout=fh,
                                stderr=subprocess.STDOUT, env=client_env(), start_new_session=True)
        self.procs.append(proc)
        self.names.append(name)

    def start_head(self, num_cpus: int = 2, resources: dict[str, float] | None = None) -> None:
        # A fresh machine has no ~/.ray/auth_token until some local Ray made one: `ray start` with token auth then
        # refuses to start. Make it as an operator would (`ray get-auth-token --generate` keeps an existing one).
        self.ray_cli("get-auth-token", "--generate")
        self._start(["--head", f"--port={self.gcs_port}", f"--num-cpus={num_cpus}", f"--temp-dir={self.temp_dir}",
                     "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={self.dashboard_port}",
                     f"--ray-client-server-port={free_port()}", f"--resources={json.dumps(resources or {})}"], "head")
        self.wait_nodes(1)

    def add_worker(self, num_cpus: int = 1, resources: dict[str, float] | None = None) -> str:
        # Its own --temp-dir: two nodes on one machine sharing one would both unpack the job's working_dir into the
        # same runtime_resources folder, each replacing files under the other's feet (on real machines they differ).
        name = f"w{len(self.procs)}"
        self._start([f"--address=127.0.0.1:{self.gcs_port}", f"--num-cpus={num_cpus}",
                     f"--temp-dir={self.temp_dir}/{name}", f"--resources={json.dumps(resources or {})}"], name)
        return name

    def node_processes(self, name: str) -> list:
        """The `ray start --block` process of node `name` and all its descendants (psutil.Process)."""
        import psutil

        try:
            root = psutil.Process(self.procs[self.names.index(name)].pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def stop_node(self, name: str) -> int:
        """SIGKILL node `name`'s raylet (what a lost machine looks like to the cluster); returns its pid. The node's
        other processes (its `ray start`, workers, actors and whatever they spawned) are remembered for close()."""
        procs = self.node_processes(name)
        raylets = [p for p in procs if p.name() == "raylet" or "raylet" in " ".join(p.cmdline()[:1])]
        assert raylets, f"node {name}: no raylet among {[p.name() for p in procs]}"
        self._orphans += procs
        self.stopped.add(name)
        raylets[0].kill()
        return raylets[0].pid

    def ray_cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run([RAY, *args], capture_output=True, text=True, timeout=timeout, env=client_env())

    def nodes(self) -> list[dict]:
        try:
            out = self.ray_cli("list", "nodes", "--address", self.address, "--format", "json", "--filter", "state=ALIVE")
        except subprocess.TimeoutExpired:  # the dashboard is still starting (slow on a loaded 2-core machine)
            return []
        return json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip().startswith("[") else []

    def wait_nodes(self, n: int, timeout: float = 120) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p, log, name in zip(self.procs, self.logs, self.names):
                assert name in self.stopped or p.poll() is None, \
                    f"ray start exited ({p.returncode}):\n{log.read_text(errors='replace')[-3000:]}"
            nodes = self.nodes()
            if len(nodes) >= n:
                return nodes
            time.sleep(1)
        raise AssertionError(f"{n} node(s) not up within {timeout} s:\n"
                             + "\n".join(log.read_text(errors="replace")[-2000:] for log in self.logs))

    def close(self) -> None:
        import psutil

        doomed: list[psutil.Process] = []
        for p in self.procs:
            try:
                root = psutil.Process(p.pid)
                doomed += [root, *root.children(recursive=True)]  # collected first: children get reparented
            except psutil.NoSuchProcess:
                pass
        for p in self.procs:  # `ray start --block` tears its node down on SIGTERM
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for proc in self._orphans:  # a stopped node's processes (same objects: psutil checks pid reuse)
            if proc.is_running():
                doomed.append(proc)
        # A short grace, not a long one: on SIGTERM `ray start --block` does not finish tearing its node down (25 s
        # measured: it, the GCS, the raylet and the workers all still alive; only the dashboard's processes go, in
        # about 2 s), so a 20 s wait was spent in full by every teardown, then everything was killed anyway.
        gone, alive = psutil.wait_procs(doomed, timeout=3)
        for proc in alive:  # whatever ignored the polite request (the node itself, engine cores, workers)
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(alive, timeout=10)
        shutil.rmtree(self.temp_dir, ignore_errors=True)
