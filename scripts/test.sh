#!/usr/bin/env bash
# Set up everything the tests need on a fresh machine (idempotent), then run them.
#   bash scripts/test.sh [pytest args]
# System tools the tests drive for real: redis-server (cache tests), promtool/prometheus (metrics tests) and
# chromium with its driver (playground browser tests, driven by Playwright on this chromium),
# installed from Debian's packages when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v chromium >/dev/null 2>&1 || missing+=(chromium chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  echo "installing ${missing[*]} with apt-get" >&2
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts the packaged daemons; the tests start private ones on free ports instead.
  $sudo_cmd service prometheus stop >/dev/null 2>&1 || true
fi

python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e '.[dev,eval]'
exec .venv/bin/pytest "$@"
