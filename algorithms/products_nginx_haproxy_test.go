package algorithms

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// productCases are the products' models the contract tests hold, each with a policy of
// about its own rate, which sets the pace of the traces (overloadTrace offers each key
// about twice the policy's rate): odd rates, r/m floors, an odd period, several zones.
var productCases = []struct {
	spec   string
	policy Policy
}{
	{"nginx:rate=10r/s burst=4 nodelay", Policy{Limit: 10, Window: time.Second}},
	{"nginx:rate=3r/s burst=2", Policy{Limit: 3, Window: time.Second}},
	{"nginx:rate=90r/m burst=5 delay=2", Policy{Limit: 90, Window: time.Minute}},
	{"nginx:rate=1r/m", Policy{Limit: 1, Window: time.Minute}},
	{"nginx:rate=200r/s burst=50", Policy{Limit: 200, Window: time.Second}},
	{"nginx:rate=10r/s burst=4 + rate=2r/s burst=6 delay=3", Policy{Limit: 2, Window: time.Second}},
	{"nginx:rate=5r/s + rate=10r/s burst=3 nodelay", Policy{Limit: 5, Window: time.Second}},
	{"haproxy:period=1s gt=10", Policy{Limit: 10, Window: time.Second}},
	{"haproxy:period=1300ms ge=7", Policy{Limit: 7, Window: 1300 * ms}},
	{"haproxy:period=1001 gt=3", Policy{Limit: 3, Window: time.Second}},
	{"haproxy:period=1m gt=100", Policy{Limit: 100, Window: time.Minute}},
	{"haproxy:period=250ms gt=1", Policy{Limit: 1, Window: 250 * ms}},
}

// productTrace is traceFor's overloaded trace for a product case, every cost 1 (the
// products count requests), over three keys.
func productTrace(i int, seed uint64) []stamped {
	trace := overloadTrace(rand.New(rand.NewPCG(seed, uint64(100+i))), productCases[i].policy, 3, 3000)
	for j := range trace {
		trace[j].cost = 1
	}
	return trace
}

// productCapacity is the most a fully recovered key passes at one instant.
func productCapacity(lim Limiter) int64 {
	switch l := lim.(type) {
	case *Nginx:
		c := int64(1 << 62)
		for _, z := range l.zones {
			c = min(c, z.burst/1000+1)
		}
		return c
	case *HAProxy:
		return max(l.pass, 0)
	}
	panic(fmt.Sprintf("productCapacity: %T", lim))
}

// TestProductsAdmitDecidesAsAllow holds each product's Admit to its Allow, as
// TestAdmitDecidesAsAllow holds the six: the same Allowed and Delay at every request of
// ordered and restamped traces, and the same state at the end.
func TestNginxHAProxyAdmitDecidesAsAllow(t *testing.T) {
	for i, c := range productCases {
		for _, seed := range traceSeeds {
			ordered := productTrace(i, seed)
			for _, d := range []int64{0, int64(c.policy.Window) / 10, 2 * int64(c.policy.Window)} {
				trace := ordered
				if d > 0 {
					trace = restamp(rand.New(rand.NewPCG(seed, uint64(d))), ordered, d, 0)
				}
				byAllow, _ := New(c.spec, c.policy)
				byAdmit, _ := New(c.spec, c.policy)
				admit := AdmitterOf(byAdmit)
				var admitted int
				for j, a := range trace {
					want := byAllow.Allow(a.key, a.stamp, 1)
					ok, delay := admit.Admit(a.key, a.stamp, 1)
					if ok != want.Allowed || delay != want.Delay {
						t.Fatalf("%s seed %d skew %v: request %d: Admit (%v, %v), Allow %+v", c.spec, seed, time.Duration(d), j, ok, delay, want)
					}
					if ok {
						admitted++
					}
				}
				if !reflect.DeepEqual(byAdmit, byAllow) {
					t.Fatalf("%s seed %d: the state after Admit differs from the state after Allow", c.spec, seed)
				}
				if admitted == 0 || admitted == len(trace) {
					t.Fatalf("%s seed %d: %d of %d admitted: the trace tests nothing", c.spec, seed, admitted, len(trace))
				}
			}
		}
	}
}

