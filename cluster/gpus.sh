# Sourced by start-head.sh and start-worker.sh: how many GPUs Ray should offer on this machine.
# NUM_GPUS wins; else the GPUs `nvidia-smi -L` lists; a machine without nvidia-smi, or whose driver does not answer
# (a CPU head), has 0. Exactly one number is printed (a pipeline under `pipefail` with `|| echo 0` once printed two).
gpu_count() {
  if [[ -n "${NUM_GPUS:-}" ]]; then echo "$NUM_GPUS"; return; fi
  local listing
  listing=$(nvidia-smi -L 2>/dev/null) || { echo 0; return; }
  grep -c '^GPU ' <<<"$listing" || true   # grep -c prints 0 itself when nothing matches (and exits 1)
}
