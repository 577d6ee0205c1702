#!/usr/bin/env bash
# Draws the figures of the fleets with the most runs, cluster-racy (72) and cluster-skew
# (60), and screenshots their SVGs in headless Chromium (Debian: apt-get install -y
# chromium) at their own size, into docs/charts/, so a person can see that every panel and
# label of the largest figures reads.
# Usage: scripts/screenshot-charts.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
out=${1:-$(mktemp -d)}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "screenshot-charts: no chromium on PATH (apt-get install -y chromium)" >&2
  exit 1
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
for scenario in cluster-racy cluster-skew; do
  go run . run "$scenario" --charts svg --out "$out" > /dev/null
  for chart in admitted-timeline accuracy; do
    svg=$out/$scenario/$chart.svg
    # The SVG's size in points; Chromium's window in CSS pixels, 4/3 of a point.
    read -r w h < <(sed -n 's/^<svg width="\([0-9.]*\)pt" height="\([0-9.]*\)pt".*/\1 \2/p' "$svg" |
      awk '{ printf "%d %d\n", $1 * 4 / 3 + 0.999, $2 * 4 / 3 + 0.999 }')
    shot=docs/charts/$scenario-$chart-chromium.png
    "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
      --disable-background-networking --disable-component-update --disable-sync \
      --user-data-dir="$profile" --hide-scrollbars --window-size="$w,$h" \
      --screenshot="$(realpath -m "$shot")" "file://$(realpath "$svg")" 2>/dev/null
    echo "screenshot-charts: $shot (${w}×${h})"
  done
done
