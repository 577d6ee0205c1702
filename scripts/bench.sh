#!/usr/bin/env bash
# Runs rlsim's benchmarks for docs/performance.md: every benchmark binary is built once and
# the benchmarks are run in alternation, ROUNDS times, so that a peer and the code it is
# compared with meet the same machine load; then benchstat summarises.
#   scripts/bench.sh [ROUNDS]      (needs benchstat: go install golang.org/x/perf/cmd/benchstat@latest)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-8}
tmp=$(mktemp -d)
for pkg in algorithms sim report run; do
  go test -c -o "$tmp/$pkg.test" "./$pkg"
done
out=${BENCH_OUT:-bench.txt}
: > "$out"
run() { # pkg pattern
  (cd "$1" && "$tmp/$1.test" -test.run '^$' -test.bench "$2" -test.benchmem) | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >> "$out"
}
for _ in $(seq "$rounds"); do
  run algorithms 'XTimeRateAllowN'
  run algorithms 'Allow/.*/1key'
  run algorithms 'Allow/.*/1Mkeys'
  run sim 'EventQueue'
  run report 'CollectorObserve'
  run run 'Compare'
done
run run 'MillionKeys' # seconds per iteration: once is enough
benchstat "$out"
rm -rf "$tmp"
