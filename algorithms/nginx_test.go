package algorithms

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nginxLimiter builds the limiter of spec, failing the test if it does not parse.
func nginxLimiter(t *testing.T, spec string) *Nginx {
	t.Helper()
	lim, err := New(spec, Policy{Limit: 1, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return lim.(*Nginx)
}

// TestNginxTimeline replays the worked cases of nginx's arithmetic (rate in thousandths
// of a request per second, excess in thousandths, a millisecond clock) step by step:
// every field of every decision.
func TestNginxTimeline(t *testing.T) {
	a := func(remaining int64, reset, delay time.Duration) Decision {
		return Decision{Allowed: true, Remaining: remaining, Reset: reset, Delay: delay}
	}
	r := refused
	tests := []struct {
		spec  string
		steps []step
	}{
		// (a) 1r/s, burst=2 nodelay: burst+1 at once, the fourth refused; a refusal
		// stores nothing, so at 500 ms the excess is still 2000 (2500 would be stored);
		// at 3500 ms 2000 − 2500 + 1000 = 500.
		{"nginx:rate=1r/s burst=2 nodelay", []step{
			{at: 0, want: a(2, time.Second, 0)},
			{at: 0, want: a(1, 2*time.Second, 0)},
			{at: 0, want: a(0, 3*time.Second, 0)},
			{at: 0, want: r(0, time.Second, 3*time.Second)},
			{at: 500 * ms, want: r(0, 500*ms, 2500*ms)},
			{at: 1000 * ms, want: a(0, 3*time.Second, 0)},
			{at: 1000 * ms, want: r(0, time.Second, 3*time.Second)},
			{at: 3500 * ms, want: a(1, 1500*ms, 0)},
		}},
		// (a) without nodelay: the same admissions, each excess delayed excess·1000/rate ms.
		{"nginx:rate=1r/s burst=2", []step{
			{at: 0, want: a(2, time.Second, 0)},
			{at: 0, want: a(1, 2*time.Second, time.Second)},
			{at: 0, want: a(0, 3*time.Second, 2*time.Second)},
			{at: 0, want: r(0, time.Second, 3*time.Second)},
			{at: 500 * ms, want: r(0, 500*ms, 2500*ms)},
			{at: 1000 * ms, want: a(0, 3*time.Second, 2*time.Second)},
			{at: 1000 * ms, want: r(0, time.Second, 3*time.Second)},
			{at: 3500 * ms, want: a(1, 1500*ms, 500*ms)},
		}},
		// (a) with delay=1: the first excess request passes at once, the next waits for
		// the excess above 1000.
		{"nginx:rate=1r/s burst=2 delay=1", []step{
			{at: 0, want: a(2, time.Second, 0)},
			{at: 0, want: a(1, 2*time.Second, 0)},
			{at: 0, want: a(0, 3*time.Second, time.Second)},
			{at: 0, want: r(0, time.Second, 3*time.Second)},
			{at: 500 * ms, want: r(0, 500*ms, 2500*ms)},
			{at: 1000 * ms, want: a(0, 3*time.Second, time.Second)},
			{at: 1000 * ms, want: r(0, time.Second, 3*time.Second)},
			{at: 3500 * ms, want: a(1, 1500*ms, 0)},
		}},
		// (b) 1r/m is rate 16 (1000/60 truncated): after one request, 60 s leaks 960 and
		// the next is refused; only 62.5 s leaks the 1000 a request adds.
		{"nginx:rate=1r/m", []step{
			{at: 0, want: a(0, 62500*ms, 0)},
			{at: 60 * time.Second, want: r(0, 2500*ms, 2500*ms)},
			{at: 62499 * ms, want: r(0, ms, ms)},
			{at: 62500*ms - 1, want: r(0, 1, 1)},
			{at: 62500 * ms, want: a(0, 62500*ms, 0)},
		}},
		// The millisecond clock: requests within one millisecond see the same time, and
		// a millisecond that starts a nanosecond later leaks its 10 thousandths.
		{"nginx:rate=10r/s", []step{
			{at: 100 * time.Microsecond, want: a(0, 100*ms-100*time.Microsecond, 0)},
			{at: 900 * time.Microsecond, want: r(0, 100*ms-900*time.Microsecond, 100*ms-900*time.Microsecond)},
			{at: 99*ms + 999999, want: r(0, 1, 1)},
			{at: 100 * ms, want: a(0, 100*ms, 0)},
			// Other keys are apart, each admitted at once on its first request.
			{at: 100 * ms, key: 1, want: a(0, 100*ms, 0)},
			{at: 100 * ms, key: 2, n: 3, admit: 1},
		}},
		// Time that goes backwards: a step back leaks nothing and leaves last where it
		// was, so the stretch is not credited twice.
		{"nginx:rate=10r/s burst=3 nodelay", []step{
			{at: time.Second, n: 4, admit: 4},
			{at: 500 * ms, want: r(0, 600*ms, 900*ms)},
			{at: 1100 * ms, want: a(0, 400*ms, 0)},
			{at: 1000 * ms, want: r(0, 200*ms, 500*ms)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			lim := nginxLimiter(t, tt.spec)
			if lim.Name() != tt.spec {
				t.Fatalf("Name() = %q", lim.Name())
			}
			runTimeline(t, lim, tt.steps)
		})
	}
}

// TestNginxZonesInOrder is case (c): zone fast (10r/s burst=5) then zone slow (1r/s) on
// one location. At 10 ms fast would pass (900 ≤ 5000) but slow refuses (990 > 0), and
// fast is not charged: its excess stays 0. With the zones the other way round the first
// refuses and the second is never looked at. When all admit, the delay is the longest.
func TestNginxZonesInOrder(t *testing.T) {
	excesses := func(l *Nginx, key uint32) []int64 {
		var out []int64
		for i := range l.stride {
			out = append(out, l.node(int(key)*l.nodes, i).excess)
		}
		return out
	}
	lim := nginxLimiter(t, "nginx:rate=10r/s burst=5 + rate=1r/s")
	if d := lim.Allow(0, epoch, 1); !d.Allowed {
		t.Fatal("first request refused")
	}
	for _, at := range []time.Duration{10 * ms, 20 * ms} {
		if d := lim.Allow(0, epoch+int64(at), 1); d.Allowed || d.RetryAfter != time.Second-at {
			t.Fatalf("at %v: %+v, want refused until 1s", at, d)
		}
		if got := excesses(lim, 0); got[0] != 0 || got[1] != 0 {
			t.Fatalf("at %v: excesses %v, want both 0 (a refusal charges no zone)", at, got)
		}
	}

	lim = nginxLimiter(t, "nginx:rate=1r/s + rate=10r/s burst=5")
	lim.Allow(0, epoch, 1)
	lim.Allow(0, epoch+int64(10*ms), 1)
	if got := excesses(lim, 0); got[0] != 0 || got[1] != 0 {
		t.Fatalf("excesses %v, want 0 0", got)
	}

	// Two delaying zones: 10r/s burst=5 and 2r/s burst=5. The fourth request at one
	// instant leaves 3000 in both: 300 ms in the first, 1500 ms in the second.
	lim = nginxLimiter(t, "nginx:rate=10r/s burst=5 + rate=2r/s burst=5")
	var d Decision
	for range 4 {
		d = lim.Allow(3, epoch, 1)
	}
	if !d.Allowed || d.Delay != 1500*ms || d.Remaining != 2 {
		t.Fatalf("fourth request: %+v, want admitted, delayed 1.5s, 2 remaining", d)
	}
	// The location lets min(5, 5)+1 = 6 through at once: two more, then none.
	if a, b, c := lim.Allow(3, epoch, 1), lim.Allow(3, epoch, 1), lim.Allow(3, epoch, 1); !a.Allowed || !b.Allowed || c.Allowed {
		t.Fatalf("requests 5 to 7: %v %v %v", a.Allowed, b.Allowed, c.Allowed)
	}
	if lim.Keys() != 4 || lim.StateBytes() != 4*8 { // two zones share one 8-byte word per key
		t.Fatalf("%d keys, %d bytes", lim.Keys(), lim.StateBytes())
	}
}

// TestNginxBurstPlusOne pins the surprise: burst=N passes N+1 requests at once, for a
// fresh key and for one that has drained, where GCRA with the same burst passes N.
func TestNginxBurstPlusOne(t *testing.T) {
	for _, burst := range []int{1, 5, 20} {
		lim := nginxLimiter(t, "nginx:rate=10r/s burst="+strconv.Itoa(burst)+" nodelay")
		for _, at := range []time.Duration{0, 10 * time.Second} {
			got := 0
			for range burst + 5 {
				if lim.Allow(7, epoch+int64(at), 1).Allowed {
					got++
				}
			}
			if got != burst+1 {
				t.Errorf("burst=%d at %v: %d admitted at once, want %d", burst, at, got, burst+1)
			}
		}
	}
}

// TestNginxSpecs checks what a spec may say and the canonical name it is given.
func TestNginxSpecs(t *testing.T) {
	for _, c := range []struct{ in, text, err string }{
		{"nginx:rate=10r/s", "nginx:rate=10r/s", ""},
		{"nginx:nodelay burst=20 rate=10r/s", "nginx:rate=10r/s burst=20 nodelay", ""},
		{"nginx:delay=8 rate=30r/m burst=12", "nginx:rate=30r/m burst=12 delay=8", ""},
		{"nginx:rate=10r/s burst=5+rate=1r/s", "nginx:rate=10r/s burst=5 + rate=1r/s", ""},
		{"nginx", "", "rate is required"},
		{"nginx:burst=5", "", "rate is required"},
		{"nginx:rate=10", "", `rate "10": want a unit, r/s or r/m`},
		{"nginx:rate=10r/h", "", `rate "10r/h": want a unit`},
		{"nginx:rate=0r/s", "", `rate "0r/s": want a whole number of requests from 1`},
		{"nginx:rate=1.5r/s", "", `rate "1.5r/s": want a whole number`},
		{"nginx:rate=-1r/s", "", `rate "-1r/s"`},
		{"nginx:rate=99999999999r/s", "", `rate "99999999999r/s"`},
		{"nginx:rate=10r/s burst=0", "", `burst "0": want a whole number from 1`},
		{"nginx:rate=10r/s burst=x", "", `burst "x"`},
		{"nginx:rate=10r/s delay=0", "", `delay "0"`},
		{"nginx:rate=10r/s burst=5 delay=2 nodelay", "", "nodelay and delay= together"},
		{"nginx:rate=10r/s nodelay=1", "", "nodelay is a flag"},
		{"nginx:rate=10r/s zone=api", "", `unknown parameter "zone"`},
		{"nginx:rate=10r/s + burst=2", "", "set 2 (burst=2): rate is required"},
	} {
		s, err := Parse(c.in)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", c.in, err)
		case c.err == "" && s.Text != c.text:
			t.Errorf("Parse(%q) = %q, want %q", c.in, s.Text, c.text)
		case c.err == "":
			lim, _ := s.Model.New(Policy{Limit: 1, Window: time.Second})
			if lim.Name() != s.Text {
				t.Errorf("%q builds a limiter named %q", c.in, lim.Name())
			}
		case err == nil || !strings.Contains(err.Error(), c.err):
			t.Errorf("Parse(%q) = %v, want an error with %q", c.in, err, c.err)
		}
	}
}

// TestNginxBound pins the bound burst + 1 + ⌊rate·⌈T⌉ms⌋ and shows it reached: 21 at once
// at 0.9 ms and one every 100 ms from 100 ms to 1000 ms, 31 within 0.9991 s.
func TestNginxBound(t *testing.T) {
	p := Policy{Limit: 10, Window: time.Second}
	for _, c := range []struct {
		spec string
		span time.Duration
		want float64
	}{
		{"nginx:rate=10r/s burst=20 nodelay", time.Second, 31},
		{"nginx:rate=10r/s burst=20", 0, 31},
		{"nginx:rate=10r/s", 999*ms + 1, 11},
		{"nginx:rate=10r/s", 99 * ms, 1},
		{"nginx:rate=1r/m", time.Minute, 1},
		{"nginx:rate=1r/m", 62500 * ms, 2},
		{"nginx:rate=6000r/m burst=3", 10 * time.Second, 1004},
		{"nginx:rate=10r/s burst=20 + rate=2r/s burst=5", time.Second, 8},
	} {
		b, ok := BoundOf(c.spec, p, c.span)
		if !ok || b.Value != c.want || !b.Reached {
			t.Errorf("%s over %v: %+v, want %v", c.spec, c.span, b, c.want)
		}
	}
	lim := nginxLimiter(t, "nginx:rate=10r/s burst=20 nodelay")
	var admitted []timedCost
	at := func(ns int64) {
		if lim.Allow(0, epoch+ns, 1).Allowed {
			admitted = append(admitted, timedCost{epoch + ns, 1})
		}
	}
	for range 25 {
		at(int64(900 * time.Microsecond))
	}
	for k := int64(1); k <= 10; k++ {
		at(k * int64(100*ms))
	}
	if peak, _ := peakWindow(admitted, int64(time.Second)); peak != 31 {
		t.Fatalf("peak %d in one second, want the bound 31", peak)
	}
}

// TestNginxPairDecidesAsWide: two zones packed in a word per key decide as the wide nodes
// do, decision for decision, over several keys, steps back, and a jump of two days ahead
// and back, which turns the words of zones with wide bursts (a last of 28 bits) wide on the
// way; bursts too wide for a 28-bit last are kept wide from the start.
func TestNginxPairDecidesAsWide(t *testing.T) {
	for _, c := range []struct {
		spec   string
		widens bool
	}{
		{"nginx:rate=10r/s burst=5 + rate=2r/s burst=20 delay=4", false},
		{"nginx:rate=100r/s burst=50000 nodelay + rate=1r/s burst=1", true},
	} {
		packed, wide := nginxLimiter(t, c.spec), nginxLimiter(t, c.spec)
		if packed.pair == nil {
			t.Fatalf("%s: not packed", c.spec)
		}
		wide.pair = nil
		rng := rand.New(rand.NewPCG(5, 6))
		now := epoch
		for i := range 3000 {
			switch {
			case i == 1500:
				if packed.pair == nil || packed.StateBytes() != int64(8*packed.Keys()) {
					t.Fatalf("%s: %d bytes before the jump; want a word per key", c.spec, packed.StateBytes())
				}
				now += 48 * int64(time.Hour)
			case i == 1600:
				now -= 48 * int64(time.Hour)
			case rng.IntN(40) == 0:
				now -= rng.Int64N(int64(3 * time.Second))
			default:
				now += rng.Int64N(int64(300 * time.Millisecond))
			}
			key := rng.Uint32N(4)
			if got, want := packed.Allow(key, now, 1), wide.Allow(key, now, 1); got != want {
				t.Fatalf("%s: request %d (key %d): packed %+v, wide %+v", c.spec, i, key, got, want)
			}
		}
		if widened := packed.pair == nil; widened != c.widens {
			t.Errorf("%s: widened %v after two days, want %v", c.spec, widened, c.widens)
		}
	}
	if lim := nginxLimiter(t, "nginx:rate=10r/s burst=100000 + rate=1r/s burst=10"); lim.pair != nil {
		t.Errorf("bursts of 27 and 14 bits packed with a last of %d bits", lim.pair.lastBits)
	}
}
