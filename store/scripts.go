package store

import (
	"embed"
	"sort"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFS embed.FS

// Script is one atomic Lua script and its in-process twin. The Redis face runs Source;
// the model runs twin on its keyspace. Every script takes the same seven arguments —
// now (µs, or the store's clock), limit, window (µs), burst, cost, keep (ms), and the ns
// of now past its µs (0–999) — and returns integers: four for a decision (allowed,
// remaining, retry_after µs or never, reset µs), three for a lease (granted, remaining,
// reset µs).
//
// Time comes in two parts because Lua's numbers are doubles, exact below 2^53: the µs
// since the Unix epoch are (2^53 µs is the year 2255), the ns are not. A script that
// reads TIME gets µs only, and ARGV[7] then carries the ns of the store's clock. The
// sliding log and the two-counter window decide to the ns (a unit leaves the log exactly
// W after it came; the previous window's weight decays by the ns), the fixed window's
// counter is named by the caller from the time in ns, and the token bucket and the GCRA
// decide at the µs of now, the resolution of their stored state (see their scripts).
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
	argSub           // ns of now past its µs, 0–999 (with storeTime: the store's)
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
	// CounterScript is one window counter of a shared form of several (see Counters:
	// Kong's rate-limiting with policy=redis): a decision calls it once per counter.
	CounterScript = newScript("counter", counterTwin)
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
	s := []*Script{FixedWindowScript, SlidingWindowScript, TokenBucketScript, GCRAScript, SlidingLogScript, LeaseScript, CounterScript, IncrScript, ExpireScript}
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

func counterTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, limit, ttl, cost, keep := a[argNow], a[argLimit], a[argWindow], a[argCost], a[argKeep]
	stale := (floorDiv(now, ttl) + 1) * ttl
	count := ks.incrBy(keys[0], cost)
	if count == cost {
		ks.pexpire(keys[0], ceilDiv(ttl, 1000)+keep)
	}
	if count > limit {
		retry := stale - now
		if cost > limit {
			retry = never
		}
		return []int64{0, limit - count, retry, stale - now}
	}
	return []int64{1, limit - count, 0, stale - now}
}

