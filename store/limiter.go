package store

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rlsim/rlsim/algorithms"
)

// Algorithms are the algorithms the store runs as scripts, in report order.
var Algorithms = []string{"fixed-window", "sliding-log", "sliding-window", "token-bucket", "gcra"}

// Reply is a script's decision.
type Reply struct {
	Allowed bool
	// Remaining is the whole units that could still pass right after the decision.
	Remaining int64
}

// Limiter decides requests through a store's atomic script for one algorithm: every
// decision is one round trip. Keys are named prefix + tag + ":" + client key, with the
// window index appended for the window algorithms (the names of the notes' script).
type Limiter struct {
	st     Store
	script *Script
	tag    string
	prefix string
	args   [5]int64 // now, limit, window (µs), burst, cost
	window int64    // µs
}

// NewLimiter returns a limiter running algorithm's script on st under prefix. The policy
// must pass CheckPolicy.
func NewLimiter(st Store, algorithm string, p algorithms.Policy, prefix string) (*Limiter, error) {
	if err := CheckPolicy(p); err != nil {
		return nil, err
	}
	l := &Limiter{st: st, prefix: prefix, window: p.Window.Microseconds()}
	switch algorithm {
	case "fixed-window":
		l.script, l.tag = FixedWindowScript, "fw"
	case "sliding-window":
		l.script, l.tag = SlidingWindowScript, "sw"
	case "token-bucket":
		l.script, l.tag = TokenBucketScript, "tb"
	case "gcra":
		l.script, l.tag = GCRAScript, "gcra"
	case "sliding-log":
		l.script, l.tag = SlidingLogScript, "sl"
	case "lease":
		l.script, l.tag = LeaseScript, "lease"
	default:
		return nil, fmt.Errorf("the store has no script for %q (want one of %s)", algorithm, strings.Join(Algorithms, ", "))
	}
	l.args = [5]int64{0, p.Limit, l.window, p.EffectiveBurst(), 0}
	return l, nil
}

// Script is the script this limiter runs.
func (l *Limiter) Script() *Script { return l.script }

// Keys returns the store keys a decision for key at now (ns since the Unix epoch) touches.
func (l *Limiter) Keys(key string, now int64) []string {
	base := l.prefix + l.tag + ":" + key
	switch l.script {
	case FixedWindowScript:
		return []string{base + ":" + strconv.FormatInt(floorDiv(now/1000, l.window), 10)}
	case SlidingWindowScript:
		i := floorDiv(now/1000, l.window)
		return []string{base + ":" + strconv.FormatInt(i-1, 10), base + ":" + strconv.FormatInt(i, 10)}
	}
	return []string{base}
}

// Allow decides a request of cost for key at now (ns since the Unix epoch, virtual,
// non-decreasing), moving the store's clock first. For the lease script cost is the
// number of tokens wanted and Remaining; see Lease.
func (l *Limiter) Allow(key string, now, cost int64) (Reply, error) {
	v, err := l.eval(key, now, cost)
	if err != nil {
		return Reply{}, err
	}
	return Reply{Allowed: v[0] > 0, Remaining: v[1]}, nil
}

// Lease asks the central bucket for up to want tokens and returns how many it granted.
func (l *Limiter) Lease(key string, now, want int64) (int64, error) {
	v, err := l.eval(key, now, want)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

func (l *Limiter) eval(key string, now, cost int64) ([]int64, error) {
	if err := l.st.SetNow(now); err != nil {
		return nil, err
	}
	args := l.args
	args[0], args[4] = floorDiv(now, 1000), max(cost, 1)
	v, err := l.st.Eval(l.script, l.Keys(key, now), args[:]...)
	if err == nil && len(v) != 2 {
		err = fmt.Errorf("script %s: want 2 integers, got %d", l.script.Name, len(v))
	}
	return v, err
}

// NonAtomic is the pattern the notes warn against: INCRBY the counter, then, when that
// created it, PEXPIRE it as a second command — a crash in between leaves the key without
// a TTL. With TTLWindow the key is just the client's (its window is its TTL), so a key
// left without one counts up for ever and refuses its client for good; otherwise the key
// carries the window index and a key left without a TTL is only leaked.
type NonAtomic struct {
	st        Store
	prefix    string
	limit     int64
	window    int64 // µs
	TTLWindow bool
}

// NewNonAtomic returns the non-atomic counter for p on st under prefix.
func NewNonAtomic(st Store, p algorithms.Policy, prefix string, ttlWindow bool) (*NonAtomic, error) {
	if err := CheckPolicy(p); err != nil {
		return nil, err
	}
	return &NonAtomic{st: st, prefix: prefix, limit: p.Limit, window: p.Window.Microseconds(), TTLWindow: ttlWindow}, nil
}

// Key is the counter a request for key at now lands on.
func (n *NonAtomic) Key(key string, now int64) string {
	if n.TTLWindow {
		return n.prefix + "nx:" + key
	}
	return n.prefix + "nx:" + key + ":" + strconv.FormatInt(floorDiv(now/1000, n.window), 10)
}

// NonAtomicResult is one non-atomic decision.
type NonAtomicResult struct {
	Reply
	// RoundTrips is 1 (INCRBY) or 2 (INCRBY, PEXPIRE).
	RoundTrips int
	// Crashed reports that the process died between the two commands: the request was
	// counted but never answered, and the key has no TTL.
	Crashed bool
}

// Allow counts a request of cost for key at now and admits it when the count stays within
// the limit. When crash is true and this request created the key, the process "dies"
// between the two commands and the PEXPIRE is never sent.
func (n *NonAtomic) Allow(key string, now, cost int64, crash bool) (NonAtomicResult, error) {
	if err := n.st.SetNow(now); err != nil {
		return NonAtomicResult{}, err
	}
	k := n.Key(key, now)
	cost = max(cost, 1)
	count, err := n.st.IncrBy(k, cost)
	if err != nil {
		return NonAtomicResult{RoundTrips: 1}, err
	}
	r := NonAtomicResult{Reply: Reply{Allowed: count <= n.limit, Remaining: max(n.limit-count, 0)}, RoundTrips: 1}
	if count == cost {
		if crash {
			r.Crashed, r.Allowed = true, false
			return r, nil
		}
		r.RoundTrips++
		if err := n.st.PExpire(k, ceilDiv(n.window, 1000)); err != nil {
			return r, err
		}
	}
	return r, nil
}
