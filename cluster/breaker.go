package cluster

import (
	"sort"
	"time"
)

// Breaker is a circuit breaker on each node's store client, the closed → open →
// half-open machine of resilience libraries (Hystrix, resilience4j, sony/gobreaker).
//
// Closed, every decision that needs the store calls it; Failures consecutive failed calls
// open the breaker. Open, those decisions apply the outage policy at once, without waiting
// for the store. OpenFor after it opened, the next decision is the probe: the breaker is
// half-open, the probe calls the store while the node's other decisions still fail fast;
// the probe's success closes the breaker, its failure opens it again for OpenFor.
//
// A call's outcome is known when it completes — a success one store round trip after it
// was sent, a failure when the client's timeout runs out — so the decisions sent while
// the first failures are still waiting wait too, and a call sent before the breaker
// opened changes nothing when it completes. Each node has its own breaker, as each
// process has its own client. A failure is a call made while the store is down (a
// scripted outage); OpenFor is counted from the failure that opened the breaker.
type Breaker struct {
	// Failures is the count of consecutive failed calls that opens the breaker (≥ 1).
	Failures int
	// OpenFor is how long the breaker stays open before a probe (> 0).
	OpenFor time.Duration
}

func (b *Breaker) validate() error {
	switch {
	case b == nil:
		return nil
	case b.Failures < 1:
		return fieldError("breaker.failures", "must be at least 1, got %d", b.Failures)
	case b.OpenFor <= 0:
		return fieldError("breaker.open_for", "must be a positive duration")
	}
	return nil
}

type breakerState uint8

const (
	closed breakerState = iota
	open
	halfOpen
)

func (s breakerState) String() string {
	return [...]string{"closed", "open", "half-open"}[s]
}

// breaker is one node's breaker. Times are ns of virtual time.
type breaker struct {
	cfg      Breaker
	state    breakerState
	failures int     // consecutive failures completed while closed
	until    int64   // open: the first time a decision probes
	outage   *Outage // the outage whose failure opened it: the policy fast decisions apply
	opens    int64
	// pending are the calls sent and not yet completed, by completion time (ties in the
	// order they were sent): at most the calls of one timeout.
	pending []outcome
}

// outcome is how a call ends, and when.
type outcome struct {
	at     int64
	ok     bool
	probe  bool
	outage *Outage // the outage a failed call met
}

// allow reports whether a decision at now may call the store, and whether the call is
// the half-open probe. Outcomes completed at or before now are taken into account first.
func (b *breaker) allow(now int64) (call, probe bool) {
	b.settle(now)
	switch b.state {
	case closed:
		return true, false
	case open:
		if now >= b.until {
			b.state = halfOpen
			return true, true
		}
	}
	return false, false
}

// sent records a call whose outcome o will be known at o.at.
func (b *breaker) sent(o outcome) {
	i := sort.Search(len(b.pending), func(i int) bool { return b.pending[i].at > o.at })
	b.pending = append(b.pending, outcome{})
	copy(b.pending[i+1:], b.pending[i:])
	b.pending[i] = o
}

// settle completes, in order, the calls whose outcome is known by now.
func (b *breaker) settle(now int64) {
	i := 0
	for i < len(b.pending) && b.pending[i].at <= now {
		b.complete(b.pending[i])
		i++
	}
	if i > 0 {
		n := copy(b.pending, b.pending[i:])
		clear(b.pending[n:])
		b.pending = b.pending[:n]
	}
}

func (b *breaker) complete(o outcome) {
	switch {
	case o.probe && o.ok:
		b.state, b.failures = closed, 0
	case o.probe:
		b.trip(o)
	case b.state != closed:
		// Sent before the breaker opened: its outcome is stale news.
	case o.ok:
		b.failures = 0
	default:
		b.failures++
		if b.failures >= b.cfg.Failures {
			b.trip(o)
		}
	}
}

func (b *breaker) trip(o outcome) {
	b.state, b.until, b.outage, b.failures = open, o.at+int64(b.cfg.OpenFor), o.outage, 0
	b.opens++
}

// reach is the step of a decision that calls the store. It returns nil when the store
// answers, or the outage whose policy decides instead: the store is down (the call waits
// the client's timeout, t.wait), or the node's breaker is open (no call, no wait — the
// policy of the outage that opened it, or of the one under way).
func (f *Fleet) reach(t *ticket, outage *Outage) *Outage {
	var b *breaker
	probe := false
	if f.cfg.Breaker != nil {
		for len(f.breakers) <= t.node {
			f.breakers = append(f.breakers, breaker{cfg: *f.cfg.Breaker})
		}
		b = &f.breakers[t.node]
		var call bool
		if call, probe = b.allow(t.now); !call {
			t.breakerOpen = true
			if outage != nil {
				return outage
			}
			return b.outage
		}
	}
	if outage == nil {
		if b != nil {
			b.sent(outcome{at: t.now + int64(f.cfg.Latency), ok: true, probe: probe})
		}
		return nil
	}
	t.wait = f.cfg.StoreTimeout
	if b != nil {
		b.sent(outcome{at: t.now + int64(t.wait), probe: probe, outage: outage})
	}
	return outage
}
