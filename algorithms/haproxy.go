package algorithms

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// HAProxyName is the kind of HAProxy's stick-table request rate on the command line.
const HAProxyName = "haproxy"

func init() {
	Register(Kind{
		Name: HAProxyName, Rank: 210,
		Summary: "HAProxy stick table http_req_rate(period) denied at gt/ge N: two counters, refused requests counted, periods from a key's first request",
		Params: []Param{
			{Name: "period", Doc: "the table's http_req_rate(<period>), in HAProxy's time format: 10s, 500ms, 1m, 1h, 1d (a bare number is milliseconds); required"},
			{Name: "gt", Doc: "deny if { sc_http_req_rate(0) gt N }: refuse when the rate read, this request included, is above N"},
			{Name: "ge", Doc: "deny if { sc_http_req_rate(0) ge N }: refuse when the rate read, this request included, is N or more"},
		},
		Configure: configureHAProxy,
	})
}

// HAProxy is HAProxy 2.6's request rate over a stick table, as a configuration that
// tracks the key and then denies on its rate decides:
//
//	stick-table type string size 100k expire 30s store http_req_rate(10s)
//	http-request track-sc0 req.hdr(x-user)
//	http-request deny deny_status 429 if { sc_http_req_rate(0) gt 20 }
//
// It follows freq_ctr (update_freq_ctr_period and read_freq_ctr_period in
// include/haproxy/freq_ctr.h, freq_ctr_total in src/freq_ctr.c, tag v2.6.0) and
// http_action_track_sc (src/http_act.c), whose arithmetic later 2.6 releases keep.
//
// Per key it keeps the counter's curr_tick (the start of the current period, in
// milliseconds, always even: HAProxy uses the low bit as a lock), curr and prev. Time is
// HAProxy's millisecond clock: now is floored to the millisecond. Every request is
// counted when track-sc runs, before the deny rule reads the rate:
//   - within the period (m − curr_tick < period): curr += 1;
//   - otherwise the period rotates: prev = curr, curr = 1, curr_tick += period, and if
//     m is a further period or more past that, prev = 0 and curr_tick = m; curr_tick is
//     stored rounded down to even. A key's first request starts its first period.
//
// The rate read is then curr + ⌊prev·remain/period⌋, remain = curr_tick + period − m,
// the time left in the current period (a read past the period's end would take the
// elapsed period as prev and curr as 0, and return prev alone when it is at most 1:
// HAProxy's guard against flapping, which a read right after counting never meets). The
// request is refused iff the rate is above N (gt N) or at least N (ge N).
//
// Where it differs from the two-counter sliding window, and why:
//   - Refused requests are counted: track-sc counts before deny decides, so a client that
//     keeps sending faster than N per period keeps its own estimate above N and is
//     refused until it slows down, where the sliding window admits it at the limit.
//   - The periods start at a key's first request and follow each other from there (until
//     the key is idle for two periods), not on the clock's multiples of the period.
//   - prev is weighted by the fraction of the period still to run and the product
//     floored, and the read includes the request itself: gt N admits N per period, ge N
//     admits N − 1.
//   - Cost is not read: http_req_rate counts requests, each one whatever it costs.
//
// What it leaves out: the table's expire (a key idle longer than expire restarts from
// nothing, as the counter itself restarts after two idle periods, so it changes nothing
// when expire is at least twice the period), its size (the oldest keys are purged when it
// is full), the wrap of HAProxy's 32-bit clock every 49.7 days, and threads racing on one
// counter.
//
// Time that goes backwards: HAProxy's unsigned arithmetic would take a step back for a
// period missed and rotate; the model counts a request stamped before its key's current
// period began in that period and reads it as at the period's start, so nothing is
// forgotten because of a step back.
//
// State: 16 bytes per key (curr_tick as int64, curr and prev as uint32). HAProxy's
// freq_ctr is 12 bytes, inside a stick-table entry with its key and the other stored
// data.
//
// Worst case: each period admits at most N (gt) or N − 1 (ge), since the read is at
// least curr, which counts every request of the period; a window of length T meets at
// most ⌈T/period⌉ + 1 periods, so it holds at most N·(⌈T/period⌉ + 1) admissions of one
// key. Over one period that is 2N, and it is reached: one request opens the first
// period, N come just before the end of the second (prev is 1, worth nothing), and N just
// before the end of the third, where prev = N weighs ⌊N·remain/period⌋ = 0.
//
// Decisions: Remaining is how many more requests would pass at the same instant;
// RetryAfter is the time until a request would pass again (Never when none ever can:
// gt 0, ge 0 or ge 1); Reset is the time until N (gt) or N − 1 (ge) would pass at once.
type HAProxy struct {
	name      string
	period    int64 // milliseconds
	pass      int64 // the highest rate that passes: N for gt N, N − 1 for ge N
	perPeriod divisor
	clock     windowIndex
	state     []haproxyCounter
}

