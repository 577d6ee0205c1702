package claims

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/store"
)

// Config is what the claims may use from outside the process.
type Config struct {
	// RedisURL, when set, is a Redis server the memory claims measure on (MEMORY USAGE of
	// keys the scripts wrote, under MemoryPrefix, deleted afterwards); when empty they use
	// the store's model calibrated on Redis 7, and say so.
	RedisURL string
}

// MemoryPrefix is where the memory claims write on a real server; they refuse to run
// when it already holds keys, and delete exactly what they wrote.
const MemoryPrefix = "rlsim-claims:"

// memoryLoad is how many clients per algorithm the memory claims load on a real server:
// enough for a stable mean, few enough to stay well under a second; the totals for a
// million keys scale that mean, and the measured text says so.
const memoryLoad = 1000

// fleetRow finds the result of one fleet variant and algorithm in a cluster report.
func fleetRow(rep *report.Report, variant, algorithm string) (report.Result, *report.Distributed, error) {
	for _, x := range rep.Results {
		if d := x.Distributed; d != nil && d.Variant == variant && x.Algorithm == algorithm {
			return x, d, nil
		}
	}
	return report.Result{}, nil, fmt.Errorf("scenario %s: no fleet result for %s in variant %s", rep.Scenario, algorithm, variant)
}

// incrExpireCrash runs cluster-nonatomic on the in-process store model: 200 clients well
// under 10/min, five nodes, a 2% chance that a process dies between INCR and EXPIRE. It
// counts the keys left without a TTL at their limit, and checks from the decisions that
// their users are refused from some moment to the end of the run, while the atomic
// scripts on the same traffic leave no key without a TTL.
func incrExpireCrash() (string, Verdict, error) {
	rep, ds, err := run{name: "cluster-nonatomic", decisions: true}.do()
	if err != nil {
		return "", "", err
	}
	ttlRow, ttl, err := fleetRow(rep, "incr-expire-ttl-window", "incr-expire")
	if err != nil {
		return "", "", err
	}
	_, stamped, err := fleetRow(rep, "incr-expire-timestamped", "incr-expire")
	if err != nil {
		return "", "", err
	}
	var atomicBlocked, atomicLeaked int64
	var atomicAlgs []string
	for _, x := range rep.Results {
		if d := x.Distributed; d != nil && d.Variant == "atomic-script" {
			atomicBlocked += d.BlockedForever
			atomicLeaked += d.LeakedKeys
			atomicAlgs = append(atomicAlgs, x.Algorithm)
		}
	}
	if len(atomicAlgs) == 0 {
		return "", "", fmt.Errorf("cluster-nonatomic: no atomic-script rows")
	}
	// Users shut out: every request after their last admitted one was refused, at least
	// three of them. A user at a third of the limit is not refused three times running
	// unless a key will not let it through again.
	end := time.Duration(0)
	for _, d := range ds {
		end = max(end, d.at)
	}
	var longest time.Duration
	shutOut := func(algorithm string) int {
		refusedSince := map[string]time.Duration{} // first refusal after the last admission
		refused := map[string]int{}
		for _, d := range ds {
			if d.algorithm != algorithm {
				continue
			}
			if d.allowed {
				delete(refusedSince, d.key)
				refused[d.key] = 0
				continue
			}
			if refused[d.key] == 0 {
				refusedSince[d.key] = d.at
			}
			refused[d.key]++
		}
		n := 0
		for key, at := range refusedSince {
			if refused[key] >= 3 {
				n++
				longest = max(longest, end-at)
			}
		}
		return n
	}
	refusedTTL := shutOut("incr-expire@incr-expire-ttl-window")
	longestTTL := longest
	refusedAtomic := 0
	for _, a := range atomicAlgs {
		refusedAtomic = max(refusedAtomic, shutOut(a+"@atomic-script"))
	}
	minutes := math.Ceil(end.Minutes())
	sc, err := scenario.Load("cluster-nonatomic")
	if err != nil {
		return "", "", err
	}
	crashChance := 0.0
	for _, f := range sc.Faults {
		if f.Crash != nil {
			crashChance = f.Crash.Probability
		}
	}
	measured := fmt.Sprintf("store model, %d clients at %.1f/min against %d per %s on %d nodes, %s crash chance: counter whose window is its TTL — %d crashes, "+
		"%d keys left without a TTL at the limit (blocked_forever), %d users refused every request from some moment to the end of the run (the longest for %s); "+
		"key named by window — %d keys leaked (%d bytes), none blocked; atomic scripts (%s) — %d blocked, %d leaked, %d users shut out",
		ttlRow.Keys, float64(ttlRow.Requests)/float64(ttlRow.Keys)/minutes, rep.Policy.Limit, time.Duration(rep.Policy.Window), ttl.Nodes, percent(crashChance), ttl.Crashes, ttl.BlockedForever, refusedTTL, longestTTL.Round(time.Second),
		stamped.LeakedKeys, stamped.LeakedBytes, strings.Join(atomicAlgs, ", "), atomicBlocked, atomicLeaked, refusedAtomic)
	if ttl.BlockedForever > 0 && refusedTTL > 0 && atomicBlocked == 0 && atomicLeaked == 0 && refusedAtomic == 0 {
		if stamped.BlockedForever == 0 {
			measured += "; only a key whose window is its TTL blocks — a timestamped one leaks instead"
		}
		return measured, Holds, nil
	}
	return measured, DoesNotHold, nil
}

