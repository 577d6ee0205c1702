package worstcase

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// offsetWindow is a fixed window a user might write, whose windows start at Phase past
// the clock's multiples of Period (Period is the policy's Window when zero): windows no
// clock edge or first request reveals, only running the limiter does. It counts admitted
// requests and gives no RetryAfter.
type offsetWindow struct {
	phase, period int64
	limit         int64
	start, count  int64
	seen          bool
}

type offsetMaker struct{ phase, period time.Duration }

func (m *offsetMaker) New(p algorithms.Policy) (algorithms.Limiter, error) {
	period := int64(m.period)
	if period == 0 {
		period = int64(p.Window)
	}
	return &offsetWindow{phase: int64(m.phase), period: period, limit: p.Limit}, nil
}

func (l *offsetWindow) Name() string      { return "offset_window" }
func (l *offsetWindow) Keys() int         { return 1 }
func (l *offsetWindow) StateBytes() int64 { return 0 }

func (l *offsetWindow) Allow(_ uint32, now, _ int64) algorithms.Decision {
	start := now - ((now-l.phase)%l.period+l.period)%l.period
	if !l.seen || start != l.start {
		l.seen, l.start, l.count = true, start, 0
	}
	if l.count >= l.limit {
		return algorithms.Decision{}
	}
	l.count++
	return algorithms.Decision{Allowed: true}
}

// admittedFirstRequest is express-rate-limit's kind of window written by a user: it opens
// at the first request after the last one closed and counts only what it admits.
type admittedFirstRequest struct {
	window, limit int64
	opened, count int64
	seen          bool
}

type admittedFirstRequestMaker struct{}

func (admittedFirstRequestMaker) New(p algorithms.Policy) (algorithms.Limiter, error) {
	return &admittedFirstRequest{window: int64(p.Window), limit: p.Limit}, nil
}

func (l *admittedFirstRequest) Name() string      { return "first_request" }
func (l *admittedFirstRequest) Keys() int         { return 1 }
func (l *admittedFirstRequest) StateBytes() int64 { return 0 }

func (l *admittedFirstRequest) Allow(_ uint32, now, _ int64) algorithms.Decision {
	if !l.seen || now >= l.opened+l.window {
		l.seen, l.opened, l.count = true, now, 0
	}
	if l.count >= l.limit {
		return algorithms.Decision{}
	}
	l.count++
	return algorithms.Decision{Allowed: true}
}

var per20TenSeconds = algorithms.Policy{Limit: 20, Window: 10 * time.Second}

// attackOf runs the structured attack named name against target, alone.
func attackOf(t *testing.T, target Target, name string) Measure {
	t.Helper()
	s, err := newSearcher(target)
	if err != nil {
		t.Fatal(err)
	}
	attacks, err := s.structured()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range attacks {
		if a.name == name {
			c, err := s.measure(a.name, a.schedule)
			if err != nil {
				t.Fatal(err)
			}
			return c.measure
		}
		names = append(names, a.name)
	}
	t.Fatalf("no attack %q among %s", name, strings.Join(names, ", "))
	return Measure{}
}

// TestFirstRequestWindowsAcceptance is the acceptance: on a limiter whose window
// opens at a key's first request, 20 per 10 s, the worst case reported is at least 39 —
// for the product models that open windows so (whose proven bound is 40) and for a user's
// own limiters of both kinds (counting refused requests, and not), with the structured
// attacks alone and with a search, at two seeds.
func TestFirstRequestWindowsAcceptance(t *testing.T) {
	targets := []Target{
		{Algorithm: "haproxy:period=10s gt=20"},
		{Algorithm: "express-rate-limit:windowMs=10000 limit=20"},
		{Algorithm: "rate-limiter-flexible:points=20 duration=10"},
		{Algorithm: "incr_expire", Own: &firstRequestMaker{}},
		{Algorithm: "first_request", Own: admittedFirstRequestMaker{}},
	}
	for _, target := range targets {
		for _, budget := range []int{0, 60} {
			for _, seed := range []uint64{1, 7} {
				target.Policy, target.Epoch = per20TenSeconds, epoch
				r, err := Search(target, budget, rand.New(rand.NewPCG(seed, seed)))
				if err != nil {
					t.Fatal(err)
				}
				if r.Worst.Peak < 39 || r.Known && float64(r.Worst.Peak) > r.Bound.Value {
					t.Errorf("%s budget %d seed %d: %d in one window (by %s), want at least 39 (bound %v)",
						target.Algorithm, budget, seed, r.Worst.Peak, r.FoundBy, r.Bound.Value)
				}
			}
		}
	}
}

