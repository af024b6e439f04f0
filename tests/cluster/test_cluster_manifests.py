"""The deployment files in cluster/ as a Kubernetes API server with KubeRay, and Ray's cluster launcher, would take
them (issue 45); no cluster is needed.

- Every `ray.io/v1` manifest validates against KubeRay's CRD (../shared/schemas/kuberay/, never copied here), strictly
  as `kubectl apply` does: unknown fields rejected, required fields present. The launcher config validates against the
  installed Ray's `ray-schema.json`.
- One Ray version: the pin in pyproject.toml, which is the installed Ray, every `rayVersion`, the image's base tag
  (cluster/Dockerfile), the image tag every pod and launcher node runs, and the docs.
- Token auth on every cluster a manifest starts; the token lives in a Secret created by a command, never in a file.
- Worker pods fit the replicas of the job the manifests are sized for (`emocaustics.io/sized-for`).
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "cluster"
CRDS = REPO.parent / "shared" / "schemas" / "kuberay"
CRD_FILES = {"RayCluster": "ray.io_rayclusters.yaml", "RayJob": "ray.io_rayjobs.yaml",
             "RayService": "ray.io_rayservices.yaml"}
SECRET = "emocaustics-ray-token"  # the Secret both KubeRay manifests name and docs/clusters.md creates
DOCS = REPO / "docs" / "clusters.md"


def ray_pin() -> str:
    """The one place that says which Ray the project runs on: pyproject's `ray[...]==X`."""
    deps = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    rays = [d for d in deps if re.match(r"ray\b(?![-_.])", d)]
    assert len(rays) == 1, f"pyproject.toml: project.dependencies: expected one ray requirement, got {rays}"
    pin = re.fullmatch(r"ray(\[[^\]]*\])?==(\d+\.\d+\.\d+)", rays[0].replace(" ", ""))
    assert pin, f"pyproject.toml: project.dependencies: ray must be pinned exactly (==X.Y.Z), not {rays[0]!r}"
    return pin.group(2)


def image(version: str) -> str:
    return f"emocaustics:ray{version}-py311-gpu"


def documents() -> Iterator[tuple[str, dict]]:
    """(where, document) for every Kubernetes object in cluster/*.yaml (files with no `kind` are not manifests)."""
    for path in sorted(CLUSTER.glob("*.yaml")):
        for i, doc in enumerate(yaml.safe_load_all(path.read_text(encoding="utf-8"))):
            if isinstance(doc, dict) and "kind" in doc:
                yield f"{path.relative_to(REPO)} document {i} ({doc['kind']} {doc['metadata']['name']})", doc


def ray_documents() -> list[tuple[str, dict]]:
    return [(w, d) for w, d in documents() if d.get("apiVersion", "").startswith("ray.io/")]


def cluster_specs() -> Iterator[tuple[str, dict]]:
    """Every RayCluster spec a manifest brings up: a RayCluster's spec, a RayJob's rayClusterSpec."""
    for where, doc in ray_documents():
        if doc["kind"] == "RayCluster":
            yield f"{where}: spec", doc["spec"]
        elif doc["kind"] == "RayJob":
            yield f"{where}: spec.rayClusterSpec", doc["spec"]["rayClusterSpec"]


def containers(spec: dict) -> Iterator[tuple[str, str, dict]]:
    groups = [("headGroupSpec", spec["headGroupSpec"])]
    groups += [(f"workerGroupSpecs[{g['groupName']}]", g) for g in spec.get("workerGroupSpecs", [])]
    for name, group in groups:
        for c in group["template"]["spec"]["containers"]:
            yield name, c["name"], c


@pytest.fixture(scope="module")
def crds() -> dict[str, dict]:
    if not CRDS.is_dir():
        pytest.skip(f"KubeRay CRDs not found at {CRDS} (they lie beside the checkout in CI: ../shared/schemas/kuberay)")
    return {kind: _crd_schema(CRDS / name) for kind, name in CRD_FILES.items()}


def _crd_schema(path: Path) -> dict:
    crd = yaml.safe_load(path.read_text(encoding="utf-8"))
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return _strict(copy.deepcopy(v1["schema"]["openAPIV3Schema"]))