// offered describes the traffic of a scenario's result: its clients and the rate each
// sent on average over the run.
func offered(name string, x report.Result) (string, error) {
	sc, err := scenario.Load(name)
	if err != nil {
		return "", err
	}
	rate := float64(x.Requests) / float64(max(x.Keys, 1)) / sc.Horizon().Seconds()
	if x.Keys == 1 {
		return fmt.Sprintf("one client at %.3g/s", rate), nil
	}
	return fmt.Sprintf("%d clients at %.3g/s each", x.Keys, rate), nil
}

// localScaleOut runs cluster-local's scale-out variants: one client far over the limit,
// round-robin, 1 → 10 nodes, each node limited to L, recomputed on scaling or not.
func localScaleOut() (string, Verdict, error) {
	rep, _, err := run{name: "cluster-local"}.do()
	if err != nil {
		return "", "", err
	}
	limit := rep.Policy.Limit
	staticRow, static, err := fleetRow(rep, "scale-out-static", "sliding-log")
	if err != nil {
		return "", "", err
	}
	_, recomputed, err := fleetRow(rep, "scale-out-recomputed", "sliding-log")
	if err != nil {
		return "", "", err
	}
	traffic, err := offered("cluster-local", staticRow)
	if err != nil {
		return "", "", err
	}
	scaledAt := "-"
	if len(static.Events) > 0 {
		scaledAt = static.Events[0].At.String()
	}
	window := time.Duration(rep.Policy.Window)
	measured := fmt.Sprintf("node-local limits, %s round-robin, %d → %d nodes at %s with %d per %s each: not recomputed, the fleet admitted up to %d in one trailing window (%.2f× the limit); "+
		"recomputed to L/N on scaling, %d",
		traffic, static.Nodes, static.NodesMax, scaledAt, limit, window, static.EffectiveLimit, float64(static.EffectiveLimit)/float64(limit), recomputed.EffectiveLimit)
	want := limit * int64(static.NodesMax)
	if math.Abs(float64(static.EffectiveLimit-want)) <= 0.02*float64(want) && recomputed.EffectiveLimit <= limit {
		return measured, Holds, nil
	}
	return measured, DoesNotHold, nil
}

