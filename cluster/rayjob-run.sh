#!/usr/bin/env bash
# The RayJob's entrypoint (cluster/kuberay-rayjob.yaml): `rayjob-run.sh JOB OUT [ARGS...]` runs JOB into OUT on the
# results volume, or, when OUT already holds a run (the RayJob applied again, or its cluster died mid-way), continues
# it with --resume: the samples already written are skipped, the rest solved, everything scored again. A folder that
# holds a run of another job is refused by `run --resume` with a line naming both.
# Why a script: KubeRay joins the entrypoint into the submitter pod's shell line (`ray job submit ... -- ENTRYPOINT ;`),
# so a `&&` or `$(...)` in the manifest would run in the submitter pod, not in the job on the head.
set -euo pipefail
job=$1 out=$2
shift 2
cd "$(dirname "$0")/.."  # the project in the image: jobs/ and the job's relative paths
resume=""
if [ -f "$out/run.json" ]; then
  resume=--resume
  echo "$out holds a run: continuing it (--resume)"
fi
exec emocaustics run "$job" --out "$out" $resume "$@"