def _strict(node):
    """The API server's strict field validation: an object schema with `properties` takes no other key, unless it
    says `x-kubernetes-preserve-unknown-fields` (jsonschema alone would let any unknown key through)."""
    if isinstance(node, dict):
        if ("properties" in node and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")):
            node["additionalProperties"] = False
        for value in node.values():
            _strict(value)
    elif isinstance(node, list):
        for value in node:
            _strict(value)
    return node


def _errors(schema: dict, doc: dict, where: str) -> list[str]:
    from jsonschema import Draft7Validator

    return [f"{where}: {'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in sorted(Draft7Validator(schema).iter_errors(doc), key=lambda e: list(map(str, e.path)))]


# -- the checker itself ---------------------------------------------------------------------------------------------
def test_the_strict_check_rejects_an_unknown_field_and_a_missing_required_one(crds):
    job = yaml.safe_load((CLUSTER / "kuberay-rayjob.yaml").read_text(encoding="utf-8"))
    group = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    group["minReplica"] = group.pop("minReplicas", 0)  # a typo kubectl apply rejects twice
    errors = _errors(crds["RayJob"], job, "x")
    assert any("'minReplica' was unexpected" in e for e in errors), errors
    assert any("'minReplicas' is a required property" in e for e in errors), errors
    assert all(e.startswith("x: spec.rayClusterSpec.workerGroupSpecs.0") for e in errors), errors


# -- schemas --------------------------------------------------------------------------------------------------------
def test_kuberay_manifests_validate_against_the_crds(crds):
    docs = ray_documents()
    assert {d["kind"] for _, d in docs} >= {"RayCluster", "RayJob"}, [w for w, _ in docs]
    errors = [e for where, doc in docs for e in _errors(crds[doc["kind"]], doc, where)]
    assert not errors, "\n".join(errors)


def test_other_manifests_are_kinds_we_mean_to_ship():
    others = [(w, d) for w, d in documents() if not d["apiVersion"].startswith("ray.io/")]
    assert all(d["apiVersion"] == "v1" and d["kind"] == "PersistentVolumeClaim" for _, d in others), others


def test_launcher_config_validates_against_rays_schema():
    import ray

    schema = json.loads((Path(ray.__file__).parent / "autoscaler" / "ray-schema.json").read_text(encoding="utf-8"))
    config = yaml.safe_load((CLUSTER / "gpu-cluster.yaml").read_text(encoding="utf-8"))
    errors = _errors(schema, config, "cluster/gpu-cluster.yaml")
    assert not errors, "\n".join(errors)


# -- one Ray version ------------------------------------------------------------------------------------------------
def test_the_pinned_ray_is_the_installed_ray():
    import ray

    assert ray.__version__ == ray_pin(), f"installed ray {ray.__version__}, pyproject.toml pins {ray_pin()}"


def test_manifests_images_and_launcher_run_the_pinned_ray():
    version = ray_pin()
    wrong = [f"{where}: rayVersion {spec.get('rayVersion')!r}" for where, spec in cluster_specs()
             if spec.get("rayVersion") != version]
    wrong += [f"{where}: {group} {name}: image {c['image']!r}" for where, spec in cluster_specs()
              for group, name, c in containers(spec) if c["image"] != image(version)]
    launcher = yaml.safe_load((CLUSTER / "gpu-cluster.yaml").read_text(encoding="utf-8"))
    if launcher.get("docker", {}).get("image") != image(version):
        wrong.append(f"cluster/gpu-cluster.yaml: docker.image {launcher.get('docker', {}).get('image')!r}")
    assert not wrong, f"expected Ray {version}, image {image(version)}:\n" + "\n".join(wrong)


def test_the_image_is_built_on_rays_published_image_of_that_version():
    text = (CLUSTER / "Dockerfile").read_text(encoding="utf-8")
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
    (base,) = re.findall(r"^FROM (\S+)", text, re.M)
    base = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], base)
    assert base == f"rayproject/ray:{ray_pin()}-py311-gpu", f"cluster/Dockerfile: FROM {base}"
    assert "ray-ml:" not in text


