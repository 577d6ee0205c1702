#!/usr/bin/env bash
# Measures the figures of docs/performance.md, each as a ratio against its peer measured in
# the same run: every benchmark binary is built once and the benchmarks run in alternation,
# ROUNDS times, so that a figure and its peer meet the same machine load; the ratios are
# medians of the ratios of each round.
#
#   scripts/bench.sh [ROUNDS]                  benchmarks and whole runs of this tree
#   BASE=REF scripts/bench.sh [ROUNDS]         the whole runs also on the build of git REF,
#                                              alternated with this tree's (before/after)
#   RLSIM_REDIS_URL=redis://HOST:PORT/DB ...   pipelined script decisions on that server
#                                              against redis-benchmark's EVALSHA -P 100
#   REDIS_ONLY=1 RLSIM_REDIS_URL=...           those alone
#   FLEET_ONLY=1 RLSIM_REDIS_URL=...           whole runs of the fleets of scripts/fleets on
#                                              that server against redis-benchmark of their shape
#   REPLAY_ONLY=1 scripts/bench.sh [ROUNDS]    the replays of generated logs alone
#   REPLAY_LINES="2000000 20000000"            the sizes of those logs (lines)
#   BASE_MAX_LINES=0 BASE_MEMORY=1             the base build replays every size, with --memory
#   TUNE_ONLY=1 scripts/bench.sh               the tune of the 2M-line log alone (TUNE_LINES)
#
# Needs benchstat (go install golang.org/x/perf/cmd/benchstat@latest) and GNU time at
# /usr/bin/time; redis-benchmark and redis-cli for the Redis figures. Raw benchmark lines go
# to $BENCH_OUT (default bench.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-6}
out=${BENCH_OUT:-bench.txt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# median reads numbers, one a line, and prints their median.
median() {
  sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
# values FILE BENCH UNIT prints the UNIT figure of each line of benchmark BENCH, in order.
values() {
  grep -E "^Benchmark$2-[0-9]+[[:space:]]" "$1" | awk -v unit="$3" '{for (i = 2; i < NF; i++) if ($(i + 1) == unit) print $i}' || true
}
# ratio FILE A B UNIT prints the median over rounds of A's figure divided by B's.
ratio() {
  paste <(values "$1" "$2" "$4") <(values "$1" "$3" "$4") | awk 'NF == 2 && $2 > 0 {print $1 / $2}' | median
}

if [[ -z ${REDIS_ONLY:-} && -z ${REPLAY_ONLY:-} && -z ${TUNE_ONLY:-} && -z ${FLEET_ONLY:-} ]]; then # (not indented: the benchmarks and whole runs)
# Benchmarks, in alternation.
for pkg in algorithms sim report run backoff; do
  go test -c -o "$tmp/$pkg.test" "./$pkg"
done
: > "$out"
bench() { # pkg pattern [flags]
  local pkg=$1 pattern=$2
  shift 2
  (cd "$pkg" && "$tmp/$pkg.test" -test.run '^$' -test.bench "$pattern" -test.benchmem "$@") |
    grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >> "$out"
}
for _ in $(seq "$rounds"); do
  bench algorithms 'XTimeRateAllowN|Admit/.*/1key|Admit/token-bucket/hot-and-cold|Allow/token-bucket/1key'
  bench sim 'EventQueue|Actors'
  bench report 'CollectorObserve'
  bench run 'Compare'
  bench backoff 'OCCSweep' -test.benchtime=1x
done
benchstat "$out"
echo
echo "ratios, medians over $rounds rounds of the ratio within each round:"
peer='XTimeRateAllowN'
printf '  %-48s %8s ns  %6.2fx faster than x/time/rate AllowN (%s ns)\n' \
  "token-bucket Admit, one hot key" "$(values "$out" 'Admit/token-bucket/1key' ns/op | median)" \
  "$(ratio "$out" "$peer" 'Admit/token-bucket/1key' ns/op)" "$(values "$out" "$peer" ns/op | median)"
printf '  %-48s %8s ns  %6.2fx faster than x/time/rate AllowN\n' \
  "token-bucket Allow (with Remaining, Reset)" "$(values "$out" 'Allow/token-bucket/1key' ns/op | median)" \
  "$(ratio "$out" "$peer" 'Allow/token-bucket/1key' ns/op)"
for alg in token-bucket fixed-window gcra leaky-bucket sliding-window sliding-log; do
  printf '  %-48s %8s ns  %6.2fx the bare event (EventQueue/sources=1)\n' \
    "$alg Admit, one hot key" "$(values "$out" "Admit/$alg/1key" ns/op | median)" \
    "$(ratio "$out" "Admit/$alg/1key" 'EventQueue/sources=1' ns/op)"
done
printf '  %-48s %8s ns  %6.2fx the bare event (EventQueue/sources=1)\n' \
  "token-bucket Admit, a hot key and cold ones" "$(values "$out" 'Admit/token-bucket/hot-and-cold' ns/op | median)" \
  "$(ratio "$out" 'Admit/token-bucket/hot-and-cold' 'EventQueue/sources=1' ns/op)"
printf '  %-48s %8s ns  %6.2fx the bare event\n' "reference, 1M Zipf keys (CollectorObserve)" \
  "$(values "$out" 'CollectorObserve/keys=1M' ns/op | median)" "$(ratio "$out" 'CollectorObserve/keys=1M' 'EventQueue/sources=1' ns/op)"
printf '  %-48s %8s ns  %6.2fx faster on every core than on one\n' "compare steady-poisson, per decision" \
  "$(values "$out" 'Compare/steady-poisson/workers=0' ns/decision | median)" \
  "$(ratio "$out" 'Compare/steady-poisson/workers=1' 'Compare/steady-poisson/workers=0' ns/decision)"
printf '  %-48s %8s ns  %6.2fx faster than sim.Queue (%s ns)\n' "occ's queue, one event of 190 clients (Tournament)" \
  "$(values "$out" 'Actors/Tournament/actors=190' ns/op | median)" \
  "$(ratio "$out" 'Actors/sim.Queue/actors=190' 'Actors/Tournament/actors=190' ns/op)" \
  "$(values "$out" 'Actors/sim.Queue/actors=190' ns/op | median)"
printf '  %-48s %8s s   %6.2fx faster on every core than on one\n' "backoff sweep 19 x 100 x 5 (OCCSweep)" \
  "$(values "$out" 'OCCSweep/workers=0' ns/op | awk '{print $1 / 1e9}' | median)" \
  "$(ratio "$out" 'OCCSweep/workers=1' 'OCCSweep/workers=0' ns/op)"

# Whole runs: the built binary under /usr/bin/time, and the build of BASE in alternation.
go build -o "$tmp/rlsim" .
builds=(rlsim)
if [[ -n ${BASE:-} ]]; then
  mkdir "$tmp/base"
  git archive "$BASE" | tar -x -C "$tmp/base"
  (cd "$tmp/base" && go build -o "$tmp/rlsim-base" .)
  builds=(rlsim-base rlsim)
fi
# whole LABEL BINARY ARGS... appends "LABEL wall cpu maxrss_kB decisions reported_bytes".
whole() {
  local label=$1 bin=$2
  shift 2
  (cd "$tmp" && /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$tmp/$bin" "$@" > "$tmp/run.json")
  read -r wall user sys rss < "$tmp/time"
  local decisions reported
  decisions=$({ grep -E '^ *"requests": ' "$tmp/run.json" || true; } | tr -dc '0-9\n' | awk '{s += $1} END {print s + 0}')
  reported=$({ grep -E '^ *"bytes": ' "$tmp/run.json" || true; } | tr -dc '0-9\n' | tail -1)
  echo "$label $wall $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}') $rss $decisions ${reported:-0}" >> "$tmp/whole"
}
: > "$tmp/whole"
whole_rounds=${WHOLE_ROUNDS:-3}
sweep=(backoff --model occ --clients 10..190/10 --runs 100
  --strategies none,exponential,full-jitter,equal-jitter,decorrelated-jitter --charts none --out "" --format json)
for _ in $(seq "$whole_rounds"); do
  for b in "${builds[@]}"; do
    whole "$b:million-keys" "$b" run million-keys --format json
    whole "$b:sweep" "$b" "${sweep[@]}"
  done
done
echo
echo "whole runs ($whole_rounds rounds each, medians; CPU is user+sys):"
for b in "${builds[@]}"; do
  m() { awk -v l="$b:$1" -v c="$2" '$1 == l {print $c}' "$tmp/whole" | median; }
  mk=$(awk -v l="$b:million-keys" '$1 == l {print $5 / $3}' "$tmp/whole" | median)
  printf '  %-12s million-keys: %6.2f s wall, %6.2f CPU-s, %5.2fM decisions per CPU-second, %5.2fM/s wall, peak RSS %4.2fx reported\n' \
    "$b" "$(m million-keys 2)" "$(m million-keys 3)" "$(awk -v x="$mk" 'BEGIN {print x / 1e6}')" \
    "$(awk -v l="$b:million-keys" '$1 == l {print $5 / $2 / 1e6}' "$tmp/whole" | median)" \
    "$(awk -v l="$b:million-keys" '$1 == l && $6 > 0 {print $4 * 1024 / $6}' "$tmp/whole" | median)"
  printf '  %-12s backoff sweep: %5.2f s wall, %5.2f CPU-s\n' "$b" "$(m sweep 2)" "$(m sweep 3)"
done
if [[ -n ${BASE:-} ]]; then
  # Ratios of the runs next to each other (base, then this tree, in each round).
  pair() { # label column
    paste <(awk -v l="rlsim-base:$1" -v c="$2" '$1 == l {print $c}' "$tmp/whole") \
      <(awk -v l="rlsim:$1" -v c="$2" '$1 == l {print $c}' "$tmp/whole") | awk '{print $1 / $2}' | median
  }
  printf '  this tree against %s: million-keys %.2fx less CPU, %.2fx less wall; backoff sweep %.2fx less CPU, %.2fx less wall\n' \
    "$BASE" "$(pair million-keys 3)" "$(pair million-keys 2)" "$(pair sweep 3)" "$(pair sweep 2)"
fi

fi # REDIS_ONLY, REPLAY_ONLY, TUNE_ONLY

# Replays: a generated combined log (internal/loggen, seeded: 262k client addresses at 300
# requests/s, lines a few seconds out of order) of each size in REPLAY_LINES, replayed
# through the six algorithms keyed on the address, alternated in each round with a bare
# Go line reader of the same file (genlog -count) as the peer; and, once, a replay of a
# one-line log, the process's own memory with next to no state.
if [[ -z ${REDIS_ONLY:-} && -z ${TUNE_ONLY:-} && -z ${FLEET_ONLY:-} ]]; then
  go build -o "$tmp/rlsim" .
  go build -o "$tmp/genlog" ./scripts/genlog
  replay_builds=(rlsim)
  if [[ -n ${BASE:-} && ! -x $tmp/rlsim-base ]]; then
    mkdir -p "$tmp/base"
    git archive "$BASE" | tar -x -C "$tmp/base"
    (cd "$tmp/base" && go build -o "$tmp/rlsim-base" .)
  fi
  [[ -n ${BASE:-} ]] && replay_builds=(rlsim-base rlsim)
  "$tmp/genlog" -lines 1 > "$tmp/one.log"
  /usr/bin/time -f '%M' -o "$tmp/time" "$tmp/rlsim" replay "$tmp/one.log" --format json --out "" > /dev/null
  base_rss=$(cat "$tmp/time")
  : > "$tmp/replays"
  for n in ${REPLAY_LINES:-2000000 20000000}; do
    log=$tmp/replay-$n.log
    "$tmp/genlog" -lines "$n" > "$log"
    for _ in $(seq "${WHOLE_ROUNDS:-3}"); do
      /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$tmp/genlog" -count "$log" > /dev/null
      read -r wall user sys rss < "$tmp/time"
      echo "reader:$n $wall $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}') $rss $n 0" >> "$tmp/replays"
      for b in "${replay_builds[@]}"; do
        extra=(--memory)
        if [[ $b == rlsim-base ]]; then
          # A build that holds every line (1.15 KB each before replay streamed) is not
          # run where that would not fit: above BASE_MAX_LINES (5M) lines. A base that
          # streams can take BASE_MAX_LINES=0 (no bound) and --memory (BASE_MEMORY=1).
          ((${BASE_MAX_LINES:-5000000} > 0 && n > ${BASE_MAX_LINES:-5000000})) && continue
          extra=()
          [[ -n ${BASE_MEMORY:-} ]] && extra=(--memory)
        fi
        /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$tmp/$b" replay "$log" --format json --out "" "${extra[@]}" > "$tmp/replay.json"
        read -r wall user sys rss < "$tmp/time"
        held=$({ grep -E '^ *"bytes": ' "$tmp/replay.json" || true; } | tr -dc '0-9\n' | tail -1)
        echo "$b:$n $wall $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}') $rss $n ${held:-0}" >> "$tmp/replays"
      done
    done
    rm -f "$log"
  done
  echo
  echo "replays of generated logs (${WHOLE_ROUNDS:-3} rounds each, medians; CPU is user+sys; keyed by ip, six algorithms;"
  echo "the peer is a bare Go line reader of the same file; a one-line log's replay peaks at $((base_rss / 1024)) MB):"
  for n in ${REPLAY_LINES:-2000000 20000000}; do
    m() { awk -v l="$1:$n" -v c="$2" '$1 == l {print $c}' "$tmp/replays" | median; }
    per() { awk -v l="$1:$n" '$1 == l {print $5 / $3}' "$tmp/replays" | median; }
    printf '  %9d lines, bare reader: %6.2f CPU-s, %6.2fM lines per CPU-second\n' "$n" "$(m reader 3)" "$(awk -v x="$(per reader)" 'BEGIN {print x / 1e6}')"
    for b in "${replay_builds[@]}"; do
      grep -q "^$b:$n " "$tmp/replays" || continue
      printf '  %9d lines, %-10s %6.2f s wall, %6.2f CPU-s, %5.0fk lines per CPU-second (%.3fx the reader), peak RSS %4.0f MB' \
        "$n" "$b:" "$(m "$b" 2)" "$(m "$b" 3)" "$(awk -v x="$(per "$b")" 'BEGIN {print x / 1e3}')" \
        "$(paste <(awk -v l="$b:$n" '$1 == l {print $5 / $3}' "$tmp/replays") <(awk -v l="reader:$n" '$1 == l {print $5 / $3}' "$tmp/replays") | awk '{print $1 / $2}' | median)" \
        "$(awk -v x="$(m "$b" 4)" 'BEGIN {print x / 1024}')"
      if [[ $b == rlsim || -n ${BASE_MEMORY:-} ]]; then
        printf ', %4.0f MB held: %.2fx held, %.2fx above the one-line log' "$(awk -v x="$(m "$b" 6)" 'BEGIN {print x / 2^20}')" \
          "$(awk -v l="$b:$n" '$1 == l && $6 > 0 {print $4 * 1024 / $6}' "$tmp/replays" | median)" \
          "$(awk -v l="$b:$n" -v base="$base_rss" '$1 == l && $6 > 0 {print ($4 - base) * 1024 / $6}' "$tmp/replays" | median)"
      fi
      echo
    done
  done
fi

# Tune: the policy search of rlsim tune over a generated log of TUNE_LINES (default 2M)
# lines — the default three algorithms × the keys ip, route and user × the default windows,
# limits and bursts, with the recommendation re-checked by a replay — whole-process, beside
# the peer: one replay of the same log through the same three algorithms at one policy.
if [[ -z ${REDIS_ONLY:-} && -z ${REPLAY_ONLY:-} && -z ${FLEET_ONLY:-} ]]; then
  go build -o "$tmp/rlsim" .
  go build -o "$tmp/genlog" ./scripts/genlog
  n=${TUNE_LINES:-2000000}
  log=$tmp/tune-$n.log
  "$tmp/genlog" -lines "$n" > "$log"
  : > "$tmp/tunes"
  for _ in $(seq "${WHOLE_ROUNDS:-3}"); do
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$tmp/rlsim" replay "$log" --algorithms fixed-window,sliding-window,token-bucket \
      --format json --out "" > /dev/null
    read -r wall user sys rss < "$tmp/time"
    echo "replay $wall $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}') $rss" >> "$tmp/tunes"
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$tmp/rlsim" tune "$log" --key ip,route,user \
      --goal 'legit-refused<=1%' --goal 'key-refused<=0.1%@p99.9' --format json --out "" > "$tmp/tune.json" || true
    read -r wall user sys rss < "$tmp/time"
    echo "tune $wall $(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}') $rss" >> "$tmp/tunes"
  done
  rm -f "$log"
  m() { awk -v l="$1" -v c="$2" '$1 == l {print $c}' "$tmp/tunes" | median; }
  echo
  echo "tune of a generated $n-line log (${WHOLE_ROUNDS:-3} rounds, medians; CPU is user+sys;"
  echo "3 algorithms x keys ip,route,user x windows 1s,10s,1m, default limits and bursts):"
  printf '  tune:   %6.2f s wall, %6.2f CPU-s, peak RSS %4.0f MB, %s candidates run whole\n' "$(m tune 2)" "$(m tune 3)" \
    "$(awk -v x="$(m tune 4)" 'BEGIN {print x / 1024}')" "$(grep -m1 '"evaluated"' "$tmp/tune.json" | tr -dc '0-9')"
  printf '  replay: %6.2f s wall, %6.2f CPU-s (the same log, the same three algorithms, one policy)\n' "$(m replay 2)" "$(m replay 3)"
  printf '  tune / replay: %.2fx the CPU, %.2fx the wall\n' \
    "$(paste <(awk '$1 == "tune" {print $3}' "$tmp/tunes") <(awk '$1 == "replay" {print $3}' "$tmp/tunes") | awk '{print $1 / $2}' | median)" \
    "$(paste <(awk '$1 == "tune" {print $2}' "$tmp/tunes") <(awk '$1 == "replay" {print $2}' "$tmp/tunes") | awk '{print $1 / $2}' | median)"
fi

# A user's Lua script on the embedded miniredis (--lua): decisions/s and CPU per decision
# over 10 and 100000 keys, beside the floor of a script that only returns 1 (miniredis's
# cost of any call), ROUNDS times in alternation.
if [[ -z ${REPLAY_ONLY:-} && -z ${REDIS_ONLY:-} && -z ${TUNE_ONLY:-} && -z ${FLEET_ONLY:-} ]]; then
  go test -c -o "$tmp/external.test" ./external
  : > "$tmp/lua"
  for _ in $(seq "$rounds"); do
    (cd external && "$tmp/external.test" -test.run '^$' -test.bench 'LuaEmbedded' -test.benchtime 20000x) | grep -E '^Benchmark' >> "$tmp/lua"
  done
  cat "$tmp/lua" >> "$out"
  echo
  echo "embedded --lua ($rounds rounds of 20000 decisions, medians):"
  for b in keys=10 keys=100000 floor/keys=10; do
    printf '  %-40s %7.0f decisions/s %7.0f cpu-ns/decision\n' "LuaEmbedded/$b" \
      "$(values "$tmp/lua" "LuaEmbedded/$b" decisions/s | median)" "$(values "$tmp/lua" "LuaEmbedded/$b" cpu-ns/op | median)"
  done
  printf '  %-40s %5.2fx (1.00: flat in the number of keys)\n' "keys=100000 over keys=10" \
    "$(ratio "$tmp/lua" LuaEmbedded/keys=100000 LuaEmbedded/keys=10 decisions/s)"
  printf '  %-40s %5.2fx of the floor'"'"'s CPU a decision is miniredis'"'"'s own\n' "floor over keys=10" \
    "$(ratio "$tmp/lua" LuaEmbedded/floor/keys=10 LuaEmbedded/keys=10 cpu-ns/op)"
fi

# Pipelined script decisions on a real server against the server's own benchmark client.
# Each benchmark runs on its own, the server's CPU time (INFO cpu) read before and after and
# the client's by /usr/bin/time, so that every line also says how busy the server was and
# what each decision cost either side.
if [[ -n ${RLSIM_REDIS_URL:-} && -z ${TUNE_ONLY:-} && -z ${FLEET_ONLY:-} ]] && command -v redis-benchmark > /dev/null; then
  hostport=${RLSIM_REDIS_URL#redis://}
  hostport=${hostport%%/*}
  host=${hostport%:*}
  port=${hostport##*:}
  go test -c -o "$tmp/store.test" ./store
  sha=$(redis-cli -h "$host" -p "$port" SCRIPT LOAD "$(cat store/lua/sliding_window.lua)")
  now=$(($(date -d 2026-01-01T10:00:00Z +%s) * 1000000))
  servercpu() {
    redis-cli -h "$host" -p "$port" INFO cpu | awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%.6f", s}'
  }
  # served PATTERN: one benchmark of store.test, its line with the server's and the
  # client's CPU per decision appended.
  served() {
    local before after line
    before=$(servercpu)
    line=$( (cd store && /usr/bin/time -f 'client-cpu %U %S' -o "$tmp/client" "$tmp/store.test" -test.run '^$' -test.bench "$1" -test.benchtime 2s) |
      grep -E '^Benchmark')
    after=$(servercpu)
    awk -v line="$line" -v a="$before" -v b="$after" '$1 == "client-cpu" {split(line, f, " ");
      n = f[2]; printf "%s %.2f server-us/decision %.2f client-us/decision\n", line, (b - a) / n * 1e6, ($2 + $3) / n * 1e6}' "$tmp/client"
  }
  : > "$tmp/redis"
  variants=('PipelineOneWindow/^lanes=4$' 'PipelineOneWindow/^waiting$/^lanes=4$' 'PipelineOneWindow/^lanes=1$'
    'PipelineOneWindow/^waiting$/^lanes=1$' 'PipelineOneWindow/^lanes=2$')
  for lanes in 1 2 4; do
    variants+=("PipelineOneWindow/^batch=1024\$/^lanes=$lanes\$")
  done
  for lanes in 1 4; do
    variants+=("^BenchmarkPipeline\$/^redis\$/^batch=256\$/^lanes=$lanes\$")
    variants+=("PipelineManyKeys/^keys=140000\$/^lanes=$lanes\$")
    variants+=("PipelineManyKeys/^keys=140000\$/^batch=1024\$/^lanes=$lanes\$")
    variants+=("PipelineManyKeys/^keys=140000\$/^away=3\$/^lanes=$lanes\$")
    variants+=("PipelineManyKeys/^keys=140000\$/^away=3\$/^batch=1024\$/^lanes=$lanes\$")
    variants+=("PipelineManyKeys/^keys=140000\$/^away=8\$/^lanes=$lanes\$")
  done
  # peer NAME KEYS: redis-benchmark sending the same script call for KEYS clients drawn at
  # random (the two-counter window of 100/min, its seven arguments), its line appended.
  peer() {
    local before after rb
    before=$(servercpu)
    rb=$(/usr/bin/time -f 'client-cpu %U %S' -o "$tmp/client" redis-benchmark -h "$host" -p "$port" -P 100 -n 200000 -r "$2" -q --csv \
      EVALSHA "$sha" 2 'rlsim-bench:rb:{__rand_int__}:sw:a' 'rlsim-bench:rb:{__rand_int__}:sw:b' "$now" 100 60000000 100 1 0 0 |
      awk -F'","' 'NR > 1 {gsub(/"/, "", $2); print $2}')
    after=$(servercpu)
    awk -v name="$1" -v rb="$rb" -v a="$before" -v b="$after" '$1 == "client-cpu" {
      printf "Benchmark%s-1 200000 %s decisions/s %.2f server-us/decision %.2f client-us/decision\n", name, rb, (b - a) / 200000 * 1e6, ($2 + $3) / 200000 * 1e6}' "$tmp/client" >> "$tmp/redis"
  }
  for _ in $(seq "$rounds"); do
    for v in "${variants[@]}"; do
      served "$v" >> "$tmp/redis"
    done
    peer RedisBenchmarkEVALSHA 100
    peer RedisBenchmarkEVALSHAManyKeys 140000
    redis-cli -h "$host" -p "$port" --scan --pattern 'rlsim-bench:rb:*' | xargs -r redis-cli -h "$host" -p "$port" DEL > /dev/null
  done
  [[ -n ${REDIS_ONLY:-} ]] && : > "$out"
  cat "$tmp/redis" >> "$out"
  # line LABEL BENCH: its medians, its ratio to redis-benchmark, and how busy the server was
  # (decisions/s x server CPU per decision).
  line() {
    local busy
    busy=$(paste <(values "$tmp/redis" "$2" decisions/s) <(values "$tmp/redis" "$2" server-us/decision) | awk '{print $1 * $2 / 1e4}' | median)
    printf '  %-50s %7.0f/s %5.2fx  server %5.2f us/decision, busy %3.0f%%' "$1" \
      "$(values "$tmp/redis" "$2" decisions/s | median)" "$(ratio "$tmp/redis" "$2" "${3:-RedisBenchmarkEVALSHA}" decisions/s)" \
      "$(values "$tmp/redis" "$2" server-us/decision | median)" "$busy"
    printf ', client %5.2f us/decision\n' "$(values "$tmp/redis" "$2" client-us/decision | median)"
  }
  echo
  echo "pipelined Redis ($rounds rounds, medians; the peer is redis-benchmark -P 100 on the same server;"
  echo "each batch made while the one before is on its way, as a run sends them, unless \"waiting\"):"
  line "redis-benchmark EVALSHA -P 100 (the peer)" RedisBenchmarkEVALSHA
  for lanes in 4 1; do
    line "batch 256 on $lanes connection(s), calls in one window" "PipelineOneWindow/lanes=$lanes"
    line "  the same, waiting for each batch's replies" "PipelineOneWindow/waiting/lanes=$lanes"
  done
  for lanes in 4 1; do
    printf '  %-50s %5.2fx (the median of each round'"'"'s ratio)\n' "made while the last is on its way, $lanes connection(s)" \
      "$(ratio "$tmp/redis" "PipelineOneWindow/lanes=$lanes" "PipelineOneWindow/waiting/lanes=$lanes" decisions/s)"
  done
  line "batch 256 on 2 connections, calls in one window" "PipelineOneWindow/lanes=2"
  for lanes in 1 2 4; do
    line "batch 1024 on $lanes connection(s), calls in one window" "PipelineOneWindow/batch=1024/lanes=$lanes"
  done
  for lanes in 1 4; do
    line "batch 256 on $lanes connection(s), calls 1 ms apart" "Pipeline/redis/batch=256/lanes=$lanes"
  done
  echo "over 140000 keys, each call's client drawn at random (the peer: redis-benchmark -r 140000):"
  line "redis-benchmark EVALSHA -P 100 -r 140000 (the peer)" RedisBenchmarkEVALSHAManyKeys RedisBenchmarkEVALSHAManyKeys
  for lanes in 4 1; do
    line "batch 256 on $lanes connection(s), 140000 keys" "PipelineManyKeys/keys=140000/lanes=$lanes" RedisBenchmarkEVALSHAManyKeys
    line "batch 1024 on $lanes connection(s), 140000 keys" "PipelineManyKeys/keys=140000/batch=1024/lanes=$lanes" RedisBenchmarkEVALSHAManyKeys
    line "  batch 256, 3 on their way (as runs sent them before)" "PipelineManyKeys/keys=140000/away=3/lanes=$lanes" RedisBenchmarkEVALSHAManyKeys
    line "  batch 1024, 3 on their way" "PipelineManyKeys/keys=140000/away=3/batch=1024/lanes=$lanes" RedisBenchmarkEVALSHAManyKeys
    line "  batch 256, 8 on their way (as a run sends them)" "PipelineManyKeys/keys=140000/away=8/lanes=$lanes" RedisBenchmarkEVALSHAManyKeys
  done
fi

# Whole fleet runs on a real server (rlsim run FLEET --redis URL, its store line's decisions
# per second) against redis-benchmark sending the same script call at the same shape: the
# same keys' names and lengths (under "bench-…" where the fleet's are under "fleet-…", of the
# same length) and arguments, and keys drawn as the fleet's are — fleet-140k-uniform draws its
# 150 000 requests' users at random among 140 000, as -r 140000 does; fleet-140k gives every
# request an address of its own, so its peer makes a key with every call (-r 1000000000).
# The uniform fleet is also set against the peer of the benchmarks above (34-byte keys).
# Each fleet run sits between two runs of each of its peers (peer, fleet, peer: the machine's
# speed drifts within seconds), its ratio to a peer is to the mean of the two, and a figure
# is the median of the rounds'. With BASE, each round runs the base build's fleets first.
if [[ -n ${FLEET_ONLY:-} ]]; then
  [[ -n ${RLSIM_REDIS_URL:-} ]] || { echo "FLEET_ONLY needs RLSIM_REDIS_URL" >&2; exit 2; }
  command -v redis-benchmark > /dev/null || { echo "FLEET_ONLY needs redis-benchmark" >&2; exit 2; }
  hostport=${RLSIM_REDIS_URL#redis://}
  db=${hostport#*/}
  [[ $db == "$hostport" || -z $db ]] && db=0
  hostport=${hostport%%/*}
  host=${hostport%:*}
  port=${hostport##*:}
  cli() { redis-cli -h "$host" -p "$port" -n "$db" "$@"; }
  go build -o "$tmp/rlsim" .
  sha=$(cli SCRIPT LOAD "$(cat store/lua/sliding_window.lua)")
  now=$(($(date -d 2026-01-01T10:00:00Z +%s) * 1000000 + 10))
  win=$((now / 60000000))
  # fpeer NAME R INNER [PREFIX]: redis-benchmark -r R, the fleet's call with keys of INNER (in
  # braces; PREFIX before them, by default the fleet's own of the same length), its decisions
  # per second appended to $tmp/fleet under "$b:peer-NAME"; its keys deleted after it.
  fpeer() {
    local pre="${4:-rlsim:bench-${1#fleet-}:0:sliding-window:}{$3}:sw:"
    redis-benchmark -h "$host" -p "$port" --dbnum "$db" -P 100 -n 150000 -r "$2" -q --csv \
      EVALSHA "$sha" 2 "$pre$((win - 1))" "$pre$win" "$now" 100 60000000 100 1 3600000 106 |
      awk -F'","' -v name="$1" -v b="$b" 'NR > 1 {gsub(/"/, "", $2); print b ":peer-" name, $2}' >> "$tmp/fleet"
    cli --scan --pattern "${4:-rlsim:bench-${1#fleet-}:}*" | xargs -r -n 1000 redis-cli -h "$host" -p "$port" -n "$db" UNLINK > /dev/null
  }
  fleet_builds=(rlsim)
  if [[ -n ${BASE:-} ]]; then
    mkdir -p "$tmp/base"
    git archive "$BASE" | tar -x -C "$tmp/base"
    (cd "$tmp/base" && go build -o "$tmp/rlsim-base" .)
    fleet_builds=(rlsim-base rlsim)
  fi
  # frun BUILD FLEET: one whole run, its decisions per second appended to $tmp/fleet.
  frun() {
    "$tmp/$1" run "scripts/fleets/$2.yaml" --redis "$RLSIM_REDIS_URL" --format json 2>&1 > /dev/null |
      awk -v name="$1:$2" '/store:/ {for (i = 1; i < NF; i++) if ($(i + 1) == "decisions/s;" || $(i + 1) == "decisions/s") print name, $i}' >> "$tmp/fleet"
  }
  : > "$tmp/fleet"
  for _ in $(seq "$rounds"); do
    for b in "${fleet_builds[@]}"; do
      fpeer short 140000 '__rand_int__' 'rlsim-bench:rb:'
      fpeer fleet-140k-uniform 140000 'u-__rand_int__'
      frun "$b" fleet-140k-uniform
      fpeer fleet-140k-uniform 140000 'u-__rand_int__'
      fpeer short 140000 '__rand_int__' 'rlsim-bench:rb:'
      fpeer fleet-140k 1000000000 '2001:db8:bad:1:f9ea:8:__rand_int__'
      frun "$b" fleet-140k
      fpeer fleet-140k 1000000000 '2001:db8:bad:1:f9ea:8:__rand_int__'
    done
  done
  # against PEER RUN [NOTE]: RUN's median decisions per second, its peer's (the mean of the
  # runs either side of each), and the median of the rounds' ratios.
  against() {
    paste <(awk -v n="$1" '$1 == n {if (++i % 2) b = $2; else print (b + $2) / 2}' "$tmp/fleet") \
      <(awk -v n="$2" '$1 == n {print $2}' "$tmp/fleet") > "$tmp/pairs"
    printf '  %-30s %7.0f/s against the peer'"'"'s %7.0f/s: %5.2fx (rounds: %s)%s\n' "$2" \
      "$(cut -f2 "$tmp/pairs" | median)" "$(cut -f1 "$tmp/pairs" | median)" \
      "$(awk '$1 > 0 {print $2 / $1}' "$tmp/pairs" | median)" "$(awk '$1 > 0 {printf "%s%.2f", (NR > 1 ? " " : ""), $2 / $1}' "$tmp/pairs")" "${3:-}"
  }
  echo
  echo "whole fleet runs against redis-benchmark of their shape ($rounds rounds, medians):"
  for b in "${fleet_builds[@]}"; do
    against "$b:peer-fleet-140k-uniform" "$b:fleet-140k-uniform"
    against "$b:peer-short" "$b:fleet-140k-uniform" ", the peer's keys of 34 bytes"
    against "$b:peer-fleet-140k" "$b:fleet-140k" ", the peer making a key with every call"
  done
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
