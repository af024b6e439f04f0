#!/usr/bin/env bash
# Start a Ray head on this machine (bare metal / VM). Usage: cluster/start-head.sh [--port 6379] [extra ray start args]
# Token authentication stays on (Ray's default): the head writes ~/.ray/auth_token. Copy that file to every worker and
# every machine that submits jobs, and export RAY_AUTH_MODE=token there (see cluster/README.md).
set -euo pipefail
source "$(dirname "$0")/gpus.sh"
PORT=${PORT:-6379}
DASHBOARD_HOST=${DASHBOARD_HOST:-127.0.0.1}   # set 0.0.0.0 only behind a firewall / VPN
exec ray start --head --port="$PORT" --dashboard-host="$DASHBOARD_HOST" --dashboard-port="${DASHBOARD_PORT:-8265}" \
  --num-gpus="$(gpu_count)" "$@"
