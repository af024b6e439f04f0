#!/usr/bin/env bash
# Join this machine to a running head. Usage: cluster/start-worker.sh HEAD_IP[:PORT] [extra ray start args]
# Needs the head's auth token at ~/.ray/auth_token (or RAY_AUTH_TOKEN_PATH) and RAY_AUTH_MODE=token.
set -euo pipefail
source "$(dirname "$0")/gpus.sh"
HEAD=${1:?usage: start-worker.sh HEAD_IP[:PORT]}; shift
[[ "$HEAD" == *:* ]] || HEAD="$HEAD:6379"
export RAY_AUTH_MODE=${RAY_AUTH_MODE:-token}
exec ray start --address="$HEAD" --num-gpus="$(gpu_count)" "$@"
