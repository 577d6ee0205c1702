package algorithms

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// epoch is t=0 of the timeline tests: 2026-01-01T10:00:00Z, a multiple of every window
// used here, so offsets read as positions inside aligned windows.
var epoch = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()

// step is one line of a timeline: n requests (0 means 1) of the same cost (0 means 1) for
// key at epoch+at.
//
// A single request (n == 0) must get exactly want. For n > 0, the first admit requests must
// be admitted and the rest refused, and the last one must get want unless want is the zero
// Decision (which no limiter returns: a refusal always carries a RetryAfter).
type step struct {
	at    time.Duration
	key   uint32
	cost  int64
	n     int
	admit int
	want  Decision
}

func allowed(remaining int64, reset time.Duration) Decision {
	return Decision{Allowed: true, Remaining: remaining, Reset: reset}
}

func refused(remaining int64, retryAfter, reset time.Duration) Decision {
	return Decision{Remaining: remaining, RetryAfter: retryAfter, Reset: reset}
}

func runTimeline(t *testing.T, lim Limiter, steps []step) {
	t.Helper()
	for i, s := range steps {
		cost := max(s.cost, 1)
		now := epoch + int64(s.at)
		var d Decision
		admitted := 0
		for j := range max(s.n, 1) {
			d = lim.Allow(s.key, now, cost)
			if d.Allowed {
				if admitted != j {
					t.Errorf("step %d (at %v): request %d admitted after a refusal", i, s.at, j)
				}
				admitted++
			}
		}
		if s.n > 0 && admitted != s.admit {
			t.Errorf("step %d (at %v, %d×cost %d): admitted %d, want %d", i, s.at, s.n, cost, admitted, s.admit)
		}
		if (s.n == 0 || s.want != Decision{}) && d != s.want {
			t.Errorf("step %d (at %v, cost %d):\n got %+v\nwant %+v", i, s.at, cost, d, s.want)
		}
	}
}

const ms = time.Millisecond

func TestNew(t *testing.T) {
	valid := Policy{Limit: 10, Window: time.Second}
	for _, name := range Defaults() {
		lim, err := New(name, valid)
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		if lim.Name() != name {
			t.Errorf("New(%q).Name() = %q", name, lim.Name())
		}
		if lim.Keys() != 0 || lim.StateBytes() != 0 {
			t.Errorf("%s: new limiter holds %d keys, %d bytes", name, lim.Keys(), lim.StateBytes())
		}
	}
	bad := []struct {
		name   string
		policy Policy
		errHas string
	}{
		{"token-bucket", Policy{Limit: 0, Window: time.Second}, "limit"},
		{"gcra", Policy{Limit: -1, Window: time.Second}, "limit"},
		{"fixed-window", Policy{Limit: 10}, "window"},
		{"sliding-log", Policy{Limit: 10, Window: -time.Second}, "window"},
		{"leaky-bucket", Policy{Limit: 10, Window: time.Second, Burst: -1}, "burst"},
		{"token_bucket", valid, "unknown algorithm"},
		{"", valid, "unknown algorithm"},
	}
	for _, tt := range bad {
		lim, err := New(tt.name, tt.policy)
		if err == nil || !strings.Contains(err.Error(), tt.errHas) {
			t.Errorf("New(%q, %+v) = %v, %v; want an error mentioning %q", tt.name, tt.policy, lim, err, tt.errHas)
		}
	}
}

