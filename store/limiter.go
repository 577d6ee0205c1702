package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Algorithms lists the algorithms the store runs as scripts (those that name one), in
// report order.
func Algorithms() []string {
	return algorithms.Select(func(k *algorithms.Kind) bool { return k.Script != "" })
}

// Reply is a script's decision.
type Reply struct {
	Allowed bool
	// Remaining is the whole units that could still pass right after the decision.
	Remaining int64
	// RetryAfter is the time from the script's now until a refused request of the same
	// cost could pass if nothing else is admitted (zero when allowed, algorithms.Never
	// when its cost can never pass); Reset the time until the key is as if unseen. Both
	// are whole µs, the scripts' unit.
	RetryAfter, Reset time.Duration
	// Granted is, for the lease script, the tokens granted (Allowed: some were).
	Granted int64
}

// decisionInts is how many integers a decision script returns: allowed, remaining,
// retry_after (µs, -1 for never) and reset (µs); leaseInts the lease script: granted,
// remaining and reset (µs).
const (
	decisionInts = 4
	leaseInts    = 3
)

// replyOf reads a decision script's integers.
func replyOf(v []int64) Reply {
	r := Reply{Allowed: v[0] > 0, Remaining: v[1], RetryAfter: algorithms.Never, Reset: time.Duration(v[3]) * time.Microsecond}
	if v[2] >= 0 {
		r.RetryAfter = time.Duration(v[2]) * time.Microsecond
	}
	return r
}

// Limiter decides requests through a store's atomic script for one algorithm: every
// decision is one round trip. Keys are named prefix + "{" + client key + "}:" + tag, with
// the window index appended for the window algorithms (the names of the notes' script):
// rl:{user_8812}:sw:29454361. The client key is the name's hash tag (see Slot), so every
// key one call touches is in one Redis Cluster slot.
type Limiter struct {
	st     Store
	script *Script
	tag    string
	prefix string
	args   [argCount]int64 // now (µs), limit, window (µs), burst, cost, keep (ms), now's ns past its µs
	window int64           // µs
	clock  Clock
}