// TestEachAlignmentHasItsAttack: each alignment a limiter's windows may have is met by an
// attack of its own, which reaches the most such windows let through on its own: 2L
// across an edge the clock, or the limiter's offset, puts anywhere; 2L−1 across the end
// of a window a first request opened (the request itself falls just outside the trailing
// window that holds the rest). An attack a nanosecond off its edge gets L, so each of
// these fails if its alignment is off by one.
func TestEachAlignmentHasItsAttack(t *testing.T) {
	for _, c := range []struct {
		target Target
		attack string
		want   int64
	}{
		{Target{Algorithm: "fixed-window"}, "edge-pair 1ns", 40},
		{Target{Algorithm: "incr_expire", Own: &firstRequestMaker{}}, "primed-pair", 39},
		{Target{Algorithm: "incr_expire", Own: &firstRequestMaker{}}, "primed-pair 1ns off the edges", 39},
		{Target{Algorithm: "first_request", Own: admittedFirstRequestMaker{}}, "primed-pair 1ms off the edges", 39},
		{Target{Algorithm: "first_request", Own: admittedFirstRequestMaker{}}, "primed-pair 10ms at an edge", 39},
		{Target{Algorithm: "offset", Own: &offsetMaker{phase: 10*time.Second/3 + 7}}, "discovered-edge 1ns", 40},
		{Target{Algorithm: "offset", Own: &offsetMaker{phase: 1}}, "discovered-edge 1ms", 40},
		{Target{Algorithm: "offset", Own: &offsetMaker{phase: 9999999999}}, "discovered-edge 1ns", 40},
		{Target{Algorithm: "haproxy:period=10s gt=20"}, "first-request-train 10ms off the edges", 39},
		{Target{Algorithm: "haproxy:period=10s gt=20"}, "first-request-train 10ms at an edge", 39},
		{Target{Algorithm: "haproxy:period=10s gt=20"}, "primed-window-ends", 40},
		{Target{Algorithm: "express-rate-limit:windowMs=10000 limit=20"}, "first-request-train 1ms off the edges", 39},
		{Target{Algorithm: "rate-limiter-flexible:points=20 duration=10"}, "discovered-edge 1ns", 40},
	} {
		c.target.Policy, c.target.Epoch = per20TenSeconds, epoch
		if m := attackOf(t, c.target, c.attack); m.Peak != c.want {
			t.Errorf("%s, %s: %d in one window, want %d", c.target.Algorithm, c.attack, m.Peak, c.want)
		}
	}
}

// TestWindowsAtAnOffsetAreFound: against fixed windows at an offset of the limiter's own,
// which the clock's edges miss and which give no RetryAfter to time a retry by, the
// structured attacks alone reach 2L in one window at every phase tried, and 3L in two.
func TestWindowsAtAnOffsetAreFound(t *testing.T) {
	for _, phase := range []time.Duration{1, time.Second, 10*time.Second/3 + 7, 7 * time.Second, 10*time.Second - 1} {
		for _, T := range []time.Duration{0, 20 * time.Second} {
			target := Target{Algorithm: "offset", Own: &offsetMaker{phase: phase}, Policy: per20TenSeconds, Epoch: epoch, T: T}
			r, err := Search(target, 0, rand.New(rand.NewPCG(1, 1)))
			if err != nil {
				t.Fatal(err)
			}
			want := int64(40)
			if T > 0 {
				want = 60
			}
			if r.Worst.Peak != want {
				t.Errorf("phase %s, T %s: %d in one window by %s, want %d", phase, T, r.Worst.Peak, r.FoundBy, want)
			}
		}
	}
}

// TestDiscoverFindsTheLimitersEdges: run on the limiter, discovery finds to the nanosecond
// where its windows reset and how far apart they are — an offset's window edge, a first
// request's window end, and a period longer than the policy's window (a TTL rounded up to
// whole seconds: 11 s for 10.5 s).
func TestDiscoverFindsTheEdges(t *testing.T) {
	p := per20TenSeconds
	for _, c := range []struct {
		target        Target
		first, period func(from int64) int64
	}{
		{Target{Algorithm: "offset", Own: &offsetMaker{phase: 3*time.Second + 5}}, func(from int64) int64 {
			abs := epoch + from
			return from + (int64(p.Window) - ((abs-int64(3*time.Second+5))%int64(p.Window)+int64(p.Window))%int64(p.Window))
		}, func(int64) int64 { return int64(p.Window) }},
		{Target{Algorithm: "incr_expire", Own: &firstRequestMaker{}}, func(from int64) int64 { return from + int64(p.Window) },
			func(int64) int64 { return int64(p.Window) }},
		{Target{Algorithm: "rounded", Own: &offsetMaker{period: 11 * time.Second}}, func(from int64) int64 {
			abs := epoch + from
			return from + int64(11*time.Second) - abs%int64(11*time.Second)
		}, func(int64) int64 { return int64(11 * time.Second) }},
	} {
		c.target.Policy, c.target.Epoch = p, epoch
		s, err := newSearcher(c.target)
		if err != nil {
			t.Fatal(err)
		}
		for _, from := range []int64{s.edge + s.offEdge(), s.edge + 1} {
			e, ok, err := s.discover(from)
			if err != nil || !ok {
				t.Fatalf("%s from %d: %v, ok %v", c.target.Algorithm, from, err, ok)
			}
			if e.first != c.first(from) || e.period != c.period(from) {
				t.Errorf("%s from %d: first edge %d period %d, want %d and %d", c.target.Algorithm, from, e.first, e.period, c.first(from), c.period(from))
			}
		}
	}
	// A limiter that admits whatever is sent has no edge to find.
	s, err := newSearcher(Target{Algorithm: "free", Own: &offsetMaker{}, Policy: algorithms.Policy{Limit: 1 << 40, Window: time.Second}, Epoch: epoch})
	if err != nil {
		t.Fatal(err)
	}
	s.big = 1
	if _, ok, err := s.discover(s.edge); ok || err != nil {
		t.Errorf("an edge found where the limiter refuses nothing (%v)", err)
	}
}
