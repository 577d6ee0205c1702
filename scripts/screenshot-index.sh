#!/usr/bin/env bash
# Writes the results of `rlsim compare` with charts into a folder and screenshots the top of
# its index.html — the verdict's matrix and the findings — with headless Chromium (Debian:
# apt-get install -y chromium), so the page can be checked by eye. The charts are files the
# page loads; the virtual time budget lets them load before the picture is taken.
# Usage: scripts/screenshot-index.sh [OUT_DIR] [SCREENSHOT.png] [HEIGHT]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
out=${1:-out}
shot=${2:-$out/index.png}
height=${3:-1700}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "screenshot-index: no chromium on PATH (apt-get install -y chromium)" >&2
  exit 1
fi
go run . compare --charts png,svg --out "$out" > /dev/null
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --hide-scrollbars --window-size=1280,"$height" --virtual-time-budget=10000 \
  --screenshot="$(realpath -m "$shot")" "file://$(realpath "$out")/index.html" 2>/dev/null
echo "screenshot-index: $shot"