// unevenRouting runs cluster-local's ten-node variants: each node holds L/N, one client
// far over the limit, spread round-robin or pinned to one node by hash routing.
func unevenRouting() (string, Verdict, error) {
	rep, _, err := run{name: "cluster-local"}.do()
	if err != nil {
		return "", "", err
	}
	limit := rep.Policy.Limit
	hashed, hash, err := fleetRow(rep, "ten-nodes-hash", "sliding-log")
	if err != nil {
		return "", "", err
	}
	_, spread, err := fleetRow(rep, "ten-nodes-round-robin", "sliding-log")
	if err != nil {
		return "", "", err
	}
	traffic, err := offered("cluster-local", hashed)
	if err != nil {
		return "", "", err
	}
	measured := fmt.Sprintf("%d nodes with %d per %s each (L/N of %d), %s: hash routing pins it to one node — %d admitted in one window at most (client share %.2f), %d of %d refused; "+
		"round-robin spreads it — %d",
		hash.Nodes, limit/int64(hash.Nodes), time.Duration(rep.Policy.Window), limit, traffic, hash.EffectiveLimit, hash.ClientShareMax, hashed.Rejected, hashed.Requests, spread.EffectiveLimit)
	if hash.EffectiveLimit*int64(hash.Nodes) <= limit && spread.EffectiveLimit == limit {
		return measured, Holds, nil
	}
	return measured, DoesNotHold, nil
}

// redisSizing is the memory of the sliding log and the two counters in Redis: measured on
// cfg's server when it has one, otherwise the store's calibrated model.
type redisSizing struct {
	rep    *store.MemoryReport
	source string // the words the measured text uses for where the bytes came from
}

func sizeRedis(cfg Config, keys int, limit int64, encodingLimits ...int64) (redisSizing, error) {
	o := store.SizeOptions{
		Keys: keys, Policy: algorithms.Policy{Limit: limit, Window: time.Minute},
		Algorithms: []string{"sliding-log", "sliding-window"}, EncodingLimits: encodingLimits,
	}
	if cfg.RedisURL == "" {
		rep, err := store.Size(o)
		if err != nil {
			return redisSizing{}, err
		}
		return redisSizing{rep: rep, source: "Redis 7.0.15 calibration model (store.ModelBytes), not a live server"}, nil
	}
	r, err := store.NewRedis(cfg.RedisURL)
	if err != nil {
		return redisSizing{}, fmt.Errorf("Redis for the memory claims: %w", err)
	}
	defer r.Close()
	o.Redis, o.Prefix, o.Load = r, MemoryPrefix, min(memoryLoad, keys)
	rep, err := store.Size(o)
	if err != nil {
		return redisSizing{}, err
	}
	source := fmt.Sprintf("%s, MEMORY USAGE of %d clients' keys", rep.Redis, rep.Loaded)
	if rep.Loaded < keys {
		source += fmt.Sprintf(" extrapolated to %d", keys)
	}
	return redisSizing{rep: rep, source: source}, nil
}

func (s redisSizing) row(algorithm string) store.MemoryRow {
	for _, r := range s.rep.Results {
		if r.Algorithm == algorithm {
			return r
		}
	}
	return store.MemoryRow{}
}

// slidingLogPerElementWith is the cost of one stored timestamp in-process (the limiter's
// own count on boundary-burst) and in Redis below and above the sorted set's encoding
// change.
func slidingLogPerElementWith(cfg Config) measureFunc {
	return func() (string, Verdict, error) {
		rep, _, err := run{name: "boundary-burst", algorithms: []string{"sliding-log"}}.do()
		if err != nil {
			return "", "", err
		}
		x, err := result(rep, "sliding-log")
		if err != nil {
			return "", "", err
		}
		per := x.StateBytesPerKey / float64(x.PeakWindowAdmitted)
		// 200 clients: as many as rlsim memory loads per limit of its encoding table.
		s, err := sizeRedis(cfg, 200, 100, store.ZsetListpackEntries, 256)
		if err != nil {
			return "", "", err
		}
		var parts []string
		highest := 0.0
		for _, e := range s.rep.ZsetEncoding {
			parts = append(parts, fmt.Sprintf("%.0f B at limit %d (%s)", e.BytesPerEntry, e.Limit, e.Encoding))
			highest = math.Max(highest, e.BytesPerEntry)
		}
		measured := fmt.Sprintf("in-process: %.0f bytes for a key holding %d timestamps = %.0f bytes each; in Redis, per entry: %s — %s",
			x.StateBytesPerKey, x.PeakWindowAdmitted, per, strings.Join(parts, ", "), s.source)
		switch {
		case per >= 10 && highest <= 110:
			return measured, Holds, nil
		case per >= 10 && highest <= 200:
			return measured + "; past 128 entries the skiplist costs somewhat more than 100 B each", HoldsWithCaveat, nil
		}
		return measured, DoesNotHold, nil
	}
}