// TestProductsKeepTheirWord checks what each product's decisions tell the client, as
// TestDecisionsKeepTheirWord checks the six, on ordered traces and on traces with stamps
// moved by up to a quarter window: a refused request passes at RetryAfter and not a
// nanosecond earlier; Remaining more requests pass at once and one more does not; the
// key's capacity passes at Reset and not a nanosecond earlier. Delay comes only with an
// admission.
func TestNginxHAProxyKeepTheirWord(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i, c := range productCases {
		ordered := productTrace(i, 1)[:1500]
		quarter := int64(c.policy.Window) / 4
		reordered := restamp(rng, ordered, quarter, 0)
		for _, tr := range []struct {
			name  string
			trace []stamped
		}{{"ordered", ordered}, {"reordered", reordered}} {
			t.Run(c.spec+"/"+tr.name, func(t *testing.T) {
				lim, _ := New(c.spec, c.policy)
				full := productCapacity(lim)
				// passN reports whether n requests at now would all pass.
				passN := func(key uint32, now, n int64) bool {
					probe := clone(t, lim)
					ok := true
					for range n {
						ok = probe.Allow(key, now, 1).Allowed
					}
					return ok
				}
				for j, a := range tr.trace {
					d := lim.Allow(a.key, a.stamp, 1)
					at := func(format string, args ...any) {
						t.Helper()
						t.Fatalf("request %d (key %d, +%v) → %+v: "+format,
							append([]any{j, a.key, time.Duration(a.stamp - epoch), d}, args...)...)
					}
					switch {
					case d.Allowed && d.RetryAfter != 0:
						at("admitted with a RetryAfter")
					case !d.Allowed && d.RetryAfter <= 0:
						at("refused without a RetryAfter")
					case !d.Allowed && d.RetryAfter != Never:
						if !passN(a.key, a.stamp+int64(d.RetryAfter), 1) {
							at("refused again after RetryAfter")
						}
						if passN(a.key, a.stamp+int64(d.RetryAfter)-1, 1) {
							at("admitted 1ns before RetryAfter")
						}
					}
					if d.Remaining < 0 || d.Reset < 0 || d.Delay < 0 || (!d.Allowed && d.Delay != 0) {
						at("a negative field, or a Delay without an admission")
					}
					if d.Remaining > 0 && !passN(a.key, a.stamp, d.Remaining) {
						at("Remaining %d would not pass", d.Remaining)
					}
					if passN(a.key, a.stamp, d.Remaining+1) {
						at("Remaining+1 = %d would pass", d.Remaining+1)
					}
					if !passN(a.key, a.stamp+int64(d.Reset), full) {
						at("capacity %d does not pass at Reset", full)
					}
					if d.Reset > 0 && passN(a.key, a.stamp+int64(d.Reset)-1, full) {
						at("capacity %d passes 1ns before Reset", full)
					}
				}
			})
		}
	}
}

// TestProductsStayWithinTheirBound delivers the overloaded traces, ordered and with
// stamps off true time by up to D, and requires every key's admissions in any window of
// length T to stay within the model's bound over T + 2D (the argument of
// TestReorderedAdmissionsStayWithinBound holds: a late request is decided as if at a time
// between its stamp and the key's latest), judged on the stamps and on the true times.
func TestNginxHAProxyStayWithinTheirBound(t *testing.T) {
	for i, c := range productCases {
		for _, seed := range traceSeeds[:2] {
			ordered := productTrace(i, seed)
			for _, frac := range []int64{0, 100, 10} {
				var d int64
				if frac > 0 {
					d = int64(c.policy.Window) / frac
				}
				trace := restamp(rand.New(rand.NewPCG(seed, uint64(d))), ordered, d, 0)
				for _, span := range []time.Duration{c.policy.Window / 3, c.policy.Window, 5 * c.policy.Window / 2} {
					lim, _ := New(c.spec, c.policy)
					run := runStamped(lim, trace, nil)
					b, ok := BoundOf(c.spec, c.policy, span+time.Duration(2*d))
					if !ok {
						t.Fatalf("%s has no bound", c.spec)
					}
					most := int64(0)
					for key := range run.byStamp {
						for _, ts := range [][]timedCost{run.byStamp[key], run.byTrue[key]} {
							peak, end := peakWindow(ts, int64(span))
							most = max(most, peak)
							if peak > b.MaxAdmitted() {
								t.Errorf("%s seed %d D %v: key %d: %d admitted in the window of %v ending at +%v, above the bound %v over T+2D",
									c.spec, seed, time.Duration(d), key, peak, span, time.Duration(end-epoch), b.Value)
							}
						}
					}
					if d == 0 && span == c.policy.Window && most < b.MaxAdmitted()/3 {
						t.Errorf("%s seed %d: at most %d in a window, far below the bound %v: the trace does not press the limiter", c.spec, seed, most, b.Value)
					}
				}
			}
		}
	}
}

