package algorithms

import (
	"strings"
	"testing"
	"time"
)

func haproxyLimiter(t *testing.T, spec string) *HAProxy {
	t.Helper()
	lim, err := New(spec, Policy{Limit: 1, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return lim.(*HAProxy)
}

// TestHAProxyTimeline replays the worked case of freq_ctr over http_req_rate(10s) denied
// at gt 2, one key whose first request comes at an even millisecond: A A R R A R A, every
// field of every decision. The reads: 1, 2, 3 (refused, and counted); at 12 s the period
// rotates (prev = 3) and 1 + ⌊3·8/10⌋ = 3 refuses; 2 + ⌊3·3/10⌋ = 2 at 17 s passes; 3 at
// 19 s refuses; at 25 s, 1 + ⌊3·5/10⌋ = 2 passes.
func TestHAProxyTimeline(t *testing.T) {
	a := func(remaining int64, reset time.Duration) Decision {
		return Decision{Allowed: true, Remaining: remaining, Reset: reset}
	}
	s := time.Second
	runTimeline(t, haproxyLimiter(t, "haproxy:period=10s gt=2"), []step{
		{at: 0, want: a(1, 10001*ms)},
		{at: 1 * s, want: a(0, 14001*ms)},
		{at: 2 * s, want: refused(0, 11334*ms, 14667*ms)},
		{at: 12 * s, want: refused(0, 4667*ms, 8001*ms)},
		{at: 17 * s, want: a(0, 8001*ms)},
		{at: 19 * s, want: refused(0, 4334*ms, 7667*ms)},
		{at: 25 * s, want: a(0, 5001*ms)},
	})
}

// TestHAProxyCountsRefusals is the surprise: a client sending 3 a second against 20 per
// 10 s gets its first 20 and then nothing, because its refused requests keep its own
// estimate near 30. The sliding window at 20 per 10 s admits it at the limit. Once it
// slows to one request every 2 s it gets through again.
func TestHAProxyCountsRefusals(t *testing.T) {
	lim := haproxyLimiter(t, "haproxy:period=10s gt=20")
	window := NewSlidingWindow(Policy{Limit: 20, Window: 10 * time.Second})
	var ours, theirs int
	for k := int64(0); k < 180; k++ {
		now := epoch + k*int64(time.Second)/3
		if lim.Allow(0, now, 1).Allowed {
			ours++
		}
		if window.Allow(0, now, 1).Allowed {
			theirs++
		}
	}
	if ours != 20 || theirs < 100 {
		t.Fatalf("in 60 s at 3 a second: haproxy admitted %d (want 20), the sliding window %d (want ~120)", ours, theirs)
	}
	later := 0
	for k := int64(0); k < 30; k++ {
		if lim.Allow(0, epoch+int64(60*time.Second)+k*int64(2*time.Second), 1).Allowed {
			later++
		}
	}
	if later < 20 {
		t.Fatalf("at one every 2 s: %d of 30 admitted", later)
	}
}

// TestHAProxyPeriods checks where periods start: at a key's first request (rounded down
// to an even millisecond), contiguous from there, and anew after two idle periods.
func TestHAProxyPeriods(t *testing.T) {
	lim := haproxyLimiter(t, "haproxy:period=1s ge=3")
	first := epoch + int64(3701*ms) + 500 // millisecond 3701 of the epoch's second
	for i := range 3 {
		if got := lim.Allow(0, first, 1).Allowed; got != (i < 2) {
			t.Fatalf("request %d: admitted %v; ge 3 admits 2", i, got)
		}
	}
	c := lim.state[0]
	if c.tick != (epoch+int64(3700*ms))/int64(ms) || c.curr != 3 || c.prev != 0 {
		t.Fatalf("counter %+v, want the period from 3700 ms (3701 rounded down to even), curr 3", c)
	}
	// 4699 ms is still the first period; 4700 ms rotates (prev = 4, weight 999/1000).
	lim.Allow(0, epoch+int64(4699*ms), 1)
	if c := lim.state[0]; c.curr != 4 || c.tick != (epoch+int64(3700*ms))/int64(ms) {
		t.Fatalf("at 4699 ms: %+v", c)
	}
	lim.Allow(0, epoch+int64(4701*ms), 1)
	if c := lim.state[0]; c.curr != 1 || c.prev != 4 || c.tick != (epoch+int64(4700*ms))/int64(ms) {
		t.Fatalf("at 4701 ms: %+v, want the next period from 4700 ms with prev 4", c)
	}
	// Two idle periods: prev forgotten, the period starts at the request.
	if d := lim.Allow(0, epoch+int64(6801*ms), 1); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("after two idle periods: %+v", d)
	}
	if c := lim.state[0]; c.prev != 0 || c.tick != (epoch+int64(6800*ms))/int64(ms) {
		t.Fatalf("after two idle periods: %+v", c)
	}
	// A step back, before the period began: counted in the current period and read as
	// at its start, so nothing is forgotten.
	lim.Allow(0, epoch+int64(6000*ms), 1)
	if c := lim.state[0]; c.curr != 2 || c.tick != (epoch+int64(6800*ms))/int64(ms) {
		t.Fatalf("a step back: %+v", c)
	}
}

// TestHAProxyRead holds read to read_freq_ctr_period, including the branch a read right
// after counting never takes: past the period's end, the elapsed period is prev, and a
// prev of at most 1 is returned alone (the flapping correction).
func TestHAProxyRead(t *testing.T) {
	h := &HAProxy{period: 10000, perPeriod: newDivisor(10000)}
	for _, c := range []struct {
		c    haproxyCounter
		m    int64
		want int64
	}{
		{haproxyCounter{tick: 0, curr: 5, prev: 9}, 2000, 5 + 7},     // 9·8000/10000 = 7.2
		{haproxyCounter{tick: 0, curr: 5, prev: 9}, 9999, 5},         // 9·1/10000
		{haproxyCounter{tick: 0, curr: 5, prev: 9}, 14000, 3},        // elapsed: 5·6000/10000
		{haproxyCounter{tick: 0, curr: 1, prev: 9}, 14000, 1},        // elapsed, prev 1 alone
		{haproxyCounter{tick: 0, curr: 5, prev: 9}, 20000, 0},        // two periods on
		{haproxyCounter{tick: 10000, curr: 2, prev: 3}, 9000, 2 + 3}, // before the period: at its start
	} {
		if got := h.read(c.c, c.m); got != c.want {
			t.Errorf("read(%+v, %d) = %d, want %d", c.c, c.m, got, c.want)
		}
	}
}

// TestHAProxyBound pins N·(⌈T/period⌉ + 1) and shows it reached over one period: one
// request opens the first period, 20 come 1 ms before the end of the second and 20 2 ms
// before the end of the third, 40 in 9.999 s. The three bursts at 0 s, 9.99 s and
// 19.98 s of 1, 20 and 20 requests let 39 through one 10 s window.
func TestHAProxyBound(t *testing.T) {
	p := Policy{Limit: 20, Window: 10 * time.Second}
	for _, c := range []struct {
		spec string
		span time.Duration
		want float64
	}{
		{"haproxy:period=10s gt=20", 0, 40},
		{"haproxy:period=10s ge=20", 10 * time.Second, 38},
		{"haproxy:period=10s gt=20", 5 * time.Second, 40},
		{"haproxy:period=10s gt=20", 10*time.Second + 1, 60},
		{"haproxy:period=1s gt=5", 10 * time.Second, 55},
		{"haproxy:period=1s ge=0", 10 * time.Second, 0},
	} {
		b, ok := BoundOf(c.spec, p, c.span)
		if !ok || b.Value != c.want {
			t.Errorf("%s over %v: %+v, want %v", c.spec, c.span, b, c.want)
		}
	}
	peakOf := func(bursts [][2]int64) int64 {
		lim := haproxyLimiter(t, "haproxy:period=10s gt=20")
		var admitted []timedCost
		for _, b := range bursts {
			for range b[1] {
				if lim.Allow(0, epoch+b[0], 1).Allowed {
					admitted = append(admitted, timedCost{epoch + b[0], 1})
				}
			}
		}
		peak, _ := peakWindow(admitted, int64(10*time.Second))
		return peak
	}
	if got := peakOf([][2]int64{{0, 1}, {int64(20*time.Second - ms), 25}, {int64(30*time.Second - 2*ms), 25}}); got != 40 {
		t.Errorf("primed window ends: peak %d, want 40", got)
	}
	if got := peakOf([][2]int64{{0, 1}, {int64(9990 * ms), 20}, {int64(19980 * ms), 20}}); got != 39 {
		t.Errorf("bursts at 0, 9.99 s, 19.98 s: peak %d, want 39", got)
	}
}

// TestHAProxySpecs checks what a spec may say and the canonical name it is given.
func TestHAProxySpecs(t *testing.T) {
	for _, c := range []struct {
		in, text, err string
		period, pass  int64
	}{
		{"haproxy:period=10s gt=20", "haproxy:period=10s gt=20", "", 10000, 20},
		{"haproxy:ge=20 period=10s", "haproxy:period=10s ge=20", "", 10000, 19},
		{"haproxy:period=1500 gt=3", "haproxy:period=1500 gt=3", "", 1500, 3},
		{"haproxy:period=500ms gt=0", "haproxy:period=500ms gt=0", "", 500, 0},
		{"haproxy:period=1m gt=1", "haproxy:period=1m gt=1", "", 60000, 1},
		{"haproxy:period=2h ge=1", "haproxy:period=2h ge=1", "", 7200000, 0},
		{"haproxy:period=1d gt=1", "haproxy:period=1d gt=1", "", 86400000, 1},
		{"haproxy", "", "period is required", 0, 0},
		{"haproxy:gt=20", "", "period is required", 0, 0},
		{"haproxy:period=10s", "", "gt=N or ge=N", 0, 0},
		{"haproxy:period=10s gt=2 ge=3", "", "one of gt and ge", 0, 0},
		{"haproxy:period=10us gt=2", "", "whole milliseconds", 0, 0},
		{"haproxy:period=10 s gt=2", "", `unknown parameter "s"`, 0, 0},
		{"haproxy:period=10w gt=2", "", `period "10w"`, 0, 0},
		{"haproxy:period=0s gt=2", "", `period "0s"`, 0, 0},
		{"haproxy:period=-1s gt=2", "", `period "-1s"`, 0, 0},
		{"haproxy:period=30d gt=2", "", `period "30d"`, 0, 0},
		{"haproxy:period=10s gt=-1", "", `gt "-1"`, 0, 0},
		{"haproxy:period=10s ge=1.5", "", `ge "1.5"`, 0, 0},
		{"haproxy:period=10s gt=1 + period=1s gt=2", "", "not several joined by +", 0, 0},
	} {
		s, err := Parse(c.in)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", c.in, err)
		case c.err == "" && s.Text != c.text:
			t.Errorf("Parse(%q) = %q, want %q", c.in, s.Text, c.text)
		case c.err == "":
			lim, _ := s.Model.New(Policy{Limit: 1, Window: time.Second})
			h := lim.(*HAProxy)
			if h.Name() != s.Text || h.period != c.period || h.pass != c.pass {
				t.Errorf("%q builds %q, period %d, pass %d", c.in, h.Name(), h.period, h.pass)
			}
		case err == nil || !strings.Contains(err.Error(), c.err):
			t.Errorf("Parse(%q) = %v, want an error with %q", c.in, err, c.err)
		}
	}
}