// TestBoundaryBurst replays the fixed-window boundary case of the design notes: 100/min,
// 100 requests at 10:00:59.900 and 100 at 10:01:00.100. The fixed window starts a new count
// at 10:01:00 and admits all 200 within 200 ms; every other algorithm admits 100.
func TestBoundaryBurst(t *testing.T) {
	want := map[string]int{"fixed-window": 200}
	for _, name := range Defaults() {
		t.Run(name, func(t *testing.T) {
			lim, err := New(name, Policy{Limit: 100, Window: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			admitted := 0
			for _, at := range []time.Duration{59900 * ms, 60100 * ms} {
				for range 100 {
					if lim.Allow(0, epoch+int64(at), 1).Allowed {
						admitted++
					}
				}
			}
			if w := cmp.Or(want[name], 100); admitted != w {
				t.Errorf("admitted %d, want %d", admitted, w)
			}
		})
	}
}

func TestKeysAndStateBytes(t *testing.T) {
	p := Policy{Limit: 5, Window: time.Second}
	perKey := map[string]int64{
		"fixed-window":   16,
		"sliding-window": 24,
		"token-bucket":   16,
		"leaky-bucket":   16,
		"gcra":           16,
	}
	for _, name := range Defaults() {
		t.Run(name, func(t *testing.T) {
			lim, _ := New(name, p)
			lim.Allow(2, epoch, 1) // keys are dense: 0 and 1 get (empty) state too
			lim.Allow(0, epoch, 1)
			lim.Allow(0, epoch, 1)
			if lim.Keys() != 3 {
				t.Errorf("Keys() = %d, want 3", lim.Keys())
			}
			want := 3 * perKey[name]
			if name == "sliding-log" {
				// Three 48-byte Logs; key 0 holds two entries, in a ring of 4 entries of 16
				// bytes; key 2 holds its one entry in its Log.
				want = 3*48 + 4*16
			}
			if got := lim.StateBytes(); got != want {
				t.Errorf("StateBytes() = %d, want %d", got, want)
			}
		})
	}
}

func TestSlidingLogStateBytesFollowsGrowth(t *testing.T) {
	lim := NewSlidingLog(Policy{Limit: 1000, Window: time.Second})
	for i := range 300 {
		lim.Allow(uint32(i%2), epoch+int64(i), 1)
	}
	var want int64
	for i := range lim.logs {
		want += lim.logs[i].Bytes()
	}
	if got := lim.StateBytes(); got != want || want != 2*48+2*256*16 {
		t.Errorf("StateBytes() = %d, sum of Log.Bytes = %d, want %d", got, want, 2*48+2*256*16)
	}
}

// TestAllowDoesNotAllocate checks that a warm key costs no allocation per decision.
func TestAllowDoesNotAllocate(t *testing.T) {
	for _, name := range Defaults() {
		lim, _ := New(name, Policy{Limit: 100, Window: time.Second})
		now := epoch
		for range 1000 {
			now += int64(3 * ms)
			lim.Allow(0, now, 1)
		}
		allocs := testing.AllocsPerRun(1000, func() {
			now += int64(3 * ms)
			lim.Allow(0, now, 1)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Allow on a warm key", name, allocs)
		}
	}
}

// arrival is one request of a generated trace.
type arrival struct {
	key  uint32
	now  int64
	cost int64
}

// randomTrace returns n arrivals over keys, in non-decreasing time: runs of simultaneous
// requests mixed with gaps drawn around the policy's emission interval, so every
// algorithm both admits and refuses, and costs from 1 to burst+2 (some can never pass).
func randomTrace(rng *rand.Rand, p Policy, keys, n int) []arrival {
	interval := int64(p.Window) / p.Limit
	now := epoch + rng.Int64N(int64(p.Window))
	trace := make([]arrival, n)
	for i := range trace {
		switch r := rng.IntN(10); {
		case r < 3: // same instant
		case r < 9:
			now += rng.Int64N(2 * interval)
		default:
			now += rng.Int64N(3 * int64(p.Window))
		}
		cost := int64(1)
		if rng.IntN(4) == 0 {
			cost = 1 + rng.Int64N(p.EffectiveBurst()+2)
		}
		trace[i] = arrival{key: uint32(rng.IntN(keys)), now: now, cost: cost}
	}
	return trace
}

// clone returns an independent copy of lim, for probing what a decision would be without
// changing the limiter.
func clone(t *testing.T, lim Limiter) Limiter {
	switch l := lim.(type) {
	case *FixedWindow:
		c := *l
		c.state = slices.Clone(l.state)
		return &c
	case *SlidingLog:
		c := *l
		c.logs = slices.Clone(l.logs)
		for i := range c.logs {
			c.logs[i].ring = slices.Clone(l.logs[i].ring)
		}
		return &c
	case *SlidingWindow:
		c := *l
		c.state = slices.Clone(l.state)
		return &c
	case *TokenBucket:
		c := *l
		c.state = slices.Clone(l.state)
		return &c
	case *GCRA:
		c := *l
		c.tat = slices.Clone(l.tat)
		return &c
	case *LeakyBucket:
		c := *l
		c.gcra.tat = slices.Clone(l.gcra.tat)
		return &c
	case *Nginx:
		c := *l
		c.state = slices.Clone(l.state)
		if l.pair != nil {
			pair := *l.pair
			pair.words = slices.Clone(l.pair.words)
			c.pair = &pair
		}
		return &c
	case *HAProxy:
		c := *l
		c.state = slices.Clone(l.state)
		return &c
	}
	t.Fatalf("clone: unknown limiter %T", lim)
	return nil
}

// capacity is the most cost a fully recovered key admits at one instant.
func capacity(name string, p Policy) int64 {
	switch name {
	case "token-bucket", "leaky-bucket", "gcra":
		return p.EffectiveBurst()
	}
	return p.Limit
}

var propertyPolicies = []Policy{
	{Limit: 100, Window: time.Minute},
	{Limit: 10, Window: time.Second, Burst: 4},
	{Limit: 3, Window: time.Second, Burst: 1}, // emission interval 333333333⅓ ns
	{Limit: 7, Window: 1300 * ms, Burst: 20},
	{Limit: 1, Window: 250 * ms},
	{Limit: 1_000_000, Window: time.Second, Burst: 50}, // a nanosecond refills 0.001 tokens
}

// TestDecisionsKeepTheirWord checks, on random traces and for every algorithm, that what a
// decision tells the client holds if nothing else happens for that key:
//   - a refused request retried after RetryAfter is admitted, and one nanosecond earlier it
//     is not (RetryAfter is the earliest time, not just a safe one);
//   - Remaining more units would pass right now, and Remaining+1 would not;
//   - at Reset the key admits its full capacity, and one nanosecond earlier it does not.
//
// The token bucket admits a deficit worth less than a nanosecond of refill, as x/time/rate
// does, so its waits are checked to be enough but may be 1 ns more than the least.
//
// Each policy runs an ordered trace and the same trace with every timestamp moved by up to
// a quarter window either way, delivered in the original order: after a step back in time
// the word is kept as well, counted from the request's own now.
func TestDecisionsKeepTheirWord(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range propertyPolicies {
		ordered := randomTrace(rng, p, 3, 1500)
		reordered := slices.Clone(ordered)
		quarter := int64(p.Window) / 4
		for i := range reordered {
			reordered[i].now += rng.Int64N(2*quarter+1) - quarter
		}
		for _, name := range Defaults() {
			for _, tr := range []struct {
				name  string
				trace []arrival
			}{{"ordered", ordered}, {"reordered", reordered}} {
				trace := tr.trace
				t.Run(p.String()+"/"+name+"/"+tr.name, func(t *testing.T) {
					lim, _ := New(name, p)
					full := capacity(name, p)
					least := name != "token-bucket"
					probe := func(key uint32, now, cost int64) bool {
						return clone(t, lim).Allow(key, now, cost).Allowed
					}
					for i, a := range trace {
						d := lim.Allow(a.key, a.now, a.cost)
						at := func(format string, args ...any) {
							t.Helper()
							t.Errorf("arrival %d (key %d, +%v, cost %d) → %+v: "+format,
								append([]any{i, a.key, time.Duration(a.now - epoch), a.cost, d}, args...)...)
						}
						switch {
						case d.Allowed && d.RetryAfter != 0:
							at("admitted with a RetryAfter")
						case !d.Allowed && d.RetryAfter <= 0:
							at("refused without a RetryAfter")
						case d.RetryAfter == Never && a.cost <= full:
							at("Never for a cost within capacity %d", full)
						case d.RetryAfter != Never && a.cost > full:
							at("no Never for a cost beyond capacity %d", full)
						case !d.Allowed && d.RetryAfter != Never:
							if !probe(a.key, a.now+int64(d.RetryAfter), a.cost) {
								at("refused again after RetryAfter")
							}
							if least && probe(a.key, a.now+int64(d.RetryAfter)-1, a.cost) {
								at("admitted 1ns before RetryAfter")
							}
						}
						if d.Remaining < 0 || d.Reset < 0 || d.Delay < 0 {
							at("negative field")
						}
						if d.Delay != 0 && (name != "leaky-bucket" || !d.Allowed) {
							at("a Delay from a limiter that does not queue this request")
						}
						if d.Remaining > 0 && !probe(a.key, a.now, d.Remaining) {
							at("Remaining %d would not pass", d.Remaining)
						}
						if probe(a.key, a.now, d.Remaining+1) {
							at("Remaining+1 = %d would pass", d.Remaining+1)
						}
						if !probe(a.key, a.now+int64(d.Reset), full) {
							at("capacity %d does not pass at Reset", full)
						}
						if least && d.Reset > 0 && probe(a.key, a.now+int64(d.Reset)-1, full) {
							at("capacity %d passes 1ns before Reset", full)
						}
					}
				})
			}
		}
	}
}

// TestCostBelowOneCountsAsOne pins the documented treatment of a zero or negative cost.
func TestCostBelowOneCountsAsOne(t *testing.T) {
	for _, name := range Defaults() {
		lim, _ := New(name, Policy{Limit: 2, Window: time.Second})
		got := []bool{lim.Allow(0, epoch, 0).Allowed, lim.Allow(0, epoch, -5).Allowed, lim.Allow(0, epoch, 0).Allowed}
		if !slices.Equal(got, []bool{true, true, false}) {
			t.Errorf("%s: costs 0, -5, 0 against a limit of 2: admitted %v, want [true true false]", name, got)
		}
	}
}

// TestTimeBeforeEpoch checks that keys decided at negative times (before 1970) behave like
// any other: aligned windows use floor division and new keys start empty.
func TestTimeBeforeEpoch(t *testing.T) {
	for _, name := range Defaults() {
		lim, _ := New(name, Policy{Limit: 2, Window: time.Second})
		now := -int64(1500 * ms)
		got := []bool{lim.Allow(0, now, 1).Allowed, lim.Allow(0, now, 1).Allowed, lim.Allow(0, now, 1).Allowed}
		if !slices.Equal(got, []bool{true, true, false}) {
			t.Errorf("%s: 3 requests at -1.5s against a limit of 2: admitted %v", name, got)
		}
	}
	fw := NewFixedWindow(Policy{Limit: 2, Window: time.Second})
	if d := fw.Allow(0, -int64(1500*ms), 1); d.Reset != 500*ms {
		t.Errorf("fixed window at -1.5s: Reset = %v, want 500ms (the window is [-2s, -1s))", d.Reset)
	}
}

// After Reserve, new keys up to the reserved count cost no allocation: the state is not
// regrown as they arrive.
func TestReserveAvoidsRegrowth(t *testing.T) {
	for _, name := range Defaults() {
		lim, _ := New(name, Policy{Limit: 10, Window: time.Second})
		lim.(Reserver).Reserve(10000)
		var key uint32
		allocs := testing.AllocsPerRun(1000, func() {
			lim.Allow(key, epoch+int64(key), 1)
			key++
		})
		// The sliding log gives each new key a ring on its first admission; the others
		// hold flat state and must not allocate at all.
		if name != "sliding-log" && allocs != 0 {
			t.Errorf("%s: %v allocations per new key after Reserve", name, allocs)
		}
		if lim.Keys() > 10000 {
			t.Errorf("%s: %d keys", name, lim.Keys())
		}
	}
}
