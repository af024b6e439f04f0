"""Issue 53 finding 15: the KubeRay manifests keep the response cache on a volume that every process writing it
mounts (the driver on the head, and the model replicas on the GPU workers: models/vllm_actor.py opens the cache path
the driver hands it), and a RayJob applied again continues the run its volume holds instead of refusing the folder.
The CRD validation of the changed manifests is test_cluster_manifests.py's."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path, PurePosixPath

import yaml

from cluster.test_cluster_manifests import CLUSTER, REPO, cluster_specs, containers

CACHE_VARS = ("EMOCAUSTICS_RESPONSE_CACHE", "EMOCAUSTICS_CACHE")


def _rayjob() -> dict:
    return yaml.safe_load((CLUSTER / "kuberay-rayjob.yaml").read_text(encoding="utf-8"))


def _cache_path(container: dict, job_env: dict) -> str | None:
    env = {e["name"]: e.get("value") for e in container.get("env", [])} | job_env  # the job's runtime env wins
    return next((env[v] for v in CACHE_VARS if env.get(v)), None)


def test_every_pod_mounts_the_volume_the_response_cache_is_on():
    problems = []
    job_env = yaml.safe_load(_rayjob()["spec"].get("runtimeEnvYAML") or "{}").get("env_vars", {})
    for where, spec in cluster_specs():
        env = job_env if "RayJob" in where else {}
        claims = set()
        for group, name, c in containers(spec):
            cache = _cache_path(c, env)
            if cache is None:  # else ~/.cache in each pod: lost with it, and never shared
                problems.append(f"{where}: {group} {name}: no EMOCAUSTICS_CACHE (the cache would die with the pod)")
                continue
            pod = (spec["headGroupSpec"] if group == "headGroupSpec" else
                   next(g for g in spec["workerGroupSpecs"] if group.endswith(f"[{g['groupName']}]")))
            volumes = {v["name"]: v for v in pod["template"]["spec"].get("volumes", [])}
            mounts = [m for m in c.get("volumeMounts", [])
                      if PurePosixPath(cache).is_relative_to(m["mountPath"])
                      and "persistentVolumeClaim" in volumes.get(m["name"], {})]
            if not mounts:
                problems.append(f"{where}: {group} {name}: the cache {cache} is on no volume this pod mounts")
            claims |= {volumes[m["name"]]["persistentVolumeClaim"]["claimName"] for m in mounts}
        if len(claims) > 1:
            problems.append(f"{where}: the pods keep the cache on different volumes: {sorted(claims)}")
    assert not problems, "\n".join(problems)


def _entrypoint(tmp_path: Path, out: Path) -> tuple[list[str], Path]:
    """The RayJob's entrypoint as the head runs it, with the image's project folder as this checkout, its run folder
    as `out`, and an `emocaustics` that records its working folder and arguments."""
    entry = _rayjob()["spec"]["entrypoint"]
    assert not any(op in entry for op in ("&&", ";", "|", "$(", "`")), \
        f"the submitter pod's shell would run part of {entry!r} itself (KubeRay joins it into its shell line)"
    argv = shlex.split(entry.replace("/home/ray/emocaustics", str(REPO)).replace("/results/paper-100", str(out)))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls.txt"
    fake = bin_dir / "emocaustics"
    fake.write_text(f'#!/usr/bin/env bash\necho "$PWD $*" >> {shlex.quote(str(log))}\n', encoding="utf-8")
    fake.chmod(0o755)
    return argv, log


def test_a_rayjob_applied_again_resumes_the_run_its_volume_holds(tmp_path):
    out = tmp_path / "results" / "paper-100"
    argv, log = _entrypoint(tmp_path, out)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(argv, env=env, check=True, capture_output=True, timeout=30)  # the first apply: a fresh run
    out.mkdir(parents=True)
    (out / "run.json").write_text('{"state": "finished"}', encoding="utf-8")  # what that run left on the volume
    again = subprocess.run(argv, env=env, check=True, capture_output=True, text=True, timeout=30)
    first, second = log.read_text(encoding="utf-8").splitlines()
    assert first == f"{REPO} run jobs/paper-100.yaml --out {out}"
    assert second == f"{REPO} run jobs/paper-100.yaml --out {out} --resume"
    assert "continuing it (--resume)" in again.stdout


def test_the_script_the_rayjob_runs_is_in_the_image():
    dockerfile = (CLUSTER / "Dockerfile").read_text(encoding="utf-8")
    assert "COPY --chown=ray:users cluster ./cluster" in dockerfile and "WORKDIR /home/ray/emocaustics" in dockerfile
    assert "cluster/rayjob-run.sh" in _rayjob()["spec"]["entrypoint"]
