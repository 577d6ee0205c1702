#!/usr/bin/env bash
# Writes the results of `rlsim compare` with charts into a folder and screenshots its
# index.html with headless Chromium (Debian: apt-get install -y chromium), so the page can
# be checked by eye. Usage: scripts/screenshot-index.sh [OUT_DIR] [SCREENSHOT.png]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
out=${1:-out}
shot=${2:-$out/index.png}
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
  --user-data-dir="$profile" --hide-scrollbars --window-size=1280,4000 \
  --screenshot="$(realpath -m "$shot")" "file://$(realpath "$out")/index.html" 2>/dev/null
echo "screenshot-index: $shot"