// slidingLogAtMillionKeys sizes a million sliding-log keys at limit 100 in Redis.
func slidingLogAtMillionKeys(cfg Config) measureFunc {
	return func() (string, Verdict, error) {
		const keys = 1_000_000
		s, err := sizeRedis(cfg, keys, 100)
		if err != nil {
			return "", "", err
		}
		log := s.row("sliding-log")
		gib := float64(log.RedisBytesTotal) / (1 << 30)
		measured := fmt.Sprintf("%.0f B per key (%s encoding, 100 entries) × %d keys = %.1f GiB (%.1f GB) for 100M entries; the two counters take %.0f MiB — %s",
			log.RedisBytesPerKey, log.RedisEncoding, keys, gib, float64(log.RedisBytesTotal)/1e9,
			float64(s.row("sliding-window").RedisBytesTotal)/(1<<20), s.source)
		switch gb := float64(log.RedisBytesTotal) / 1e9; {
		case gb >= 2 && gb < 10:
			return measured, Holds, nil
		case gb >= 1:
			return measured, HoldsWithCaveat, nil
		}
		return measured, DoesNotHold, nil
	}
}

// logToCountersRatioWith compares the sliding log's memory per key with the two-counter
// window's, in-process and in Redis at limit 100, and in Redis at limit 1000 (past the
// sorted set's encoding change) for scale.
func logToCountersRatioWith(cfg Config) measureFunc {
	return func() (string, Verdict, error) {
		rep, _, err := run{name: "boundary-burst", algorithms: []string{"sliding-log", "sliding-window"}}.do()
		if err != nil {
			return "", "", err
		}
		log, err := result(rep, "sliding-log")
		if err != nil {
			return "", "", err
		}
		counters, err := result(rep, "sliding-window")
		if err != nil {
			return "", "", err
		}
		inProcess := log.StateBytesPerKey / counters.StateBytesPerKey
		at100, err := sizeRedis(cfg, memoryLoad, 100)
		if err != nil {
			return "", "", err
		}
		// A hundred clients of 1000 entries already take about 12 MB on a real server.
		at1000, err := sizeRedis(cfg, 100, 1000)
		if err != nil {
			return "", "", err
		}
		ratio := at100.rep.SlidingLogVsTwoCounters
		measured := fmt.Sprintf("at limit 100 in Redis: %.0f vs %.0f bytes per key = %.1f× (%.1f orders of magnitude); in-process: %.0f vs %.0f = %.0f× (%.1f); "+
			"in Redis at limit 1000, past the sorted set's switch to a skiplist: %.0f× (%.1f) — Redis figures: %s",
			at100.row("sliding-log").RedisBytesPerKey, at100.row("sliding-window").RedisBytesPerKey, ratio, math.Log10(ratio),
			log.StateBytesPerKey, counters.StateBytesPerKey, inProcess, math.Log10(inProcess),
			at1000.rep.SlidingLogVsTwoCounters, math.Log10(at1000.rep.SlidingLogVsTwoCounters), at100.source)
		if at1000.source != at100.source {
			measured += "; at limit 1000: " + at1000.source
		}
		switch {
		case ratio >= 1000 && inProcess >= 1000:
			return measured, Holds, nil
		case ratio >= 300 || inProcess >= 300:
			return measured, HoldsWithCaveat, nil
		}
		return measured, DoesNotHold, nil
	}
}
