#!/usr/bin/env bash
# Make sure Debian's headless-capable `chromium` is installed (the report page is checked in a real browser).
# Idempotent and quiet: does nothing when a chromium binary is already on PATH; otherwise installs the package with
# apt-get (needs root, or sudo without a password). Prints the browser's path on success; exits non-zero with one line
# on stderr saying why when it cannot install (the tests then skip, naming that reason).
set -euo pipefail

find_browser() {
  command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null || true
}

BROWSER=$(find_browser)
if [[ -n "$BROWSER" ]]; then echo "$BROWSER"; exit 0; fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: no chromium on PATH and no apt-get on this system" >&2; exit 3
fi
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO=(sudo -n)
  else echo "ensure-chromium: no chromium on PATH, and apt-get needs root (no password-less sudo)" >&2; exit 3; fi
fi

LOG=$(mktemp -t ensure-chromium.XXXXXX.log)
export DEBIAN_FRONTEND=noninteractive
# Concurrent callers (two test sessions, make and a test) wait for dpkg's lock instead of failing on it.
APT=("${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=300)
install() {
  "${APT[@]}" install -y -qq --no-install-recommends chromium >>"$LOG" 2>&1
}
if ! install; then
  # The package lists may be stale or missing: refresh once and retry.
  "${APT[@]}" update -qq >>"$LOG" 2>&1 || true
  if ! install; then
    echo "ensure-chromium: apt-get install chromium failed (log: $LOG): $(tail -n 1 "$LOG")" >&2; exit 4
  fi
fi
rm -f "$LOG"
BROWSER=$(find_browser)
if [[ -z "$BROWSER" ]]; then echo "ensure-chromium: chromium installed but not found on PATH" >&2; exit 5; fi
echo "$BROWSER"