func slidingWindowTwin(ks *keyspace, keys []string, a []int64) []int64 {
	now, limit, window, cost, keep, sub := a[argNow], a[argLimit], a[argWindow], a[argCost], a[argKeep], a[argSub]
	start := floorDiv(now, window) * window
	elapsed := now - start
	prev := ks.get(keys[0])
	curr := ks.get(keys[1])
	carried := prev * (window - elapsed)
	if over := carried + (curr+cost)*window - limit*window; over > 0 && (over >= prev || over*1000 > prev*sub) {
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

// BucketRetry is the retry_after, in whole µs, of a refused request of cost from a
// bucket of level token·µs whose clock is t (µs): it refills from t on. It is the
// arithmetic of a node that decides by itself on the bucket hash (cluster's shared-racy
// placement), token_bucket.lua's at the µs.
func BucketRetry(limit, window, burst, level, t, now, cost int64) int64 {
	if cost > burst {
		return never
	}
	return t - now + ceilDiv(cost*window-level, limit)
}

// BucketFull is when a bucket of level token·µs whose clock is t (µs) is full again, as
// BucketRetry reckons it.
func BucketFull(limit, capacity, level, t int64) int64 { return t + ceilDiv(capacity-level, limit) }

// bucketLevel is the refill step shared by token_bucket.lua and lease.lua, in the
// scripts' units to the ns: the level at now (ns) in thousandths of a token·µs — a ns
// refills limit of them — and the bucket's clock max(t stored, now) in ns.
func bucketLevel(ks *keyspace, key string, now, limit, window, burst int64) (level, t int64) {
	capacity := burst * window * 1000
	level, t = capacity, now
	if last, s, ok := ks.bucket(key); ok {
		level = s
		t = max(last, now)
		if elapsed := now - last; elapsed >= ceilDiv(capacity-level, limit) {
			level = capacity
		} else if elapsed > 0 {
			level += elapsed * limit
		}
	}
	return level, t
}

// untilLevel is the scripts' until_level: the time from now until a bucket of level
// (thousandths of a token·µs) whose clock is t (ns) holds need token·µs, in µs rounded up.
func untilLevel(limit, level, t, now, need int64) int64 {
	return ceilDiv(t-now+ceilDiv(need*1000-level, limit), 1000)
}

func tokenBucketTwin(ks *keyspace, keys []string, a []int64) []int64 {
	limit, window, burst, cost, keep := a[argLimit], a[argWindow], a[argBurst], a[argCost], a[argKeep]
	now := a[argNow]*1000 + a[argSub]
	capacity := burst * window
	level, t := bucketLevel(ks, keys[0], now, limit, window, burst)
	if cost*window*1000 > level {
		retry := int64(never)
		if cost <= burst {
			retry = untilLevel(limit, level, t, now, cost*window)
		}
		return []int64{0, floorDiv(level, window*1000), retry, untilLevel(limit, level, t, now, capacity)}
	}
	level -= cost * window * 1000
	ks.setBucket(keys[0], t, level)
	full := untilLevel(limit, level, t, now, capacity)
	ks.pexpire(keys[0], ceilDiv(full, 1000)+keep)
	return []int64{1, floorDiv(level, window*1000), 0, full}
}

func leaseTwin(ks *keyspace, keys []string, a []int64) []int64 {
	limit, window, burst, want, keep := a[argLimit], a[argWindow], a[argBurst], a[argCost], a[argKeep]
	now := a[argNow]*1000 + a[argSub]
	capacity := burst * window
	level, t := bucketLevel(ks, keys[0], now, limit, window, burst)
	granted := min(want, floorDiv(level, window*1000))
	if granted <= 0 {
		return []int64{0, 0, untilLevel(limit, level, t, now, capacity)}
	}
	level -= granted * window * 1000
	ks.setBucket(keys[0], t, level)
	full := untilLevel(limit, level, t, now, capacity)
	ks.pexpire(keys[0], ceilDiv(full, 1000)+keep)
	return []int64{granted, floorDiv(level, window*1000), full}
}

// cellTime is gcra.lua's time: us whole µs and r L-ths of a ns past them, 0 <= r < unit.
type cellTime struct{ us, r int64 }

// cells is gcra.lua's arithmetic of one policy: unit = 1000·limit L-ths of a ns in a µs.
type cells struct{ limit, window, unit int64 }

func (c cells) norm(us, r int64) cellTime {
	carry := floorDiv(r, c.unit)
	return cellTime{us + carry, r - carry*c.unit}
}
func (c cells) minus(a, b cellTime) cellTime { return c.norm(a.us-b.us, a.r-b.r) }
func (a cellTime) before(b cellTime) bool    { return a.us < b.us || (a.us == b.us && a.r < b.r) }

// times is n·T, T = window/limit µs.
func (c cells) times(n int64) cellTime {
	whole := floorDiv(c.window, c.limit)
	return c.norm(n*whole, n*(c.window-whole*c.limit)*1000)
}

func (a cellTime) ceilUs() int64 {
	if a.r > 0 {
		return a.us + 1
	}
	return a.us
}

// units is the whole T in a span, 0 for a negative one.
func (c cells) units(a cellTime) int64 {
	if a.us < 0 {
		return 0
	}
	return floorDiv(a.us*c.limit+floorDiv(a.r, 1000), c.window)
}

func gcraTwin(ks *keyspace, keys []string, a []int64) []int64 {
	limit, window, burst, cost, keep := a[argLimit], a[argWindow], a[argBurst], a[argCost], a[argKeep]
	c := cells{limit: limit, window: window, unit: 1000 * limit}
	now := cellTime{a[argNow], a[argSub] * limit}
	tat := now
	// The model keeps tat as gcra.lua's text reads: ns, and the L-ths of a ns past them.
	if e := ks.lookup(keys[0]); e != nil {
		if stored := c.norm(floorDiv(e.value, 1000), (e.value-floorDiv(e.value, 1000)*1000)*limit+e.t); now.before(stored) {
			tat = stored
		}
	}
	step := c.times(min(cost, burst+1))
	newTat := c.norm(tat.us+step.us, tat.r+step.r)
	tolerance := c.times(burst)
	allowAt := c.minus(newTat, tolerance)
	if now.before(allowAt) {
		retry := int64(never)
		if cost <= burst {
			retry = c.minus(allowAt, now).ceilUs()
		}
		return []int64{0, c.units(c.minus(now, c.minus(tat, tolerance))), retry, c.minus(tat, now).ceilUs()}
	}
	ns := floorDiv(newTat.r, limit)
	ks.setCell(keys[0], newTat.us*1000+ns, newTat.r-ns*limit)
	reset := c.minus(newTat, now).ceilUs()
	ks.pexpire(keys[0], ceilDiv(reset, 1000)+keep)
	return []int64{1, c.units(c.minus(now, allowAt)), 0, reset}
}

func slidingLogTwin(ks *keyspace, keys []string, a []int64) []int64 {
	limit, cost, keep := a[argLimit], a[argCost], a[argKeep]
	now, window := a[argNow]*1000+a[argSub], a[argWindow]*1000 // ns
	at := now
	newest, held := ks.zNewest(keys[0])
	if held && newest > at {
		at = newest
	}
	cutoff := at - window
	n := ks.zCountAbove(keys[0], cutoff)
	// Times from now in µs, rounded up, as the script's until_gone.
	until := func(t int64) int64 { return ceilDiv(t+window-now, 1000) }
	if n+cost > limit {
		var reset int64
		if n > 0 {
			reset = until(newest)
		}
		if cost > limit {
			return []int64{0, max(limit-n, 0), never, reset}
		}
		// The unit whose leaving makes room: the (n + cost − limit)-th oldest in the window.
		oldest := ks.zScoreAbove(keys[0], cutoff, n+cost-limit)
		return []int64{0, max(limit-n, 0), until(oldest), reset}
	}
	ks.zTrim(keys[0], cutoff)
	ks.zAdd(keys[0], at, n, cost)
	stale := until(at)
	ks.pexpire(keys[0], ceilDiv(stale, 1000)+keep)
	return []int64{1, limit - n - cost, 0, stale}
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