// NewLimiter returns a limiter running algorithm's script on st under prefix, deciding
// by the node's clock with no keep (see SetClock, SetKeep). The policy must pass
// CheckPolicy.
func NewLimiter(st Store, algorithm string, p algorithms.Policy, prefix string) (*Limiter, error) {
	if err := CheckPolicy(p); err != nil {
		return nil, err
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	l := &Limiter{st: st, prefix: prefix, window: p.Window.Microseconds(), clock: NodeClock}
	if algorithm == Lease {
		l.script, l.tag = LeaseScript, Lease
	} else if k := algorithms.Lookup(algorithm); k != nil && k.Script != "" {
		l.script, l.tag = ScriptNamed(k.Script), k.Tag
	}
	if l.script == nil {
		return nil, fmt.Errorf("the store has no script for %q (want one of %s)", algorithm, strings.Join(Algorithms(), ", "))
	}
	l.args = [argCount]int64{0, p.Limit, l.window, p.EffectiveBurst(), 0, 0, 0}
	return l, nil
}

// checkPrefix refuses a key prefix whose own braces would take the place of the client
// key's hash tag badly: one that makes Redis Cluster hash the whole name ("rl{}:"), which
// would put the keys of one call in different slots. A prefix with a tag of its own
// ("{rl}:") puts every key in one slot, and is taken.
func checkPrefix(prefix string) error {
	a, b := prefix+"{k}:a", prefix+"{k}:b"
	if Slot(a) != Slot(b) {
		return fmt.Errorf("key prefix %q: its braces leave Redis Cluster an empty hash tag, so the keys of one call would fall in different slots; remove them or put a name between them", prefix)
	}
	return nil
}

// SetClock makes the limiter decide by c: the node's clock (At.Node, the default) or the
// store's (At.Store, which the script reads from the store).
func (l *Limiter) SetClock(c Clock) { l.clock = c }

// SetKeep sets how long keys outlive the moment their data goes stale (whole ms, rounded
// up): at least the widest gap between the clocks of the callers — twice the skew of node
// clocks, or the furthest a caller's time steps back — so that no caller still reads a
// key the store has collected. It never changes a decision when it is wide enough.
func (l *Limiter) SetKeep(keep time.Duration) { l.args[argKeep] = keepMillis(keep) }

func keepMillis(d time.Duration) int64 { return ceilDiv(max(int64(d), 0), int64(time.Millisecond)) }

// Script is the script this limiter runs.
func (l *Limiter) Script() *Script { return l.script }

// Keys returns the store keys a decision for key at now (ns since the Unix epoch, on the
// clock the limiter decides by) touches.
func (l *Limiter) Keys(key string, now int64) []string {
	keys, _ := l.keys(key, now)
	return keys
}

// keys is Keys and the client the call is for (the client key's tag and the limiter's
// tag), all cut from one string: a batch makes them for every call, and one allocation is
// cheaper than one per piece.
func (l *Limiter) keys(key string, now int64) (keys []string, client string) {
	var stack [128]byte
	b := append(stack[:0], l.prefix...)
	b = appendTagged(b, key)
	b = append(b, ':')
	b = append(b, l.tag...)
	base := len(b)
	switch l.script {
	case FixedWindowScript:
		b = append(b, ':')
		b = strconv.AppendInt(b, floorDiv(floorDiv(now, 1000), l.window), 10)
		s := string(b)
		return []string{s}, s[len(l.prefix):base]
	case SlidingWindowScript:
		i := floorDiv(floorDiv(now, 1000), l.window)
		b = append(b, ':')
		b = strconv.AppendInt(b, i-1, 10)
		first := len(b)
		b = append(b, b[:base]...)
		b = append(b, ':')
		b = strconv.AppendInt(b, i, 10)
		s := string(b)
		return []string{s[:first], s[first:]}, s[len(l.prefix):base]
	}
	s := string(b)
	return []string{s}, s[len(l.prefix):]
}

// Allow decides a request of cost for key at at, moving the store's clock to at.Store
// first. For the lease script cost is the number of tokens wanted and RetryAfter is zero;
// see Lease.
func (l *Limiter) Allow(key string, at At, cost int64) (Reply, error) {
	if err := l.st.SetNow(at.Store); err != nil {
		return Reply{}, err
	}
	c := l.Call(key, at, cost)
	v, err := l.st.Eval(c.Script, c.Keys, c.Args...)
	if err != nil {
		return Reply{}, err
	}
	return ReplyOf(l.script, v)
}

// Lease asks the central bucket for up to want tokens and returns how many it granted,
// and the time from the script's now until the bucket is full again (whole µs).
func (l *Limiter) Lease(key string, at At, want int64) (granted int64, reset time.Duration, err error) {
	r, err := l.Allow(key, at, want)
	return r.Granted, r.Reset, err
}

// NonAtomic is the pattern the notes warn against: INCRBY the counter, then, when that
// created it, PEXPIRE it as a second command — a crash in between leaves the key without
// an expiry. With TTLWindow the key is just the client's (its window is its TTL), so a key
// left without one counts up for ever and refuses its client for good; otherwise the key
// carries the window index and a key left without one is only leaked.
//
// The two commands are IncrScript and ExpireScript: the expiry PEXPIRE would set is kept
// as a virtual timestamp in the counter and judged on the store's clock, as Redis judges
// its TTLs on its own, so the pattern expires, blocks and leaks alike on every face.
type NonAtomic struct {
	st        Store
	prefix    string
	limit     int64
	window    int64 // µs
	keep      int64 // ms
	clock     Clock
	TTLWindow bool
}

// NewNonAtomic returns the non-atomic counter for p on st under prefix, naming windows by
// the node's clock.
func NewNonAtomic(st Store, p algorithms.Policy, prefix string, ttlWindow bool) (*NonAtomic, error) {
	if err := CheckPolicy(p); err != nil {
		return nil, err
	}
	return &NonAtomic{st: st, prefix: prefix, limit: p.Limit, window: p.Window.Microseconds(), clock: NodeClock, TTLWindow: ttlWindow}, nil
}

// SetClock chooses the clock whose window index names a timestamped counter; expiry is
// always judged on the store's clock.
func (n *NonAtomic) SetClock(c Clock) { n.clock = c }

// SetKeep is Limiter.SetKeep for the counters.
func (n *NonAtomic) SetKeep(keep time.Duration) { n.keep = keepMillis(keep) }

// Key is the counter a request for key at now (on the clock that names windows) lands on.
func (n *NonAtomic) Key(key string, now int64) string {
	name := string(appendTagged([]byte(n.prefix), key)) + ":nx"
	if n.TTLWindow {
		return name
	}
	return name + ":" + strconv.FormatInt(floorDiv(floorDiv(now, 1000), n.window), 10)
}

// NonAtomicResult is one non-atomic decision.
type NonAtomicResult struct {
	Reply
	// RoundTrips is 1 (INCRBY) or 2 (INCRBY, PEXPIRE).
	RoundTrips int
	// Crashed reports that the process died between the two commands: the request was
	// counted but never answered, and the key has no expiry.
	Crashed bool
}

// Allow counts a request of cost for key at at and admits it when the count stays within
// the limit. When crash is true and this request created the key, the process "dies"
// between the two commands and the second is never sent.
func (n *NonAtomic) Allow(key string, at At, cost int64, crash bool) (NonAtomicResult, error) {
	if err := n.st.SetNow(at.Store); err != nil {
		return NonAtomicResult{}, err
	}
	named := at.Node
	if n.clock == StoreClock {
		named = at.Store
	}
	k := n.Key(key, named)
	cost = max(cost, 1)
	args := [argCount]int64{storeTime, n.limit, n.window, 0, cost, n.keep}
	v, err := n.st.Eval(IncrScript, []string{k}, args[:]...)
	if err == nil && len(v) != 1 {
		err = fmt.Errorf("script %s: want 1 integer, got %d", IncrScript.Name, len(v))
	}
	if err != nil {
		return NonAtomicResult{RoundTrips: 1}, err
	}
	count := v[0]
	// What the node can tell without a third command: the counter's window ends at the
	// next window index on the naming clock when the name carries it; when its window is
	// its TTL, set by the first INCR of the window, it ends within one window — unless the
	// EXPIRE was never sent, which is what this pattern gets wrong.
	toEnd := n.window
	if !n.TTLWindow {
		us := floorDiv(named, 1000)
		toEnd = (floorDiv(us, n.window)+1)*n.window - us
	}
	r := NonAtomicResult{Reply: Reply{Allowed: count <= n.limit, Remaining: max(n.limit-count, 0),
		Reset: time.Duration(toEnd) * time.Microsecond}, RoundTrips: 1}
	switch {
	case cost > n.limit:
		r.RetryAfter = algorithms.Never
	case !r.Allowed:
		r.RetryAfter = r.Reset
	}
	if count == cost {
		if crash {
			r.Crashed, r.Allowed = true, false
			if r.RetryAfter == 0 {
				r.RetryAfter = r.Reset
			}
			return r, nil
		}
		r.RoundTrips++
		if _, err := n.st.Eval(ExpireScript, []string{k}, args[:]...); err != nil {
			return r, err
		}
	}
	return r, nil
}

// AuditResult is what Audit found under a prefix.
type AuditResult struct {
	// Blocked counts the keys that refuse their client for good, Leaked the other keys
	// that never expire.
	Blocked, Leaked int64
	// LeakedBytes is the memory the leaked keys hold: their MEMORY USAGE on a real
	// server, measured by the audit; on the other faces, CounterBytes of each name, the
	// calibrated size of the counter hash they are on a real server.
	LeakedBytes int64
	// LeakedMeasured says LeakedBytes was measured on a real server.
	LeakedMeasured bool
}

// Audit counts the keys under prefix that will never expire, judged from the data on the
// store, so every face counts alike. A key with a TTL goes in its time. Of the keys
// without one, a counter hash whose virtual expiry was stored goes by it; one whose
// second command never ran (no virtual expiry) is blocked when ttlWindow names it by
// client alone and its count has reached limit — it refuses its client for good — and
// leaked otherwise; any other key is leaked. On a Redis face it reads the keys a batch
// at a time: PTTL of a SCAN step's keys in one pipeline, HMGET of those without a TTL in
// another, each round trip with its own deadline, so its memory and every round trip
// stay small however many keys the run left.
func Audit(st Store, prefix string, limit int64, ttlWindow bool) (AuditResult, error) {
	var a AuditResult
	real, _ := st.(*Redis)
	if real != nil && real.mini != nil {
		real = nil
	}
	a.LeakedMeasured = real != nil
	counted := map[string]bool{} // SCAN may name a key twice; count it once
	judge := func(keys []KeyInfo) error {
		var leaked []string
		for _, k := range keys {
			switch {
			case k.TTL != NoTTL, k.Counter && k.Expiry != 0, counted[k.Name]:
				continue
			}
			counted[k.Name] = true
			if k.Counter && ttlWindow && k.Value >= limit {
				a.Blocked++
				continue
			}
			a.Leaked++
			leaked = append(leaked, k.Name)
			if real == nil {
				a.LeakedBytes += CounterBytes(len(k.Name))
			}
		}
		if real != nil && len(leaked) > 0 {
			b, err := real.memoryUsage(leaked)
			if err != nil {
				return fmt.Errorf("measuring the leaked keys: %w", err)
			}
			a.LeakedBytes += b
		}
		return nil
	}
	if r, ok := st.(*Redis); ok {
		if err := r.eachUndying(prefix, judge); err != nil {
			return a, fmt.Errorf("auditing the keys under %q: %w", prefix, err)
		}
		return a, nil
	}
	keys, err := st.Keys(prefix)
	if err != nil {
		return a, fmt.Errorf("auditing the keys under %q: %w", prefix, err)
	}
	return a, judge(keys)
}
