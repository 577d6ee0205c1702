package store

import (
	"embed"
	"sort"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFS embed.FS

// Script is one atomic Lua script and its in-process twin. The Redis face runs Source;
// the model runs twin on its keyspace. Every script takes the arguments
// now (µs), limit, window (µs), burst, cost and returns two integers.
type Script struct {
	// Name is the script's file name without .lua ("sliding_window").
	Name string
	// Source is the Lua text as deployed.
	Source string

	lua  *redis.Script
	twin func(ks *keyspace, keys []string, args []int64) []int64
}

func newScript(name string, twin func(*keyspace, []string, []int64) []int64) *Script {
	src, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("store: missing embedded script " + name) // a build mistake, caught by every test
	}
	return &Script{Name: name, Source: string(src), lua: redis.NewScript(string(src)), twin: twin}
}

// The scripts. Each twin below repeats its script's arithmetic line for line.
var (
	FixedWindowScript   = newScript("fixed_window", fixedWindowTwin)
	SlidingWindowScript = newScript("sliding_window", slidingWindowTwin)
	TokenBucketScript   = newScript("token_bucket", tokenBucketTwin)
	GCRAScript          = newScript("gcra", gcraTwin)
	SlidingLogScript    = newScript("sliding_log", slidingLogTwin)
	LeaseScript         = newScript("lease", leaseTwin)
)

// Scripts lists every script by name, sorted.
func Scripts() []*Script {
	s := []*Script{FixedWindowScript, SlidingWindowScript, TokenBucketScript, GCRAScript, SlidingLogScript, LeaseScript}
	sort.Slice(s, func(i, j int) bool { return s[i].Name < s[j].Name })
	return s
}

// ceilDiv is ⌈a/b⌉ for a >= 0, b > 0, as the scripts' math.ceil(a / b).
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// floorDiv is ⌊a/b⌋ for b > 0, as the scripts' math.floor(a / b).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

func fixedWindowTwin(ks *keyspace, keys []string, a []int64) []int64 {
	limit, window, cost := a[1], a[2], a[4]
	count := ks.get(keys[0])
	if count+cost > limit {
		return []int64{0, limit - count}
	}
	count = ks.incrBy(keys[0], cost)
	if count == cost {
		ks.pexpire(keys[0], ceilDiv(window, 1000))
	}
	return []int64{1, limit - count}
}

func slidingWindowTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, limit, window, cost := a[0], a[1], a[2], a[4]
	elapsed := now - floorDiv(now, window)*window
	prev := ks.get(keys[0])
	curr := ks.get(keys[1])
	carried := prev * (window - elapsed)
	remaining := func(c int64) int64 {
		room := limit*window - carried - c*window
		if room < 0 {
			return 0
		}
		return floorDiv(room, window)
	}
	if carried+(curr+cost)*window > limit*window {
		return []int64{0, remaining(curr)}
	}
	curr = ks.incrBy(keys[1], cost)
	if curr == cost {
		ks.pexpire(keys[1], 2*ceilDiv(window, 1000))
	}
	return []int64{1, remaining(curr)}
}

// bucketLevel is the refill step shared by token_bucket.lua and lease.lua.
func bucketLevel(ks *keyspace, key string, now, limit, window, burst int64) int64 {
	capacity := burst * window
	level := capacity
	if t, s, ok := ks.bucket(key); ok {
		level = s
		elapsed := now - t
		if elapsed >= ceilDiv(capacity-level, limit) {
			level = capacity
		} else if elapsed > 0 {
			level += elapsed * limit
		}
	}
	return level
}

func tokenBucketTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, limit, window, burst, cost := a[0], a[1], a[2], a[3], a[4]
	capacity := burst * window
	level := bucketLevel(ks, keys[0], now, limit, window, burst)
	if cost*window > level {
		return []int64{0, floorDiv(level, window)}
	}
	level -= cost * window
	ks.setBucket(keys[0], now, level)
	ks.pexpire(keys[0], ceilDiv(ceilDiv(capacity-level, limit), 1000))
	return []int64{1, floorDiv(level, window)}
}

func leaseTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, limit, window, burst, want := a[0], a[1], a[2], a[3], a[4]
	capacity := burst * window
	level := bucketLevel(ks, keys[0], now, limit, window, burst)
	granted := min(want, floorDiv(level, window))
	if granted <= 0 {
		return []int64{0, 0}
	}
	level -= granted * window
	ks.setBucket(keys[0], now, level)
	ks.pexpire(keys[0], ceilDiv(ceilDiv(capacity-level, limit), 1000))
	return []int64{granted, floorDiv(level, window)}
}

func gcraTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, limit, window, burst, cost := a[0], a[1], a[2], a[3], a[4]
	interval := floorDiv(window, limit)
	tolerance := burst * interval
	tat := max(ks.get(keys[0]), now)
	newTat := tat + cost*interval
	allowAt := newTat - tolerance
	if now < allowAt {
		return []int64{0, floorDiv(now-(tat-tolerance), interval)}
	}
	ks.set(keys[0], newTat)
	ks.pexpire(keys[0], ceilDiv(newTat-now, 1000))
	return []int64{1, floorDiv(now-allowAt, interval)}
}

func slidingLogTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, limit, window, cost := a[0], a[1], a[2], a[4]
	n := ks.zTrim(keys[0], now-window)
	if n+cost > limit {
		return []int64{0, max(limit-n, 0)}
	}
	ks.zAdd(keys[0], now, cost)
	ks.pexpire(keys[0], ceilDiv(window, 1000))
	return []int64{1, limit - n - cost}
}
