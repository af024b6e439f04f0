#!/usr/bin/env bash
# Submit a job spec to a Ray cluster through the job API.
#   jobs/submit.sh JOB.yaml [--address http://HEAD:8265] [-- extra `emocaustics run` args]
# Defaults: address $RAY_ADDRESS or http://127.0.0.1:8265; token auth on (RAY_AUTH_MODE=token, ~/.ray/auth_token).
# The job runs on the head in an uploaded copy of the project, so what it needs from here travels in its runtime env
# (cluster/job_env.py): every EMOCAUSTICS_* variable (data folders, cache, API key), OPENAI_API_KEY /
# ANTHROPIC_API_KEY / HF_TOKEN, the names in $EMOCAUSTICS_FORWARD_ENV, and EMOCAUSTICS_BASE_DIR = this directory: a
# relative `output:` (default runs/) or `--out` is resolved there, and the job prints the absolute run folder.
# Key values are never printed nor put on a command line. On a single machine with the project's .venv the
# entrypoint runs that venv's interpreter (a git-ignored venv is not part of the uploaded working dir); on a real
# cluster set EMOCAUSTICS_RUNTIME_ENV=cluster/runtime_env.yaml (merged with the forwarded variables).
set -euo pipefail
JOB=${1:?usage: jobs/submit.sh JOB.yaml [--address URL] [-- run args]}; shift
ADDRESS=${RAY_ADDRESS:-http://127.0.0.1:8265}
if [[ "${1:-}" == "--address" ]]; then ADDRESS=$2; shift 2; fi
[[ "${1:-}" == "--" ]] && shift
SUBMIT_DIR=$(pwd -P)
ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
[[ -f "$JOB" ]] || { echo "jobs/submit.sh: job spec not found: $JOB" >&2; exit 2; }
JOB_ABS=$(realpath -- "$JOB")
if [[ "$JOB_ABS" == "$ROOT"/* ]]; then
  JOB=${JOB_ABS#"$ROOT"/}   # the job runs in a copy of the project: name the spec inside it
else
  JOB=$JOB_ABS
  echo "jobs/submit.sh: $JOB is outside the project folder (the part that is uploaded): the job reads it at this path" \
       "on the head" >&2
fi
if [[ -n "${EMOCAUSTICS_RUNTIME_ENV:-}" ]]; then EMOCAUSTICS_RUNTIME_ENV=$(realpath -- "$EMOCAUSTICS_RUNTIME_ENV"); fi
cd "$ROOT"
export RAY_AUTH_MODE=${RAY_AUTH_MODE:-token}
PY=${EMOCAUSTICS_PY:-}
if [[ -z "$PY" && -x .venv/bin/python ]]; then PY="$PWD/.venv/bin/python"; fi
PY=${PY:-python}
RAY=${EMOCAUSTICS_RAY:-ray}
[[ -z "${EMOCAUSTICS_RAY:-}" && -x .venv/bin/ray ]] && RAY="$PWD/.venv/bin/ray"
ENV_FILE=$(mktemp "${TMPDIR:-/tmp}/emocaustics-runtime-env.XXXXXX")   # 0600; holds the keys, removed on exit
trap 'rm -f "$ENV_FILE"' EXIT
"$PY" cluster/job_env.py "$ENV_FILE" "$SUBMIT_DIR"
"$RAY" job submit --address "$ADDRESS" --working-dir . --runtime-env "$ENV_FILE" -- \
  "$PY" -m emocaustics run "$JOB" --ray-address auto "$@"