// TestProductsDoNotAllocate: a warm key's decision allocates nothing, and after Reserve
// new keys cost no allocation.
func TestNginxHAProxyDoNotAllocate(t *testing.T) {
	for _, c := range productCases {
		lim, _ := New(c.spec, c.policy)
		now := epoch
		for range 1000 {
			now += int64(3 * ms)
			lim.Allow(0, now, 1)
		}
		if allocs := testing.AllocsPerRun(1000, func() { now += int64(3 * ms); lim.Allow(0, now, 1) }); allocs != 0 {
			t.Errorf("%s: %v allocations per Allow on a warm key", c.spec, allocs)
		}
		lim.(Reserver).Reserve(10000)
		var key uint32
		if allocs := testing.AllocsPerRun(1000, func() { lim.Allow(key, now, 1); key++ }); allocs != 0 {
			t.Errorf("%s: %v allocations per new key after Reserve", c.spec, allocs)
		}
		if lim.Keys() > 10000 || lim.StateBytes() != int64(lim.Keys()*bytesPerKey(lim)) {
			t.Errorf("%s: %d keys, %d bytes", c.spec, lim.Keys(), lim.StateBytes())
		}
	}
}

// bytesPerKey is what a key of lim takes: a 16-byte node per pair of nginx zones, or
// for two zones, 8 while they are packed.
func bytesPerKey(lim Limiter) int {
	if l, ok := lim.(*Nginx); ok {
		if l.pair != nil {
			return 8
		}
		return 16 * l.nodes
	}
	return 16
}

// FuzzProductSpecs parses anything after a product's name: a spec that parses names its
// limiter by its canonical text, which parses to itself, and the limiter decides a burst
// of requests with every field in range; nothing panics.
func FuzzNginxHAProxySpecs(f *testing.F) {
	for _, c := range productCases {
		f.Add(c.spec)
	}
	for _, s := range []string{"nginx:rate=1r/m burst=1000000 delay=1000000", "nginx:rate=1000000000r/s",
		"nginx:rate=10r/s+rate=1r/s+", "haproxy:period=2147483647 gt=1000000000", "haproxy:period=1 ge=0",
		"nginx:rate=01r/s burst=007", "haproxy:period=1d ge=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			return
		}
		again, err := Parse(s.Text)
		if err != nil || again.Text != s.Text {
			t.Fatalf("%q → %q → %v", in, s.Text, err)
		}
		lim, err := s.Model.New(Policy{Limit: 1, Window: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if lim.Name() != s.Text {
			t.Fatalf("%q builds %q", s.Text, lim.Name())
		}
		for i := range int64(20) {
			d := lim.Allow(uint32(i%3), epoch+i*int64(7*ms)-int64(i%4)*int64(20*ms), 1)
			if d.Remaining < 0 || d.Reset < 0 || d.Delay < 0 || (d.Allowed != (d.RetryAfter == 0)) {
				t.Fatalf("%s: request %d: %+v", s.Text, i, d)
			}
		}
		if b, ok := s.Model.Bound(Policy{Limit: 1, Window: time.Second}, 0); !ok || b.Value < 0 {
			t.Fatalf("%s: bound %+v", s.Text, b)
		}
	})
}