def test_docs_name_the_pinned_ray_and_the_image():
    version = ray_pin()
    text = DOCS.read_text(encoding="utf-8")
    assert version in text and image(version) in text, f"docs/clusters.md: Ray {version} / {image(version)} missing"
    stale = [p.name for p in [DOCS, CLUSTER / "README.md", *CLUSTER.glob("*.yaml")] if "ray-ml:" in p.read_text()]
    assert not stale, f"rayproject/ray-ml images are no longer published, named in {stale}"


# -- token auth -----------------------------------------------------------------------------------------------------
def test_every_cluster_a_manifest_starts_has_token_auth_from_our_secret():
    wrong = [f"{where}: authOptions {spec.get('authOptions')}" for where, spec in cluster_specs()
             if spec.get("authOptions") != {"mode": "token", "secretName": SECRET}]
    assert not wrong, "\n".join(wrong)


def test_no_token_is_committed_and_the_docs_say_how_to_make_and_read_it():
    assert not [w for w, d in documents() if d["kind"] == "Secret"], "a committed Secret is a token everyone knows"
    text = DOCS.read_text(encoding="utf-8")
    for step in (f"kubectl create secret generic {SECRET} --from-literal=auth_token=",
                 f"kubectl get secret {SECRET} -o jsonpath='{{.data.auth_token}}' | base64 -d",
                 "RAY_AUTH_MODE=token", "RAY_AUTH_TOKEN", "enableK8sTokenAuth",
                 "kubectl apply -f cluster/kuberay-volumes.yaml",
                 "cluster/kuberay-raycluster.yaml | kubectl apply -f -",
                 "cluster/kuberay-rayjob.yaml | kubectl apply -f -", "jobs/submit.sh jobs/paper-100.yaml",
                 "docker build -f cluster/Dockerfile"):
        assert step in text, f"docs/clusters.md: no step {step!r}"


# -- resources ------------------------------------------------------------------------------------------------------
def _quantity(value) -> float:
    s = str(value)
    return float(s[:-1]) / 1000 if s.endswith("m") else float(s)


def test_workers_fit_the_replicas_of_the_job_they_are_sized_for():
    """A replica of `gpus_per_replica` GPUs is one placement group of that many {GPU: 1, CPU: 1} bundles packed on
    one node (models/pool.py), so a worker pod holds a whole number of replicas, and the group holds them all."""
    problems = []
    for where, doc in ray_documents():
        sized_for = doc["metadata"].get("annotations", {}).get("emocaustics.io/sized-for")
        if not sized_for:
            problems.append(f"{where}: no metadata.annotations['emocaustics.io/sized-for']")
            continue
        if doc["kind"] == "RayJob" and sized_for not in doc["spec"]["entrypoint"]:
            problems.append(f"{where}: sized for {sized_for}, but the entrypoint runs {doc['spec']['entrypoint']}")
        models = yaml.safe_load((REPO / sized_for).read_text(encoding="utf-8"))["models"].values()
        need = [(int(m.get("gpus_per_replica", 0)), int(m.get("replicas", 1))) for m in models]
        spec = doc["spec"] if doc["kind"] == "RayCluster" else doc["spec"]["rayClusterSpec"]
        for group, name, c in containers(spec):
            res = c.get("resources", {})
            if res.get("requests") != res.get("limits"):
                problems.append(f"{where}: {group} {name}: requests {res.get('requests')} != {res.get('limits')}")
            gpus = int(res.get("limits", {}).get("nvidia.com/gpu", 0))
            if group == "headGroupSpec":
                if gpus:
                    problems.append(f"{where}: {group}: the head asks for {gpus} GPUs (it hosts the driver only)")
                continue
            pods = next(g for g in spec["workerGroupSpecs"] if group.endswith(f"[{g['groupName']}]"))["replicas"]
            for per, count in need:
                if per and (gpus % per or (gpus // per) * pods < count):
                    problems.append(f"{where}: {group}: {pods} pods of {gpus} GPUs hold no {count} replicas of {per}")
            if _quantity(res.get("limits", {}).get("cpu", 0)) < gpus:
                problems.append(f"{where}: {group}: fewer CPUs than GPUs (each GPU bundle takes a CPU)")
    assert not problems, "\n".join(problems)
