#!/usr/bin/env bash
# Submit a job spec to a Ray cluster through the job API.
#   jobs/submit.sh JOB.yaml [--address http://HEAD:8265] [-- extra `emocaustics run` args]
# Defaults: address $RAY_ADDRESS or http://127.0.0.1:8265; token auth on (RAY_AUTH_MODE=token, ~/.ray/auth_token).
# On a single machine with the project's .venv the entrypoint runs that venv's interpreter (a git-ignored venv is not
# part of the uploaded working dir); on a real cluster set EMOCAUSTICS_RUNTIME_ENV=cluster/runtime_env.yaml.
set -euo pipefail
JOB=${1:?usage: jobs/submit.sh JOB.yaml [--address URL] [-- run args]}; shift
ADDRESS=${RAY_ADDRESS:-http://127.0.0.1:8265}
if [[ "${1:-}" == "--address" ]]; then ADDRESS=$2; shift 2; fi
[[ "${1:-}" == "--" ]] && shift
cd "$(dirname "$0")/.."
export RAY_AUTH_MODE=${RAY_AUTH_MODE:-token}
PY=${EMOCAUSTICS_PY:-}
if [[ -z "$PY" && -x .venv/bin/python ]]; then PY="$PWD/.venv/bin/python"; fi
PY=${PY:-python}
RAY=ray
[[ -x .venv/bin/ray ]] && RAY="$PWD/.venv/bin/ray"
RUNTIME=()
[[ -n "${EMOCAUSTICS_RUNTIME_ENV:-}" ]] && RUNTIME=(--runtime-env "$EMOCAUSTICS_RUNTIME_ENV")
exec "$RAY" job submit --address "$ADDRESS" --working-dir . "${RUNTIME[@]}" -- \
  "$PY" -m emocaustics run "$JOB" --ray-address auto "$@"
