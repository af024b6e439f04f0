"""`emocaustics serve MODELS.yaml` and `emocaustics models [stop NAME... | --all]`: model services that outlive a job
(models/services.py), started, listed and stopped on a Ray cluster started apart from this command."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from emocaustics.core.clihelp import DefaultsFormatter
from emocaustics.core.errors import UsageError
from emocaustics.jobs.spec import ModelSpec
from emocaustics.models.registry import is_remote

ADDRESS_HELP = ("Ray cluster (default: RAY_ADDRESS, else the cluster `ray start --head` started on this machine); "
                "with token auth set RAY_AUTH_MODE=token")


class ServeFile(BaseModel):
    """MODELS.yaml: `models:` as in a job, each kept for its `keep_alive` (default: the file's `idle_timeout`)."""

    model_config = ConfigDict(extra="forbid")
    models: dict[str, ModelSpec]
    idle_timeout: bool | float | str = True
    ray_address: str | None = None


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "serve", help="start named model services (replicas that outlive this command) on a Ray cluster",
        description="Start every model of MODELS.yaml (`models:` as in a job spec) as a service: detached replicas "
                    "on the cluster that later jobs, `emocaustics run` and other users attach to when they name the "
                    "same spec and engine options. Returns once the engines are up. A service stops after its idle "
                    "timeout without requests, or with `emocaustics models stop`.",
        formatter_class=DefaultsFormatter,
        epilog="exit status: 0 started (or already running); 2 usage error (bad file, no cluster to serve on)")
    p.add_argument("models_file", help="YAML with `models:` (and optionally `idle_timeout:`, `ray_address:`)")
    p.add_argument("--ray-address", default=None, help=ADDRESS_HELP)
    p.add_argument("--idle-timeout", default=None,
                   help="stop a service after this long without a request: seconds, '30m', '2h', or 'never' "
                        "(default: the file's idle_timeout, else 1 h; a model's own keep_alive wins)")
    p.set_defaults(func=_serve)

    p = subparsers.add_parser("models", help="list the model services on a Ray cluster, or stop them",
                              description="`emocaustics models` lists the services (name, spec, replicas, state, "
                                          "idle time, requests served); `emocaustics models stop NAME...|--all` "
                                          "stops them (NAME: the service's name, id or spec).",
                              formatter_class=DefaultsFormatter)
    p.add_argument("action", nargs="?", choices=["list", "stop"], default="list")
    p.add_argument("names", nargs="*", help="services to stop")
    p.add_argument("--all", action="store_true", help="stop every service")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.add_argument("--ray-address", default=None, help=ADDRESS_HELP)
    p.set_defaults(func=_models)


def _connect(address: str | None) -> None:
    import os

    from emocaustics.models.factory import join_ray
    from emocaustics.models.services import NO_CLUSTER

    try:  # "auto": the cluster a `ray start` on this machine recorded; never a new Ray of this command's own
        join_ray(address or os.environ.get("RAY_ADDRESS") or "auto")
    except ConnectionError as exc:
        raise UsageError(f"{NO_CLUSTER} ({exc})") from None


def load_serve_file(path: str | Path) -> ServeFile:
    import yaml

    p = Path(path)
    try:
        return ServeFile.model_validate(yaml.safe_load(p.read_text(encoding="utf-8")) or {})
    except OSError as exc:
        raise UsageError(f"{p}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{p}: not valid YAML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise UsageError(f"{p}: {problems}") from None


def _serve(args: argparse.Namespace) -> int:
    from emocaustics.models.services import idle_seconds, serve_model

    spec = load_serve_file(args.models_file)
    default = args.idle_timeout if args.idle_timeout is not None else spec.idle_timeout
    try:
        timeouts = {name: idle_seconds(m.keep_alive if m.keep_alive is not False else default)
                    for name, m in spec.models.items()}
    except ValueError as exc:
        raise UsageError(f"{args.models_file}: idle timeout: {exc}") from None
    remote = [n for n, m in spec.models.items() if is_remote(m.spec)]
    if remote:
        raise UsageError(f"{args.models_file}: models {', '.join(remote)}: endpoints are served elsewhere; a "
                         "service hosts smoke or vllm: models")
    _connect(args.ray_address or spec.ray_address)
    for name, model in spec.models.items():
        info = serve_model(model.parsed(), name, timeouts[name], lambda line: print(line, flush=True))
        timeout = "none" if info["idle_timeout"] is None else f"{info['idle_timeout']:g} s"
        print(f"model service {name}: {info['state']}, id {info['id']}, {info['replicas_up']}/{info['replicas']} "
              f"replica(s) up, idle timeout {timeout}; jobs naming {info['spec']} attach to it", flush=True)
    return 0


def _models(args: argparse.Namespace) -> int:
    from emocaustics.models.services import list_services, stop_services

    if args.action == "stop" and not (args.names or args.all):
        raise UsageError("models stop: name the services to stop (name, id or spec), or --all")
    if args.action == "list" and (args.names or args.all):
        raise UsageError("models: names and --all go with `models stop`")
    _connect(args.ray_address)
    if args.action == "stop":
        stopped = stop_services(args.names, everything=args.all)
        print(f"stopped {len(stopped)} model service(s)" + (f": {', '.join(stopped)}" if stopped else ""))
        return 0
    services = list_services()
    if args.json:
        print(json.dumps(services, indent=1))
        return 0
    if not services:
        print("no model services running")
        return 0
    print(f"{'NAME':16} {'ID':18} {'STATE':9} {'REPLICAS':8} {'IDLE':>8} {'REQUESTS':>8} {'STARTS':>6}  SPEC")
    for s in services:
        print(f"{s['name'][:16]:16} {s['id']:18} {s['state']:9} {s['replicas_up']}/{s['replicas']:<6} "
              f"{_ago(s['idle_seconds']):>8} {s['requests']:>8} {s['engine_starts']:>6}  {s['spec']}")
    return 0


def _ago(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(seconds)) if seconds < 86400 else f"{seconds / 86400:.1f} d"