// haproxyCounter is a key's freq_ctr.
type haproxyCounter struct {
	tick       int64 // curr_tick, milliseconds since the Unix epoch, even; unseen at first
	curr, prev uint32
}

var (
	_ Limiter  = (*HAProxy)(nil)
	_ Admitter = (*HAProxy)(nil)
	_ Reserver = (*HAProxy)(nil)
)

const (
	haproxyMaxPeriod = math.MaxInt32 // ms: HAProxy's timers are 32-bit
	haproxyMaxRate   = 1_000_000_000
)

// haproxyUnits are the time units HAProxy's configuration takes for a period, in
// milliseconds; a bare number is milliseconds.
var haproxyUnits = []struct {
	suffix string
	ms     int64
}{{"ms", 1}, {"s", 1000}, {"m", 60_000}, {"h", 3_600_000}, {"d", 86_400_000}}

func configureHAProxy(args Args) (Model, error) {
	text, ok := args["period"]
	if !ok {
		return nil, errors.New("period is required (period=10s)")
	}
	period, err := haproxyPeriod(text)
	if err != nil {
		return nil, err
	}
	gt, hasGT := args["gt"]
	ge, hasGE := args["ge"]
	var op, value string
	switch {
	case hasGT && hasGE:
		return nil, errors.New("give one of gt and ge, not both")
	case hasGT:
		op, value = "gt", gt
	case hasGE:
		op, value = "ge", ge
	default:
		return nil, errors.New("the deny rule's comparison is required: gt=N or ge=N")
	}
	n, err := parseWhole(value, haproxyMaxRate)
	if err != nil {
		return nil, fmt.Errorf("%s %q: want a whole number from 0 to %d", op, value, haproxyMaxRate)
	}
	pass := n
	if op == "ge" {
		pass = n - 1
	}
	return haproxyModel{period: period, pass: pass, text: specText(HAProxyName, args)}, nil
}

