#!/usr/bin/env bash
# Make sure Debian's headless-capable `chromium` is installed (the report page is checked in a real browser), with a
# small CJK font (fonts-wqy-zenhei) so that the Chinese text of screenshots is not drawn as empty boxes.
# Idempotent and quiet: does nothing when both are installed; otherwise installs the missing packages with
# apt-get (needs root, or sudo without a password). Prints the browser's path on success; exits non-zero with one line
# on stderr saying why when it cannot install (the tests then skip, naming that reason).
set -euo pipefail

find_browser() {
  command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null || true
}

BROWSER=$(find_browser)
HAVE_FONT=$(dpkg-query -W -f='${Status}' fonts-wqy-zenhei 2>/dev/null | grep -c "ok installed" || true)
if [[ -n "$BROWSER" && "$HAVE_FONT" == 1 ]]; then echo "$BROWSER"; exit 0; fi
PACKAGES=()
[[ -z "$BROWSER" ]] && PACKAGES+=(chromium)
[[ "$HAVE_FONT" != 1 ]] && PACKAGES+=(fonts-wqy-zenhei)

# Cannot install: fine when only the font is missing (screenshots then show boxes for Chinese), else exit 3.
cannot() {
  if [[ -n "$BROWSER" ]]; then echo "$BROWSER"; exit 0; fi
  echo "ensure-chromium: no chromium on PATH, and $1" >&2; exit 3
}
command -v apt-get >/dev/null 2>&1 || cannot "no apt-get on this system"
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO=(sudo -n)
  else cannot "apt-get needs root (no password-less sudo)"; fi
fi

LOG=$(mktemp -t ensure-chromium.XXXXXX.log)
export DEBIAN_FRONTEND=noninteractive
# Concurrent callers (two test sessions, make and a test) wait for dpkg's lock instead of failing on it.
APT=("${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=300)
install() {
  "${APT[@]}" install -y -qq --no-install-recommends "${PACKAGES[@]}" >>"$LOG" 2>&1
}
if ! install; then
  # The package lists may be stale or missing: refresh once and retry.
  "${APT[@]}" update -qq >>"$LOG" 2>&1 || true
  if ! install; then
    [[ -n "$BROWSER" ]] && { echo "$BROWSER"; exit 0; }
    echo "ensure-chromium: apt-get install ${PACKAGES[*]} failed (log: $LOG): $(tail -n 1 "$LOG")" >&2; exit 4
  fi
fi
rm -f "$LOG"
BROWSER=$(find_browser)
if [[ -z "$BROWSER" ]]; then echo "ensure-chromium: chromium installed but not found on PATH" >&2; exit 5; fi
echo "$BROWSER"
