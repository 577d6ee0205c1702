package store

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Counters decides requests by a set of window counters shared in the store, every one of
// which must admit: the shared form of a model whose state is several fixed windows at
// once (algorithms.SharedCounters). Kong's rate-limiting plugin with policy=redis and
// sync_rate −1 is one (3.4 and later; kong/plugins/rate-limiting/handler.lua and
// policies/init.lua, read at 3.9.1): the nodes of a fleet share one counter per period and
// window, named by the window's start, UTC-calendar-aligned. For every counter, shortest
// period first, the node sends CounterScript: an INCRBY of the request's cost and, when
// that created the counter, its EXPIRE of the counter's TTL (for Kong the period's
// length, 30 days for a month, 365 for a year). The request passes only if every
// counter, itself included, is within its limit; it is counted on every counter either
// way, as the plugin's usage() counts it before the handler looks.
//
// Each counter's call is atomic, as the plugin's EVAL is, and the plugin sends them one
// after the other: a decision takes one round trip per counter. Concurrent nodes
// interleave their calls, which changes which requests pass but never how many: every
// request counts on every counter whatever it is told, so no window lets more than its
// limit through. rlsim sends one decision's calls together, at the decision's moment, so
// its fleets never interleave them; by the same argument that changes no count, and
// RoundTrips still charges a decision one trip per counter. (Kong 3.3 and earlier read
// with GET and counted with INCRBY and EXPIRE in a timer afterwards, so concurrent nodes
// over-admitted; that version is not modelled.)
//
// RetryAfter and Reset come from the windows, as the one-node model's: the time, on the
// clock the windows are named by, until every counter that refuses a request of the same
// cost has a new window (Never for a cost above the lowest limit), and until every
// counter's window has ended. A counter that expires inside its window (Kong's month and
// year, see algorithms.Kong) starts over on the store as the plugin's does, but is not
// foreseen by RetryAfter and Reset.
type Counters struct {
	st      Store
	prefix  string
	tag     string // the model's name, which the counters' names carry
	periods []algorithms.Counter
	least   int64 // the lowest limit
	clock   Clock
	keep    int64 // ms
}

// NewCounters returns the shared form of spec, a spec whose shared form is window counters
// (algorithms.SharedCounters: Kong's with policy=redis), on st under prefix, naming
// windows by the node's clock with no keep (see SetClock, SetKeep).
func NewCounters(st Store, spec, prefix string) (*Counters, error) {
	periods, ok := algorithms.SharedCounters(spec)
	if !ok {
		return nil, fmt.Errorf("%q has no shared form of window counters (%s)", spec, algorithms.CountersHint())
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	k := &Counters{st: st, prefix: prefix, tag: algorithms.Lookup(spec).Name, periods: periods, least: math.MaxInt64, clock: NodeClock}
	for _, p := range periods {
		k.least = min(k.least, p.Limit)
	}
	return k, nil
}

// SharesCounters reports whether spec's shared form is window counters in the store
// (Counters).
func SharesCounters(spec string) bool {
	_, ok := algorithms.SharedCounters(spec)
	return ok
}

// SetClock chooses the clock that names the windows (and that the script decides by).
func (k *Counters) SetClock(c Clock) { k.clock = c }

// SetKeep sets how long counters outlive their TTL (whole ms, rounded up): see
// Limiter.SetKeep.
func (k *Counters) SetKeep(keep time.Duration) { k.keep = keepMillis(keep) }

// Key is the counter of period for key in the window starting at start (Unix seconds):
// prefix + "{" + key + "}:" + the model's name + ":" + period + ":" + start, as Kong's
// plugin names it by identifier, period and the window's start.
func (k *Counters) Key(key, period string, start int64) string {
	b := appendTagged([]byte(k.prefix), key)
	b = append(b, ':')
	b = append(b, k.tag...)
	b = append(b, ':')
	b = append(b, period...)
	b = append(b, ':')
	return string(strconv.AppendInt(b, start, 10))
}

// Keys returns the counters a decision for key at now (Unix ns, on the clock that names
// the windows) touches, one per period, shortest first.
func (k *Counters) Keys(key string, now int64) []string {
	keys := make([]string, len(k.periods))
	for i, p := range k.periods {
		start, _ := p.Window(now)
		keys[i] = k.Key(key, p.Name, start)
	}
	return keys
}

// Periods is how many counters the spec keeps: the round trips of a decision.
func (k *Counters) Periods() int { return len(k.periods) }

// Allow decides a request of cost for key at at, moving the store's clock to at.Store
// first, and returns the round trips it took: one per period, fewer when a call failed.
func (k *Counters) Allow(key string, at At, cost int64) (r Reply, trips int, err error) {
	if err := k.st.SetNow(at.Store); err != nil {
		return Reply{}, 0, err
	}
	cost = max(cost, 1)
	named := at.Node
	now := floorDiv(at.Node, 1000)
	sub := at.Node - now*1000
	if k.clock == StoreClock {
		named, now, sub = at.Store, storeTime, 0
	}
	r = Reply{Allowed: true, Remaining: math.MaxInt64}
	var retry, reset int64 // the latest window end, µs, of a period that refuses, of any
	for i, p := range k.periods {
		start, end := p.Window(named)
		v, err := k.st.Eval(CounterScript, []string{k.Key(key, p.Name, start)}, now, p.Limit, p.TTL.Microseconds(), 0, cost, k.keep, sub)
		if err == nil && len(v) != decisionInts {
			err = fmt.Errorf("script %s: want %d integers, got %d", CounterScript.Name, decisionInts, len(v))
		}
		if err != nil {
			return Reply{}, i + 1, err
		}
		end *= int64(time.Second / time.Microsecond)
		r.Allowed = r.Allowed && v[0] > 0
		r.Remaining = min(r.Remaining, max(v[1], 0))
		reset = max(reset, end)
		if count := p.Limit - v[1]; count+cost > p.Limit {
			retry = max(retry, end)
		}
	}
	us := floorDiv(named, 1000)
	r.Reset = time.Duration(max(reset-us, 0)) * time.Microsecond
	switch {
	case r.Allowed:
	case cost > k.least:
		r.RetryAfter = algorithms.Never
	default:
		r.RetryAfter = time.Duration(max(retry-us, 0)) * time.Microsecond
	}
	return r, len(k.periods), nil
}

// ClientBytes is the MEMORY USAGE, on Redis 7, of key's counters in the windows that hold
// now (Unix ns), one per period, each at StringCounterBytes of its name: what one client
// holds in the store while it is counted in every period.
func (k *Counters) ClientBytes(key string, now int64) int64 {
	var total int64
	for _, name := range k.Keys(key, now) {
		total += StringCounterBytes(len(name))
	}
	return total
}
