package store

import (
	"embed"
	"sort"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFS embed.FS

// Script is one atomic Lua script and its in-process twin. The Redis face runs Source;
// the model runs twin on its keyspace. Every script takes the same six arguments —
// now (µs, or the store's clock), limit, window (µs), burst, cost, keep (ms) — and
// returns integers: four for a decision (allowed, remaining, retry_after µs or never,
// reset µs), three for a lease (granted, remaining, reset µs).
type Script struct {
	// Name is the script's file name without .lua ("sliding_window").
	Name string
	// Source is the Lua text as deployed.
	Source string

	lua  *redis.Script
	twin func(ks *keyspace, keys []string, args []int64) []int64
	// command marks a script that stands for one plain Redis command of the non-atomic
	// pattern rather than a decision: faces count it as a round trip, not a script call.
	command bool
}

// The positions of the arguments every script takes.
const (
	argNow    = iota // µs since the Unix epoch, or storeTime
	argLimit         // units per window
	argWindow        // µs
	argBurst         // units
	argCost          // units (the lease: tokens wanted)
	argKeep          // ms a key outlives the moment its data goes stale
	argCount
)

// storeTime in the now argument asks for the store's clock: the model's twin reads its
// own clock, miniredis's script reads TIME (the virtual clock), and a real server, whose
// TIME is its wall clock, is sent the store's virtual time instead.
const storeTime = -1

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
	// IncrScript and ExpireScript are the two commands of the non-atomic pattern (see
	// NonAtomic), with the expiry kept as a virtual timestamp in the counter's hash.
	IncrScript   = newCommand("nonatomic_incr", incrTwin)
	ExpireScript = newCommand("nonatomic_expire", expireTwin)
)

func newCommand(name string, twin func(*keyspace, []string, []int64) []int64) *Script {
	s := newScript(name, twin)
	s.command = true
	return s
}

// Lease names the lease script's limiter and tags its keys: a placement's mechanism,
// not an algorithm.
const Lease = "lease"

// ScriptNamed returns the script of that name (its file name without .lua), or nil.
func ScriptNamed(name string) *Script {
	for _, s := range Scripts() {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Scripts lists every script by name, sorted.
func Scripts() []*Script {
	s := []*Script{FixedWindowScript, SlidingWindowScript, TokenBucketScript, GCRAScript, SlidingLogScript, LeaseScript, IncrScript, ExpireScript}
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

// ttl is the PEXPIRE every script gives a key whose data goes stale at stale (µs), set
// at now (µs): until then in ms, rounded up, plus keep (ms).
func ttl(stale, now, keep int64) int64 { return ceilDiv(stale-now, 1000) + keep }

// never is a script's retry_after for a request that can never pass.
const never = -1

// Never is the retry_after of a request that can never pass, in a script's reply.
const Never = never

func fixedWindowTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, limit, window, cost, keep := a[argNow], a[argLimit], a[argWindow], a[argCost], a[argKeep]
	stale := (floorDiv(now, window) + 1) * window
	count := ks.get(keys[0])
	if count+cost > limit {
		retry, reset := stale-now, int64(0)
		if cost > limit {
			retry = never
		}
		if count > 0 {
			reset = stale - now
		}
		return []int64{0, limit - count, retry, reset}
	}
	count = ks.incrBy(keys[0], cost)
	if count == cost {
		ks.pexpire(keys[0], ttl(stale, now, keep))
	}
	return []int64{1, limit - count, 0, stale - now}
}

func slidingWindowTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, limit, window, cost, keep := a[argNow], a[argLimit], a[argWindow], a[argCost], a[argKeep]
	start := floorDiv(now, window) * window
	elapsed := now - start
	prev := ks.get(keys[0])
	curr := ks.get(keys[1])
	carried := prev * (window - elapsed)
	if carried+(curr+cost)*window > limit*window {
		return []int64{0, SlidingWindowRemaining(limit, window, prev, curr, elapsed), SlidingWindowRetry(limit, window, prev, curr, elapsed, cost), SlidingWindowReset(window, prev, curr, elapsed)}
	}
	curr = ks.incrBy(keys[1], cost)
	if curr == cost {
		ks.pexpire(keys[1], ttl(start+2*window, now, keep))
	}
	return []int64{1, SlidingWindowRemaining(limit, window, prev, curr, elapsed), 0, SlidingWindowReset(window, prev, curr, elapsed)}
}

// The arithmetic below is what the scripts compute for retry_after and reset, in µs, for
// the nodes that decide by the same rules themselves (cluster's shared-racy placement)
// and for the twins. Never is -1.

// SlidingWindowRemaining is sliding_window.lua's remaining: the whole units still free
// with counters prev and curr, elapsed µs into the current window, never below 0.
func SlidingWindowRemaining(limit, window, prev, curr, elapsed int64) int64 {
	room := limit*window - prev*(window-elapsed) - curr*window
	if room < 0 {
		return 0
	}
	return floorDiv(room, window)
}

// SlidingWindowRetry is sliding_window.lua's retry_after for a refused request of cost
// with counters prev and curr, elapsed µs into the current window: the first µs it fits if
// nothing else is admitted, later in this window as prev's weight decays or in the next,
// where curr weighs as prev.
func SlidingWindowRetry(limit, window, prev, curr, elapsed, cost int64) int64 {
	if cost > limit {
		return never
	}
	// prev·(W − e) <= (limit − curr − cost)·W from e = W − ⌊room/prev⌋ on.
	if room := (limit - curr - cost) * window; room >= 0 && prev > 0 {
		if e := window - floorDiv(room, prev); e < window {
			return e - elapsed
		}
	}
	// Next window: curr·(W − e) <= (limit − cost)·W.
	var e int64
	if curr > 0 {
		e = max(window-floorDiv((limit-cost)*window, curr), 0)
	}
	return window - elapsed + e
}

// SlidingWindowReset is sliding_window.lua's reset: the time until both counters stop
// counting.
func SlidingWindowReset(window, prev, curr, elapsed int64) int64 {
	switch {
	case curr > 0:
		return 2*window - elapsed
	case prev > 0:
		return window - elapsed
	}
	return 0
}

// BucketRetry is token_bucket.lua's retry_after for a refused request of cost from a
// bucket of level token·µs whose clock is t: it refills from t on.
func BucketRetry(limit, window, burst, level, t, now, cost int64) int64 {
	if cost > burst {
		return never
	}
	return t - now + ceilDiv(cost*window-level, limit)
}

// BucketFull is when a bucket of level token·µs whose clock is t is full again.
func BucketFull(limit, capacity, level, t int64) int64 { return t + ceilDiv(capacity-level, limit) }

// bucketLevel is the refill step shared by token_bucket.lua and lease.lua: the level at
// now, and the bucket's clock max(t stored, now).
func bucketLevel(ks *keyspace, key string, now, limit, window, burst int64) (level, t int64) {
	capacity := burst * window
	level, t = capacity, now
	if last, s, ok := ks.bucket(key); ok {
		level = s
		t = max(last, now)
		elapsed := now - last
		if elapsed >= ceilDiv(capacity-level, limit) {
			level = capacity
		} else if elapsed > 0 {
			level += elapsed * limit
		}
	}
	return level, t
}

func tokenBucketTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, limit, window, burst, cost, keep := a[argNow], a[argLimit], a[argWindow], a[argBurst], a[argCost], a[argKeep]
	capacity := burst * window
	level, t := bucketLevel(ks, keys[0], now, limit, window, burst)
	if cost*window > level {
		return []int64{0, floorDiv(level, window), BucketRetry(limit, window, burst, level, t, now, cost), BucketFull(limit, capacity, level, t) - now}
	}
	level -= cost * window
	ks.setBucket(keys[0], t, level)
	full := BucketFull(limit, capacity, level, t)
	ks.pexpire(keys[0], ttl(full, now, keep))
	return []int64{1, floorDiv(level, window), 0, full - now}
}

func leaseTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, limit, window, burst, want, keep := a[argNow], a[argLimit], a[argWindow], a[argBurst], a[argCost], a[argKeep]
	capacity := burst * window
	level, t := bucketLevel(ks, keys[0], now, limit, window, burst)
	granted := min(want, floorDiv(level, window))
	if granted <= 0 {
		return []int64{0, 0, BucketFull(limit, capacity, level, t) - now}
	}
	level -= granted * window
	ks.setBucket(keys[0], t, level)
	full := BucketFull(limit, capacity, level, t)
	ks.pexpire(keys[0], ttl(full, now, keep))
	return []int64{granted, floorDiv(level, window), full - now}
}

func gcraTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, limit, window, burst, cost, keep := a[argNow], a[argLimit], a[argWindow], a[argBurst], a[argCost], a[argKeep]
	interval := floorDiv(window, limit)
	tolerance := burst * interval
	tat := max(ks.get(keys[0]), now)
	newTat := tat + cost*interval
	allowAt := newTat - tolerance
	if now < allowAt {
		retry := allowAt - now
		if cost > burst {
			retry = never
		}
		return []int64{0, max(floorDiv(now-(tat-tolerance), interval), 0), retry, tat - now}
	}
	ks.set(keys[0], newTat)
	ks.pexpire(keys[0], ttl(newTat, now, keep))
	return []int64{1, floorDiv(now-allowAt, interval), 0, newTat - now}
}

func slidingLogTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, limit, window, cost, keep := a[argNow], a[argLimit], a[argWindow], a[argCost], a[argKeep]
	at := now
	newest, held := ks.zNewest(keys[0])
	if held && newest > at {
		at = newest
	}
	cutoff := at - window
	n := ks.zCountAbove(keys[0], cutoff)
	if n+cost > limit {
		var reset int64
		if n > 0 {
			reset = newest + window - now
		}
		if cost > limit {
			return []int64{0, max(limit-n, 0), never, reset}
		}
		// The unit whose leaving makes room: the (n + cost − limit)-th oldest in the window.
		oldest := ks.zScoreAbove(keys[0], cutoff, n+cost-limit)
		return []int64{0, max(limit-n, 0), oldest + window - now, reset}
	}
	ks.zTrim(keys[0], cutoff)
	ks.zAdd(keys[0], at, n, cost)
	ks.pexpire(keys[0], ttl(at+window, now, keep))
	return []int64{1, limit - n - cost, 0, at + window - now}
}

func incrTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, cost := a[argNow], a[argCost]
	if _, e, ok := ks.counter(keys[0]); ok && e != 0 && e <= now {
		ks.del(keys[0])
	}
	return []int64{ks.hincrC(keys[0], cost)}
}

func expireTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, window, keep := a[argNow], a[argWindow], a[argKeep]
	if _, _, ok := ks.counter(keys[0]); !ok {
		return []int64{0}
	}
	ks.setCounterExpiry(keys[0], now+window)
	ks.pexpire(keys[0], ceilDiv(window, 1000)+keep)
	return []int64{1}
}