// haproxyPeriod reads a period in HAProxy's time format as whole milliseconds.
func haproxyPeriod(text string) (int64, error) {
	num, unit := text, int64(1)
	for _, u := range haproxyUnits {
		if strings.HasSuffix(text, u.suffix) {
			num, unit = strings.TrimSuffix(text, u.suffix), u.ms
			break
		}
	}
	if strings.HasSuffix(text, "us") {
		return 0, fmt.Errorf("period %q: HAProxy counts rates in whole milliseconds; use ms, s, m, h or d", text)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || strings.TrimLeft(num, "0123456789") != "" || n > haproxyMaxPeriod/unit {
		return 0, fmt.Errorf("period %q: want a positive whole number with a unit ms, s, m, h or d (10s), at most %d ms", text, haproxyMaxPeriod)
	}
	return n * unit, nil
}

// haproxyModel is a configured table and deny rule.
type haproxyModel struct {
	period, pass int64
	text         string
}

func (m haproxyModel) New(Policy) (Limiter, error) {
	return &HAProxy{name: m.text, period: m.period, pass: m.pass, perPeriod: newDivisor(m.period),
		clock: windowIndex{window: int64(time.Millisecond)}}, nil
}

// Bound is N·(⌈T/period⌉ + 1) (see HAProxy).
func (m haproxyModel) Bound(p Policy, span time.Duration) (Bound, bool) {
	if span <= 0 {
		span = p.Window
	}
	period := time.Duration(m.period) * time.Millisecond
	periods := float64((span+period-1)/period) + 1
	return Bound{
		Value:   float64(max(m.pass, 0)) * periods,
		Formula: "N·(⌈T/period⌉ + 1)",
		Source:  "HAProxy counts every request of a period, refused or not, and refuses above N, so a period admits at most N; a window meets ⌈T/period⌉ + 1 periods, which start at a key's first request",
		Reached: true,
	}, true
}

// Name returns the canonical spec.
func (h *HAProxy) Name() string { return h.name }

// count is update_freq_ctr_period with one event at millisecond m.
func (h *HAProxy) count(c *haproxyCounter, m int64) {
	if c.tick != unseen && m-c.tick < h.period {
		c.curr++ // within the period, or stamped before it began
		return
	}
	tick := c.tick + h.period
	c.prev, c.curr = c.curr, 1
	if c.tick == unseen || m-tick >= h.period {
		c.prev, tick = 0, m
	}
	c.tick = tick &^ 1
}

// read is read_freq_ctr_period at millisecond m, for a counter already counted once.
func (h *HAProxy) read(c haproxyCounter, m int64) int64 {
	remain := c.tick + h.period - m
	curr, past := int64(c.curr), int64(c.prev)
	switch {
	case remain > h.period: // stamped before the period began: read as at its start
		remain = h.period
	case remain < 0:
		remain += h.period
		if remain < 0 {
			past = 0
		} else {
			past = curr
		}
		curr = 0
	}
	if curr == 0 && past <= 1 {
		return past
	}
	// ⌊(past·remain + curr·period)/period⌋, as HAProxy computes it, is curr plus the
	// floored weight of past: past < 2³² and remain ≤ period < 2³¹, so it fits.
	return curr + h.perPeriod.div(past*remain)
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset.
func (h *HAProxy) Admit(key uint32, now int64, _ int64) (bool, time.Duration) {
	if int(key) >= len(h.state) {
		h.growTo(key)
	}
	m := h.clock.of(now)
	c := &h.state[key]
	h.count(c, m)
	return h.read(*c, m) <= h.pass, 0
}

// passes reports whether n requests at millisecond m, after what c holds, would all pass:
// whether the last of them would.
func (h *HAProxy) passes(c haproxyCounter, m int64, n int64) bool {
	h.count(&c, m)
	c.curr += uint32(n - 1)
	return h.read(c, m) <= h.pass
}

// Allow decides a request for key at now (nanoseconds since the Unix epoch), in any
// order of now; its cost is not read.
func (h *HAProxy) Allow(key uint32, now int64, cost int64) Decision {
	ok, _ := h.Admit(key, now, cost)
	c := h.state[key]
	m := h.clock.of(now)
	d := Decision{Allowed: ok}
	if h.pass < 1 {
		// Nothing ever passes, and there is nothing to recover.
		d.RetryAfter = Never
		return d
	}
	// Both waits are monotone: the later, the lower the rate read (the weight of prev
	// falls within a period, and a rotation reads no more than the period before it).
	full := firstTrueAfter(m, func(at int64) bool { return h.passes(c, at, h.pass) })
	d.Reset = ahead(msToNanos(full), now)
	if ok {
		d.Remaining = h.pass - h.read(c, m)
		return d
	}
	again := firstTrueAfter(m, func(at int64) bool { return h.passes(c, at, 1) })
	d.RetryAfter = ahead(msToNanos(again), now)
	return d
}

// growTo makes room for key's counter, out of Admit's way.
//
//go:noinline
func (h *HAProxy) growTo(key uint32) { h.state = grow(h.state, key, haproxyCounter{tick: unseen}) }

// Keys returns the number of keys held: the highest key decided plus one.
func (h *HAProxy) Keys() int { return len(h.state) }

// StateBytes returns 16 bytes per key held.
func (h *HAProxy) StateBytes() int64 {
	return int64(len(h.state)) * int64(unsafe.Sizeof(haproxyCounter{}))
}

// Reserve makes room for the state of keys keys (see Reserver).
func (h *HAProxy) Reserve(keys int) { h.state = reserve(h.state, keys) }
